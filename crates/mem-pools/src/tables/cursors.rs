//! The cursor `bind` stamps on a slice, kept beside the slice nodes rather
//! than in them.
//!
//! Reservations and frees never read a cursor, and only `bind` writes one,
//! so it is cold data: keeping it out of `SliceNode` lets a node fit one
//! cache line (`nodes.rs`). A node's `cursor_set` says whether the value
//! here is its own; `occupy` clears the flag, so reusing a slice costs no
//! write here, and a stale value left by an earlier owner is never read.

/// Cursors by slice index; only indices that were ever stamped have room.
#[derive(Debug, Default)]
pub(crate) struct SliceCursors {
    values: Vec<u64>,
}

impl SliceCursors {
    /// The value stamped at `slice` (0 where none ever was).
    pub(crate) fn get(&self, slice: u32) -> u64 {
        self.values.get(slice as usize).copied().unwrap_or(0)
    }

    /// Stamp `cursor` at `slice`.
    pub(crate) fn set(&mut self, slice: u32, cursor: u64) {
        let index = slice as usize;
        if self.values.len() <= index {
            self.values.resize(index + 1, 0);
        }
        self.values[index] = cursor;
    }
}
