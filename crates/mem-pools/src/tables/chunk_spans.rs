//! A slice's whole span claimed and released on an arena page's chunk
//! slots, per *run* of slots rather than per slot: the slices touching
//! the span marked a 64-slot word at a time (`chunk_live.rs`), the idle
//! list changed a word of bits at a time. A span released whole is queued
//! as a run — its idle bits and chain bits (each slot's newer neighbour
//! is the next slot) set by word, its stamp stored once at its first slot
//! (`chunk_stamps.rs`), links written only at its ends — and spliced
//! after the newest once; claimed again, a run is found by its chain bits
//! and unlinked with one splice. Spans of one slot and spans within one
//! word have lean paths (one run queued or unlinked with its neighbours
//! read from the word's chain bits); spans over several words are in
//! `chunk_span_words.rs`. The list ends as [`ChunkMap::queue_idle`] and
//! [`ChunkMap::unqueue`] slot by slot would leave it
//! (`chunk_spans_tests.rs` checks it against such a model).
//!
//! Before (one 48-byte slot record per granule, linked slot by slot) this
//! was two thirds of the `growth` workload's instructions: a 1 GiB buffer
//! spans 512 slots of 2 MiB, and each growth claims one and releases one.
//! Then (a count and a stamp per slot in columns) still ~3.4 instructions
//! per slot per claim and release; now O(slots / 64).

use std::ops::RangeInclusive;

use crate::tables::chunk_bits;
use crate::tables::chunk_map::{ChunkMap, END};

/// The runs one release has queued: the first slot, the last, how many,
/// and their stamp.
pub(super) struct Queued {
    pub(super) head: u32,
    pub(super) tail: u32,
    pub(super) added: u64,
    pub(super) stamp: u64,
}

impl ChunkMap {
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
            // Only a slot no slice touched may be idle.
            if first == last && self.count_slot(first) && self.is_idle(first) {
                self.unlink_slot(first);
            }
            return;
        }
        if first / 64 == last / 64 {
            let span = u64::MAX >> (63 - (last - first)) << (first % 64);
            self.cover_word((first / 64) as usize, span);
            self.unlink_in_word(first, last);
            return;
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
        let inner = (first / 64 + 1) * 64..=(last / 64) * 64 - 1;
        let mut inner_idle = false;
        let mut removed = 0;
        let mut s = chunk_bits::next(&self.idle_bits, true, first, last);
        while s <= last {
            // The run ends at its first slot whose newer neighbour is not
            // the next slot (that slot is in it), or at `last`.
            let end = chunk_bits::next(&self.chain_bits, false, s, last).min(last);
            let (older, newer) = (self.older_of(s), self.newer_of(end));
            self.split_stamp_after(end);
            let columns = [
                &mut self.idle_bits[..],
                &mut self.chain_bits[..],
                &mut self.stamp_bits[..],
            ];
            chunk_bits::clear_in(columns, s, end);
            removed += u64::from(end - s) + 1;
            inner_idle |= s <= *inner.start() && end >= *inner.end();
            self.link(older, newer);
            s = match end < last {
                true => chunk_bits::next(&self.idle_bits, true, end + 1, last),
                false => last + 1,
            };
        }
        self.idle_count -= removed;
        inner_idle
    }

    /// The idle runs of `first..=last`, all in one bit word, unlinked
    /// (the claim of a span of up to 64 slots, most of them): each run's
    /// end found from the word's chain bits.
    #[inline]
    fn unlink_in_word(&mut self, first: u32, last: u32) {
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

    /// One live slice less on every slot of `span` (counted, so they
    /// exist). The slots left with none (and mapped) join the idle list
    /// as its newest in slot order, as `queue_idle` per slot would queue
    /// them. Most releases of small slices leave their slot live
    /// (gpt2-train): one count, no run.
    #[inline]
    pub(crate) fn release_span(&mut self, span: RangeInclusive<u32>) {
        let (first, last) = (*span.start(), *span.end());
        if first >= last {
            // One slot (small slices, the most common) or none.
            if first == last
                && self.uncount_slot(first)
                && self.slots[first as usize].chunk.is_some()
            {
                let (w, bit) = ((first / 64) as usize, 1 << (first % 64));
                self.queue_word_run(w, bit, first, first);
            }
            return;
        }
        match first / 64 == last / 64 {
            true => self.release_in_word(first, last),
            false => self.release_in_words(first, last),
        }
    }

    /// [`Self::release_span`] of a span within one bit word (2 to 64
    /// slots, most spans): the slice's marks taken off in one step, which
    /// says the slots left with none. One run left idle (the usual case)
    /// is queued by [`Self::queue_word_run`], several by
    /// [`Self::queue_in_word`].
    #[inline]
    fn release_in_word(&mut self, first: u32, last: u32) {
        let w = (first / 64) as usize;
        let span = u64::MAX >> (63 - (last - first)) << (first % 64);
        let freed = self.uncover_word(w, span);
        let bits = freed & self.mapped_bits[w];
        if bits == 0 {
            return;
        }
        let base = first & !63;
        // One run: adding its lowest bit carries out of it.
        match bits.wrapping_add(bits & bits.wrapping_neg()) & bits {
            0 => {
                let (a, b) = (bits.trailing_zeros(), 63 - bits.leading_zeros());
                self.queue_word_run(w, bits, base + a, base + b);
            }
            _ => self.queue_in_word(base, bits),
        }
    }

    /// Queue slots `a..=b` of bit word `w` (`run`: their bits), just left
    /// idle, as the list's newest: what [`Self::queue_run`] and
    /// [`Self::splice`] of one run do, in one step.
    #[inline(always)]
    fn queue_word_run(&mut self, w: usize, run: u64, a: u32, b: u32) {
        debug_assert_eq!(self.idle_bits[w] & run, 0);
        let newest = self.newest;
        // One stamp for the run, at its first slot (`chunk_stamps.rs`).
        self.stamp[a as usize] = self.submitted;
        self.stamp_bits[w] |= run & !(1 << (a % 64));
        self.idle_bits[w] |= run;
        // Each slot's newer neighbour is the next, but the last one's.
        self.chain_bits[w] = (self.chain_bits[w] | run) & !(1 << (b % 64));
        self.newer[b as usize] = END;
        match newest {
            END => self.oldest = a,
            n => self.set_newer(n, a),
        }
        self.older[a as usize] = newest;
        self.newest = b;
        self.idle_count += u64::from(b - a) + 1;
        self.shed_stuck = false;
    }

    /// Queue the slots of word `base` set in `bits` (just left idle) as
    /// the list's newest, run by run.
    #[inline(never)]
    fn queue_in_word(&mut self, base: u32, mut bits: u64) {
        let mut queued = Queued {
            head: END,
            tail: END,
            added: 0,
            stamp: self.submitted,
        };
        while bits != 0 {
            let a = bits.trailing_zeros();
            let len = (!(bits >> a)).trailing_zeros();
            bits &= !(u64::MAX >> (64 - len) << a);
            self.queue_run(base + a, base + a + len - 1, &mut queued);
        }
        self.splice(&queued);
    }

    /// Splice the runs a release queued after the list's newest.
    #[inline]
    pub(super) fn splice(&mut self, queued: &Queued) {
        if queued.added > 0 {
            self.set_newer(queued.tail, END);
            self.link(self.newest, queued.head);
            self.newest = queued.tail;
            self.idle_count += queued.added;
            self.shed_stuck = false;
        }
    }

    /// Queue slots `a..=b`, just left idle, after the runs this release
    /// queued before: idle and chain bits set by word (each slot's newer
    /// neighbour the next), one stamp at `a`, and one link to the
    /// previous run. The release splices them after the list's newest.
    #[inline(always)]
    pub(super) fn queue_run(&mut self, a: u32, b: u32, queued: &mut Queued) {
        // One stamp for the run, at `a` (`chunk_stamps.rs`): every other
        // slot shares it, and every slot's newer neighbour is the next
        // slot but `b`'s.
        self.stamp[a as usize] = queued.stamp;
        if a / 64 == b / 64 {
            // One word (a run of up to 64 slots, most of them): three stores.
            let w = (a / 64) as usize;
            let run = u64::MAX >> (63 - (b - a)) << (a % 64);
            self.idle_bits[w] |= run;
            self.chain_bits[w] |= run & !(1 << (b % 64));
            self.stamp_bits[w] |= run & !(1 << (a % 64));
        } else {
            // The three columns' bits set in one call (masks computed
            // once), then the two ends' exceptions.
            let columns = [
                &mut self.idle_bits[..],
                &mut self.chain_bits[..],
                &mut self.stamp_bits[..],
            ];
            chunk_bits::set_in(columns, a, b);
            chunk_bits::put(&mut self.chain_bits, b, false);
            chunk_bits::put(&mut self.stamp_bits, a, false);
        }
        match queued.tail {
            END => queued.head = a,
            tail => {
                self.set_newer(tail, a);
                self.older[a as usize] = tail;
            }
        }
        queued.tail = b;
        queued.added += u64::from(b - a) + 1;
    }
}

#[cfg(test)]
#[path = "chunk_spans_tests.rs"]
mod tests;
