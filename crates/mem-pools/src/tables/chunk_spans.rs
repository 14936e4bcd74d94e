//! A slice's whole span claimed and released on an arena page's chunk
//! slots, per *run* of slots rather than per slot: the live counts of the
//! span in one pass over a column (which the compiler vectorizes), the
//! idle list changed a 64-slot word of bits at a time. A span released
//! whole is queued as a run — its idle bits and chain bits (each slot's
//! newer neighbour is the next slot) set by word, its stamps filled, links
//! written only at its ends — and spliced after the newest once; claimed
//! again, a run is found by its chain bits and unlinked with one splice.
//! The list ends as [`ChunkMap::queue_idle`] and [`ChunkMap::unqueue`]
//! slot by slot would leave it (`chunk_spans_tests.rs` checks it against
//! such a model).
//!
//! Before (one 48-byte slot record per granule, linked slot by slot) this
//! was two thirds of the `growth` workload's instructions: a 1 GiB buffer
//! spans 512 slots of 2 MiB, and each growth claims one and releases one.

use std::ops::RangeInclusive;

use crate::tables::chunk_bits;
use crate::tables::chunk_map::{ChunkMap, END};

/// The bits, from bit `shift`, of the counts of `live` (at most 64 minus
/// `shift` of them) that are zero: eight at a time (a fold), slot by slot
/// only in the groups of eight where one is not (a word some live slice
/// still touches: usually the one slot a neighbour shares).
#[inline]
fn freed_mask(live: &[u32], shift: u32) -> u64 {
    let mut freed = 0;
    for (k, group) in (0..).zip(live.chunks(8)) {
        let at = shift + 8 * k;
        if group.iter().fold(0, |any, &l| any | l) == 0 {
            freed |= u64::MAX >> (64 - group.len()) << at;
        } else {
            for (j, &l) in (0..).zip(group) {
                freed |= u64::from(l == 0) << (at + j);
            }
        }
    }
    freed
}

/// The runs one release has queued: the first slot, the last, how many,
/// and their stamp.
struct Queued {
    head: u32,
    tail: u32,
    added: u64,
    stamp: u64,
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
            // One slot (small slices, the most common) or none.
            if first == last {
                self.live[first as usize] += 1;
                if self.is_idle(first) {
                    self.unqueue(first);
                }
            }
            return;
        }
        for live in &mut self.live[first as usize..=last as usize] {
            *live += 1;
        }
        self.unlink_idle(first, last);
    }

    /// Take the idle slots of `first..=last` off the idle list (they stay
    /// mapped), run by run: as [`Self::unqueue`] of each would leave it.
    #[inline]
    pub(crate) fn unlink_idle(&mut self, first: u32, last: u32) {
        match first / 64 == last / 64 {
            true => self.unlink_in_word(first, last),
            false => self.unlink_in_words(first, last),
        }
    }

    /// The idle runs of `first..=last`, a span over several bit words,
    /// unlinked: the span's idle slots found by idle-bit words, each run's
    /// end by its chain bits.
    #[inline(never)]
    fn unlink_in_words(&mut self, first: u32, last: u32) {
        let mut removed = 0;
        let mut s = chunk_bits::next(&self.idle_bits, true, first, last);
        while s <= last {
            // The run ends at its first slot whose newer neighbour is not
            // the next slot (that slot is in it), or at `last`.
            let end = chunk_bits::next(&self.chain_bits, false, s, last).min(last);
            let (older, newer) = (self.older_of(s), self.newer_of(end));
            chunk_bits::clear(&mut self.idle_bits, s, end);
            chunk_bits::clear(&mut self.chain_bits, s, end);
            removed += u64::from(end - s) + 1;
            self.link(older, newer);
            s = match end < last {
                true => chunk_bits::next(&self.idle_bits, true, end + 1, last),
                false => last + 1,
            };
        }
        self.idle_count -= removed;
    }

    /// The idle runs of `first..=last`, all in one bit word, unlinked
    /// (the claim of a span of up to 64 slots, most of them): each run's
    /// end found from the word's chain bits, its bits cleared in the word.
    #[inline]
    fn unlink_in_word(&mut self, first: u32, last: u32) {
        let (w, base) = ((first / 64) as usize, first & !63);
        let span = u64::MAX >> (63 - (last - first)) << (first % 64);
        let mut idle = self.idle_bits[w] & span;
        let mut removed = 0;
        while idle != 0 {
            let a = idle.trailing_zeros();
            // The run ends at its first slot not chained to the next.
            let loose = !self.chain_bits[w] & (u64::MAX << a);
            let e = if loose == 0 {
                63
            } else {
                loose.trailing_zeros()
            }
            .min(last % 64);
            let run = u64::MAX >> (63 - (e - a)) << a;
            let (older, newer) = (self.older_of(base + a), self.newer_of(base + e));
            self.idle_bits[w] &= !run;
            self.chain_bits[w] &= !run;
            idle &= !run;
            removed += u64::from(e - a) + 1;
            self.link(older, newer);
        }
        self.idle_count -= removed;
    }

    /// One live slice less on every slot of `span` (counted, so they
    /// exist). The slots left with none (and mapped) join the idle list
    /// as its newest in slot order, as `queue_idle` per slot would queue
    /// them. A 64-slot word at a time, the counts go down and the slots
    /// left idle are found as a bit mask (the pass says when none of the
    /// word is still live, the usual case; only otherwise is it built
    /// eight slots at a time), and each run of them, joined across words,
    /// is queued by [`Self::queue_run`]. Most releases of small slices
    /// leave their slot live (gpt2-train): one word, no run.
    #[inline]
    pub(crate) fn release_span(&mut self, span: RangeInclusive<u32>) {
        let (first, last) = (*span.start(), *span.end());
        if first >= last {
            // One slot (small slices, the most common) or none.
            if first == last {
                let live = &mut self.live[first as usize];
                *live -= 1;
                if *live == 0 && self.slots[first as usize].chunk.is_some() {
                    self.queue_idle(first);
                }
            }
            return;
        }
        match first / 64 == last / 64 {
            true => self.release_in_word(first, last),
            false => self.release_in_words(first, last),
        }
    }

    /// [`Self::release_span`] of a span within one bit word (up to 64
    /// slots, most spans): the counts go down in one scalar pass that
    /// notes which reach zero, then each run of those mapped is queued.
    #[inline]
    fn release_in_word(&mut self, first: u32, last: u32) {
        let mut freed = 0u64;
        for (j, count) in (0..).zip(&mut self.live[first as usize..=last as usize]) {
            *count -= 1;
            freed |= u64::from(*count == 0) << j;
        }
        let w = (first / 64) as usize;
        let bits = (freed << (first % 64)) & self.mapped_bits[w];
        if bits != 0 {
            self.queue_in_word(first & !63, bits);
        }
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
    fn splice(&mut self, queued: &Queued) {
        if queued.added > 0 {
            self.set_newer(queued.tail, END);
            self.link(self.newest, queued.head);
            self.newest = queued.tail;
            self.idle_count += queued.added;
            self.shed_stuck = false;
        }
    }

    /// [`Self::release_span`] of a span over several bit words.
    #[inline(never)]
    fn release_in_words(&mut self, first: u32, last: u32) {
        let mut queued = Queued {
            head: END,
            tail: END,
            added: 0,
            stamp: self.submitted,
        };
        // The run of slots left idle not queued yet: runs that meet at a
        // word's edge are queued as one.
        let mut open: Option<(u32, u32)> = None;
        for w in first / 64..=last / 64 {
            let (lo, hi) = (first.max(w * 64), last.min(w * 64 + 63));
            let live = &mut self.live[lo as usize..=hi as usize];
            let mut left = 0;
            for count in live.iter_mut() {
                *count -= 1;
                left |= *count;
            }
            let freed = match left {
                0 => u64::MAX >> (63 - (hi - lo)) << (lo % 64),
                _ => freed_mask(live, lo % 64),
            };
            let mut bits = freed & self.mapped_bits[w as usize];
            while bits != 0 {
                let a = bits.trailing_zeros();
                let len = (!(bits >> a)).trailing_zeros();
                bits &= !(u64::MAX >> (64 - len) << a);
                let (ra, rb) = (w * 64 + a, w * 64 + a + len - 1);
                open = match open {
                    Some((oa, ob)) if ob + 1 == ra => Some((oa, rb)),
                    Some((oa, ob)) => {
                        self.queue_run(oa, ob, &mut queued);
                        Some((ra, rb))
                    }
                    None => Some((ra, rb)),
                };
            }
        }
        if let Some((oa, ob)) = open {
            self.queue_run(oa, ob, &mut queued);
        }
        self.splice(&queued);
    }

    /// Queue slots `a..=b`, just left idle, after the runs this release
    /// queued before: idle and chain bits set by word (each slot's newer
    /// neighbour the next), the stamps one fill, and one link to the
    /// previous run. The release splices them after the list's newest.
    #[inline]
    fn queue_run(&mut self, a: u32, b: u32, queued: &mut Queued) {
        self.stamp[a as usize..=b as usize].fill(queued.stamp);
        if a / 64 == b / 64 {
            // One word (a run of up to 64 slots, most of them): two stores.
            let w = (a / 64) as usize;
            let run = u64::MAX >> (63 - (b - a)) << (a % 64);
            self.idle_bits[w] |= run;
            self.chain_bits[w] |= run & !(1 << (b % 64));
        } else {
            chunk_bits::set(&mut self.idle_bits, a, b);
            chunk_bits::set(&mut self.chain_bits, a, b - 1);
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
