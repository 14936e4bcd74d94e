//! The allocations this memory handed out: one entry per CubeCL handle,
//! pairing it with the gpumem allocation behind it.
//!
//! CubeCL's client mints its own handles (`ManagedMemoryHandle::new`) and
//! finds an allocation again through the location the memory wrote into the
//! handle's descriptor. Here the location names an entry of this table:
//! `slice` is the entry's index, `page` its generation (so a guard asked for
//! a location whose entry is gone finds nothing), `pool` is 0, or CubeCL's
//! persistent sentinel for a persistent allocation. The descriptor's id is
//! checked on every lookup, so a stale handle is `NotFound`, never another
//! allocation's memory.
//!
//! CubeCL frees an allocation by dropping its last handle: nothing is called.
//! The entry keeps one handle of its own, as CubeCL's slices do, and an
//! allocation is free once that is the last one ([`ManagedMemoryHandle::is_free`]).
//! [`Entries::sweep`] gives every free allocation back to gpumem's engine,
//! O(entries); [`Entries::sweep_some`] looks at a few entries, O(1), for
//! the reserve path, which sweeps everything only before the engine would
//! add a page. The few are the [`RECENT`] newest entries (a tensor
//! program's temporaries are dropped soon after they are made, so their
//! memory is reused by the next reserve, as CubeCL's own pools reuse it)
//! and the next ones under a clock hand (so an older allocation is found
//! within a bounded number of reserves, not only when the pools would
//! grow).

use std::sync::Arc;

use cubecl_server::memory_management::{
    ErrorGraph, ManagedMemoryDescriptor, ManagedMemoryHandle, MemoryLocation, PERSISTENT_POOL_POS,
    Taint,
};
use cubecl_server::server::IoError as CubeIoError;
use mem_pools::ManagedMemoryHandle as GpumemHandle;
use mem_storage::StorageHandle as GpumemView;

use crate::errors::not_found;

/// One allocation: CubeCL's handle and gpumem's.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The memory's own handle, as CubeCL's slices keep one.
    pub(crate) handle: ManagedMemoryHandle,
    /// The gpumem allocation; dropping it frees the memory in the engine.
    pub(crate) memory: GpumemHandle,
    /// Requested bytes.
    pub(crate) size: u64,
    /// What alignment added to them.
    pub(crate) padding: u64,
    /// The engine pool holding it (its position in the engine's report).
    pub(crate) pool: usize,
    /// Whether it sits in the persistent pool.
    pub(crate) persistent: bool,
    /// The cursor the last `bind` stamped.
    pub(crate) cursor: u64,
    /// CubeCL's per-range failure claims on it.
    pub(crate) tainted: Taint,
    /// Counted by every [`PageGuard`](cubecl_server::memory_management::PageGuard)
    /// handed out for it: the allocation is not given back while one lives.
    pub(crate) guard: Arc<()>,
    /// Where its bytes are in gpumem's pages (refreshed after a relocation):
    /// what a guard asked for after the allocation was given back re-claims.
    pub(crate) view: GpumemView,
    /// Its id in the trace being recorded (`crate::trace`), 0 when none.
    pub(crate) trace_id: u64,
}

impl Entry {
    /// Nothing holds it any more: no handle but the memory's own, no guard.
    fn releasable(&self) -> bool {
        self.handle.is_free() && Arc::strong_count(&self.guard) == 1
    }
}

#[derive(Debug, Default)]
struct Slot {
    generation: u16,
    entry: Option<Entry>,
    /// The bytes of the allocation last given back from this slot, with the
    /// generation it had: kept while the slot serves the next allocation,
    /// until that one is given back too.
    tombstone: Option<(u16, GpumemView)>,
}

/// The table (see the module docs).
#[derive(Debug)]
pub(crate) struct Entries {
    slots: Vec<Slot>,
    vacant: Vec<u32>,
    live: usize,
    /// Where [`Entries::sweep_some`]'s clock hand looks next.
    hand: usize,
    /// The slots of the [`RECENT`] newest entries (a ring; `u32::MAX` is
    /// none yet), and where the next one goes.
    recent: [u32; RECENT],
    recent_next: usize,
    /// The trace ids of the entries given back since the manager last
    /// wrote them out (only traced entries land here).
    pub(crate) freed: Vec<u64>,
}

/// How many of the newest entries each [`Entries::sweep_some`] looks at.
pub(crate) const RECENT: usize = 8;

impl Default for Entries {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            vacant: Vec::new(),
            live: 0,
            hand: 0,
            recent: [u32::MAX; RECENT],
            recent_next: 0,
            freed: Vec::new(),
        }
    }
}

impl Entries {
    /// Add `entry` and write its location into its handle's descriptor.
    pub(crate) fn insert(&mut self, entry: Entry) -> Result<(), CubeIoError> {
        let index = match self.vacant.pop() {
            Some(index) => index,
            None => {
                let index = u32::try_from(self.slots.len())
                    .map_err(|_| not_found("more than u32::MAX live allocations"))?;
                self.slots.push(Slot::default());
                index
            }
        };
        let slot = &mut self.slots[index as usize];
        let pool = if entry.persistent {
            PERSISTENT_POOL_POS
        } else {
            0
        };
        let location = MemoryLocation::new(pool, slot.generation, index);
        entry.handle.descriptor().update_location(location);
        slot.entry = Some(entry);
        self.live += 1;
        self.recent[self.recent_next] = index;
        self.recent_next = (self.recent_next + 1) % RECENT;
        Ok(())
    }

    /// The entry `descriptor` names, checked to be that allocation.
    pub(crate) fn find(&self, descriptor: &ManagedMemoryDescriptor) -> Result<&Entry, CubeIoError> {
        let index = Self::index(descriptor)?;
        match self.slots.get(index).and_then(|slot| slot.entry.as_ref()) {
            Some(entry) if entry.handle.descriptor() == descriptor => Ok(entry),
            _ => Err(not_found(
                "Memory location points to a different allocation",
            )),
        }
    }

    /// [`Self::find`], mutably.
    pub(crate) fn find_mut(
        &mut self,
        descriptor: &ManagedMemoryDescriptor,
    ) -> Result<&mut Entry, CubeIoError> {
        let index = Self::index(descriptor)?;
        match self
            .slots
            .get_mut(index)
            .and_then(|slot| slot.entry.as_mut())
        {
            Some(entry) if entry.handle.descriptor() == descriptor => Ok(entry),
            _ => Err(not_found(
                "Memory location points to a different allocation",
            )),
        }
    }

    fn index(descriptor: &ManagedMemoryDescriptor) -> Result<usize, CubeIoError> {
        if !descriptor.is_allocated() {
            return Err(not_found("Memory location was never initialized"));
        }
        Ok(descriptor.slice())
    }

    /// The entry still at `location` (same index and generation), if any.
    pub(crate) fn at(&self, location: MemoryLocation) -> Option<&Entry> {
        if location.init == 0 {
            return None;
        }
        let slot = self.slots.get(location.slice as usize)?;
        (slot.generation == location.page)
            .then_some(slot.entry.as_ref())
            .flatten()
    }

    /// The bytes the allocation at `location` had, when it has been given
    /// back since and its slot not used again.
    pub(crate) fn tombstone(&self, location: MemoryLocation) -> Option<GpumemView> {
        let slot = self.slots.get(location.slice as usize)?;
        match slot.tombstone {
            Some((generation, view)) if generation == location.page && location.init != 0 => {
                Some(view)
            }
            _ => None,
        }
    }

    /// Every entry held, mutably.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        self.slots.iter_mut().filter_map(|slot| slot.entry.as_mut())
    }

    /// Give back every allocation nothing holds any more: its failure claims
    /// are released and its gpumem handle dropped (the engine frees it at
    /// its next call). Returns how many. O(entries).
    pub(crate) fn sweep(&mut self, failures: &mut ErrorGraph) -> usize {
        let released = (0..self.slots.len())
            .filter(|&index| self.release(index, failures))
            .count();
        self.hand = 0;
        released
    }

    /// Look at the [`RECENT`] newest entries and at `count` more from where
    /// the clock hand stopped, and give back those nothing holds.
    /// O(RECENT + count).
    pub(crate) fn sweep_some(&mut self, count: usize, failures: &mut ErrorGraph) -> usize {
        let len = self.slots.len();
        let mut released = 0;
        for i in 0..RECENT {
            let index = self.recent[i] as usize;
            if index < len {
                released += usize::from(self.release(index, failures));
            }
        }
        for _ in 0..count.min(len) {
            if self.hand >= len {
                self.hand = 0;
            }
            released += usize::from(self.release(self.hand, failures));
            self.hand += 1;
        }
        released
    }

    /// Give back the allocation in slot `index` if nothing holds it.
    fn release(&mut self, index: usize, failures: &mut ErrorGraph) -> bool {
        let slot = &mut self.slots[index];
        if !slot.entry.as_ref().is_some_and(Entry::releasable) {
            return false;
        }
        let Some(mut entry) = slot.entry.take() else {
            return false;
        };
        entry.tainted.clear(failures);
        if entry.trace_id != 0 {
            self.freed.push(entry.trace_id);
        }
        slot.tombstone = Some((slot.generation, entry.view));
        slot.generation = slot.generation.wrapping_add(1);
        self.vacant.push(index as u32);
        self.live -= 1;
        true
    }

    /// Every entry held.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.slots.iter().filter_map(|slot| slot.entry.as_ref())
    }

    /// Entries held (free ones not yet swept included).
    pub(crate) fn len(&self) -> usize {
        self.live
    }
}
