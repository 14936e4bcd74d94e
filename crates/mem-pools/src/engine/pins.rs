//! Handing out [`RawPin`] guards. The counts that keep a page from moving
//! — a captured graph's pin handles (`pin` / `unpin`, released through the
//! drop queue) and the guards (`raw_pin` / `unraw`) — are the floor's
//! (`tables/floor.rs`). The owner's raw-out flag is `access.rs`'s;
//! `SliceNode::is_raw` reads the flag and the guards as one.

use mem_storage::ComputeStorage;

use crate::engine::state::MemoryManagement;
use crate::error::IoError;
use crate::handles::keys::ManagedMemoryBinding;
use crate::handles::raw_pin::RawPin;

impl<S: ComputeStorage> MemoryManagement<S> {
    /// `raw_pin`'s body: map a lazy page, then guard the slice.
    pub(crate) fn pin_raw(&mut self, binding: ManagedMemoryBinding) -> Result<RawPin, IoError> {
        self.get_storage(binding)?;
        let slice = self.resolve(&binding)?;
        Ok(self.guard(slice, binding))
    }

    /// Count a [`RawPin`] on `slice` and hand out its guard.
    pub(crate) fn guard(&mut self, slice: u32, binding: ManagedMemoryBinding) -> RawPin {
        self.core.tables.raw_pin(slice);
        RawPin::new(binding, self.cells.queue().clone())
    }
}
