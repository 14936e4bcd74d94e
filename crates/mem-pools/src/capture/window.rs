//! The memory side of graph capture.
//!
//! `capture_begin` forces every reservation into the persistent pool
//! (exact fit, no bucket padding) and starts recording the extents the
//! window hands out (by `reserve` and by `bind`). While *priming* (from
//! begin until `capture_priming_end`) the engine retains a clone of every
//! handle it hands out, so warmup grows the pool to the pass's whole working
//! set rather than its transient peak; priming end drops those clones and
//! the slices become free, kept by the pool. After priming, a reservation
//! that would need a new page is [`crate::IoError::CaptureWouldAllocate`].
//! `capture_end` restores the mode (the Persistent windows underneath are
//! kept as they were) and returns one retained handle per touched extent —
//! re-claiming an extent freed inside the window. Each is a *pin handle*, a
//! holder of its own that pins the memory against relocation while any
//! clone of it lives: the pin ends with the graph, not with the memory.
//! During a capture nothing is given back to the storage.
//!
//! `capture_abort` ends a window whose graph is thrown away: mode restored,
//! priming clones dropped, nothing re-claimed or pinned.
//!
//! Wrong-order calls are documented no-ops: a second `capture_begin` keeps
//! the first capture's record; `capture_priming_end` without a capture or
//! after priming ended does nothing; `capture_end` without a capture returns
//! an empty list; `capture_abort` without a capture does nothing.

use std::collections::HashMap;

use mem_storage::ComputeStorage;

use crate::engine::management::MemoryManagement;
use crate::handles::handle::{ManagedMemoryHandle, SlotKey};

/// What a capture window has done so far (plain data).
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
struct Extent {
    page: u32,
    cap: u64,
    requested: u64,
}

/// The engine's record of an open capture.
#[derive(Debug)]
pub(crate) struct CaptureRecord {
    pub(crate) priming: bool,
    /// Clones retained while priming, by slot.
    primed: HashMap<SlotKey, ManagedMemoryHandle>,
    /// (page uid, offset) → extent handed out.
    touched: HashMap<(u64, u64), Extent>,
}

impl<S: ComputeStorage> MemoryManagement<S> {
    /// Record that the window handed out `slice` (to `handle`).
    pub(crate) fn touch(&mut self, slice: u32, handle: &ManagedMemoryHandle) {
        let Some(record) = self.capture.as_mut() else {
            return;
        };
        // Only touched slots need a way back to their handles (capture_end),
        // so the reserve path outside a capture pays for no weak reference.
        let allocation = handle.allocation();
        self.core.slots.set_holder(allocation);
        let node = &self.core.slices[slice];
        let page = &self.core.pages[node.page];
        record.touched.insert(
            (page.uid, node.offset),
            Extent {
                page: node.page,
                cap: node.size,
                requested: node.requested,
            },
        );
        if record.priming {
            record.primed.insert(allocation.key(), allocation.clone());
        }
    }

    /// Holders of `handle` (pins included) other than the engine's priming clone.
    pub(crate) fn outside_holders(&self, handle: &ManagedMemoryHandle) -> usize {
        let primed = self
            .capture
            .as_ref()
            .is_some_and(|r| r.primed.contains_key(&handle.key()));
        handle.holders() - usize::from(primed)
    }

    /// Drop the engine's priming clone of a slot, if any.
    pub(crate) fn forget_primed(&mut self, key: SlotKey) {
        if let Some(record) = self.capture.as_mut() {
            record.primed.remove(&key);
        }
    }

    /// Begin a graph capture (see the module docs). If one is already
    /// active only the mode stays forced; its record is kept.
    pub fn capture_begin(&mut self) {
        if self.capture.is_none() {
            self.drain();
            self.capture = Some(CaptureRecord {
                priming: true,
                primed: HashMap::new(),
                touched: HashMap::new(),
            });
        }
    }

    /// End priming: release the slices warmup retained, free in the pool.
    /// No-op when no capture is active or priming already ended.
    pub fn capture_priming_end(&mut self) {
        let Some(record) = self.capture.as_mut() else {
            return;
        };
        if !record.priming {
            return;
        }
        record.priming = false;
        let primed = std::mem::take(&mut record.primed);
        drop(primed);
        self.drain();
    }

    /// End the capture: restore the mode and return a pin handle to every
    /// extent the window touched. Empty if no capture was active.
    ///
    /// Each pin handle is a holder of its own (see [`ManagedMemoryHandle`]):
    /// the memory does not move while any clone of it lives, and stops being
    /// pinned when the last clone drops, even if the user still holds the
    /// allocation. The allocation is freed when its last holder of any kind
    /// drops.
    pub fn capture_end(&mut self) -> Vec<ManagedMemoryHandle> {
        let Some(record) = self.capture.take() else {
            return Vec::new();
        };
        drop(record.primed);
        self.drain();
        let mut out: Vec<ManagedMemoryHandle> = Vec::with_capacity(record.touched.len());
        let mut seen = std::collections::HashSet::new();
        for ((uid, offset), extent) in record.touched {
            if self
                .core
                .pages
                .get(extent.page)
                .is_none_or(|p| p.uid != uid)
            {
                continue;
            }
            let handle = match self.live_at(extent.page, offset) {
                Some(handle) => Some(handle),
                None => self.claim_extent(extent.page, offset, extent.cap, extent.requested),
            };
            let Some(handle) = handle else {
                tracing::warn!(
                    offset,
                    size = extent.cap,
                    "a touched extent was reused in a different shape; not pinned"
                );
                continue;
            };
            if let Ok(slice) = self.resolve(&handle.binding()) {
                if !seen.insert(slice) {
                    continue;
                }
                self.core.pin(slice);
                out.push(ManagedMemoryHandle::pin(
                    &mut self.cells,
                    handle.allocation(),
                ));
            }
        }
        self.settle();
        out
    }

    /// End the capture without pinning anything: restore the mode (the
    /// Persistent windows underneath are kept) and drop the priming clones,
    /// so what the window handed out is owned by its handles alone. Unlike
    /// [`Self::capture_end`] it re-claims no extent freed inside the window
    /// and makes no pin handle — for a capture whose graph is thrown away.
    /// No-op without a capture.
    pub fn capture_abort(&mut self) {
        if let Some(record) = self.capture.take() {
            drop(record);
            self.drain();
        }
    }

    /// Plain data about the capture window.
    pub fn capture_state(&self) -> CaptureState {
        match &self.capture {
            None => CaptureState::default(),
            Some(r) => CaptureState {
                active: true,
                priming: r.priming,
                touched: r.touched.len(),
            },
        }
    }

    /// Another holder of the live slice starting at `offset` of `page`.
    fn live_at(&mut self, page: u32, offset: u64) -> Option<ManagedMemoryHandle> {
        let mut node = self.core.pages[page].head;
        while node != crate::engine::slots::NIL {
            let n = &self.core.slices[node];
            if n.offset == offset {
                break;
            }
            node = n.next;
        }
        let n = self.core.slices.get(node)?;
        if n.is_free() {
            return None;
        }
        let key = self.core.slots.key_of(n.owner)?;
        match self.core.slots.holder(key) {
            Some(handle) => Some(handle),
            None => {
                // Its last holder dropped on another thread after the drain:
                // the key is on the drop queue. Drain it, so the extent is
                // free and the caller re-claims it (a slot with no holder
                // that stays live is never freed here).
                self.drain();
                None
            }
        }
    }
}
