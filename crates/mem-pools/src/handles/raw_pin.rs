//! Counted, owned raw-address pins: [`MemoryManagement::raw_pin`] and the
//! [`RawPin`] guard.
//!
//! `get_resource` marks a slice raw-out with one flag that belongs to the
//! allocation's owner, and `release_raw` clears it. A second party that
//! bakes the address in — a captured graph reading an outside buffer
//! (mem-capture's `Capture::uses`) — cannot share that flag: releasing it
//! would also drop the owner's pin, and not releasing it makes the pin
//! outlive the graph. So each such party takes its own [`RawPin`]: a count
//! on the slice, released by the guard's drop (on any thread, through the
//! drop queue, O(1) at the next drain, like a handle's free). The slice is
//! raw — its page never moves — while the owner's flag is set *or* any
//! guard lives. As a count, the flag is worth exactly one: see
//! [`MemoryManagement::raw_pins`].
//!
//! A guard names the slot it was taken through, so `bind` refuses to retire
//! or free a slot a guard names (`SharedReserved` / `AssignedPinned`, as for
//! graph pins): its release would otherwise land on a retired name, or on
//! the memory bind moved in.

use std::fmt;

use mem_storage::ComputeStorage;

use crate::engine::core::Core;
use crate::engine::management::MemoryManagement;
use crate::error::IoError;
use crate::handles::drop_queue::DropQueue;
use crate::handles::handle::{DropKind, Dropped, ManagedMemoryBinding, SlotKey};
use crate::handles::sync::Arc;

/// One raw-address pin on an allocation: while it lives the allocation's
/// page never moves (relocation and compaction leave it out).
///
/// Not `Clone`: each guard is one count. Dropping it (any thread) releases
/// that count at the engine's next call. It does not keep the allocation
/// alive — freeing the allocation ends every pin on it, and a guard dropped
/// afterwards is ignored. `Send + Sync`.
pub struct RawPin {
    binding: ManagedMemoryBinding,
    queue: Arc<DropQueue>,
}

impl RawPin {
    /// The allocation it pins (as it was named when pinned).
    pub fn binding(&self) -> ManagedMemoryBinding {
        self.binding
    }

    /// The id of the manager that issued it.
    pub fn manager_id(&self) -> u64 {
        self.binding.manager
    }
}

impl Drop for RawPin {
    fn drop(&mut self) {
        self.queue.push(Dropped {
            key: self.binding.key,
            kind: DropKind::Unraw,
        });
    }
}

impl fmt::Debug for RawPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawPin")
            .field("manager", &self.binding.manager)
            .field("slot", &self.binding.key.slot)
            .field("generation", &self.binding.key.generation)
            .finish()
    }
}

impl Core {
    /// Count one more guard on a live slice (its page stops moving).
    fn raw_pin(&mut self, slice: u32) {
        let node = &mut self.slices[slice];
        let was_raw = node.is_raw();
        // Each count is a live `RawPin` in memory: a u64 cannot overflow.
        node.raw_pins += 1;
        if !was_raw {
            let page = node.page;
            self.pages[page].raw_out += 1;
        }
    }

    /// One guard of a live slot ended. A stale key (the memory was freed,
    /// which cleared its guards) is ignored.
    pub(crate) fn unraw(&mut self, key: SlotKey) {
        let Some(slice) = self.slots.resolve(key) else {
            return;
        };
        let node = &mut self.slices[slice];
        if node.raw_pins == 0 {
            return;
        }
        node.raw_pins -= 1;
        if !node.is_raw() {
            let page = node.page;
            self.pages[page].raw_out -= 1;
        }
    }
}

impl<S: ComputeStorage> MemoryManagement<S> {
    /// Pin the allocation's page against moves on behalf of whoever holds
    /// the returned guard, independently of the owner's `get_resource` /
    /// `release_raw` flag and of every other guard.
    ///
    /// Resolves (and, on a lazy manager, maps) the memory as `get_storage`
    /// does, so the address it has now is the one it keeps.
    ///
    /// # Errors
    /// A foreign or stale binding; the storage's error if mapping a lazy
    /// page fails. On error nothing is pinned.
    pub fn raw_pin(&mut self, binding: ManagedMemoryBinding) -> Result<RawPin, IoError> {
        self.get_storage(binding)?;
        let slice = self.resolve(&binding)?;
        Ok(self.guard(slice, binding))
    }

    /// `get_resource` that pins with a [`RawPin`] instead of the owner's
    /// flag: the address stays valid (its page does not move) while the
    /// guard lives.
    ///
    /// # Errors
    /// Those of `get_resource`; on error nothing is pinned.
    pub fn get_resource_pinned(
        &mut self,
        binding: ManagedMemoryBinding,
        offset_start: Option<u64>,
        offset_end: Option<u64>,
    ) -> Result<(S::Resource, RawPin), IoError> {
        let (resource, slice) = self.resource(binding, offset_start, offset_end)?;
        Ok((resource, self.guard(slice, binding)))
    }

    /// Raw pins on the allocation: its live [`RawPin`]s, plus one if the
    /// owner's `get_resource` flag is set (that flag counts once however
    /// many addresses were taken, and `release_raw` takes exactly that one
    /// away). The page never moves while this is above 0. Guards dropped
    /// since the last engine call still count until it drains them.
    ///
    /// # Errors
    /// A foreign or stale binding.
    pub fn raw_pins(&self, binding: ManagedMemoryBinding) -> Result<u64, IoError> {
        let node = &self.core.slices[self.resolve(&binding)?];
        Ok(node.raw_pins + u64::from(node.raw_out))
    }

    fn guard(&mut self, slice: u32, binding: ManagedMemoryBinding) -> RawPin {
        self.core.raw_pin(slice);
        RawPin {
            binding,
            queue: self.cells.queue().clone(),
        }
    }
}
