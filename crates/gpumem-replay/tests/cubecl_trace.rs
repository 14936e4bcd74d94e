//! A trace the CubeCL adapter recorded (`GPUMEM_TRACE`, docs/cubecl.md,
//! "Recording a trace"), committed as `tests/data/cubecl-adapter.jsonl`,
//! reads with the replay's own reader and compiles into a program.

use std::io::BufReader;

use gpumem_replay::replay::Program;
use gpumem_replay::trace::{Event, read_jsonl};

const TRACE: &[u8] = include_bytes!("data/cubecl-adapter.jsonl");

#[test]
fn a_trace_the_cubecl_adapter_recorded_reads_and_compiles_with_its_peak_live_right() {
    let trace = read_jsonl(BufReader::new(TRACE)).unwrap();
    let mut live = 0u64;
    let mut peak = 0u64;
    let mut sizes = std::collections::HashMap::new();
    let (mut allocs, mut frees, mut modes) = (0, 0, 0);
    for event in &trace.events {
        match event {
            Event::Alloc { id, size, .. } => {
                allocs += 1;
                sizes.insert(*id, *size);
                live += size;
                peak = peak.max(live);
            }
            Event::Free { id } => {
                frees += 1;
                live -= sizes[id];
            }
            Event::Mode(_) => modes += 1,
            _ => {}
        }
    }
    assert_eq!((allocs, frees, modes), (8, 6, 2));
    // The 1 MiB persistent allocation and the four temporaries live when
    // the 24 KiB one is reserved (12, 16, 20 and 24 KiB): the frees of the
    // 4 and 8 KiB ones were written before the allocs that followed them.
    assert_eq!(peak, (1 << 20) + 12288 + 16384 + 20480 + 24576);
    Program::compile(&trace.events).unwrap();
}
