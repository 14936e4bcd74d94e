//! One trace through the five rows, `runs` times.

use gpumem_replay::Result;
use gpumem_replay::compare::{Allocator, CompareBackend, Row, Setup, run_row};
use gpumem_replay::replay::{AllocBackend, Program, ReplayOptions, replay};

use crate::table::{Measured, Table};
use crate::{v011, v012};

/// The device every row works within: gpumem's `sim` device, the offset
/// heap and CubeCL's storage (and so its `max_page_size`, a quarter of it).
pub const DEVICE_BYTES: u64 = 80 << 30;

/// What a CubeCL row's "reserved" is.
pub const CUBECL_RESERVED: &str = "bytes of pages held from the device by every pool \
     (tiny, small, arena with its outdated pools, persistent, dedicated): \
     the storage's bytes_allocated, frees taking effect at once";

/// What a CubeCL row's "storage calls" count.
pub const CUBECL_CALLS: &str = "page allocations and frees";

/// The rows, in the order printed.
#[derive(Debug, Clone, Copy)]
enum Peer {
    Compare(Allocator),
    Cubecl011,
    Cubecl012,
}

const PEERS: [Peer; 5] = [
    Peer::Compare(Allocator::Gpumem),
    // Paged pools: what a CubeCL user on wgpu (no virtual memory) gets.
    Peer::Compare(Allocator::SubSlices),
    Peer::Compare(Allocator::OffsetAllocator),
    Peer::Cubecl011,
    Peer::Cubecl012,
];

/// Replays `backend` and makes its row.
fn cubecl_row<B: AllocBackend>(
    name: &'static str,
    source: &str,
    program: &Program,
    mut backend: B,
    calls: impl Fn(&B) -> u64,
) -> Result<Row> {
    let report = replay(source, program, &mut backend, &ReplayOptions::default())?.report;
    Ok(Row::from_report(
        name,
        &report,
        calls(&backend),
        CUBECL_RESERVED,
        CUBECL_CALLS,
    ))
}

fn run_peer(peer: Peer, source: &str, program: &Program, setup: &Setup) -> Result<Row> {
    let streams = program.streams.len();
    match peer {
        Peer::Compare(allocator) => run_row(allocator, source, program, setup),
        Peer::Cubecl011 => cubecl_row(
            v011::NAME,
            source,
            program,
            v011::engine::CubeclBackend::new(DEVICE_BYTES, streams),
            v011::engine::CubeclBackend::storage_calls,
        ),
        Peer::Cubecl012 => cubecl_row(
            v012::NAME,
            source,
            program,
            v012::engine::CubeclBackend::new(DEVICE_BYTES, streams),
            v012::engine::CubeclBackend::storage_calls,
        ),
    }
}

/// Replays `program` through every row `runs` times, run by run.
///
/// # Errors
/// A device gpumem refuses to build, `GPUMEM_CONF` unreadable, or a
/// backend failure that stops a replay.
pub fn measure(source: &str, program: &Program, runs: usize) -> Result<Table> {
    let setup = Setup {
        backend: CompareBackend::Sim,
        capacity: DEVICE_BYTES,
        config: gpumem_replay::setup::base_config()?,
        threads: false,
        splits: false,
        pytorch: gpumem_replay::compare::pytorch::Policy::default(),
    };
    let mut measured: Vec<Measured> = Vec::new();
    for run in 0..runs.max(1) {
        for (index, &peer) in PEERS.iter().enumerate() {
            let row = run_peer(peer, source, program, &setup)?;
            if run == 0 {
                measured.push(Measured::new(row));
            } else {
                measured[index].add_run(&row);
            }
        }
    }
    Ok(Table {
        source: source.to_string(),
        ops: program.ops.len() as u64,
        rows: measured,
    })
}
