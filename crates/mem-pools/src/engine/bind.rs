//! `bind` on the engine: hand a reserved allocation's memory to another
//! handle (`rebind`), the checks it runs first (`bind_refusal`), and the
//! cursor it stamps on the slice (kept in `cursors.rs`). The public calls
//! and their contract are `management.rs` and [`BindRefused`].

use mem_storage::ComputeStorage;

use crate::engine::state::MemoryManagement;
use crate::error::BindRefused;
use crate::error::IoError;
use crate::handles::handle_cell::ManagedMemoryHandle;

impl<S: ComputeStorage> MemoryManagement<S> {
    /// The one body of `try_bind` and `try_bind_keeping`: `keep` gives
    /// `assigned`'s old memory a fresh slot and handle instead of freeing it.
    ///
    /// Why keep: memory that another stream's queued work still reads must
    /// not be reused before that work completes, and `bind` would free it
    /// at once. A runtime that recorded such a use holds the returned handle
    /// until the work completes, then drops it — the same rule as dropping
    /// the allocation (PyTorch's `record_stream`).
    pub(crate) fn rebind(
        &mut self,
        reserved: ManagedMemoryHandle,
        assigned: ManagedMemoryHandle,
        cursor: u64,
        keep: bool,
    ) -> Result<Option<ManagedMemoryHandle>, BindRefused> {
        self.drain();
        let refuse = |error, reserved, assigned| BindRefused {
            error,
            reserved,
            assigned,
        };
        let (source, old) = match self.bind_refusal(&reserved, &assigned) {
            Ok(slices) => slices,
            Err(error) => return Err(refuse(error, reserved, assigned)),
        };
        let (r_key, a_key) = (reserved.key(), assigned.key());
        if r_key == a_key {
            self.core.tables.set_cursor(source, cursor);
            return Ok(None);
        }
        // Claimed before anything changes, so a full slot table refuses
        // the bind instead of leaving it half done.
        let kept_key = match keep.then(|| self.core.tables.slots.claim(old)).transpose() {
            Ok(key) => key,
            Err(error) => return Err(refuse(error, reserved, assigned)),
        };
        self.forget_primed(r_key);
        self.core.tables.slots.release(r_key);
        self.core.tables.slots.repoint(a_key, source);
        let node = &mut self.core.tables.slices[source];
        node.owner = a_key.slot;
        assigned.set_size(node.requested);
        self.core.tables.set_cursor(source, cursor);
        let kept = match kept_key {
            Some(key) => {
                let node = &mut self.core.tables.slices[old];
                node.owner = key.slot;
                let size = node.requested;
                Some(ManagedMemoryHandle::new(&mut self.cells, key, size))
            }
            None => {
                let release = self.capture.is_none();
                self.core.free_slice(&mut self.storage, old, release);
                None
            }
        };
        self.settle();
        self.touch(source, &assigned);
        Ok(kept)
    }

    /// `bind`'s checks (`bind_would_refuse` asks them too, after a drain, so
    /// a pin or clone dropped on another thread counts the same way in the
    /// question and in the bind): both resolve; unless they are the same allocation,
    /// `reserved` has no other holder and `assigned` is not graph-pinned.
    /// Returns (reserved's slice, assigned's slice).
    pub(crate) fn bind_refusal(
        &self,
        reserved: &ManagedMemoryHandle,
        assigned: &ManagedMemoryHandle,
    ) -> Result<(u32, u32), IoError> {
        let source = self.resolve(&reserved.binding())?;
        let old = self.resolve(&assigned.binding())?;
        if reserved.key() == assigned.key() {
            return Ok((source, old));
        }
        let node = &self.core.tables.slices[source];
        let guards = usize::try_from(node.raw_pins).unwrap_or(usize::MAX);
        let holders = match (node.pins as usize).saturating_add(guards) {
            0 => self.outside_holders(reserved),
            pins => self.outside_holders(reserved).max(pins.saturating_add(1)),
        };
        if holders > 1 {
            return Err(IoError::SharedReserved { holders });
        }
        let node = &self.core.tables.slices[old];
        if node.pins > 0 || node.raw_pins > 0 {
            return Err(IoError::AssignedPinned {
                size: self.core.tables.slices[old].requested,
            });
        }
        Ok((source, old))
    }
}
