//! Handles and bindings: the indirection every allocation is reached through.
//!
//! A [`ManagedMemoryHandle`] owns an allocation; it names a *slot* of the
//! engine's slot table (index + generation), and the slot names the slice's
//! current location. Its clones share one counted cell that the engine
//! recycles (`handle_cell.rs`, `cell_pool.rs`), so a reservation allocates nothing. Relocation and `bind` rewrite the slot only, so every
//! holder follows a move with no fix-up. Dropping the last holder (on any
//! thread) pushes the handle's cell onto the drop queue (`drop_queue.rs`) that the engine
//! drains at its next call: freeing costs O(1), never a scan over slices.
//!
//! **Graph pins are holders of their own.** `capture_end` does not hand a
//! graph clones of the user's handle: it hands out *pin handles*, each with
//! its own cell that holds the allocation's handle (so the allocation lives
//! while any pin does) and counts one pin on its slice. Dropping a pin
//! handle's last clone queues an *unpin*: the pin ends with the graph, not
//! with the memory, so a buffer the user keeps after dropping the graph
//! becomes movable again. The allocation is freed when its last holder of
//! any kind drops (its own cell is released last, after every pin's),
//! exactly once.
//!
//! A [`ManagedMemoryBinding`] (`keys.rs`) is a `Copy`, non-owning name of the same slot.
//! It resolves while the allocation lives; once the slot is freed its
//! generation moves on and the binding is a [`crate::IoError::StaleBinding`],
//! never another allocation's memory.

use std::fmt;
use std::ptr::NonNull;

use crate::handles::cell_pool::CellPool;
use crate::handles::handle_cell::{Cell, ManagedMemoryHandle};
use crate::handles::keys::{ManagedMemoryBinding, SlotKey};
use crate::handles::sync::Ordering;

impl ManagedMemoryHandle {
    /// A new allocation's handle (one holder) on a cell from `cells`.
    #[inline]
    pub(crate) fn new(cells: &mut CellPool, key: SlotKey, size: u64) -> Self {
        Self {
            cell: cells.make(key, size, None),
        }
    }

    /// A new pin handle on `allocation` (the allocation's own handle). The
    /// caller counts the pin on the slice; dropping the pin handle's last
    /// clone queues the matching unpin.
    pub(crate) fn pin(cells: &mut CellPool, allocation: &ManagedMemoryHandle) -> Self {
        let size = allocation.size();
        Self {
            cell: cells.make(allocation.key(), size, Some(allocation.clone())),
        }
    }

    /// Another holder of the allocation whose cell `cell` is, unless its
    /// last holder already dropped.
    ///
    /// # Safety
    /// `cell` is a live cell (its memory not yet freed or reused).
    pub(crate) unsafe fn upgrade(cell: NonNull<Cell>) -> Option<Self> {
        // SAFETY: the caller's guarantee.
        unsafe { cell.as_ref() }.try_hold().then_some(Self { cell })
    }

    /// The cell of the allocation's own handle (for a slot's way back).
    pub(crate) fn allocation_cell(&self) -> NonNull<Cell> {
        self.allocation().cell
    }

    /// The allocation's own handle (for a pin handle, the one it holds).
    pub(crate) fn allocation(&self) -> &ManagedMemoryHandle {
        self.cell().pinning.as_ref().unwrap_or(self)
    }

    /// The slot key of the allocation.
    pub(crate) fn key(&self) -> SlotKey {
        self.cell().key
    }

    /// Rewrite the requested size (`bind` moved other memory in).
    pub(crate) fn set_size(&self, size: u64) {
        self.allocation().cell().size.store(size, Ordering::Relaxed);
    }

    /// Holders of the allocation, counting this one.
    ///
    /// The allocation's own cell is held by every clone of the user's
    /// handle and by every pin handle (one each), so its count covers
    /// those; a pin handle adds its own clones. For the allocation's handle
    /// that is its count; for a pin handle its own count plus the
    /// allocation's, less the one holder the pin itself is. Either way the
    /// result is 1 exactly when no one but this holder remains.
    pub(crate) fn holders(&self) -> usize {
        let cell = self.cell();
        cell.holders() + cell.pinning.as_ref().map_or(0, |a| a.cell().holders() - 1)
    }

    /// The non-owning name of this allocation, to resolve its storage.
    pub fn binding(&self) -> ManagedMemoryBinding {
        let cell = self.cell();
        ManagedMemoryBinding {
            manager: cell.manager,
            key: cell.key,
            size: self.size(),
        }
    }

    /// Whether this is the only holder, so writing in place is safe.
    ///
    /// "Holder" counts every clone of the allocation's handle, every pin
    /// handle a graph got from `capture_end` (and each clone of one), and the
    /// engine while a capture's priming retains the slice. So the user's
    /// handle is false while a graph pins the memory, and a graph's pin
    /// handle is true once the user and every other graph have let go.
    pub fn can_mut(&self) -> bool {
        self.holders() == 1
    }

    /// Whether this is a graph's pin handle (returned by `capture_end`):
    /// while any clone of it lives the memory does not move.
    pub fn is_pin(&self) -> bool {
        self.cell().pinning.is_some()
    }

    /// Requested bytes (before alignment padding).
    pub fn size(&self) -> u64 {
        self.allocation().cell().size.load(Ordering::Relaxed)
    }

    /// The id of the manager that issued this handle.
    pub fn manager_id(&self) -> u64 {
        self.cell().manager
    }
}

impl fmt::Debug for ManagedMemoryHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagedMemoryHandle")
            .field("manager", &self.manager_id())
            .field("slot", &self.key().slot)
            .field("generation", &self.key().generation)
            .field("size", &self.size())
            .field("holders", &self.holders())
            .field("pin", &self.is_pin())
            .finish()
    }
}
