//! Which chunk is under a slot, and whether it may go: a chunk covers a
//! run of slots (it was created sized to the run it filled), recorded at
//! its first slot, and it is unmapped only whole, once no live slice
//! touches it and its stream work is complete.

use mem_storage::ChunkId;

use crate::tables::chunk_map::bits;
use crate::tables::chunk_map::{ChunkMap, END};

impl ChunkMap {
    /// Put `chunk` under the `len` slots from `first` (`None`: the chunk
    /// that covered them was unmapped), keeping the mapped bits and the
    /// mapped count in step.
    pub(crate) fn set_extent(&mut self, first: u32, len: u32, chunk: Option<ChunkId>) {
        debug_assert!(len > 0);
        let last = first + (len - 1);
        self.reach(last);
        self.settle_around(first, last);
        for slot in &mut self.slots[first as usize..=last as usize] {
            slot.chunk = chunk;
            slot.head = if chunk.is_some() { first } else { END };
        }
        self.slots[first as usize].len = if chunk.is_some() { len } else { 0 };
        match chunk {
            Some(_) => {
                bits::set(&mut self.mapped_bits, first, last);
                self.mapped += u64::from(len);
            }
            None => {
                bits::clear(&mut self.mapped_bits, first, last);
                self.mapped -= u64::from(len);
            }
        }
        self.refresh_full(first as usize / 64, last as usize / 64);
    }

    /// The chunk over mapped slot `s`: its first slot and how many it covers.
    pub(crate) fn extent(&self, s: u32) -> (u32, u32) {
        let head = self.slots[s as usize].head;
        (head, self.slots[head as usize].len)
    }

    /// Whether the chunk at `head` covering `len` slots may be unmapped
    /// whole: no live slice touches any of its slots, and the stream has
    /// completed the work it had submitted when each went idle (checked
    /// against the cursors, without waiting). One word of marks and a
    /// compare per stamp run for a chunk within one bit word (most);
    /// O(len / 64 + stamp runs) for a larger one.
    pub(crate) fn extent_ready(&self, head: u32, len: u32) -> bool {
        let (w, bit) = (head as usize / 64, head % 64);
        let last = head + (len - 1);
        if last / 64 != head / 64 {
            return !self.any_live(head, last) && self.stamps_done(head, last);
        }
        // Within one word (the chunks of small and mid-sized slices): the
        // live marks in one mask, then one compare per stamp run.
        let span = u64::MAX >> (63 - (len - 1)) << bit;
        if self.live_word(w) & span != 0 {
            return false;
        }
        let stamps = self.stamp_word(w);
        let first = match stamps >> bit & 1 {
            0 => self.stamp[head as usize],
            _ => self.stamp_of(head),
        };
        let heads = !stamps & span & !(1 << bit);
        first <= self.completed && !self.heads_pending(w as u32, heads)
    }
}
