//! The capture window on the engine: recording what the window hands out
//! (`touch`), the priming clones, and the pin handles `capture_end` returns.
//! The contract is [`crate::CaptureState`]'s; the record is `record.rs`.

use mem_storage::ComputeStorage;

use crate::capture::record::{CaptureRecord, Extent};
use crate::engine::state::MemoryManagement;
use crate::handles::handle_cell::ManagedMemoryHandle;
use crate::handles::keys::SlotKey;

impl<S: ComputeStorage> MemoryManagement<S> {
    /// `capture_begin`'s body: open a window (priming) unless one is open.
    pub(crate) fn begin_capture(&mut self) {
        if self.capture.is_none() {
            self.drain();
            self.capture = Some(CaptureRecord::new());
        }
    }

    /// `capture_abort`'s body: close the window, dropping the priming
    /// clones, pinning nothing.
    pub(crate) fn abort_capture(&mut self) {
        if let Some(record) = self.capture.take() {
            drop(record);
            self.drain();
        }
    }

    /// Record that the window handed out `slice` (to `handle`); outside a
    /// window (every reservation's case) an inlined check.
    #[inline]
    pub(crate) fn touch(&mut self, slice: u32, handle: &ManagedMemoryHandle) {
        if self.capture.is_some() {
            self.record_touch(slice, handle);
        }
    }

    /// [`Self::touch`] inside a window.
    #[inline(never)]
    fn record_touch(&mut self, slice: u32, handle: &ManagedMemoryHandle) {
        let Some(record) = self.capture.as_mut() else {
            return;
        };
        // Only touched slots need a way back to their handles (capture_end),
        // so the reserve path outside a capture pays for no weak reference.
        let allocation = handle.allocation();
        self.core.tables.slots.set_holder(allocation);
        let node = &self.core.tables.slices[slice];
        let page = &self.core.tables.pages[node.page];
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

    /// `capture_priming_end`'s body: drop the clones warmup retained, so the
    /// slices are free in the pool. No-op without a capture or after priming.
    pub(crate) fn end_priming(&mut self) {
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

    /// `capture_end`'s body: restore the mode and return a pin handle to every
    /// extent the window touched, re-claiming one freed inside the window
    /// (see [`crate::CaptureState`]). Empty if no capture was active.
    pub(crate) fn pin_touched(&mut self) -> Vec<ManagedMemoryHandle> {
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
                .tables
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
                self.core.tables.pin(slice);
                out.push(ManagedMemoryHandle::pin(
                    &mut self.cells,
                    handle.allocation(),
                ));
            }
        }
        self.settle();
        out
    }

    /// Another holder of the live slice starting at `offset` of `page`.
    fn live_at(&mut self, page: u32, offset: u64) -> Option<ManagedMemoryHandle> {
        let mut node = self.core.tables.pages[page].head;
        while node != crate::tables::slots::NIL {
            let n = &self.core.tables.slices[node];
            if n.offset == offset {
                break;
            }
            node = n.next;
        }
        let n = self.core.tables.slices.get(node)?;
        if n.is_free() {
            return None;
        }
        let key = self.core.tables.slots.key_of(n.owner)?;
        match self.core.tables.slots.holder(key) {
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
