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

use crate::engine::management::MemoryManagement;
use crate::error::IoError;
use crate::handles::handle::ManagedMemoryBinding;

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
            .slots
            .resolve(binding.key)
            .ok_or(IoError::StaleBinding {
                slot: binding.key.slot,
                generation: binding.key.generation,
            })
    }

    /// Returns the storage view of a binding: its page and the bytes it covers.
    ///
    /// This is the funnel every dereference passes through, so it is where a
    /// lazily carved page gets its real backing: the view returned always
    /// refers to mapped memory.
    pub fn get_storage(&mut self, binding: ManagedMemoryBinding) -> Result<StorageHandle, IoError> {
        self.drain();
        let slice = self.resolve(&binding)?;
        let (page, offset, size) = {
            let node = &self.core.slices[slice];
            (node.page, node.offset, node.requested)
        };
        let allocate = self.allowance().allocate;
        let whole = self.core.materialize(&mut self.storage, page, allocate)?;
        // A lazily counted arena slice gets its chunks here (without lazy
        // pages they were mapped at its reservation).
        if self.core.lazy {
            let cap = self.core.slices[slice].size;
            self.core
                .map_live_slots(&mut self.storage, page, offset, cap, allocate)?;
        }
        Ok(StorageHandle {
            id: whole.id,
            utilization: StorageUtilization { offset, size },
        })
    }

    /// Returns the resource of bytes `offset_start..offset_end` of a binding
    /// (`None` = that end of the allocation), and marks it raw-out (see the
    /// module docs) until [`MemoryManagement::release_raw`]. The mark is
    /// one flag owned by the allocation's owner: taking more addresses sets
    /// it again, one `release_raw` clears it. To pin on behalf of someone
    /// else, use [`MemoryManagement::raw_pin`] / [`MemoryManagement::get_resource_pinned`].
    pub fn get_resource(
        &mut self,
        binding: ManagedMemoryBinding,
        offset_start: Option<u64>,
        offset_end: Option<u64>,
    ) -> Result<S::Resource, IoError> {
        let (resource, slice) = self.resource(binding, offset_start, offset_end)?;
        let node = &mut self.core.slices[slice];
        let was_raw = node.is_raw();
        node.raw_out = true;
        if !was_raw {
            let page = node.page;
            self.core.pages[page].raw_out += 1;
        }
        Ok(resource)
    }

    /// Declare that the owner uses no raw address of this allocation any
    /// more: clears the raw-out flag `get_resource` set (one flag however
    /// many addresses were taken). Relocation may move it again unless a
    /// [`crate::RawPin`] still lives on it — those are released only by
    /// their own drop. No-op when the flag was not set.
    pub fn release_raw(&mut self, binding: ManagedMemoryBinding) -> Result<(), IoError> {
        let slice = self.resolve(&binding)?;
        let node = &mut self.core.slices[slice];
        let was_raw = node.is_raw();
        node.raw_out = false;
        if was_raw && !node.is_raw() {
            let page = node.page;
            self.core.pages[page].raw_out -= 1;
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

    /// Returns the cursor stamped on the allocation by its last `bind`
    /// (0 if never bound): the issuing stream's operation counter, which a
    /// runtime compares against what another stream has synced.
    pub fn get_cursor(&self, binding: ManagedMemoryBinding) -> Result<u64, IoError> {
        let slice = self.resolve(&binding)?;
        Ok(self.core.cursor(slice))
    }

    /// Write `data` at the start of the allocation (at most its size).
    pub fn write(&mut self, binding: ManagedMemoryBinding, data: &[u8]) -> Result<(), IoError> {
        let view = self.fit(binding, data.len())?;
        Ok(self.storage.write(&view, data)?)
    }

    /// Read the first `out.len()` bytes of the allocation.
    pub fn read(&mut self, binding: ManagedMemoryBinding, out: &mut [u8]) -> Result<(), IoError> {
        let view = self.fit(binding, out.len())?;
        Ok(self.storage.read(&view, out)?)
    }

    fn fit(&mut self, binding: ManagedMemoryBinding, len: usize) -> Result<StorageHandle, IoError> {
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
