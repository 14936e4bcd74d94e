//! Relocation through CubeCL's `CopyQueue`.
//!
//! gpumem's engine plans a relocation (a target for every live allocation
//! of each movable outdated page), copies it through a copy port, and
//! commits it; the allocations keep their handles, since a gpumem handle is
//! an indirection. [`CopyBridge`] is that port over the runtime's own
//! `CopyQueue`: each copy is handed to CubeCL as a `StorageCopy` between two
//! CubeCL storage handles.
//!
//! What must not move is pinned for the length of the relocation: an
//! allocation with a binding out (CubeCL leaves such a page alone too) and
//! an allocation a graph guards.

use std::sync::Arc;

use cubecl_server::memory_management::ErrorGraph;
use cubecl_server::memory_management::relocation::{
    CopyQueue as CubeCopyQueue, RelocationNeed, RelocationReason, StorageCopy,
};
use cubecl_server::server::ServerError;
use cubecl_server::storage::ComputeStorage;
use mem_pools::{CopyQueue, RawPin, TargetRoom};
use mem_storage::{StorageError, StorageHandle};

use crate::state::MemoryManagement;
use crate::storage::CubeStorage;

impl<Storage: ComputeStorage> MemoryManagement<Storage> {
    /// `relocation_need`'s body (`management.rs`; its contract is there).
    pub(crate) fn relocation_wanted(&self) -> RelocationNeed {
        let state = self.engine.relocation_state();
        if !state.has_outdated || self.stalled == Some(state.shape) {
            return RelocationNeed::Nothing;
        }
        if state.out_of_page_sizes {
            return RelocationNeed::ArenaFull;
        }
        match self.capacity {
            Some(capacity) => RelocationNeed::UnderPressure {
                capacity,
                page_size: state.next_page_size,
            },
            None => RelocationNeed::Nothing,
        }
    }

    /// `relocate`'s body (`management.rs`): pin what must not move, plan,
    /// copy through [`CopyBridge`], commit, and refresh the moved entries'
    /// views.
    pub(crate) fn relocate_outdated(
        &mut self,
        copier: &mut dyn CubeCopyQueue<Storage>,
        reason: RelocationReason,
        failures: &mut ErrorGraph,
    ) {
        self.sweep(failures);
        let Self {
            engine, entries, ..
        } = self;
        let pins: Vec<RawPin> = entries
            .iter()
            .filter(|entry| entry.handle.is_bound() || Arc::strong_count(&entry.guard) > 1)
            .filter_map(|entry| engine.raw_pin(entry.memory.binding()).ok())
            .collect();
        let room = match reason {
            RelocationReason::MemoryPressure => TargetRoom::Held,
            _ => TargetRoom::MayAllocate,
        };
        let shape = engine.relocation_state().shape;
        let plan = engine.plan_relocation(room);
        let mut moved = 0;
        if !plan.is_empty() {
            let mut bridge = CopyBridge { queue: copier };
            match engine.copy_relocation(plan, &mut bridge) {
                Ok(landed) => match engine.commit_relocation(landed) {
                    Ok(outcome) => moved = outcome.moved_slices,
                    Err(error) => log::error!("relocation commit refused: {error}"),
                },
                Err(error) => log::error!("relocation copies failed: {error}"),
            }
        }
        self.stalled = (moved == 0).then_some(shape);
        drop(pins);
        if moved > 0 {
            // The moved allocations' bytes are elsewhere now: what a guard
            // re-claims after one is given back must name the new place.
            let Self {
                engine, entries, ..
            } = self;
            for entry in entries.iter_mut() {
                if let Ok(view) = engine.get_storage(entry.memory.binding()) {
                    entry.view = view;
                }
            }
        }
        self.engine.drain_drops();
    }
}

/// gpumem's copy port over CubeCL's `CopyQueue` (see the module docs).
struct CopyBridge<'a, Storage> {
    queue: &'a mut dyn CubeCopyQueue<Storage>,
}

impl<Storage: ComputeStorage> CopyQueue<CubeStorage<Storage>> for CopyBridge<'_, Storage> {
    fn wait_device(&mut self, _: &mut CubeStorage<Storage>) -> Result<(), StorageError> {
        self.queue.wait_device().map_err(wait_failed)
    }

    fn copy(
        &mut self,
        storage: &mut CubeStorage<Storage>,
        src: &StorageHandle,
        dst: &StorageHandle,
    ) -> Result<(), StorageError> {
        let copy = match (storage.view(src), storage.view(dst)) {
            (Some(source), Some(target)) => StorageCopy { source, target },
            (None, _) => return Err(StorageError::UnknownId { id: src.id }),
            (_, None) => return Err(StorageError::UnknownId { id: dst.id }),
        };
        let copied = self.queue.copy(storage.inner(), &copy);
        copied.map_err(|error| {
            storage.keep_error(error);
            StorageError::Unsupported {
                operation: "copy (refused by the runtime's copy queue)",
                backend: "cubecl storage",
            }
        })
    }

    fn wait_copies(&mut self, _: &mut CubeStorage<Storage>) -> Result<(), StorageError> {
        self.queue.wait_copies().map_err(wait_failed)
    }
}

/// A wait the runtime reported failed, logged with its cause.
fn wait_failed(error: ServerError) -> StorageError {
    log::error!("relocation wait failed: {error}");
    StorageError::Unsupported {
        operation: "wait (failed in the runtime's copy queue)",
        backend: "cubecl storage",
    }
}
