//! `bind`: hand a reserved allocation's memory to another handle, and the
//! question a caller asks before giving its handles away.
//!
//! `bind` takes both handles by value (the reserved name retires), so a
//! refusal costs the caller its handles (and frees `reserved`'s memory if
//! that was its last holder); [`MemoryManagement::try_bind`] hands them back
//! in a [`BindRefused`], and [`MemoryManagement::bind_would_refuse`] runs the
//! very same checks without consuming anything. Both drain the
//! drop queue first, so a pin or clone dropped on another thread counts the
//! same way in the question and in the bind.

use mem_storage::ComputeStorage;

use crate::engine::management::MemoryManagement;
use crate::error::IoError;
use crate::handles::handle::ManagedMemoryHandle;

/// A refused [`MemoryManagement::try_bind`]: why, and both handles back,
/// exactly as they were passed (the engine changed nothing).
///
/// Converts into its [`IoError`] (`?` in a function returning `IoError`),
/// which drops the handles — the behaviour of plain `bind`.
#[derive(Debug, thiserror::Error)]
#[error("bind refused: {error}")]
pub struct BindRefused {
    /// Why the bind was refused.
    #[source]
    pub error: IoError,
    /// The `reserved` handle, still naming its memory.
    pub reserved: ManagedMemoryHandle,
    /// The `assigned` handle, still naming its memory.
    pub assigned: ManagedMemoryHandle,
}

impl BindRefused {
    /// The two handles, `(reserved, assigned)`, for the caller to keep.
    pub fn into_handles(self) -> (ManagedMemoryHandle, ManagedMemoryHandle) {
        (self.reserved, self.assigned)
    }
}

impl From<BindRefused> for IoError {
    fn from(refused: BindRefused) -> Self {
        refused.error
    }
}

impl<S: ComputeStorage> MemoryManagement<S> {
    /// Hands the memory of `reserved` to `assigned` and stamps it with `cursor`.
    ///
    /// What it binds: `assigned` (and every clone and binding of it) now
    /// refers to the slice `reserved` was given; `assigned`'s previous memory
    /// is freed (its contents are gone); `reserved`'s own name goes stale
    /// (its clones and bindings resolve no more). The slice's cursor becomes
    /// `cursor` — a stream's operation counter, read back by `get_cursor` for
    /// cross-stream waits. Binding a handle to itself only stamps the cursor.
    ///
    /// # Errors
    /// The errors of [`Self::try_bind`]: a foreign or stale handle,
    /// [`IoError::SharedReserved`], [`IoError::AssignedPinned`].
    ///
    /// **On refusal the engine's state is unchanged, but both handles are
    /// dropped here** (they were moved in): each loses the holder that was
    /// passed. If that was `reserved`'s last holder — the usual case, a
    /// fresh reservation — its memory is freed at the engine's next call,
    /// even when another stream still uses that memory through a raw
    /// address or a cursor wait; the same for `assigned`. To keep the
    /// handles on a refusal call [`Self::try_bind`] (gives them back inside
    /// [`BindRefused`]) or ask [`Self::bind_would_refuse`] first.
    pub fn bind(
        &mut self,
        reserved: ManagedMemoryHandle,
        assigned: ManagedMemoryHandle,
        cursor: u64,
    ) -> Result<(), IoError> {
        self.try_bind(reserved, assigned, cursor)
            .map_err(|refused| refused.error)
    }

    /// [`Self::bind`] that gives both handles back when it refuses.
    ///
    /// # Errors
    /// Both must be live handles of this manager, else a foreign or stale
    /// binding error; `reserved` must have no other holder (a clone, a
    /// graph's pin handle: they would be left naming no memory), else
    /// [`IoError::SharedReserved`] — a graph pinning the reserved memory
    /// counts as a holder even when its pin handle is the one passed, since
    /// the pin is keyed by the reserved name that bind retires;
    /// `assigned`'s memory must not be pinned by a captured graph (a pin
    /// lasts while the graph holds any clone of its pin handle; freeing the
    /// memory would hand graph memory to the next reservation), else
    /// [`IoError::AssignedPinned`]. A [`crate::RawPin`] counts as a graph
    /// pin on either side (it names the slot bind would retire or free).
    /// The owner's `get_resource` flag refuses nothing: on `reserved` it
    /// stays with the memory, on `assigned` it ends with the freed memory.
    /// On error nothing changes and the
    /// [`BindRefused`] carries the error and both handles, untouched.
    pub fn try_bind(
        &mut self,
        reserved: ManagedMemoryHandle,
        assigned: ManagedMemoryHandle,
        cursor: u64,
    ) -> Result<(), BindRefused> {
        self.rebind(reserved, assigned, cursor, false).map(drop)
    }

    /// [`Self::try_bind`] that keeps `assigned`'s previous memory alive
    /// instead of freeing it, and returns it as a fresh handle (its bytes
    /// untouched; `None` when `reserved` and `assigned` are the same
    /// allocation, which only stamps the cursor).
    ///
    /// Why: memory that another stream's queued work still reads must not
    /// be reused before that work completes, and `bind` would free it at
    /// once. A runtime that recorded such a use holds the returned handle
    /// until the work completes, then drops it — the same rule as dropping
    /// the allocation (PyTorch's `record_stream`). Dropping the returned
    /// handle right away is exactly [`Self::try_bind`].
    ///
    /// # Errors
    /// As [`Self::try_bind`], plus [`IoError::IndexExhausted`] when no slot
    /// is left for the kept memory; on error nothing changes and both
    /// handles come back in the [`BindRefused`].
    pub fn try_bind_keeping(
        &mut self,
        reserved: ManagedMemoryHandle,
        assigned: ManagedMemoryHandle,
        cursor: u64,
    ) -> Result<Option<ManagedMemoryHandle>, BindRefused> {
        self.rebind(reserved, assigned, cursor, true)
    }

    /// The one body of `try_bind` and `try_bind_keeping`: `keep` gives
    /// `assigned`'s old memory a fresh slot and handle instead of freeing it.
    fn rebind(
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
            self.core.set_cursor(source, cursor);
            return Ok(None);
        }
        // Claimed before anything changes, so a full slot table refuses
        // the bind instead of leaving it half done.
        let kept_key = match keep.then(|| self.core.slots.claim(old)).transpose() {
            Ok(key) => key,
            Err(error) => return Err(refuse(error, reserved, assigned)),
        };
        self.forget_primed(r_key);
        self.core.slots.release(r_key);
        self.core.slots.repoint(a_key, source);
        let node = &mut self.core.slices[source];
        node.owner = a_key.slot;
        assigned.set_size(node.requested);
        self.core.set_cursor(source, cursor);
        let kept = match kept_key {
            Some(key) => {
                let node = &mut self.core.slices[old];
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

    /// The error [`Self::bind`] would return for these handles now, or
    /// `None` when it would succeed — the same checks in the same order,
    /// consuming nothing.
    ///
    /// Holders are counted as `bind` counts them, so pass exactly what
    /// `bind` will be given: a clone kept aside (to restore on refusal) is
    /// a holder and makes the answer [`IoError::SharedReserved`]; drop it
    /// first, ask, and clone `reserved` again if the answer is a refusal.
    /// The answer holds until the engine or the handles change (another
    /// call, a clone, a drop on another thread); `&mut self` because it
    /// drains the drop queue as `bind` does.
    pub fn bind_would_refuse(
        &mut self,
        reserved: &ManagedMemoryHandle,
        assigned: &ManagedMemoryHandle,
    ) -> Option<IoError> {
        self.drain();
        self.bind_refusal(reserved, assigned).err()
    }

    /// `bind`'s checks: both resolve; unless they are the same allocation,
    /// `reserved` has no other holder and `assigned` is not graph-pinned.
    /// Returns (reserved's slice, assigned's slice).
    fn bind_refusal(
        &self,
        reserved: &ManagedMemoryHandle,
        assigned: &ManagedMemoryHandle,
    ) -> Result<(u32, u32), IoError> {
        let source = self.resolve(&reserved.binding())?;
        let old = self.resolve(&assigned.binding())?;
        if reserved.key() == assigned.key() {
            return Ok((source, old));
        }
        let node = &self.core.slices[source];
        let guards = usize::try_from(node.raw_pins).unwrap_or(usize::MAX);
        let holders = match (node.pins as usize).saturating_add(guards) {
            0 => self.outside_holders(reserved),
            pins => self.outside_holders(reserved).max(pins.saturating_add(1)),
        };
        if holders > 1 {
            return Err(IoError::SharedReserved { holders });
        }
        let node = &self.core.slices[old];
        if node.pins > 0 || node.raw_pins > 0 {
            return Err(IoError::AssignedPinned {
                size: self.core.slices[old].requested,
            });
        }
        Ok((source, old))
    }
}
