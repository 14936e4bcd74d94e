//! The floor's tables in one value: what every pool kind stands on and
//! none owns — the slot table handles name, the slice and page tables,
//! `bind`'s cursors, pages by storage id, the alignment, the clock and the
//! counters. `pools/` puts the pools on top (`pools/core.rs`); a pool's
//! code takes `&mut Tables` with its own state, so the two never borrow
//! each other whole.

use std::collections::HashMap;

use mem_storage::StorageId;

use crate::error::IoError;
use crate::handles::keys::SlotKey;
use crate::report::stats::PoolStats;
use crate::tables::chunk_map::ChunkMap;
use crate::tables::cursors::SliceCursors;
use crate::tables::nodes::{Arena, Page, SliceNode};
use crate::tables::slots::SlotTable;

/// The tables below every pool (see the module docs).
#[derive(Debug)]
pub(crate) struct Tables {
    pub(crate) slots: SlotTable,
    pub(crate) slices: Arena<SliceNode>,
    /// `bind`'s cursors, the one cold field of a slice (`cursors.rs`).
    pub(crate) cursors: SliceCursors,
    pub(crate) pages: Arena<Page>,
    /// Mapped pages by storage id: a view handed out names its page in O(1).
    pub(crate) by_storage: HashMap<StorageId, u32>,
    pub(crate) alignment: u64,
    /// log2 of `alignment` (a power of two): offsets become start-map
    /// units by a shift on the split and coalesce paths, not a division.
    align_shift: u32,
    /// The device's largest page: no page is larger.
    pub(crate) max_page: u64,
    /// Pages get memory at their first use, not when made.
    pub(crate) lazy: bool,
    /// Reservations so far: the clock of exclusive pools' dealloc periods.
    pub(crate) clock: u64,
    pub(crate) next_page_uid: u64,
    pub(crate) stats: PoolStats,
    /// The stream's (submitted, completed) cursors, as last reported
    /// (`arena/stream_order.rs`); every arena page's chunk map holds a
    /// copy, taken when the page is made (`Pool::new_page`).
    pub(crate) progress: (u64, u64),
}

impl Tables {
    pub(crate) fn new(alignment: u64, max_page: u64, lazy: bool) -> Self {
        debug_assert!(alignment.is_power_of_two());
        Self {
            slots: SlotTable::default(),
            slices: Arena::new("slice"),
            cursors: SliceCursors::default(),
            pages: Arena::new("page"),
            by_storage: HashMap::new(),
            alignment,
            align_shift: alignment.trailing_zeros(),
            max_page,
            lazy,
            clock: 0,
            next_page_uid: 0,
            stats: PoolStats::default(),
            progress: (0, 0),
        }
    }

    /// The alignment unit holding byte `offset` of a page (its start-map
    /// key).
    #[inline]
    pub(crate) fn unit(&self, offset: u64) -> u64 {
        offset >> self.align_shift
    }

    /// `size` rounded up to the alignment (zero takes one unit), checked.
    #[inline]
    pub(crate) fn capacity(&self, size: u64) -> Result<u64, IoError> {
        // The alignment is a power of two: round with a mask, checked.
        let a = self.alignment;
        size.max(1)
            .checked_add(a - 1)
            .map(|v| v & !(a - 1))
            .ok_or(IoError::InvalidSize { size, alignment: a })
    }

    /// The cursor stamped on a live slice by its last `bind` (0 if none
    /// since it was occupied).
    pub(crate) fn cursor(&self, slice: u32) -> u64 {
        if !self.slices[slice].cursor_set {
            return 0;
        }
        self.cursors.get(slice)
    }

    /// Stamp `cursor` on a live slice.
    pub(crate) fn set_cursor(&mut self, slice: u32, cursor: u64) {
        self.cursors.set(slice, cursor);
        self.slices[slice].cursor_set = true;
    }

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

    /// The chunk map of `page` (`None`: not an arena page).
    #[inline]
    pub(crate) fn chunk_map(&mut self, page: u32) -> Option<&mut ChunkMap> {
        self.pages[page].chunks.as_deref_mut()
    }

    /// The chunk map of `page`, which the caller knows is an arena page.
    pub(crate) fn arena_map(&mut self, page: u32) -> &mut ChunkMap {
        self.pages[page]
            .chunks
            .as_deref_mut()
            .expect("an arena page")
    }

    /// The storage id of `page` (`None`: a lazy page not yet mapped).
    pub(crate) fn page_storage(&self, page: u32) -> Option<StorageId> {
        self.pages[page].storage.map(|h| h.id)
    }
}
