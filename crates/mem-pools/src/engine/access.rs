//! Reaching an allocation's memory: resolve a binding, hand out its storage
//! view or raw resource, move bytes, read its cursor (`bind` is in
//! `bind.rs`).
//!
//! Every path checks the binding first — the issuing manager, then the
//! slot's generation — so a foreign or stale binding is an error and never
//! another allocation's memory.
//!
//! **Raw addresses pin.** `get_storage` hands out a page id and offset that
//! the storage resolves at use: if relocation frees the page the id goes
//! stale (an error), it never aliases, so it does not pin. `get_resource`
//! hands out a raw address, which relocation cannot follow: the slice is
//! marked *raw-out* and its page never moves until [`MemoryManagement::release_raw`]
//! is called for it or the allocation is freed. That flag is the owner's
//! single pin; a second party (a graph using an outside buffer) takes a
//! counted [`crate::RawPin`] instead (`raw_pin.rs`), which `release_raw`
//! does not touch.

use mem_storage::{ComputeStorage, StorageHandle, StorageUtilization};

use crate::engine::state::MemoryManagement;
use crate::error::IoError;
use crate::handles::keys::ManagedMemoryBinding;

impl<S: ComputeStorage> MemoryManagement<S> {
    /// The slice a binding names, or why it names none.
    pub(crate) fn resolve(&self, binding: &ManagedMemoryBinding) -> Result<u32, IoError> {
        if binding.manager != self.id {
            return Err(IoError::ForeignBinding {
                expected: self.id,
                found: binding.manager,
            });
        }
        self.core
            .tables
            .slots
            .resolve(binding.key)
            .ok_or(IoError::StaleBinding {
                slot: binding.key.slot,
                generation: binding.key.generation,
            })
    }

    /// `get_storage`'s body: the funnel every dereference passes through, so
    /// it is where a lazily carved page (and a lazily counted arena slice's
    /// chunks) gets its real backing: the view returned names mapped memory.
    pub(crate) fn storage_view(
        &mut self,
        binding: ManagedMemoryBinding,
    ) -> Result<StorageHandle, IoError> {
        self.drain();
        let slice = self.resolve(&binding)?;
        let (page, offset, size) = {
            let node = &self.core.tables.slices[slice];
            (node.page, node.offset, node.requested)
        };
        let allocate = self.allowance().allocate;
        let (p, t) = self.core.pool_parts(self.core.tables.pages[page].pool);
        let whole = p.materialize(t, &mut self.storage, page, allocate)?;
        // A lazily counted arena slice gets its chunks here (without lazy
        // pages they were mapped at its reservation).
        if self.core.tables.lazy {
            let cap = self.core.tables.slices[slice].size;
            let (a, mut cx) = self.core.arena(&mut self.storage);
            a.map_live_slots(&mut cx, page, (offset, cap), allocate)?;
        }
        Ok(StorageHandle {
            id: whole.id,
            utilization: StorageUtilization { offset, size },
        })
    }

    /// `get_resource`'s body: the resource, and the owner's raw-out flag set
    /// (one flag however many addresses were taken; `release_raw` clears it).
    pub(crate) fn resource_raw_out(
        &mut self,
        binding: ManagedMemoryBinding,
        offset_start: Option<u64>,
        offset_end: Option<u64>,
    ) -> Result<S::Resource, IoError> {
        let (resource, slice) = self.resource(binding, offset_start, offset_end)?;
        let node = &mut self.core.tables.slices[slice];
        let was_raw = node.is_raw();
        node.raw_out = true;
        if !was_raw {
            let page = node.page;
            self.core.tables.pages[page].raw_out += 1;
        }
        Ok(resource)
    }

    /// `release_raw`'s body: clear the owner's flag; the page may move again
    /// unless a [`crate::RawPin`] still lives on it (those end only by their
    /// own drop). No-op when the flag was not set.
    pub(crate) fn clear_raw_out(&mut self, binding: ManagedMemoryBinding) -> Result<(), IoError> {
        let slice = self.resolve(&binding)?;
        let node = &mut self.core.tables.slices[slice];
        let was_raw = node.is_raw();
        node.raw_out = false;
        if was_raw && !node.is_raw() {
            let page = node.page;
            self.core.tables.pages[page].raw_out -= 1;
        }
        Ok(())
    }

    /// The resource of a byte range of a binding, and its slice; pins nothing.
    pub(crate) fn resource(
        &mut self,
        binding: ManagedMemoryBinding,
        offset_start: Option<u64>,
        offset_end: Option<u64>,
    ) -> Result<(S::Resource, u32), IoError> {
        let view = self.get_storage(binding)?;
        let narrowed = view
            .narrow(offset_start, offset_end)
            .ok_or(IoError::OutOfBounds {
                start: offset_start.unwrap_or(0),
                end: offset_end.unwrap_or(view.size()),
                size: view.size(),
            })?;
        let resource = self.storage.get(&narrowed)?;
        Ok((resource, self.resolve(&binding)?))
    }

    /// The view of the first `len` bytes of the allocation (`write`, `read`).
    pub(crate) fn fit(
        &mut self,
        binding: ManagedMemoryBinding,
        len: usize,
    ) -> Result<StorageHandle, IoError> {
        let view = self.get_storage(binding)?;
        let len = len as u64;
        if len > view.size() {
            return Err(IoError::OutOfBounds {
                start: 0,
                end: len,
                size: view.size(),
            });
        }
        Ok(StorageHandle {
            id: view.id,
            utilization: StorageUtilization {
                offset: view.offset(),
                size: len,
            },
        })
    }
}
