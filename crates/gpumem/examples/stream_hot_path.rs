//! The facade's reserve+drop hot path, for profilers and for stream scaling.
//!
//! `cargo run -p gpumem --example stream_hot_path --release -- <mode> <ops> [arg]`
//!
//! - `pair`: reserve one size on stream 0 and drop it (sizes cycle 512 B,
//!   4 KiB, 64 KiB, 1 MiB), nothing else live.
//! - `churn <live>`: `live` slices of 64 B – 4 KiB held on stream 0; each
//!   op drops one and reserves another.
//! - `engine`: the `pair` loop on stream 0's own pool engine, inside one
//!   `Stream::with_memory` call: the same layout (arenas) without the
//!   facade, so `pair` minus `engine` is what the facade costs per pair.
//! - `threads <n>`: `n` threads, thread `i` doing `ops` reserve+drop pairs
//!   on stream `i` of an `n`-stream device. Prints the aggregate ops per
//!   second, so 1, 2, 4 threads side by side give the scaling.
//!
//! The device is `Device::simulated(80 GiB)` with every default (arenas),
//! what a user of the facade gets. Under `valgrind --tool=callgrind` run a
//! single-threaded mode twice with different `ops` and divide the
//! difference in instructions by the difference in ops: the setup cancels
//! out, leaving instructions per op.

use std::time::Instant;

use gpumem::prelude::*;

use gpumem::units::GIB;
const PAIR_SIZES: [u64; 4] = [512, 4096, 64 << 10, 1 << 20];

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

fn device(streams: usize) -> Device {
    Device::simulated(80 * GIB)
        .ignore_env()
        .streams(streams)
        .build()
        .expect("a simulated device")
}

/// `ops` reserve+drop pairs on `stream`, after one warm-up round.
fn pairs(stream: &Stream, ops: u64) {
    for &size in &PAIR_SIZES {
        drop(stream.reserve(size).expect("warm"));
    }
    for i in 0..ops {
        let handle = stream.reserve(PAIR_SIZES[i as usize % 4]).expect("pair");
        drop(std::hint::black_box(handle));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("pair", String::as_str);
    let ops: u64 = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let arg: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(0);
    match mode {
        "churn" => {
            let live = arg.max(1);
            let device = device(1);
            let stream = device.default_stream();
            let mut rng = Lcg(0xBE7C);
            let mut held: Vec<Option<ManagedMemoryHandle>> = (0..live)
                .map(|_| Some(stream.reserve(rng.size()).expect("fill")))
                .collect();
            for _ in 0..live {
                let slot = rng.next() as usize % live;
                held[slot] = None;
                held[slot] = Some(stream.reserve(rng.size()).expect("age"));
            }
            let plan: Vec<(usize, u64)> = (0..ops)
                .map(|_| (rng.next() as usize % live, rng.size()))
                .collect();
            let start = Instant::now();
            for (slot, size) in plan {
                // The drop queues the free; this reserve drains it.
                held[slot] = None;
                held[slot] = Some(stream.reserve(size).expect("churn"));
            }
            let ns = start.elapsed().as_nanos() as f64 / ops as f64;
            println!("churn live={live} ops={ops} ns/op={ns:.1}");
        }
        "engine" => {
            let device = device(1);
            let start = Instant::now();
            device.default_stream().with_memory(|engine| {
                for &size in &PAIR_SIZES {
                    drop(engine.reserve(size).expect("warm"));
                }
                for i in 0..ops {
                    let handle = engine.reserve(PAIR_SIZES[i as usize % 4]).expect("pair");
                    drop(std::hint::black_box(handle));
                }
            });
            let ns = start.elapsed().as_nanos() as f64 / ops as f64;
            println!("engine pair ops={ops} ns/op={ns:.1}");
        }
        "threads" => {
            let n = arg.max(1);
            let device = device(n);
            let start = Instant::now();
            std::thread::scope(|scope| {
                for stream in device.streams() {
                    scope.spawn(move || pairs(&stream, ops));
                }
            });
            let secs = start.elapsed().as_secs_f64();
            let total = ops as f64 * n as f64;
            println!(
                "threads={n} ops/thread={ops} Mops/s={:.3} ns/op/thread={:.1}",
                total / secs / 1e6,
                secs * 1e9 / ops as f64
            );
        }
        _ => {
            let device = device(1);
            let start = Instant::now();
            pairs(&device.default_stream(), ops);
            let ns = start.elapsed().as_nanos() as f64 / ops as f64;
            println!("pair ops={ops} ns/op={ns:.1}");
        }
    }
}
