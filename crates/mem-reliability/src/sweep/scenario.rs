//! The fault-sweep scenarios: fixed programs, one per area of the engine.
//!
//! Each is a plain [`Program`], so a scenario runs through the same model
//! and checks as a fuzz input; the sweep fails each of its device calls in
//! turn. They are small on purpose (tens of ops, about a hundred device
//! calls) so that a full sweep of every `k` runs in seconds.
//!
//! The arena scenarios run on an arena world ([`Program::on_arenas`]):
//! their sweep fails each virtual-memory call in turn — reserve and free a
//! range, create and release a chunk, map, unmap.

use crate::program::{Op, Program};
use crate::sweep::arena_scenarios::{
    arena_capture, arena_growth, arena_install, arena_pages, arena_streams,
};
use crate::sweep::steps::reserve;

/// An area of the engine under fault injection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scenario {
    /// Pool growth: sliced pages, page-size doubling, exclusive pages, frees.
    Growth,
    /// Relocation of outdated pages (the engine's steps, then mem-relocate's
    /// `relocate_memory`), with a raw address pinning one.
    Relocation,
    /// A capture window: priming, recording, a refused allocation, graph handles.
    Capture,
    /// Budget manager and overlay against the global budget shared with pools.
    BudgetOverlay,
    /// `install_pools`: refused while in use, replaced when empty.
    InstallPools,
    /// Arenas: slices over many chunks, holes whose idle chunks move to
    /// where the next slice needs them, a second range, the cache trimmed
    /// to the threshold and to nothing.
    ArenaGrowth,
    /// Arenas mixed with a growable sliced pool: a chunk cached by the
    /// small arena serves the large one, raw addresses, a bind, relocation
    /// of the sliced pool's outdated pages.
    ArenaPages,
    /// A capture window over arenas: arena slices freed inside it, a bind,
    /// a refused allocation, graph handles, then the cache reused.
    ArenaCapture,
    /// `install_pools` between arena and paged layouts.
    ArenaInstall,
    /// Arenas on lazy streams: freed chunks wait for their stream's work
    /// through cleanups, reservations and an install, and go once it
    /// completes (the reclamation oracle checks every unmap).
    ArenaStreams,
}

impl Scenario {
    /// Every scenario.
    pub const ALL: [Scenario; 10] = [
        Scenario::Growth,
        Scenario::Relocation,
        Scenario::Capture,
        Scenario::BudgetOverlay,
        Scenario::InstallPools,
        Scenario::ArenaGrowth,
        Scenario::ArenaPages,
        Scenario::ArenaCapture,
        Scenario::ArenaInstall,
        Scenario::ArenaStreams,
    ];

    /// The arena scenarios.
    pub const ARENAS: [Scenario; 5] = [
        Scenario::ArenaGrowth,
        Scenario::ArenaPages,
        Scenario::ArenaCapture,
        Scenario::ArenaInstall,
        Scenario::ArenaStreams,
    ];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Growth => "growth",
            Scenario::Relocation => "relocation",
            Scenario::Capture => "capture",
            Scenario::BudgetOverlay => "budget overlay",
            Scenario::InstallPools => "install_pools",
            Scenario::ArenaGrowth => "arena growth",
            Scenario::ArenaPages => "arena + pages",
            Scenario::ArenaCapture => "arena capture",
            Scenario::ArenaInstall => "arena install_pools",
            Scenario::ArenaStreams => "arena lazy streams",
        }
    }

    /// Whether it runs on an arena world.
    pub fn arenas(self) -> bool {
        Self::ARENAS.contains(&self)
    }

    /// Its program.
    pub fn program(self) -> Program {
        let ops = match self {
            Scenario::Growth => growth(),
            Scenario::Relocation => relocation(),
            Scenario::Capture => capture(),
            Scenario::BudgetOverlay => budget_overlay(),
            Scenario::InstallPools => install_pools(),
            Scenario::ArenaGrowth => arena_growth(),
            Scenario::ArenaPages => arena_pages(),
            Scenario::ArenaCapture => arena_capture(),
            Scenario::ArenaInstall => arena_install(),
            Scenario::ArenaStreams => arena_streams(),
        };
        match (self.arenas(), self == Scenario::ArenaStreams) {
            (true, true) => Program::on_lazy_streams(ops),
            (true, false) => Program::on_arenas(ops),
            (false, _) => Program::new(ops),
        }
    }
}

fn growth() -> Vec<Op> {
    vec![
        reserve(0, 1000),
        reserve(0, 3000),
        reserve(0, 5000),
        reserve(0, 20_000),
        reserve(0, 70_000),
        reserve(1, 0),
        reserve(1, 4096),
        Op::Drop { alloc: 1 },
        reserve(0, 40_000),
        Op::Write { alloc: 0, seed: 9 },
        Op::DropOnThread { alloc: 2 },
        reserve(0, 12_000),
        Op::Cleanup {
            stream: 0,
            explicit: false,
        },
        Op::Drop { alloc: 0 },
        Op::Cleanup {
            stream: 0,
            explicit: true,
        },
        reserve(2, 262_144),
    ]
}

fn relocation() -> Vec<Op> {
    vec![
        reserve(0, 1000),
        reserve(0, 2000),
        reserve(0, 900),
        reserve(0, 5000),
        reserve(0, 9000),
        reserve(0, 17_000),
        Op::Relocate {
            stream: 0,
            may_allocate: true,
        },
        Op::Write { alloc: 1, seed: 3 },
        Op::Raw {
            alloc: 2,
            start: None,
            end: None,
        },
        reserve(0, 33_000),
        Op::Relocate {
            stream: 0,
            may_allocate: false,
        },
        Op::ReleaseRaw { alloc: 2 },
        Op::Relocate {
            stream: 0,
            may_allocate: true,
        },
        reserve(0, 2000),
        reserve(0, 40_000),
        // Through mem-relocate: out of page sizes (may allocate), then explicit.
        Op::RelocateFor {
            stream: 0,
            reason: 2,
        },
        Op::RelocateFor {
            stream: 0,
            reason: 0,
        },
        Op::Drop { alloc: 0 },
        Op::Cleanup {
            stream: 0,
            explicit: false,
        },
    ]
}

fn capture() -> Vec<Op> {
    vec![
        reserve(1, 3000),
        Op::CaptureBegin { stream: 1 },
        reserve(1, 1000),
        reserve(1, 20_000),
        Op::Drop { alloc: 1 },
        Op::CapturePrimingEnd { stream: 1 },
        reserve(1, 900),
        reserve(1, 200_000),
        Op::Bind {
            reserved: 2,
            assigned: 0,
            cursor: 7,
        },
        Op::CaptureEnd { stream: 1 },
        Op::Write { alloc: 0, seed: 1 },
        Op::DropGraphs { stream: 1 },
        Op::Cleanup {
            stream: 1,
            explicit: true,
        },
    ]
}

fn budget_overlay() -> Vec<Op> {
    vec![
        Op::BudgetReserve {
            overlay: false,
            bytes: 100_000,
        },
        Op::BudgetAlloc {
            overlay: true,
            bytes: 300_000,
        },
        reserve(0, 262_144),
        Op::BudgetAlloc {
            overlay: false,
            bytes: 300_000,
        },
        Op::BudgetAlloc {
            overlay: true,
            bytes: 300_000,
        },
        Op::BudgetDrop { index: 1 },
        Op::BudgetReserve {
            overlay: true,
            bytes: 600_000,
        },
        Op::BudgetDrop { index: 0 },
        Op::BudgetReap,
        Op::BudgetAlloc {
            overlay: true,
            bytes: 4096,
        },
        Op::BudgetDrop { index: 0 },
        Op::BudgetReap,
    ]
}

fn install_pools() -> Vec<Op> {
    vec![
        reserve(0, 5000),
        Op::Mode {
            stream: 0,
            persistent: true,
        },
        reserve(0, 7000),
        Op::Mode {
            stream: 0,
            persistent: false,
        },
        Op::Install {
            stream: 0,
            layout: 1,
        },
        Op::Drop { alloc: 0 },
        Op::Install {
            stream: 0,
            layout: 1,
        },
        reserve(0, 100_000),
        reserve(0, 16_000),
        Op::Drop { alloc: 1 },
        Op::Drop { alloc: 1 },
        Op::Install {
            stream: 0,
            layout: 2,
        },
        reserve(0, 500_000),
    ]
}
