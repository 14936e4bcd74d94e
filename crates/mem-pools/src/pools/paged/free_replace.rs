//! One free slice taking another's place in the free index: what every
//! split and coalesce of a carved pool does.
//!
//! A split takes a free slice out and puts the piece left over in; a
//! coalesce takes the free neighbour out and puts the merged slice in.
//! Done as a `remove` then an `insert`, that is two calls, two size-class
//! computations, each with its own dispatch and node lookups. `replace`
//! does exactly what `remove` then `insert` would (the same lists in the
//! same order, the same bitmaps) in one pass.

use crate::pools::paged::free_index::{FreeIndex, class};
use crate::tables::nodes::{Arena, SliceNode};
use crate::tables::slots::NIL;

impl FreeIndex {
    /// `remove(old)` then `insert(new)`: `old` went into the index at
    /// `old_size`, `new` goes in at `new_size` (the caller sets the
    /// nodes' sizes: they are read from the arguments, so `old`'s may
    /// have changed and `new`'s may not be set yet). `old == new` is a
    /// slice re-indexed at a new size. An `old` not indexed is skipped,
    /// as `remove` skips it.
    #[inline(always)]
    pub(crate) fn replace(
        &mut self,
        slices: &mut Arena<SliceNode>,
        (old, old_size): (u32, u64),
        (new, new_size): (u32, u64),
    ) {
        let Self::Segregated {
            fl_bitmap,
            sl_bitmaps,
            heads,
        } = self
        else {
            return self.replace_exact(slices, (old, old_size), (new, new_size));
        };
        debug_assert!(new == old || !slices[new].indexed);
        // Out of the old class (`remove`'s steps, the size given).
        let node = &mut slices[old];
        let (indexed, prev, next) = (node.indexed, node.free_prev, node.free_next);
        if indexed {
            node.indexed = false;
            node.free_prev = NIL;
            node.free_next = NIL;
            if next != NIL {
                slices[next].free_prev = prev;
            }
            if prev != NIL {
                slices[prev].free_next = next;
            } else {
                let (fl, sl) = class(old_size);
                heads[fl][sl] = next;
                if next == NIL {
                    sl_bitmaps[fl] &= !(1 << sl);
                    if sl_bitmaps[fl] == 0 {
                        *fl_bitmap &= !(1 << fl);
                    }
                }
            }
        }
        // Into the new class (`insert`'s steps).
        let (fl, sl) = class(new_size);
        *fl_bitmap |= 1 << fl;
        sl_bitmaps[fl] |= 1 << sl;
        let first = std::mem::replace(&mut heads[fl][sl], new);
        if first != NIL {
            slices[first].free_prev = new;
        }
        let node = &mut slices[new];
        node.free_prev = NIL;
        node.free_next = first;
        node.indexed = true;
    }

    /// `replace` on the exact index (the persistent pool's, which never
    /// splits or coalesces): the two steps it stands for.
    #[cold]
    #[inline(never)]
    fn replace_exact(
        &mut self,
        slices: &mut Arena<SliceNode>,
        (old, old_size): (u32, u64),
        (new, new_size): (u32, u64),
    ) {
        if slices[old].indexed {
            self.unlink(slices, old, old_size);
        }
        self.insert_at(slices, new, new_size);
    }
}
