//! A slice's whole span claimed and released on an arena page's chunk
//! slots: the live counts of the span in one pass over a column (which the
//! compiler vectorizes), and the idle list changed per *run* of slots, not
//! per slot. A span released whole is queued as one run, linked in order
//! and spliced after the newest once; claimed again, a run whose slots are
//! consecutive in the list is found by comparing its `newer` column with
//! the slot numbers 16 at a time and unlinked with one splice. The list
//! ends as [`ChunkMap::queue_idle`] and [`ChunkMap::unqueue`] slot by slot
//! would leave it (`chunk_map_tests.rs` checks it against such a model).
//!
//! Before (one 48-byte slot record per granule, walked slot by slot) this
//! was two thirds of the `growth` workload's instructions: a 1 GiB buffer
//! spans 512 slots of 2 MiB, and each growth claims one and releases one.

use std::ops::RangeInclusive;

use crate::tables::chunk_bits;
use crate::tables::chunk_map::{ChunkMap, END};

/// Slots compared per step when a run is followed (one vector compare and
/// a reduction; a step per slot only within the block where it ends).
const BLOCK: usize = 16;

/// How many leading entries of `newer` continue a run: entry `i` does
/// when it names the slot after its own, `from + i + 1`.
#[inline]
fn chained(newer: &[u32], from: u32) -> usize {
    let mut i = 0;
    for block in newer.chunks_exact(BLOCK) {
        let base = from + i as u32 + 1;
        // A fold, not `all`: no exit per slot, so the block vectorizes.
        let broken = (0..)
            .zip(block)
            .fold(false, |b, (j, &n)| b | (n != base + j));
        if broken {
            break;
        }
        i += BLOCK;
    }
    while i < newer.len() && newer[i] == from + i as u32 + 1 {
        i += 1;
    }
    i
}

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

impl ChunkMap {
    /// Count a slice on every slot of `span`, all mapped (the caller
    /// checked: placement counted them). Idle slots leave the list as
    /// [`Self::unqueue`] per slot would leave it: the span's idle slots
    /// are found by idle-bit words, and from each a run of slots that are
    /// also consecutive in the list (each one's `newer` is the next slot:
    /// a span released whole is queued so) is unlinked with one splice,
    /// its neighbours outside the run written once. Past a run's first
    /// slot its links are left stale: only an idle slot's are read, and
    /// queueing writes them all again.
    pub(crate) fn claim_mapped_span(&mut self, span: RangeInclusive<u32>) {
        debug_assert_eq!(self.unmapped_in(span.clone()), 0);
        let (first, last) = (*span.start(), *span.end());
        if first > last {
            return;
        }
        for live in &mut self.live[first as usize..=last as usize] {
            *live += 1;
        }
        let mut removed = 0;
        let mut s = chunk_bits::next(&self.idle_bits, true, first, last);
        while s <= last {
            let start = s as usize;
            let (older, mut newer) = (self.older[start], self.newer[start]);
            (self.older[start], self.newer[start]) = (END, END);
            s += 1;
            if newer == s && s <= last {
                // The run goes on: it ends at the first slot whose `newer`
                // is not the next one (that slot is in it), or at `last`.
                let rest = &self.newer[s as usize..=last as usize];
                let end = s + chained(rest, s).min(rest.len() - 1) as u32;
                newer = self.newer[end as usize];
                s = end + 1;
            }
            chunk_bits::clear(&mut self.idle_bits, start as u32, s - 1);
            removed += u64::from(s - start as u32);
            self.link(older, newer);
            s = chunk_bits::next(&self.idle_bits, true, s, last);
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
    pub(crate) fn release_span(&mut self, span: RangeInclusive<u32>) {
        let (first, last) = (*span.start(), *span.end());
        if first > last {
            return;
        }
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
            self.idle_bits[w as usize] |= bits;
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
        if queued.added > 0 {
            self.newer[queued.tail as usize] = END;
            self.link(self.newest, queued.head);
            self.newest = queued.tail;
            self.idle_count += queued.added;
            self.shed_stuck = false;
        }
    }

    /// Link slots `a..=b`, just left idle, after the runs queued so far
    /// by this release: inside the run the links are a pure function of
    /// the slot number and the stamp one value, written by loops over the
    /// columns. The release splices them after the list's newest once.
    #[inline]
    fn queue_run(&mut self, a: u32, b: u32, queued: &mut Queued) {
        let run = a as usize..=b as usize;
        for (s, older) in (a..).zip(&mut self.older[run.clone()]) {
            *older = s.wrapping_sub(1);
        }
        for (s, newer) in (a..).zip(&mut self.newer[run.clone()]) {
            *newer = s + 1;
        }
        self.stamp[run].fill(queued.stamp);
        match queued.tail {
            END => queued.head = a,
            tail => {
                self.newer[tail as usize] = a;
                self.older[a as usize] = tail;
            }
        }
        queued.tail = b;
        queued.added += u64::from(b - a) + 1;
    }
}

/// The runs one release has queued: the first slot, the last, how many,
/// and their stamp.
struct Queued {
    head: u32,
    tail: u32,
    added: u64,
    stamp: u64,
}

#[cfg(test)]
#[path = "chunk_spans_tests.rs"]
mod tests;
