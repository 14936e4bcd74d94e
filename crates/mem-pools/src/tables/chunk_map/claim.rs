//! A slice's whole span claimed and released on an arena page's chunk
//! slots, per *run* of slots rather than per slot: the slices touching
//! the span marked a 64-slot word at a time (`live.rs`), the idle
//! list changed a word of bits at a time. A span released whole is queued
//! as a run — its idle bits and chain bits (each slot's newer neighbour
//! is the next slot) set by word, its stamp stored once at its first slot
//! (`stamps.rs`), links written only at its ends — and spliced
//! after the newest once; claimed again, a run is found by its chain bits
//! and unlinked with one splice. Spans of one slot and spans within one
//! word have lean paths (one run queued or unlinked with its neighbours
//! read from the word's chain bits); spans over several words are in
//! `release_words.rs`. The list ends as [`ChunkMap::queue_idle`] and
//! [`ChunkMap::unqueue`] slot by slot would leave it
//! (`claim_tests.rs` checks it against such a model). This file
//! claims; `release.rs` releases.
//!
//! Why by run: a 1 GiB buffer spans 512 slots of 2 MiB, and a workload
//! whose buffers grow claims and releases one at each step.

use std::ops::RangeInclusive;

use crate::tables::chunk_map::ChunkMap;
use crate::tables::chunk_map::bits;

impl ChunkMap {
    /// Count one more live slice on slot `s` (no longer idle; lazily
    /// counted slices' slots may be unmapped).
    pub(crate) fn claim_slot(&mut self, s: u32) {
        self.reach(s);
        // A uniform word's counts are all zero (`uniform.rs`): a slot
        // with none may be in one, settled (its new count kept).
        if self.count_slot(s) {
            self.settle_around(s, s);
            if self.is_idle(s) {
                self.unqueue(s);
            }
        }
    }

    /// One live slice less on slot `s` (counted, so it exists); idle when
    /// none is left. The step [`ChunkMap::release_span`] batches (tests).
    #[cfg(test)]
    pub(super) fn release_slot(&mut self, s: u32) {
        if self.uncount_slot(s) && self.slots[s as usize].chunk.is_some() {
            self.queue_idle(s);
        }
    }

    /// Count a slice on every slot of `span` if all are mapped; `false`,
    /// changing nothing (the idle order included), when one is not. Two
    /// tight passes over the slots, no growth check per slot.
    pub(crate) fn claim_span(&mut self, span: std::ops::RangeInclusive<u32>) -> bool {
        if span.is_empty() {
            return true;
        }
        if self.unmapped_in(span.clone()) > 0 {
            return false;
        }
        self.claim_mapped_span(span);
        true
    }

    /// Count a slice on every slot of `span`, all mapped (the caller
    /// checked: placement counted them). Idle slots leave the list as
    /// [`Self::unqueue`] per slot would leave it: the span's idle slots
    /// are found by idle-bit words, and from each the run of slots that
    /// are also consecutive in the list (chain bits set; a span released
    /// whole is queued so) is unlinked with one splice.
    #[inline]
    pub(crate) fn claim_mapped_span(&mut self, span: RangeInclusive<u32>) {
        debug_assert_eq!(self.unmapped_in(span.clone()), 0);
        let (first, last) = (*span.start(), *span.end());
        if first >= last {
            // One slot (small slices, the most common) or none: a count.
            // Only a slot no slice touched may be idle, or in a uniform
            // word (whose counts are all zero): settled, its count kept.
            if first == last && self.count_slot(first) {
                self.settle_around(first, first);
                if self.is_idle(first) {
                    self.unlink_slot(first);
                }
            }
            return;
        }
        if first / 64 == last / 64 {
            // The slots' word may be inside a span freed whole.
            self.settle_around(first, last);
            let span = u64::MAX >> (63 - (last - first)) << (first % 64);
            self.cover_word((first / 64) as usize, span);
            self.unlink_in_word(first, last);
            return;
        }
        if self.uniform_words != 0 {
            let (fw, lw) = ((first / 64) as usize, (last / 64) as usize);
            if lw - fw > 1 && self.all_uniform(fw + 1, lw, true) {
                return self.claim_rested(first, last);
            }
            self.settle_words(fw.saturating_sub(1), lw + 1);
        }
        // Over several words, its idle runs are unlinked first (the marks
        // play no part in that): when one run covers every word between
        // its end words (a hole reused whole, the usual case), no live
        // slice touches those, and they are marked with no check.
        let inner_idle = self.unlink_in_words(first, last);
        self.cover_words(first, last, inner_idle);
    }

    /// Take the idle slots of `first..=last` off the idle list (they stay
    /// mapped), run by run: as [`Self::unqueue`] of each would leave it.
    #[inline]
    pub(crate) fn unlink_idle(&mut self, first: u32, last: u32) {
        self.settle_around(first, last);
        match first / 64 == last / 64 {
            true => self.unlink_in_word(first, last),
            false => _ = self.unlink_in_words(first, last),
        }
    }

    /// The idle runs of `first..=last`, a span over several bit words,
    /// unlinked: the span's idle slots found by idle-bit words, each run's
    /// end by its chain bits. Returns whether one run held every slot of
    /// the words between the end words.
    #[inline(never)]
    fn unlink_in_words(&mut self, first: u32, last: u32) -> bool {
        // One idle run from the first word into the last over every word
        // between (a hole reused whole, the usual case): its ends read
        // from the end words' chain bits, no search along it.
        let (fw, lw) = ((first / 64) as usize, (last / 64) as usize);
        let chained = self.chain_bits[fw + 1..lw].iter();
        if self.chain_bits[fw] >> 63 == 1 && chained.fold(u64::MAX, |all, &w| all & w) == u64::MAX {
            self.unlink_crossing(first, last, false);
            return true;
        }
        let inner = (first / 64 + 1) * 64..=(last / 64) * 64 - 1;
        let mut inner_idle = false;
        let mut removed = 0;
        // The first idle slot: in the first word (a neighbour's run that
        // ends in it, say) with no search.
        let mut s = match self.idle_bits[fw] & u64::MAX << (first % 64) {
            0 => bits::next(&self.idle_bits, true, first, last),
            idle => fw as u32 * 64 + idle.trailing_zeros(),
        };
        while s <= last {
            // The run ends at its first slot whose newer neighbour is not
            // the next slot (that slot is in it), or at `last`.
            let end = bits::next(&self.chain_bits, false, s, last).min(last);
            let (older, newer) = (self.older_of(s), self.newer_of(end));
            self.split_stamp_after(end);
            let columns = [
                &mut self.idle_bits[..],
                &mut self.chain_bits[..],
                &mut self.stamp_bits[..],
            ];
            bits::clear_in(columns, s, end);
            removed += u64::from(end - s) + 1;
            inner_idle |= s <= *inner.start() && end >= *inner.end();
            self.link(older, newer);
            s = match end < last {
                true => self.next_idle_to(end + 1, last),
                false => last + 1,
            };
        }
        self.idle_count -= removed;
        inner_idle
    }

    /// The first idle slot of `from..=last`, or `last + 1`: with no
    /// search when they share a word (a run that ends before a span's
    /// last slot, a neighbour's, the usual case).
    #[inline(always)]
    fn next_idle_to(&self, from: u32, last: u32) -> u32 {
        if from / 64 != last / 64 {
            return bits::next(&self.idle_bits, true, from, last);
        }
        let span = u64::MAX >> (63 - (last - from)) << (from % 64);
        match self.idle_bits[(from / 64) as usize] & span {
            0 => last + 1,
            idle => (from & !63) + idle.trailing_zeros(),
        }
    }

    /// The idle runs of `first..=last`, all in one bit word, unlinked
    /// (the claim of a span of up to 64 slots, most of them): each run's
    /// end found from the word's chain bits.
    #[inline]
    pub(super) fn unlink_in_word(&mut self, first: u32, last: u32) {
        let (w, base) = ((first / 64) as usize, first & !63);
        let span = u64::MAX >> (63 - (last - first)) << (first % 64);
        let mut idle = self.idle_bits[w] & span;
        while idle != 0 {
            let a = idle.trailing_zeros();
            // The run ends at its first slot not chained to the next.
            let loose = !self.chain_bits[w] & (u64::MAX << a);
            let e = loose.trailing_zeros().min(last % 64);
            idle &= !(u64::MAX >> (63 - (e - a)) << a);
            self.unlink_word_run(w, base, a, e);
        }
    }

    /// Take idle slot `s` off the list (a one-slot claim): out of line,
    /// so the claim's common path (the slot already live) stays short.
    #[inline(never)]
    fn unlink_slot(&mut self, s: u32) {
        let (w, a) = ((s / 64) as usize, s % 64);
        self.unlink_word_run(w, s - a, a, a);
    }

    /// Take idle run `base + a..=base + e` of bit word `w` (chained from
    /// `a` to `e`) off the list with one splice: its neighbours read from
    /// the word's chain bits where they say them, its bits cleared.
    #[inline(always)]
    fn unlink_word_run(&mut self, w: usize, base: u32, a: u32, e: u32) {
        let chain = self.chain_bits[w];
        let (s, end) = (base + a, base + e);
        let older = match a {
            0 => self.older_of(s),
            _ if chain >> (a - 1) & 1 != 0 => s - 1,
            _ => self.older[s as usize],
        };
        let newer = match chain >> e & 1 {
            0 => self.newer[end as usize],
            _ => end + 1,
        };
        let run = u64::MAX >> (63 - (e - a)) << a;
        self.split_stamp_after(end);
        self.idle_bits[w] &= !run;
        self.chain_bits[w] = chain & !run;
        self.stamp_bits[w] &= !run;
        self.idle_count -= u64::from(e - a) + 1;
        self.link(older, newer);
    }
}

#[cfg(test)]
#[path = "claim_tests.rs"]
mod tests;
