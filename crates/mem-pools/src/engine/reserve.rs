//! The reserve path on the engine: drain the drop queue, route the size to
//! a pool, reserve a slice there (`pools/dispatch.rs`: by the pool's kind),
//! and wrap it in a fresh handle;
//! and what a capture window allows reservations to do.

use mem_storage::ComputeStorage;

use crate::config::MemoryAllocationMode;
use crate::engine::state::MemoryManagement;
use crate::error::IoError;
use crate::handles::handle_cell::ManagedMemoryHandle;
use crate::pools::paged::carve::Allowance;
use crate::pools::persistent::PERSISTENT;
use crate::tables::slots::NIL;

impl<S: ComputeStorage> MemoryManagement<S> {
    /// `reserve`'s body: drain, route (Persistent mode: the persistent
    /// pool), carve, give back what growth emptied, record for a capture.
    ///
    /// Below the device's largest page a persistent allocation gets a page
    /// of exactly its aligned size. A page-size growth gives the pool's
    /// empty current pages back before asking for the grown page when the
    /// storage's `mem_info` says it fits only then; a storage that refuses
    /// it anyway (a fault, another stream taking the room) finds them given
    /// back, as a cleanup would have — the one change an error leaves.
    #[inline]
    pub(crate) fn reserve_handle(&mut self, size: u64) -> Result<ManagedMemoryHandle, IoError> {
        self.drain_here();
        if self.core.arenas.asleep.is_some() {
            return Err(IoError::Asleep {
                operation: "reserve",
                sleeping_bytes: self
                    .core
                    .arenas
                    .live_chunk_bytes(&self.core.tables, &self.core.pools),
            });
        }
        self.core.tables.clock += 1;
        self.age_exclusive_pools();
        let pool = if self.effective_mode() == MemoryAllocationMode::Persistent {
            PERSISTENT
        } else {
            self.core.route(size)?
        };
        let allow = self.allowance();
        let reserved = self.reserve_into(pool, size, allow);
        // Growth may have released emptied outdated pages: give them back now.
        self.settle();
        let (handle, slice) = reserved?;
        self.logger.reserve(size, pool);
        self.touch(slice, &handle);
        Ok(handle)
    }

    /// Reserve in one pool and wrap the slice in a fresh handle.
    pub(crate) fn reserve_into(
        &mut self,
        pool: u32,
        size: u64,
        allow: Allowance,
    ) -> Result<(ManagedMemoryHandle, u32), IoError> {
        let sizes = (self.core.tables.capacity(size)?, size);
        let key = self.core.tables.slots.claim(NIL)?;
        let slice = match self
            .core
            .reserve_sized(&mut self.storage, pool, sizes, key.slot, allow)
        {
            Ok(slice) => slice,
            Err(err) => {
                self.core.tables.slots.abandon(key);
                return Err(err);
            }
        };
        self.core.tables.slots.fill(key, slice);
        let handle = ManagedMemoryHandle::new(&mut self.cells, key, size);
        Ok((handle, slice))
    }

    /// What reservations may do now (capture windows restrict both).
    pub(crate) fn allowance(&self) -> Allowance {
        match &self.capture {
            None => Allowance {
                allocate: true,
                release: true,
            },
            Some(c) => Allowance {
                allocate: c.priming,
                release: false,
            },
        }
    }
}
