//! The cursor `bind` stamps on a slice, kept beside the slice nodes rather
//! than in them.
//!
//! Reservations and frees never read a cursor, and only `bind` writes one,
//! so it is cold data: keeping it out of `SliceNode` lets a node fit one
//! cache line (`arena.rs`). A node's `cursor_set` says whether the value
//! here is its own; `occupy` clears the flag, so reusing a slice costs no
//! write here, and a stale value left by an earlier owner is never read.

use crate::engine::core::Core;

/// Cursors by slice index; only indices that were ever stamped have room.
#[derive(Debug, Default)]
pub(crate) struct SliceCursors {
    values: Vec<u64>,
}

impl Core {
    /// The cursor stamped on a live slice by its last `bind` (0 if none
    /// since it was occupied).
    pub(crate) fn cursor(&self, slice: u32) -> u64 {
        if !self.slices[slice].cursor_set {
            return 0;
        }
        self.cursors
            .values
            .get(slice as usize)
            .copied()
            .unwrap_or(0)
    }

    /// Stamp `cursor` on a live slice.
    pub(crate) fn set_cursor(&mut self, slice: u32, cursor: u64) {
        let index = slice as usize;
        let values = &mut self.cursors.values;
        if values.len() <= index {
            values.resize(index + 1, 0);
        }
        values[index] = cursor;
        self.slices[slice].cursor_set = true;
    }
}
