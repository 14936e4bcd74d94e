//! A slice's span released on an arena page's chunk slots (the other
//! half of `claim.rs`): the slices' marks taken off a word at a
//! time, and the slots left with none queued idle as runs — idle, chain
//! and stamp bits set by word, one stamp per run at its first slot, links
//! written only at a run's ends, and the runs spliced after the list's
//! newest once. One slot and spans within one word have lean paths here;
//! spans over several words are in `release_words.rs`.

use std::ops::RangeInclusive;

use crate::tables::chunk_map::bits;
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
        // One stamp for the run, at its first slot (`stamps.rs`).
        self.stamp[a as usize] = self.submitted;
        self.stamp_bits[w] |= run & !(1 << (a % 64));
        self.idle_bits[w] |= run;
        // Each slot's newer neighbour is the next, but the last one's.
        self.chain_bits[w] = (self.chain_bits[w] | run) & !(1 << (b % 64));
        self.append_newest(a, b);
    }

    /// Link run `a..=b`, its bits already set, after the list's newest:
    /// its links written at its ends only, its slots counted idle.
    #[inline(always)]
    pub(super) fn append_newest(&mut self, a: u32, b: u32) {
        self.newer[b as usize] = END;
        let newest = self.newest;
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
        // One stamp for the run, at `a` (`stamps.rs`): every other
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
            bits::set_in(columns, a, b);
            bits::put(&mut self.chain_bits, b, false);
            bits::put(&mut self.stamp_bits, a, false);
        }
        self.append_run(a, b, queued);
    }

    /// Link run `a..=b`, its bits and stamp set, after the runs this
    /// release queued before.
    #[inline(always)]
    pub(super) fn append_run(&mut self, a: u32, b: u32, queued: &mut Queued) {
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
