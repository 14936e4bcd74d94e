//! Programs: what a fuzz input, a corpus file or a scenario asks the world to do.
//!
//! Ops name streams and allocations by small indices that are taken modulo
//! what exists when the op runs (`alloc: 7` with three live allocations is
//! the second one), so every decoded program is meaningful: there is no
//! "invalid index" to reject, and the fuzzer spends its time on behaviour.

pub(crate) mod decode;

/// One operation of a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `reserve(size)` on a stream's manager, then write a pattern into it.
    Reserve {
        /// Stream (manager) index.
        stream: u8,
        /// Bytes requested.
        size: u64,
    },
    /// Overwrite the head and tail of a live allocation with a new pattern.
    Write {
        /// Allocation index (among live ones).
        alloc: u8,
        /// Pattern seed.
        seed: u8,
    },
    /// Drop the user's handle of an allocation.
    Drop {
        /// Allocation index (among user-held ones).
        alloc: u8,
    },
    /// Drop the user's handle from a freshly spawned thread.
    DropOnThread {
        /// Allocation index (among user-held ones).
        alloc: u8,
    },
    /// `bind(reserved, assigned, cursor)` (possibly across managers).
    Bind {
        /// Allocation whose memory is handed over.
        reserved: u8,
        /// Allocation that receives it.
        assigned: u8,
        /// The cursor stamped.
        cursor: u64,
    },
    /// Open (`persistent`) or close a Persistent window.
    Mode {
        /// Stream index.
        stream: u8,
        /// `true`: Persistent; `false`: Auto.
        persistent: bool,
    },
    /// `cleanup(explicit)`.
    Cleanup {
        /// Stream index.
        stream: u8,
        /// Explicit cleanup (every empty page) or periodic.
        explicit: bool,
    },
    /// `install_pools` with one of the layouts of [`crate::layout`].
    Install {
        /// Stream index.
        stream: u8,
        /// Layout index.
        layout: u8,
    },
    /// Plan, copy (through the storage) and commit a relocation.
    Relocate {
        /// Stream index.
        stream: u8,
        /// Whether targets may take new pages.
        may_allocate: bool,
    },
    /// mem-relocate's `relocate_memory` for one of its reasons (the
    /// reason decides whether targets may take new pages).
    RelocateFor {
        /// Stream index.
        stream: u8,
        /// Reason index: explicit, memory pressure, out of page sizes, capture.
        reason: u8,
    },
    /// `get_resource(binding, start, end)`: a raw address (pins the page).
    Raw {
        /// Allocation index (among live ones).
        alloc: u8,
        /// Start offset (`None`: the start).
        start: Option<u64>,
        /// End offset (`None`: the end).
        end: Option<u64>,
    },
    /// `release_raw(binding)`.
    ReleaseRaw {
        /// Allocation index (among live ones).
        alloc: u8,
    },
    /// `capture_begin`.
    CaptureBegin {
        /// Stream index.
        stream: u8,
    },
    /// `capture_priming_end`.
    CapturePrimingEnd {
        /// Stream index.
        stream: u8,
    },
    /// `capture_end`; the returned handles are kept as the graph's.
    CaptureEnd {
        /// Stream index.
        stream: u8,
    },
    /// Drop every graph handle of a stream.
    DropGraphs {
        /// Stream index.
        stream: u8,
    },
    /// `reserve_bytes` on the budget manager or its overlay.
    BudgetReserve {
        /// Use the overlay.
        overlay: bool,
        /// Bytes.
        bytes: u64,
    },
    /// `alloc_raw` on the budget manager or its overlay, then write a pattern.
    BudgetAlloc {
        /// Use the overlay.
        overlay: bool,
        /// Bytes.
        bytes: u64,
    },
    /// Drop a budget reservation or allocation.
    BudgetDrop {
        /// Index among reservations then allocations.
        index: u8,
    },
    /// `reap_pending_deallocations` on the parent.
    BudgetReap,
    /// Fail the next device call (whatever the next op makes first).
    FailNext,
    /// The device completes `ops` more of a stream's submitted operations
    /// (a world with lazy streams, [`Program::lazy_streams`]; elsewhere
    /// every operation completes as it is submitted and this does nothing).
    Complete {
        /// Stream index.
        stream: u8,
        /// Operations completed (at most what was submitted).
        ops: u8,
    },
}

/// A sequence of ops, and the world it runs in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Program {
    /// The ops, in order.
    pub ops: Vec<Op>,
    /// Run on an arena world ([`crate::World::arenas`]): storages with
    /// virtual memory, arena layouts ([`crate::arena_layout`]), faults
    /// injected into virtual-memory calls.
    pub arenas: bool,
    /// Streams complete their work lazily (arena worlds only): a stream's
    /// completed cursor lags what it submitted until an [`Op::Complete`]
    /// (or a synchronize), the engines are told both cursors before every
    /// call, and the reclamation oracle checks every unmap against the
    /// uses still incomplete ([`crate::UseLog`]).
    pub lazy_streams: bool,
}

impl Program {
    /// A program of these ops, on the paged world.
    pub fn new(ops: Vec<Op>) -> Self {
        Self {
            ops,
            ..Self::default()
        }
    }

    /// A program of these ops, on an arena world.
    pub fn on_arenas(ops: Vec<Op>) -> Self {
        Self {
            ops,
            arenas: true,
            lazy_streams: false,
        }
    }

    /// A program of these ops, on an arena world whose streams complete
    /// their work lazily.
    pub fn on_lazy_streams(ops: Vec<Op>) -> Self {
        Self {
            ops,
            arenas: true,
            lazy_streams: true,
        }
    }

    /// Number of ops.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether it has no op.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}
