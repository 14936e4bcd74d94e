//! Taking a gpumem allocation into the entry table: what `reserve` does
//! with a fresh allocation, and what `guard` does with the bytes of one
//! given back during a graph's recording.

use cubecl_environment::sync::Arc;
use cubecl_server::memory_management::{ManagedMemoryHandle, MemoryLocation, PageGuard};
use cubecl_server::server::IoError;
use cubecl_server::storage::ComputeStorage;
use mem_pools::ManagedMemoryHandle as GpumemHandle;

use crate::entries::Entry;
use crate::errors::to_cube;
use crate::state::MemoryManagement;

impl<Storage: ComputeStorage> MemoryManagement<Storage> {
    /// Record `memory` (`size` requested bytes; the engine's padding was
    /// `padding_before` before it was carved) under a fresh CubeCL handle,
    /// whose descriptor now names it. Returns that handle and the entry's
    /// guard token.
    pub(crate) fn adopt(
        &mut self,
        memory: GpumemHandle,
        size: u64,
        padding_before: u64,
    ) -> Result<(ManagedMemoryHandle, Arc<()>), IoError> {
        let padding = (self.engine.memory_usage().bytes_padding).saturating_sub(padding_before);
        let pool = (self.engine)
            .pool_of(memory.binding())
            .map_err(|error| to_cube(error, size, None))?;
        let view = (self.engine)
            .get_storage(memory.binding())
            .map_err(|error| to_cube(error, size, None))?;
        let handle = ManagedMemoryHandle::new();
        let guard = Arc::new(());
        let persistent = pool == self.dynamic_pools;
        let trace_id = (self.trace.as_ref()).map_or(0, |trace| trace.alloc(size, persistent));
        self.entries.insert(Entry {
            handle: handle.clone(),
            memory,
            size,
            padding,
            pool,
            persistent,
            cursor: 0,
            tainted: Default::default(),
            guard: guard.clone(),
            view,
            trace_id,
        })?;
        Ok((handle, guard))
    }

    /// A guard on the bytes the allocation at `location` had, when it was
    /// given back since: they are re-claimed, exactly, if nothing took them
    /// (a graph recorded launches against them, and must not replay into
    /// another allocation). `None` when the location names nothing, or the
    /// bytes were taken since.
    pub(crate) fn guard_given_back(&mut self, location: MemoryLocation) -> Option<PageGuard> {
        let view = self.entries.tombstone(location)?;
        let padding_before = self.engine.memory_usage().bytes_padding;
        let pin = self.engine.reclaim_extent(&view)?;
        let size = pin.size();
        // Nothing holds the handle: the allocation counts as free in the
        // reports, and is given back once the guard drops.
        let (_handle, token) = self.adopt(pin, size, padding_before).ok()?;
        Some(PageGuard::page(&token))
    }
}
