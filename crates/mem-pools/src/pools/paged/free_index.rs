//! Free-slice indices: where a pool finds a slice in O(1).
//!
//! Sliced and exclusive pools use a two-level segregated fit (TLSF): free
//! slices are binned by size class (a power of two, split into 16 linear
//! sub-classes), each bin a doubly linked list threaded through the slice
//! nodes, with one bitmap per level to find the first non-empty bin at or
//! above a size in two bit scans. The persistent pool is exact fit: one list
//! per aligned size in a hash map. Insert, remove and find are O(1) either
//! way; nothing here allocates except the exact map's first list of a size.

use std::collections::HashMap;

use crate::tables::nodes::{Arena, SliceNode};
use crate::tables::slots::NIL;

const SL_BITS: u32 = 4;
const SL_COUNT: usize = 1 << SL_BITS;
const FL_COUNT: usize = 64 - SL_BITS as usize + 1;
/// Entries of the request's own class inspected before rounding up.
const SAME_CLASS_PROBE: usize = 8;

pub(super) fn class(size: u64) -> (usize, usize) {
    if size < SL_COUNT as u64 {
        return (0, size as usize);
    }
    let fl = 63 - size.leading_zeros();
    let sl = ((size >> (fl - SL_BITS)) as usize) ^ SL_COUNT;
    ((fl - SL_BITS + 1) as usize, sl)
}

/// The exact index's list head for `size`, made empty if new. Out of line:
/// only the persistent pool takes this path, and inlined, the hash map's
/// probe loop made `insert` spill registers on every sliced-pool insert.
#[inline(never)]
fn exact_head(heads: &mut HashMap<u64, u32>, size: u64) -> &mut u32 {
    heads.entry(size).or_insert(NIL)
}

/// The exact index's list for `size` now starts at `next` (`NIL`: gone).
/// Out of line for the reason `exact_head` is.
#[inline(never)]
fn exact_unlink(heads: &mut HashMap<u64, u32>, size: u64, next: u32) {
    if next == NIL {
        heads.remove(&size);
    } else {
        heads.insert(size, next);
    }
}

/// How a pool finds free slices.
#[derive(Debug)]
pub(crate) enum FreeIndex {
    /// Good fit by size class (sliced and exclusive pools).
    Segregated {
        fl_bitmap: u64,
        sl_bitmaps: Box<[u16; FL_COUNT]>,
        heads: Box<[[u32; SL_COUNT]; FL_COUNT]>,
    },
    /// Exact fit by aligned size (persistent pool).
    Exact { heads: HashMap<u64, u32> },
}

impl FreeIndex {
    pub(crate) fn segregated() -> Self {
        Self::Segregated {
            fl_bitmap: 0,
            sl_bitmaps: Box::new([0; FL_COUNT]),
            heads: Box::new([[NIL; SL_COUNT]; FL_COUNT]),
        }
    }

    pub(crate) fn exact() -> Self {
        Self::Exact {
            heads: HashMap::new(),
        }
    }

    /// Put a free slice into the index.
    pub(crate) fn insert(&mut self, slices: &mut Arena<SliceNode>, index: u32) {
        let size = slices[index].size;
        self.insert_at(slices, index, size);
    }

    /// Put free slice `index` into the index at `size` (its size, or the
    /// size `replace`'s caller is about to give it).
    #[inline(always)]
    pub(super) fn insert_at(&mut self, slices: &mut Arena<SliceNode>, index: u32, size: u64) {
        // One dispatch and one class computation for the bitmaps and the head.
        let head = match self {
            Self::Segregated {
                fl_bitmap,
                sl_bitmaps,
                heads,
            } => {
                let (fl, sl) = class(size);
                *fl_bitmap |= 1 << fl;
                sl_bitmaps[fl] |= 1 << sl;
                &mut heads[fl][sl]
            }
            Self::Exact { heads } => exact_head(heads, size),
        };
        let old = std::mem::replace(head, index);
        if old != NIL {
            slices[old].free_prev = index;
        }
        let node = &mut slices[index];
        node.free_prev = NIL;
        node.free_next = old;
        node.indexed = true;
    }

    /// Take a free slice out of the index.
    pub(crate) fn remove(&mut self, slices: &mut Arena<SliceNode>, index: u32) {
        let node = &slices[index];
        if node.indexed {
            let size = node.size;
            self.unlink(slices, index, size);
        }
    }

    /// Take indexed slice `index` out of the index, where it went in at
    /// `size` (its size now may differ: `replace`'s caller resized it).
    pub(super) fn unlink(&mut self, slices: &mut Arena<SliceNode>, index: u32, size: u64) {
        let node = &mut slices[index];
        node.indexed = false;
        let (prev, next) = (node.free_prev, node.free_next);
        node.free_prev = NIL;
        node.free_next = NIL;
        if next != NIL {
            slices[next].free_prev = prev;
        }
        if prev != NIL {
            slices[prev].free_next = next;
            return;
        }
        match self {
            Self::Segregated {
                fl_bitmap,
                sl_bitmaps,
                heads,
            } => {
                let (fl, sl) = class(size);
                heads[fl][sl] = next;
                if next == NIL {
                    sl_bitmaps[fl] &= !(1 << sl);
                    if sl_bitmaps[fl] == 0 {
                        *fl_bitmap &= !(1 << fl);
                    }
                }
            }
            Self::Exact { heads } => exact_unlink(heads, size, next),
        }
    }

    /// A free slice of at least `size` bytes (exactly `size` when exact), in O(1).
    #[inline(always)]
    pub(crate) fn find(&self, slices: &Arena<SliceNode>, size: u64) -> Option<u32> {
        match self {
            Self::Exact { heads } => heads.get(&size).copied().filter(|&h| h != NIL),
            Self::Segregated {
                fl_bitmap,
                sl_bitmaps,
                heads,
            } => {
                // The request's own class may hold a close fit below the rounding.
                let (fl, sl) = class(size);
                let mut cursor = heads[fl][sl];
                for _ in 0..SAME_CLASS_PROBE {
                    if cursor == NIL {
                        break;
                    }
                    if slices[cursor].size >= size {
                        return Some(cursor);
                    }
                    cursor = slices[cursor].free_next;
                }
                // Round up to the next class: every slice there fits.
                let (fl, sl) = if size < SL_COUNT as u64 {
                    (fl, sl)
                } else {
                    let step = 1u64 << (63 - size.leading_zeros() - SL_BITS);
                    class(size.checked_add(step - 1)?)
                };
                let sl_map = u32::from(sl_bitmaps[fl]) & (!0u32 << sl);
                let (fl, sl) = if sl_map != 0 {
                    (fl, sl_map.trailing_zeros() as usize)
                } else {
                    let fl_map = fl_bitmap & (!0u64).checked_shl(fl as u32 + 1).unwrap_or(0);
                    if fl_map == 0 {
                        return None;
                    }
                    let fl = fl_map.trailing_zeros() as usize;
                    (fl, u32::from(sl_bitmaps[fl]).trailing_zeros() as usize)
                };
                Some(heads[fl][sl]).filter(|&h| h != NIL)
            }
        }
    }

    /// The head of each of up to `n` non-empty size classes above the
    /// class of `size`, smallest class first (segregated index only; the
    /// exact index has none): more free slices that fit, for a caller that
    /// weighs more than size (an arena's placement on mapped chunks,
    /// `arena/place.rs`). `visit` returns `false` to stop.
    pub(crate) fn heads_above(&self, size: u64, n: usize, mut visit: impl FnMut(u32) -> bool) {
        let Self::Segregated {
            fl_bitmap,
            sl_bitmaps,
            heads,
        } = self
        else {
            return;
        };
        let (mut fl, sl) = class(size);
        let mut sl_map =
            u32::from(sl_bitmaps[fl]) & (!0u32).checked_shl(sl as u32 + 1).unwrap_or(0);
        for _ in 0..n {
            while sl_map == 0 {
                let fl_map = fl_bitmap & (!0u64).checked_shl(fl as u32 + 1).unwrap_or(0);
                if fl_map == 0 {
                    return;
                }
                fl = fl_map.trailing_zeros() as usize;
                sl_map = u32::from(sl_bitmaps[fl]);
            }
            let sl = sl_map.trailing_zeros() as usize;
            sl_map &= sl_map - 1;
            if !visit(heads[fl][sl]) {
                return;
            }
        }
    }

    /// The largest free slice (for reports; scans the top bin only).
    pub(crate) fn largest(&self, slices: &Arena<SliceNode>) -> u64 {
        let mut best = 0;
        let mut walk = |mut cursor: u32| {
            while cursor != NIL {
                best = best.max(slices[cursor].size);
                cursor = slices[cursor].free_next;
            }
        };
        match self {
            Self::Exact { heads } => {
                if let Some((&size, _)) = heads.iter().max_by_key(|(s, _)| **s) {
                    return size;
                }
            }
            Self::Segregated {
                fl_bitmap,
                sl_bitmaps,
                heads,
            } => {
                if *fl_bitmap != 0 {
                    let fl = 63 - fl_bitmap.leading_zeros() as usize;
                    let sl =
                        15 - u32::from(sl_bitmaps[fl]).leading_zeros().saturating_sub(16) as usize;
                    walk(heads[fl][sl]);
                }
            }
        }
        best
    }

    /// Visit every free slice in the index, O(free slices + non-empty
    /// classes): for a caller that must weigh them all, off the hot path
    /// (an arena's placement when memory is short, `arena/place_short.rs`).
    pub(crate) fn for_each(&self, slices: &Arena<SliceNode>, mut visit: impl FnMut(u32)) {
        let mut walk = |mut cursor: u32| {
            while cursor != NIL {
                visit(cursor);
                cursor = slices[cursor].free_next;
            }
        };
        match self {
            Self::Exact { heads } => heads.values().for_each(|&h| walk(h)),
            Self::Segregated {
                fl_bitmap,
                sl_bitmaps,
                heads,
            } => {
                let mut fl_map = *fl_bitmap;
                while fl_map != 0 {
                    let fl = fl_map.trailing_zeros() as usize;
                    fl_map &= fl_map - 1;
                    let mut sl_map = u32::from(sl_bitmaps[fl]);
                    while sl_map != 0 {
                        walk(heads[fl][sl_map.trailing_zeros() as usize]);
                        sl_map &= sl_map - 1;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "free_index_tests.rs"]
mod tests;
