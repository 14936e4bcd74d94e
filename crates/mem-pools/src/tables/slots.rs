//! The slot table: the indirection between handles and slices.
//!
//! A slot maps `(index, generation)` to the slice an allocation lives in.
//! Freeing a slot advances its generation, so every key issued for the old
//! generation stops resolving. Indices are `u32` and checked: the table
//! refuses to grow past `u32::MAX - 1` slots (a typed error) and a slot whose
//! generation reaches `u32::MAX` is retired for good instead of wrapping, so a
//! stale key can never name a newer allocation.
//!
//! A slot is 12 bytes (generation, slice, next free), five to a cache line:
//! every reservation and free touches one at random, so at a million live
//! allocations the table's size is its cost in cache misses. The rare
//! holder pointer (set only for slots a capture window touched) sits in a
//! side map; it made a slot 24 bytes. A smaller slot with the free slots
//! on a separate stack misses the cache less but runs churn slower in
//! wall time, so the free list stays in the slots (docs/pools.md).

use std::collections::HashMap;
use std::ptr::NonNull;

use crate::error::IoError;
use crate::handles::handle_cell::Cell;
use crate::handles::handle_cell::ManagedMemoryHandle;
use crate::handles::keys::SlotKey;

/// "No index" in every `u32` link of the engine.
pub(crate) const NIL: u32 = u32::MAX;

#[derive(Debug)]
struct Slot {
    generation: u32,
    /// The slice this allocation lives in; `NIL` while the slot is free.
    slice: u32,
    /// Next free slot while free.
    next_free: u32,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 12);

/// A slot's pointer to its allocation's cell: not a holder. Valid while the
/// slot is live: the engine reuses or frees a cell only after its drain
/// released the cell's slot (which clears this), see `handle_cell.rs`.
#[derive(Debug, Clone, Copy)]
struct Holder(NonNull<Cell>);

// SAFETY: a plain address; it is dereferenced only by the engine (through
// `&mut`/`&` of the table it sits in), under the validity rule above.
unsafe impl Send for Holder {}
// SAFETY: as for `Send`.
unsafe impl Sync for Holder {}

/// Slots of live allocations, reused through a free list.
#[derive(Debug, Default)]
pub(crate) struct SlotTable {
    slots: Vec<Slot>,
    /// Head of the free slots' list: the last freed, reused first.
    free_head: Option<u32>,
    /// The handles' shared cell of a live slot, to hand out another holder
    /// (capture_end); set only for slots a capture window touched, cleared
    /// on release.
    holders: HashMap<u32, Holder>,
    live: usize,
}

impl SlotTable {
    /// Claim a slot for `slice`. The caller attaches the holder afterwards.
    /// Reusing a released slot (the steady state) is inline; a new one
    /// is [`Self::claim_new`].
    #[inline]
    pub(crate) fn claim(&mut self, slice: u32) -> Result<SlotKey, IoError> {
        if let Some(slot) = self.free_head {
            let entry = &mut self.slots[slot as usize];
            self.free_head = (entry.next_free != NIL).then_some(entry.next_free);
            entry.slice = slice;
            entry.next_free = NIL;
            self.live += 1;
            return Ok(SlotKey {
                slot,
                generation: entry.generation,
            });
        }
        self.claim_new(slice)
    }

    /// A slot past the last, for `slice`.
    #[inline(never)]
    fn claim_new(&mut self, slice: u32) -> Result<SlotKey, IoError> {
        let slot = u32::try_from(self.slots.len())
            .ok()
            .filter(|&s| s != NIL)
            .ok_or(IoError::IndexExhausted {
                what: "slot",
                limit: u64::from(NIL),
            })?;
        self.slots.push(Slot {
            generation: 0,
            slice,
            next_free: NIL,
        });
        self.live += 1;
        Ok(SlotKey {
            slot,
            generation: 0,
        })
    }

    /// Point a freshly claimed key (claimed with `NIL`) at its slice.
    pub(crate) fn fill(&mut self, key: SlotKey, slice: u32) {
        if let Some(entry) = self.slots.get_mut(key.slot as usize)
            && entry.generation == key.generation
        {
            entry.slice = slice;
        }
    }

    /// Give back a key claimed with `NIL` that never got a slice.
    pub(crate) fn abandon(&mut self, key: SlotKey) {
        self.fill(key, 0);
        self.release(key);
    }

    /// Record the cell of a live slot's handle (the handle's own key).
    pub(crate) fn set_holder(&mut self, handle: &ManagedMemoryHandle) {
        let key = handle.key();
        if self.resolve(key).is_some() {
            (self.holders).insert(key.slot, Holder(handle.allocation_cell()));
        }
    }

    /// The slice of a live key, or `None` if the key is stale or unknown.
    pub(crate) fn resolve(&self, key: SlotKey) -> Option<u32> {
        let entry = self.slots.get(key.slot as usize)?;
        (entry.generation == key.generation && entry.slice != NIL).then_some(entry.slice)
    }

    /// Point a live key at another slice (relocation, bind).
    pub(crate) fn repoint(&mut self, key: SlotKey, slice: u32) {
        if self.resolve(key).is_some() {
            self.slots[key.slot as usize].slice = slice;
        }
    }

    /// Another holder of a live slot's handle, if any holder is still alive.
    pub(crate) fn holder(&self, key: SlotKey) -> Option<ManagedMemoryHandle> {
        self.resolve(key)?;
        let Holder(cell) = *self.holders.get(&key.slot)?;
        // SAFETY: the slot is live, so its holder's cell has not been
        // reused or freed (the drain releases the slot first).
        unsafe { ManagedMemoryHandle::upgrade(cell) }
    }

    /// Free a live key: its generation moves on. Returns the slice it named.
    #[inline]
    pub(crate) fn release(&mut self, key: SlotKey) -> Option<u32> {
        let slice = self.resolve(key)?;
        let entry = &mut self.slots[key.slot as usize];
        entry.slice = NIL;
        self.live -= 1;
        match entry.generation.checked_add(1) {
            Some(next) if next != u32::MAX => {
                entry.generation = next;
                entry.next_free = self.free_head.unwrap_or(NIL);
                self.free_head = Some(key.slot);
            }
            // Retired: never reused, so no key can wrap around to it.
            _ => entry.generation = u32::MAX,
        }
        if !self.holders.is_empty() {
            self.forget_holder(key.slot);
        }
        Some(slice)
    }

    /// Out of line: only slots a capture touched have a holder, and the
    /// map's probe inlined into `release` cost every release spills.
    #[cold]
    #[inline(never)]
    fn forget_holder(&mut self, slot: u32) {
        self.holders.remove(&slot);
    }

    /// The live key of a slot index, if the slot is live.
    pub(crate) fn key_of(&self, slot: u32) -> Option<SlotKey> {
        let entry = self.slots.get(slot as usize)?;
        (entry.slice != NIL).then_some(SlotKey {
            slot,
            generation: entry.generation,
        })
    }

    /// Number of live slots.
    pub(crate) fn live(&self) -> usize {
        self.live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_key_no_longer_resolves_and_its_slot_is_reused_with_a_new_generation() {
        let mut table = SlotTable::default();
        let a = table.claim(7).unwrap();
        assert_eq!(table.resolve(a), Some(7));
        assert_eq!(table.release(a), Some(7));
        assert_eq!(table.resolve(a), None);
        let b = table.claim(9).unwrap();
        assert_eq!(b.slot, a.slot);
        assert_ne!(b.generation, a.generation);
        assert_eq!(table.resolve(a), None);
        assert_eq!(table.resolve(b), Some(9));
    }

    #[test]
    fn releasing_twice_is_harmless() {
        let mut table = SlotTable::default();
        let a = table.claim(1).unwrap();
        assert_eq!(table.release(a), Some(1));
        assert_eq!(table.release(a), None);
        assert_eq!(table.live(), 0);
    }

    #[test]
    fn a_slot_at_the_last_generation_is_retired_instead_of_wrapping() {
        let mut table = SlotTable::default();
        let a = table.claim(1).unwrap();
        table.slots[0].generation = u32::MAX - 1;
        let a = SlotKey {
            generation: u32::MAX - 1,
            ..a
        };
        assert_eq!(table.release(a), Some(1));
        let b = table.claim(2).unwrap();
        assert_ne!(b.slot, a.slot, "a retired slot must not be reused");
        assert_eq!(
            table.resolve(SlotKey {
                slot: 0,
                generation: 0
            }),
            None
        );
    }
}
