//! The reserve+drop hot path in isolation, for profilers and quick timing.
//!
//! `cargo run -p mem-pools --example hot_path --release -- <pair|churn> <ops> [live]`
//!
//! - `pair`: reserve one size and drop it (sizes cycle 512 B, 4 KiB,
//!   64 KiB, 1 MiB), nothing else live.
//! - `churn`: `live` slices of 64 B – 4 KiB (log-uniform) held live; each op
//!   drops one and reserves another in its place.
//!
//! It prints ns per op. Under `valgrind --tool=callgrind` run it twice with
//! different `ops` and divide the difference in instructions by the
//! difference in ops: the setup cancels out, leaving instructions per op.

use std::sync::Arc;
use std::time::Instant;

use mem_pools::{
    ManagedMemoryHandle, MemoryConfiguration, MemoryDeviceProperties, MemoryManagement,
    MemoryManagementOptions, ServerLogger,
};
use mem_storage::SimulatedStorage;

use mem_storage::units::GIB;

/// A small deterministic generator (same numbers everywhere).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    /// Log-uniform in 64 B .. 4 KiB.
    fn size(&mut self) -> u64 {
        let exp = 6 + self.next() % 6;
        (1 << exp) + self.next() % (1 << exp)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("pair", String::as_str);
    let ops: u64 = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let live: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let props = MemoryDeviceProperties {
        max_page_size: 20 * GIB,
        alignment: 256,
    };
    let mut mm = MemoryManagement::from_configuration(
        SimulatedStorage::simulated(80 * GIB),
        &props,
        MemoryConfiguration::SubSlices,
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    );
    let mut rng = Lcg(0xBE7C);
    let start;
    match mode {
        "churn" => {
            let mut held: Vec<Option<ManagedMemoryHandle>> = (0..live)
                .map(|_| Some(mm.reserve(rng.size()).expect("fill")))
                .collect();
            for _ in 0..live {
                let slot = rng.next() as usize % live;
                held[slot] = None;
                held[slot] = Some(mm.reserve(rng.size()).expect("age"));
            }
            let plan: Vec<(usize, u64)> = (0..ops)
                .map(|_| (rng.next() as usize % live, rng.size()))
                .collect();
            start = Instant::now();
            for (slot, size) in plan {
                // The drop queues the free; this reserve drains it.
                held[slot] = None;
                held[slot] = Some(mm.reserve(size).expect("churn"));
            }
        }
        _ => {
            let sizes = [512, 4096, 64 << 10, 1 << 20];
            for &size in &sizes {
                drop(mm.reserve(size).expect("warm"));
            }
            start = Instant::now();
            for i in 0..ops {
                let handle = mm.reserve(sizes[i as usize % 4]).expect("pair");
                drop(std::hint::black_box(handle));
            }
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / ops as f64;
    println!("{mode} ops={ops} ns/op={ns:.1}");
}
