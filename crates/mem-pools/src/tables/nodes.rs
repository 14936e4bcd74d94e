//! Slices and pages: the two arenas every pool carves from.
//!
//! A page is one storage allocation (or, when lazy, a page id with no memory
//! yet). Its slices form a doubly linked list in address order (`prev` /
//! `next`), which is the boundary information that makes splitting and
//! coalescing O(1). Free slices also sit in their pool's free index through
//! `free_prev` / `free_next`. Nodes and pages are reused through free lists,
//! so a steady state allocates nothing.

use mem_storage::StorageHandle;

use crate::error::IoError;
use crate::tables::slots::NIL;
use crate::tables::starts::SliceStarts;

/// One slice of a page: free, or the memory of one live allocation.
///
/// Exactly one cache line, aligned to one: every reservation and free
/// touches a node and up to four neighbours (address order, free list), so
/// each should cost one line, not two. Everything a reserve or free reads
/// or writes is here; the one field they never need, the cursor `bind`
/// stamps, lives in `SliceCursors` (`cursors.rs`), flagged by `cursor_set`.
#[derive(Debug, Clone)]
#[repr(align(64))]
pub(crate) struct SliceNode {
    pub(crate) page: u32,
    pub(crate) offset: u64,
    /// Capacity: requested size rounded up to the alignment.
    pub(crate) size: u64,
    /// Requested bytes of the live allocation (0 when free).
    pub(crate) requested: u64,
    pub(crate) prev: u32,
    pub(crate) next: u32,
    pub(crate) free_prev: u32,
    pub(crate) free_next: u32,
    /// Slot of the live allocation; `NIL` when free.
    pub(crate) owner: u32,
    /// `bind` stamped a cursor, kept in `SliceCursors`; cleared when the
    /// slice is occupied again (its cursor reads 0 then).
    pub(crate) cursor_set: bool,
    /// The owner's raw-out flag (`get_resource` sets it, `release_raw`
    /// clears it): one pin, however many addresses were taken.
    pub(crate) raw_out: bool,
    /// Live [`crate::RawPin`] guards on this slice (`raw_pin`), each
    /// released by its own drop. The slice is raw (never moves) while the
    /// flag is set or any guard lives; a free resets both.
    pub(crate) raw_pins: u64,
    /// Live pin handles of captured graphs (`capture_end`) on this slice:
    /// while any lives it must not move. Counted up by `capture_end`, down by
    /// each pin handle's unpin; a free resets it.
    pub(crate) pins: u32,
    /// Completion of a copy touching it is unknown: never reuse it.
    pub(crate) quarantined: bool,
    /// Sits in its pool's free index.
    pub(crate) indexed: bool,
}

impl SliceNode {
    /// A free, unlinked, unindexed slice of `size` bytes at `offset` of
    /// `page`: the one place a new field gets its starting value.
    pub(crate) fn free(page: u32, offset: u64, size: u64) -> Self {
        SliceNode {
            page,
            offset,
            size,
            requested: 0,
            prev: NIL,
            next: NIL,
            free_prev: NIL,
            free_next: NIL,
            owner: NIL,
            cursor_set: false,
            raw_out: false,
            raw_pins: 0,
            pins: 0,
            quarantined: false,
            indexed: false,
        }
    }

    pub(crate) fn is_free(&self) -> bool {
        self.owner == NIL
    }

    /// A raw address of it is out, by the owner's flag or a guard.
    pub(crate) fn is_raw(&self) -> bool {
        self.raw_out || self.raw_pins > 0
    }
}

// One line per node, `Option` included (a `bool` is its niche): the arena
// is a `Vec<Option<SliceNode>>`.
const _: () = assert!(std::mem::size_of::<Option<SliceNode>>() == 64);
const _: () = assert!(std::mem::align_of::<SliceNode>() == 64);

/// One storage allocation, carved into slices.
#[derive(Debug, Clone)]
pub(crate) struct Page {
    /// Process-lifetime unique id (pages get ids before memory when lazy).
    pub(crate) uid: u64,
    pub(crate) pool: u32,
    pub(crate) size: u64,
    /// The whole page in storage; `None` while lazy and unmapped.
    pub(crate) storage: Option<StorageHandle>,
    /// First slice in address order.
    pub(crate) head: u32,
    pub(crate) live: u32,
    pub(crate) live_bytes: u64,
    /// Serves no new reservations; freed as soon as it empties.
    pub(crate) outdated: bool,
    /// Position in its pool's `current` or `outdated` list.
    pub(crate) pos: u32,
    /// Slices that are raw (`SliceNode::is_raw`) / with pins / quarantined.
    pub(crate) raw_out: u32,
    pub(crate) pinned: u32,
    pub(crate) quarantined: u32,
    /// Reservation clock when the page last became empty.
    pub(crate) idle_since: u64,
    /// Where its slices start (sliced pages, once an extent lookup built
    /// it; see `starts.rs`).
    pub(crate) starts: Option<SliceStarts>,
    /// Arena pages: the physical chunks under the range (`chunks.rs`).
    pub(crate) chunks: Option<Box<crate::tables::chunk_map::ChunkMap>>,
}

/// An arena of `T` addressed by checked `u32` indices, reused via a free list.
#[derive(Debug)]
pub(crate) struct Arena<T> {
    items: Vec<Option<T>>,
    free: Vec<u32>,
    what: &'static str,
}

impl<T> Arena<T> {
    pub(crate) fn new(what: &'static str) -> Self {
        Self {
            items: Vec::new(),
            free: Vec::new(),
            what,
        }
    }

    pub(crate) fn insert(&mut self, item: T) -> Result<u32, IoError> {
        if let Some(index) = self.free.pop() {
            self.items[index as usize] = Some(item);
            return Ok(index);
        }
        let index = u32::try_from(self.items.len())
            .ok()
            .filter(|&i| i != NIL)
            .ok_or(IoError::IndexExhausted {
                what: self.what,
                limit: u64::from(NIL),
            })?;
        self.items.push(Some(item));
        Ok(index)
    }

    pub(crate) fn remove(&mut self, index: u32) -> Option<T> {
        let item = self.items.get_mut(index as usize)?.take();
        if item.is_some() {
            self.free.push(index);
        }
        item
    }

    pub(crate) fn get(&self, index: u32) -> Option<&T> {
        self.items.get(index as usize)?.as_ref()
    }
}

impl<T> Arena<T> {
    /// Whether `index` holds a live entry.
    #[inline(always)]
    fn holds(&self, index: u32) -> bool {
        matches!(self.items.get(index as usize), Some(Some(_)))
    }
}

/// The panic of indexing an entry that is not live (an engine bug: it only
/// indexes entries it holds). Out of line, so the indexing itself neither
/// formats nor copies the arena's name ahead of the check: `IndexMut` read
/// `what` before borrowing the items, 16 bytes to the stack and a frame on
/// every node access of the reserve and free paths.
#[cold]
#[inline(never)]
fn not_live(what: &'static str, index: u32) -> ! {
    unreachable!("{what} arena: index {index} is not live")
}

impl<T> std::ops::Index<u32> for Arena<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, index: u32) -> &T {
        match self.items.get(index as usize) {
            Some(Some(item)) => item,
            // Internal invariant: the engine only indexes entries it holds.
            _ => not_live(self.what, index),
        }
    }
}

impl<T> std::ops::IndexMut<u32> for Arena<T> {
    #[inline(always)]
    fn index_mut(&mut self, index: u32) -> &mut T {
        if !self.holds(index) {
            not_live(self.what, index);
        }
        match self.items.get_mut(index as usize) {
            Some(Some(item)) => item,
            // Checked just above.
            _ => unreachable!(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_indices_are_reused_and_stale_lookups_return_none() {
        let mut arena = Arena::new("test");
        let a = arena.insert(1).unwrap();
        let b = arena.insert(2).unwrap();
        assert_eq!(arena.remove(a), Some(1));
        assert_eq!(arena.get(a), None);
        assert_eq!(arena.remove(a), None);
        let c = arena.insert(3).unwrap();
        assert_eq!(c, a);
        assert_eq!(arena[b], 2);
    }
}
