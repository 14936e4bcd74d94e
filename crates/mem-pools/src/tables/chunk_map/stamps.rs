//! The stamps of an arena page's idle slots (the stream's submit cursor
//! when each went idle, `stream_order.rs`), kept once per *stamp run*.
//!
//! A release queues the slots it leaves idle in runs, all stamped with
//! the same cursor; the stamp is stored at a run's first slot, and a bit
//! per slot (`stamp_bits`) says "same stamp as the slot before". So a
//! run of 4,096 slots is stamped by one store and 64 words of bits,
//! where a fill wrote 4,096 stamps. A slot's stamp is at the nearest slot
//! at or below it whose bit is clear, found a word at a time.
//!
//! The bits hold only on idle slots: a slot's bit is set only while it
//! and the slot before it are idle, queued in one run. Queueing a run
//! keeps that for free (its slots and the slot after it were not idle, so
//! their bits are clear); a slot leaving the list clears its bit, and
//! when the slot after a leaving stretch kept the stretch's stamp, the
//! stamp is copied to it and its bit cleared: it heads the rest of the
//! run now. The idle list's order plays no part: moving a slot in it
//! (`rotate_newest`) keeps its stamp.

use crate::tables::chunk_map::ChunkMap;
use crate::tables::chunk_map::bits;
use crate::tables::chunk_map::live::word_mask;

impl ChunkMap {
    /// The stamp of idle slot `s`: at its stamp run's first slot.
    #[inline]
    pub(crate) fn stamp_of(&self, s: u32) -> u64 {
        self.stamp[self.run_head(s) as usize]
    }

    /// Slots `a..=end` are leaving the idle list: if the slot after them
    /// shares their stamp, it takes the stamp itself (it heads what is
    /// left of the run). Call before their bits are cleared.
    #[inline(always)]
    pub(crate) fn split_stamp_after(&mut self, end: u32) {
        if bits::get(&self.stamp_bits, end + 1) {
            self.head_stamp_run(end + 1);
        }
    }

    /// Make slot `s`, which shares the stamp of the slot before it, the
    /// first slot of its stamp run.
    #[cold]
    #[inline(never)]
    fn head_stamp_run(&mut self, s: u32) {
        self.stamp[s as usize] = self.stamp_of(s);
        bits::put(&mut self.stamp_bits, s, false);
    }

    /// Whether the stream has completed the work submitted when each slot
    /// of `first..=last` (all idle) went idle: one compare per stamp run,
    /// found a word of bits at a time.
    pub(crate) fn stamps_done(&self, first: u32, last: u32) -> bool {
        if self.stamp_of(first) > self.completed {
            return false;
        }
        // The run heads after `first`.
        let from = first + 1;
        if from > last {
            return true;
        }
        if from / 64 == last / 64 {
            // Most chunks: one word, usually one run (no head after `first`).
            let span = u64::MAX >> (63 - (last - from)) << (from % 64);
            let heads = !self.stamp_word((from / 64) as usize) & span;
            return !self.heads_pending(from / 64, heads);
        }
        (from / 64..=last / 64).all(|w| {
            let heads = !self.stamp_word(w as usize) & word_mask(w, from, last);
            !self.heads_pending(w, heads)
        })
    }

    /// Whether a stamp run headed at one of `heads` (bits of word `w`)
    /// went idle after the work the stream has completed.
    #[inline]
    pub(crate) fn heads_pending(&self, w: u32, mut heads: u64) -> bool {
        while heads != 0 {
            let s = w * 64 + heads.trailing_zeros();
            if self.stamp[s as usize] > self.completed {
                return true;
            }
            heads &= heads - 1;
        }
        false
    }

    /// Whether an idle slot waits for work the stream has not completed
    /// (an out-of-memory retry then waits for the stream): one compare
    /// per stamp run.
    pub(crate) fn idle_waiting(&self) -> bool {
        (0..self.idle_bits.len()).any(|w| {
            let heads = self.idle_word(w) & !self.stamp_word(w);
            self.heads_pending(w as u32, heads)
        })
    }

    /// The first slot of the stamp run of slot `s`: the nearest slot at
    /// or below it whose stamp bit is clear (slot 0's always is: no slot
    /// before it shares a run with it), found a word at a time. A uniform
    /// word's stamp bits are kept all set (`uniform.rs`): a rested one's
    /// are, and a held one is never crossed (a stamp run holds only idle
    /// slots), so no word is checked uniform here.
    #[inline]
    fn run_head(&self, s: u32) -> u32 {
        let bits = &self.stamp_bits;
        let mut w = s as usize / 64;
        let Some(&word) = bits.get(w) else {
            return s;
        };
        let mut heads = !word & u64::MAX >> (63 - s % 64);
        while heads == 0 {
            w -= 1;
            heads = !bits[w];
        }
        w as u32 * 64 + 63 - heads.leading_zeros()
    }
}
