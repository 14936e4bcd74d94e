//! The engine's record of an open capture window and the plain data it
//! shows ([`CaptureState`], whose docs are the window's contract).

use std::collections::BTreeMap;

use crate::handles::handle_cell::ManagedMemoryHandle;

use crate::handles::keys::SlotKey;

/// What a capture window has done so far (plain data).
///
/// # The capture window
/// `capture_begin` forces every reservation into the persistent pool
/// (exact fit, no bucket padding) and starts recording the extents the
/// window hands out (by `reserve` and by `bind`). While *priming* (from
/// begin until `capture_priming_end`) the engine retains a clone of every
/// handle it hands out, so warmup grows the pool to the pass's whole working
/// set rather than its transient peak; priming end drops those clones and
/// the slices become free, kept by the pool. After priming, a reservation
/// that would need a new page is [`crate::IoError::CaptureWouldAllocate`].
/// `capture_end` restores the mode (the Persistent windows underneath are
/// kept as they were) and returns one retained handle per touched extent —
/// re-claiming an extent freed inside the window. Each is a *pin handle*, a
/// holder of its own that pins the memory against relocation while any
/// clone of it lives: the pin ends with the graph, not with the memory.
/// During a capture nothing is given back to the storage.
///
/// `capture_abort` ends a window whose graph is thrown away: mode restored,
/// priming clones dropped, nothing re-claimed or pinned.
///
/// Wrong-order calls are documented no-ops: a second `capture_begin` keeps
/// the first capture's record; `capture_priming_end` without a capture or
/// after priming ended does nothing; `capture_end` without a capture returns
/// an empty list; `capture_abort` without a capture does nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CaptureState {
    /// A capture is open.
    pub active: bool,
    /// Warmup is still priming (slices handed out are retained).
    pub priming: bool,
    /// Distinct extents handed out inside the window so far.
    pub touched: usize,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Extent {
    pub(crate) page: u32,
    pub(crate) cap: u64,
    pub(crate) requested: u64,
}

/// The engine's record of an open capture.
#[derive(Debug)]
pub(crate) struct CaptureRecord {
    pub(crate) priming: bool,
    /// Clones retained while priming, by slot. Ordered, not hashed: the
    /// clones drop in slot order when priming ends, so the slices free in
    /// the same order in every process and the same program places the same
    /// way (a hash map's order differs between processes).
    pub(crate) primed: BTreeMap<SlotKey, ManagedMemoryHandle>,
    /// (page uid, offset) → extent handed out; ordered for the same reason:
    /// `capture_end` re-claims and pins extents in page and address order.
    pub(crate) touched: BTreeMap<(u64, u64), Extent>,
}

impl CaptureRecord {
    /// A window just begun: priming, nothing touched.
    pub(crate) fn new() -> Self {
        Self {
            priming: true,
            primed: BTreeMap::new(),
            touched: BTreeMap::new(),
        }
    }

    /// What the window has done so far.
    pub(crate) fn state(&self) -> CaptureState {
        CaptureState {
            active: true,
            priming: self.priming,
            touched: self.touched.len(),
        }
    }
}
