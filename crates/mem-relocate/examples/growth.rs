//! Reserved ÷ live on a growth-heavy trace, with and without relocation.
//!
//! The trace: seven phases whose tensors double in size (about 0.4 MiB to
//! 32 MiB), so the growable pool walks through its page sizes (1 MiB to
//! 64 MiB); every phase first allocates a few long-lived tensors (weights,
//! caches: never freed) and then churns transient ones (activations: a
//! working set, all freed at the phase's end). Without relocation the
//! long-lived tensors of each phase keep their outdated page alive forever.
//!
//! Both runs use the same reservation path (`TestStreams::reserve`, the
//! tests' small runtime of the `RelocatingStreams` protocol, shared from
//! `tests/common/streams.rs`: relocate when wanted, retry once when out of
//! page sizes) on a simulated
//! device (addresses and accounting, no bytes), and the same explicit
//! cleanup at each phase's end: `reclaim` (relocate, compact sparse
//! current pages, then clean up) with relocation, a plain `cleanup(true)`
//! without. "moved" counts slices moved off outdated pages, "compacted"
//! slices moved by compactions.
//!
//! `cargo run -p mem-relocate --example growth --release`

use std::sync::Arc;

use mem_pools::{
    ManagedMemoryHandle, MemoryConfiguration, MemoryDeviceProperties, MemoryManagement,
    MemoryPoolOptions, PoolType, ServerLogger,
};
use mem_relocate::{RelocatingStreams, StorageCopyQueue};
use mem_storage::units::MIB;
use mem_storage::{ComputeStorage, SimulatedStorage};

#[path = "../tests/common/streams.rs"]
mod streams;
use streams::TestStreams;

const DEVICE: u64 = 16 << 30;
const PHASES: u64 = 8;
const LONG_LIVED: usize = 16;
const TRANSIENT: usize = 64;
const WORKING_SET: usize = 12;

/// A small deterministic generator (xorshift64*), so runs are repeatable.
/// Kept rather than `rand`'s `SmallRng`: docs/relocation.md's table is
/// this generator's trace.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Debug, Default)]
struct Measure {
    peak_live: u64,
    peak_reserved: u64,
    final_live: u64,
    final_reserved: u64,
    relocated_slices: u64,
    compacted_slices: u64,
}

fn stream_set(device: u64) -> TestStreams<SimulatedStorage> {
    let properties = MemoryDeviceProperties {
        max_page_size: 64 * MIB,
        alignment: 256,
    };
    let config = MemoryConfiguration::Custom {
        pool_options: vec![MemoryPoolOptions {
            pool_type: PoolType::SlicedPages {
                page_size: MIB,
                max_slice_size: 64 * MIB,
            },
            dealloc_period: None,
        }],
    };
    let memory = MemoryManagement::from_configuration(
        SimulatedStorage::simulated(device),
        &properties,
        config,
        Arc::new(ServerLogger::default()),
        Default::default(),
    );
    TestStreams::new(memory, StorageCopyQueue)
}

/// How a run relocates.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// Never: reservations go straight to the pools; phases end with `cleanup(true)`.
    Off,
    /// Phases end with `reclaim`; reservations go through `TestStreams::reserve`
    /// with no capacity known (only running out of page sizes triggers).
    Reclaim,
    /// As `Reclaim`, and the trigger measures pressure against a device of
    /// this many bytes (the storage is as large: the trace must fit in it).
    Pressure(u64),
}

impl Mode {
    fn name(self) -> String {
        match self {
            Mode::Off => "off".into(),
            Mode::Reclaim => "reclaim".into(),
            Mode::Pressure(c) => format!("pressure@{}Mi", c / MIB),
        }
    }
}

fn run(seed: u64, mode: Mode) -> Measure {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let capacity = match mode {
        Mode::Pressure(c) => c,
        _ => DEVICE,
    };
    let mut set = stream_set(capacity);
    set.set_capacity(match mode {
        Mode::Pressure(c) => Some(c),
        _ => None,
    });
    let mut m = Measure::default();
    let mut live_bytes = 0u64;
    let mut long_lived: Vec<ManagedMemoryHandle> = Vec::new();
    let observe = |set: &mut TestStreams<SimulatedStorage>, live: u64, m: &mut Measure| {
        let reserved = set.bytes_allocated();
        m.peak_live = m.peak_live.max(live);
        m.peak_reserved = m.peak_reserved.max(reserved);
        m.final_live = live;
        m.final_reserved = reserved;
    };
    let reserve = |set: &mut TestStreams<SimulatedStorage>, bytes: u64| {
        let handle = if mode == Mode::Off {
            set.memory(0)
                .expect("stream 0")
                .reserve(bytes)
                .map_err(|e| e.to_string())
        } else {
            set.reserve(0, bytes).map_err(|e| e.to_string())
        };
        handle.unwrap_or_else(|e| panic!("the device cannot hold the trace ({}): {e}", mode.name()))
    };
    for phase in 0..PHASES {
        let base = (MIB / 4) << phase;
        let size = |rng: &mut Rng| base / 4 + rng.below(base - base / 4);
        for _ in 0..LONG_LIVED {
            let bytes = size(&mut rng);
            long_lived.push(reserve(&mut set, bytes));
            live_bytes += bytes;
            observe(&mut set, live_bytes, &mut m);
        }
        let mut transient: Vec<ManagedMemoryHandle> = Vec::new();
        for _ in 0..TRANSIENT {
            if transient.len() >= WORKING_SET {
                let gone = transient.swap_remove(rng.below(transient.len() as u64) as usize);
                live_bytes -= gone.size();
            }
            let bytes = size(&mut rng);
            transient.push(reserve(&mut set, bytes));
            live_bytes += bytes;
            observe(&mut set, live_bytes, &mut m);
        }
        live_bytes -= transient.iter().map(|h| h.size()).sum::<u64>();
        drop(transient);
        if mode == Mode::Off {
            set.memory(0).expect("stream 0").cleanup(true);
        } else {
            set.reclaim().expect("no graph records");
        }
        observe(&mut set, live_bytes, &mut m);
    }
    m.relocated_slices = set.log().moved_slices;
    m.compacted_slices = set.log().compacted_slices;
    let memory = set.memory(0).expect("stream 0");
    let usage = memory.memory_usage();
    assert_eq!(usage.bytes_in_use, m.final_live);
    assert_eq!(usage.bytes_reserved, memory.storage().bytes_allocated());
    drop(long_lived);
    m
}

fn main() {
    println!(
        "growth trace: {PHASES} phases, tensors up to 0.25..32 MiB, pages 1..64 MiB, \
         {LONG_LIVED} long-lived + {TRANSIENT} transient (working set {WORKING_SET}) per phase"
    );
    println!(
        "{:>4} {:>16} {:>10} {:>10} {:>10} {:>10} {:>6} {:>9} {:>7} {:>7}",
        "seed",
        "relocation",
        "peak live",
        "peak res.",
        "final live",
        "final res.",
        "moved",
        "compacted",
        "peak",
        "final"
    );
    let modes = [Mode::Off, Mode::Reclaim, Mode::Pressure(1152 * MIB)];
    let mut worst = [(0.0f64, 0.0f64); 3];
    for seed in [1u64, 2, 3, 4, 5] {
        for (i, mode) in modes.into_iter().enumerate() {
            let m = run(seed, mode);
            let peak = m.peak_reserved as f64 / m.peak_live as f64;
            let fin = m.final_reserved as f64 / m.final_live as f64;
            worst[i] = (worst[i].0.max(peak), worst[i].1.max(fin));
            let mib = |b: u64| format!("{:.1}Mi", b as f64 / MIB as f64);
            println!(
                "{seed:>4} {:>16} {:>10} {:>10} {:>10} {:>10} {:>6} {:>9} {peak:>7.3} {fin:>7.3}",
                mode.name(),
                mib(m.peak_live),
                mib(m.peak_reserved),
                mib(m.final_live),
                mib(m.final_reserved),
                m.relocated_slices,
                m.compacted_slices,
            );
        }
    }
    for (mode, (peak, fin)) in modes.iter().zip(worst) {
        println!(
            "worst reserved/live, relocation {:>16}: peak {peak:.3}  final {fin:.3}",
            mode.name()
        );
    }
}
