//! `arena-table`: physical memory held against live data on every built-in
//! workload and every recorded trace in `traces/` — paged pools, arenas,
//! offset-allocator's extent in whole chunks (`gpumem compare`'s rows),
//! and the floor — with storage calls and ns per op (see
//! `gpumem_benches::arenas`). Run in
//! release: `cargo run --release -p gpumem-benches --bin arena-table
//! [-- TRACES_DIR]`.

use std::path::PathBuf;
use std::process::ExitCode;

use gpumem_benches::arenas::{arena_rows, markdown};
use gpumem_replay::workload::WorkloadSpec;

fn main() -> ExitCode {
    let traces = std::env::args()
        .nth(1)
        .map_or_else(|| PathBuf::from("traces"), PathBuf::from);
    if cfg!(debug_assertions) {
        eprintln!("arena-table: built without optimizations; ns per op mean little");
    }
    match arena_rows(&WorkloadSpec::default(), &traces) {
        Ok(rows) => {
            print!("{}", markdown(&rows));
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("arena-table: {err}");
            ExitCode::FAILURE
        }
    }
}
