//! Re-claiming a known extent: take back exactly the free bytes a view
//! names, as a pin handle.
//!
//! A graph pool that lends its temporaries to a later capture (mem-capture's
//! sharing) must pin each lent slice back if the window did not reuse it.
//! Reserving until the pool happens to hand out the right slice is bounded
//! guesswork; this is the exact call. The view names its page by storage id
//! (a hash lookup, O(1)) and the extent by offset: on a persistent or
//! exclusive page — one slice each — that is the page's only slice, O(1);
//! on a sliced page the page's slices are walked, O(slices on that page).
//! `capture_end` uses the same carving for extents freed inside its window.

use std::sync::Arc;

use mem_storage::{ComputeStorage, StorageHandle};

use crate::handle::ManagedMemoryHandle;
use crate::management::MemoryManagement;
use crate::slots::NIL;

impl<S: ComputeStorage> MemoryManagement<S> {
    /// Re-claim exactly the extent `view` names — `view.size()` bytes at
    /// `view.offset()` of page `view.id`, as [`Self::get_storage`] handed
    /// it out — if it is free now, and return a *pin handle* to it (see
    /// [`ManagedMemoryHandle::is_pin`]): a new allocation whose memory does
    /// not move while any clone of the handle lives, freed when the last
    /// clone drops. It is the only holder (`can_mut()` is true).
    ///
    /// `None`, changing nothing, when the page is not one of this manager's
    /// live pages (released, another manager's, never handed out), when any
    /// byte of the extent is live, quarantined or on an outdated page, or
    /// when a persistent or exclusive page's free slice is not exactly that
    /// extent. Allocates no storage, so it is legal inside a capture window
    /// (the window does not count it as touched). Cost: see the module docs.
    pub fn reclaim_extent(&mut self, view: &StorageHandle) -> Option<ManagedMemoryHandle> {
        self.drain();
        let page = *self.core.by_storage.get(&view.id)?;
        let cap = self.core.capacity(view.size()).ok()?;
        let handle = self.claim_extent(page, view.offset(), cap, view.size())?;
        let slice = self.resolve(&handle.binding()).ok()?;
        self.core.pin(slice);
        Some(ManagedMemoryHandle::pin(handle.allocation()))
    }

    /// Claim the free extent `offset..offset + cap` of `page` as a new
    /// allocation of `requested` bytes (a plain handle; the caller pins).
    pub(crate) fn claim_extent(
        &mut self,
        page: u32,
        offset: u64,
        cap: u64,
        requested: u64,
    ) -> Option<ManagedMemoryHandle> {
        let key = self.core.slots.claim(NIL).ok()?;
        match self
            .core
            .carve_extent(page, offset, cap, requested, key.slot)
        {
            Ok(Some(slice)) => {
                self.core.slots.fill(key, slice);
                let handle = ManagedMemoryHandle::new(self.id, key, requested, self.queue.clone());
                self.core
                    .slots
                    .set_holder(key, Arc::downgrade(&handle.inner));
                Some(handle)
            }
            _ => {
                self.core.slots.abandon(key);
                None
            }
        }
    }
}
