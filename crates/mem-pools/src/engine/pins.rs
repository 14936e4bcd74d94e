//! Pins on slices, the counts that keep a page from moving: a captured
//! graph's pin handles (`pin` / `unpin`, released through the drop queue)
//! and [`RawPin`] guards (`raw_pin` / `unraw`). The owner's raw-out flag is
//! `access.rs`'s; `SliceNode::is_raw` reads the flag and the guards as one.

use mem_storage::ComputeStorage;

use crate::engine::state::MemoryManagement;
use crate::error::IoError;
use crate::handles::keys::{ManagedMemoryBinding, SlotKey};
use crate::handles::raw_pin::RawPin;
use crate::pools::core::Core;

impl Core {
    /// Count one more graph pin on a live slice (its page stops moving).
    pub(crate) fn pin(&mut self, slice: u32) {
        let node = &mut self.slices[slice];
        node.pins = node.pins.saturating_add(1);
        if node.pins == 1 {
            let page = node.page;
            self.pages[page].pinned += 1;
        }
    }

    /// One graph pin of a live slot ended. A stale key (the memory was freed,
    /// which cleared its pins) is ignored.
    pub(crate) fn unpin(&mut self, key: SlotKey) {
        let Some(slice) = self.slots.resolve(key) else {
            return;
        };
        let node = &mut self.slices[slice];
        if node.pins == 0 {
            return;
        }
        node.pins -= 1;
        if node.pins == 0 {
            let page = node.page;
            self.pages[page].pinned -= 1;
        }
    }

    /// Count one more guard on a live slice (its page stops moving).
    pub(crate) fn raw_pin(&mut self, slice: u32) {
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
    /// `raw_pin`'s body: map a lazy page, then guard the slice.
    pub(crate) fn pin_raw(&mut self, binding: ManagedMemoryBinding) -> Result<RawPin, IoError> {
        self.get_storage(binding)?;
        let slice = self.resolve(&binding)?;
        Ok(self.guard(slice, binding))
    }

    /// Count a [`RawPin`] on `slice` and hand out its guard.
    pub(crate) fn guard(&mut self, slice: u32, binding: ManagedMemoryBinding) -> RawPin {
        self.core.raw_pin(slice);
        RawPin::new(binding, self.cells.queue().clone())
    }
}
