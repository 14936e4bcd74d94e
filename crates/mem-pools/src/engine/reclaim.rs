//! `reclaim_extent`'s body on the engine: find the page a view names, claim
//! its extent (`pools/paged/extent.rs` carves it) and hand it out as a pin
//! handle.

use mem_storage::{ComputeStorage, StorageHandle};

use crate::engine::state::MemoryManagement;
use crate::handles::handle_cell::ManagedMemoryHandle;
use crate::tables::slots::NIL;

impl<S: ComputeStorage> MemoryManagement<S> {
    /// `MemoryManagement::reclaim_extent`'s body (its contract is on the
    /// method).
    pub(crate) fn reclaim_view(&mut self, view: &StorageHandle) -> Option<ManagedMemoryHandle> {
        self.drain();
        let page = *self.core.tables.by_storage.get(&view.id)?;
        let cap = self.core.tables.capacity(view.size()).ok()?;
        let handle = self.claim_extent(page, view.offset(), cap, view.size())?;
        let slice = self.resolve(&handle.binding()).ok()?;
        self.core.tables.pin(slice);
        Some(ManagedMemoryHandle::pin(
            &mut self.cells,
            handle.allocation(),
        ))
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
        let key = self.core.tables.slots.claim(NIL).ok()?;
        match self
            .core
            .carve_extent(page, (offset, cap), requested, key.slot)
        {
            Ok(Some(slice)) => {
                self.core.tables.slots.fill(key, slice);
                let handle = ManagedMemoryHandle::new(&mut self.cells, key, requested);
                self.core.tables.slots.set_holder(&handle);
                Some(handle)
            }
            _ => {
                self.core.tables.slots.abandon(key);
                None
            }
        }
    }
}
