//! Counted, owned raw-address pins: the [`RawPin`] guard
//! ([`crate::MemoryManagement::raw_pin`]; the engine's counts are
//! `Tables::raw_pin` in `tables/floor.rs`).
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
//! [`crate::MemoryManagement::raw_pins`].
//!
//! A guard names the slot it was taken through, so `bind` refuses to retire
//! or free a slot a guard names (`SharedReserved` / `AssignedPinned`, as for
//! graph pins): its release would otherwise land on a retired name, or on
//! the memory bind moved in.

use std::fmt;

use crate::handles::drop_queue::DropQueue;
use crate::handles::handle_cell::Cell;
use crate::handles::keys::{DropKind, Dropped, ManagedMemoryBinding};
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
    queue: Arc<DropQueue<Cell>>,
}

impl RawPin {
    /// A guard on `binding`'s allocation whose drop queues its release on
    /// `queue` (the engine counted it first: `tables/floor.rs`).
    pub(crate) fn new(binding: ManagedMemoryBinding, queue: Arc<DropQueue<Cell>>) -> Self {
        Self { binding, queue }
    }

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
