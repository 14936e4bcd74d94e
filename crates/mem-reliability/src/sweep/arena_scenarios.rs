//! The fault-sweep scenarios that run on an arena world
//! ([`crate::program::Program::on_arenas`]): their sweep fails each
//! virtual-memory call in turn (reserve and free a range, create and
//! release a chunk, map, unmap). The paged scenarios and the
//! [`crate::sweep::scenario::Scenario`] list are in `scenario.rs`.

use crate::program::Op;
use crate::sweep::steps::{cleanup, reserve};

/// Arena layout 0 (one arena, 1 MiB ranges, two chunks cached), 64 KiB
/// chunks. Offsets in the comments are those of the fault-free run.
pub(super) fn arena_growth() -> Vec<Op> {
    vec![
        reserve(0, 100_000), // granules 0-1
        reserve(0, 200_000), // 1-4
        reserve(0, 3000),    // 4
        reserve(0, 150_000), // 4-6
        // A hole: granules 2 and 3 go idle (cached, the threshold is two).
        Op::Drop { alloc: 1 },
        // Too big for the hole: lands past the end and takes the hole's
        // two idle chunks before creating two.
        reserve(0, 250_000),
        Op::Write { alloc: 0, seed: 5 },
        // No room left in the first range: a second one.
        reserve(0, 400_000),
        Op::Drop { alloc: 0 },
        cleanup(0, false),
        Op::DropOnThread { alloc: 1 },
        reserve(1, 40_000),
        // Lands in the hole at the start, on mapped chunks.
        reserve(0, 120_000),
        cleanup(0, true),
        reserve(2, 600_000), // stream 2's own range
        Op::Write { alloc: 5, seed: 9 },
        Op::Drop { alloc: 5 },
        // Its range empties: its chunks and the range go back.
        cleanup(2, true),
        reserve(0, 64),
    ]
}

/// Arena layout 1: a small-slice arena (to 16 KiB, one chunk cached), a
/// growable sliced pool (to 64 KiB) and a large arena (caching nothing).
pub(super) fn arena_pages() -> Vec<Op> {
    vec![
        Op::Install {
            stream: 0,
            layout: 1,
        },
        reserve(0, 8000),    // small arena
        reserve(0, 8000),    // small arena
        reserve(0, 16_000),  // small arena
        reserve(0, 20_000),  // sliced pool: its page size grows to 32 KiB
        reserve(0, 300_000), // large arena, granules 0-4
        // The sliced pool grows again: the 32 KiB page is outdated, live.
        reserve(0, 40_000),
        Op::Drop { alloc: 0 },
        Op::Drop { alloc: 0 },
        Op::Drop { alloc: 0 }, // the small arena's chunk goes idle, cached
        // The large arena needs new granules: the small arena's idle
        // chunk moves there first.
        reserve(0, 200_000),
        Op::Write { alloc: 1, seed: 3 },
        Op::Raw {
            alloc: 1,
            start: None,
            end: None,
        },
        // Moves the outdated page's slice; the raw-out arena slice stays.
        Op::Relocate {
            stream: 0,
            may_allocate: true,
        },
        reserve(0, 20_000), // sliced pool
        // The 40 000-byte sliced slot takes the 200 000-byte arena slice.
        Op::Bind {
            reserved: 3,
            assigned: 2,
            cursor: 4,
        },
        Op::ReleaseRaw { alloc: 1 },
        Op::Drop { alloc: 1 },
        reserve(0, 10_000),
        Op::RelocateFor {
            stream: 0,
            reason: 0,
        },
        cleanup(0, true),
        Op::Install {
            stream: 0,
            layout: 2,
        },
    ]
}

/// Arena layout 0 on stream 1, with a capture window.
pub(super) fn arena_capture() -> Vec<Op> {
    vec![
        reserve(1, 200_000), // arena, granules 0-3
        reserve(1, 50_000),  // arena, granules 3-4
        reserve(1, 130_000), // arena, granules 4-6
        Op::CaptureBegin { stream: 1 },
        reserve(1, 3000), // persistent
        // Freed inside the window: its chunks go idle, none is given back.
        Op::Drop { alloc: 0 },
        reserve(1, 20_000), // persistent
        Op::Bind {
            reserved: 1,
            assigned: 2,
            cursor: 7,
        },
        Op::CapturePrimingEnd { stream: 1 },
        reserve(1, 900),
        reserve(1, 100_000), // would allocate: refused
        Op::CaptureEnd { stream: 1 },
        Op::Write { alloc: 0, seed: 1 },
        Op::DropGraphs { stream: 1 },
        Op::Drop { alloc: 0 },
        cleanup(1, false),
        // Lands on the chunks the window left idle.
        reserve(1, 180_000),
        cleanup(1, true),
        reserve(1, 500_000),
    ]
}

/// `install_pools` between arena layouts and a paged one.
pub(super) fn arena_install() -> Vec<Op> {
    vec![
        reserve(0, 5000), // arena
        Op::Mode {
            stream: 0,
            persistent: true,
        },
        reserve(0, 7000), // persistent
        Op::Mode {
            stream: 0,
            persistent: false,
        },
        Op::Install {
            stream: 0,
            layout: 1,
        }, // refused: an arena slice lives
        Op::Drop { alloc: 0 },
        Op::Install {
            stream: 0,
            layout: 1,
        }, // the arena's chunk and range go back
        reserve(0, 100_000), // large arena
        reserve(0, 16_000),  // small arena
        reserve(0, 30_000),  // sliced pool
        Op::Drop { alloc: 1 },
        Op::Drop { alloc: 1 },
        Op::Drop { alloc: 1 },
        Op::Install {
            stream: 0,
            layout: 2,
        }, // paged
        reserve(0, 200_000),
        Op::Drop { alloc: 1 },
        Op::Install {
            stream: 0,
            layout: 0,
        },
        reserve(0, 500_000),
    ]
}

/// Arena layout 0 with lazy streams ([`crate::Program::on_lazy_streams`]):
/// every write is an operation that completes only at an `Op::Complete`,
/// so freed chunks wait, mapped and idle, for their stream's work before
/// any cleanup, shed or trim may unmap them.
pub(super) fn arena_streams() -> Vec<Op> {
    let complete = |stream, ops| Op::Complete { stream, ops };
    vec![
        reserve(0, 200_000), // granules 0-3, stream 0's operation 1
        reserve(0, 3000),    // granule 3, operation 2
        reserve(1, 300_000), // stream 1's range, its operation 1
        // Freed after operation 2 was submitted: its chunks wait for it.
        Op::Drop { alloc: 0 },
        cleanup(0, true),
        // Too big for the hole, whose chunks are not ready: creates.
        reserve(0, 500_000),
        complete(0, 1),
        cleanup(0, true),                // operation 2 still runs: nothing unmapped
        Op::Write { alloc: 1, seed: 3 }, // stream 1's operation 2
        reserve(0, 600_000),             // a second range
        complete(0, 9),
        Op::Write { alloc: 3, seed: 4 }, // the 600 000 bytes, operation 5
        Op::Drop { alloc: 3 },
        // Stream 0's work through 4 is done: the hole's chunks go, the
        // second range's wait for operation 5, and stream 1's work still
        // runs elsewhere.
        cleanup(0, true),
        Op::Drop { alloc: 1 }, // stream 1's slice, its work running
        reserve(1, 100_000),   // the same stream reuses the hole at once
        cleanup(1, true),
        complete(1, 1),
        cleanup(1, true), // operation 2 still runs
        Op::Relocate {
            stream: 1,
            may_allocate: true,
        },
        complete(1, 9),
        cleanup(1, true),
        Op::Drop { alloc: 0 },
        Op::Drop { alloc: 0 },
        reserve(0, 64), // the second range's chunks still wait
        complete(0, 2),
        reserve(0, 90_000),
        Op::Install {
            stream: 2,
            layout: 1,
        },
        reserve(2, 8000),
        Op::Drop { alloc: 3 },
        Op::Install {
            stream: 2,
            layout: 0,
        }, // refused: the small arena's chunk waits for stream 2's write
        complete(2, 5),
        Op::Install {
            stream: 2,
            layout: 0,
        },
    ]
}
