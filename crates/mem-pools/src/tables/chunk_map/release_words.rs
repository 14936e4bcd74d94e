//! The claim and release of a span over several 64-slot bit words
//! (`claim.rs` and `release.rs` have the rest): the slice's marks put on or taken off
//! a word at a time (`live.rs`), and on release the slots left with
//! no live slice queued idle run by run, runs that meet at a word's edge
//! as one. An 8 GiB slice of 2 MiB slots is 64 words: no step here is
//! per slot, but for the few slots a neighbour shares (a count each).

use crate::tables::chunk_map::release::Queued;
use crate::tables::chunk_map::uniform::UNIFORM_MIN;
use crate::tables::chunk_map::{ChunkMap, END};

impl ChunkMap {
    /// Mark one more live slice on every slot of `first..=last`, a span
    /// over several bit words (its idle runs unlinked before). The words
    /// inside it that no slice touches yet (a hole reused whole, the
    /// usual case) are set by one pass: checked by one more first, unless
    /// the caller knows (`inner_idle`: they were idle, so untouched).
    #[inline(never)]
    pub(super) fn cover_words(&mut self, first: u32, last: u32, inner_idle: bool) {
        let (fw, lw) = ((first / 64) as usize, (last / 64) as usize);
        self.cover_word(fw, u64::MAX << (first % 64));
        let inner = fw + 1..lw;
        if inner_idle {
            debug_assert!(
                inner.is_empty() || !self.any_live(fw as u32 * 64 + 64, lw as u32 * 64 - 1)
            );
            // Two words and none between (most spans over several): no
            // fill, whose `memset` call has its fixed cost even when empty.
            if !inner.is_empty() {
                self.covered_bits[inner].fill(u64::MAX);
            }
            self.cover_word(lw, u64::MAX >> (63 - last % 64));
            return;
        }
        let covered = &self.covered_bits[inner.clone()];
        let touched = covered
            .iter()
            .chain(&self.counted_bits[inner.clone()])
            .fold(0, |any, &word| any | word);
        match touched {
            0 if !inner.is_empty() => self.covered_bits[inner].fill(u64::MAX),
            0 => {} // no word between: no fill (see above)
            _ => inner.for_each(|w| self.cover_word(w, u64::MAX)),
        }
        self.cover_word(lw, u64::MAX >> (63 - last % 64));
    }

    /// [`Self::release_span`] of a span over several bit words: its marks
    /// taken off word by word, and the mapped slots left with no live
    /// slice queued in slot order. The words inside it that only this
    /// slice touches, all mapped (the usual case), are checked by one
    /// pass, cleared by another and queued as one run — with the end
    /// words' freed slots, when those meet it (all but a first or last
    /// slot a neighbour shares: the usual case too), with no search for
    /// runs.
    #[inline(never)]
    pub(super) fn release_in_words(&mut self, first: u32, last: u32) {
        if self.uniform_words != 0 && self.release_uniform(first, last) {
            return;
        }
        let (fw, lw) = ((first / 64) as usize, (last / 64) as usize);
        let (head, tail) = (u64::MAX << (first % 64), u64::MAX >> (63 - last % 64));
        let freed_first = self.uncover_word(fw, head) & self.mapped_bits[fw];
        let inner = fw + 1..lw;
        // Two folds, each a plain reduction the compiler vectorizes (one
        // over a zip of the three columns with two compares per word did
        // not): all covered and mapped, none counted.
        let covered = self.covered_bits[inner.clone()].iter();
        let all = covered
            .zip(&self.mapped_bits[inner.clone()])
            .fold(u64::MAX, |all, (&covered, &mapped)| all & covered & mapped);
        let counted = self.counted_bits[inner.clone()].iter();
        let whole = all == u64::MAX && counted.fold(0, |any, &word| any | word) == 0;
        if whole && !inner.is_empty() {
            self.covered_bits[inner.clone()].fill(0);
        }
        // The words are apart: the last one's marks may come off before
        // the inner ones' (the runs are still queued in slot order).
        let freed_last = self.uncover_word(lw, tail) & self.mapped_bits[lw];
        let mut runs = Runs {
            open: None,
            queued: Queued {
                head: END,
                tail: END,
                added: 0,
                stamp: self.submitted,
            },
        };
        // Freed from `first` (or the slot after it) to the word's end,
        // and from the word's start to `last` (or the slot before it).
        let from_first = freed_first | 1 << (first % 64) == head;
        let to_last = freed_last | 1 << (last % 64) == tail;
        if whole && from_first && to_last {
            let a = first + u32::from(freed_first != head);
            let b = last - u32::from(freed_last != tail);
            // One run from the first word to the last over many words:
            // the words inside are left rested (`uniform.rs`).
            if inner.len() >= UNIFORM_MIN && a as usize / 64 == fw && b as usize / 64 == lw {
                self.make_uniform(inner.start, inner.end, true);
                return self.queue_rested_alone(a, b);
            }
            runs.open = (a <= b).then_some((a, b));
        } else {
            runs.add_word(self, fw, freed_first);
            if !whole {
                for w in inner {
                    let freed = self.uncover_word(w, u64::MAX);
                    runs.add_word(self, w, freed & self.mapped_bits[w]);
                }
            } else if !inner.is_empty() {
                runs.add(self, inner.start as u32 * 64, inner.end as u32 * 64 - 1);
            }
            runs.add_word(self, lw, freed_last);
        }
        if let Some((a, b)) = runs.open {
            self.queue_run(a, b, &mut runs.queued);
        }
        self.splice(&runs.queued);
    }

    /// [`Self::release_in_words`] while some words are uniform: when the
    /// span's inside words are held and its release leaves one run from
    /// the first word to the last, they turn rested and the run is queued
    /// (`true`); else its inside words are settled for the passes over
    /// them, and nothing else is changed.
    #[inline(never)]
    fn release_uniform(&mut self, first: u32, last: u32) -> bool {
        let (fw, lw) = ((first / 64) as usize, (last / 64) as usize);
        if lw - fw < 2 || !self.all_uniform(fw + 1, lw, false) {
            self.settle_words(fw + 1, lw);
            return false;
        }
        let (head, tail) = (u64::MAX << (first % 64), u64::MAX >> (63 - last % 64));
        let freed_first = self.freed_by(fw, head);
        let freed_last = self.freed_by(lw, tail);
        let a = first + u32::from(freed_first != head);
        let b = last - u32::from(freed_last != tail);
        let from_first = freed_first | 1 << (first % 64) == head;
        let to_last = freed_last | 1 << (last % 64) == tail;
        if !(from_first && to_last && a as usize / 64 == fw && b as usize / 64 == lw) {
            self.settle_words(fw + 1, lw - 1);
            return false;
        }
        self.uncover_word(fw, head);
        self.uncover_word(lw, tail);
        self.set_rested(fw + 1, lw, true);
        self.queue_rested_alone(a, b);
        true
    }

    /// The mapped slots of `mask` in bit word `w` that taking one live
    /// slice off them ([`Self::uncover_word`]) would leave with none,
    /// changing nothing.
    fn freed_by(&self, w: usize, mask: u64) -> u64 {
        let covered = self.covered_bits[w] & mask;
        let mut freed = covered & !self.counted_bits[w];
        let mut counted = mask & !covered;
        while counted != 0 {
            let b = counted.trailing_zeros();
            freed |= u64::from(self.live[w * 64 + b as usize] == 1) << b;
            counted &= counted - 1;
        }
        freed & self.mapped_bits[w]
    }

    /// Queue `a..=b`, the one run a release left idle, its inside words
    /// rested, as the list's newest.
    #[inline]
    fn queue_rested_alone(&mut self, a: u32, b: u32) {
        let mut queued = Queued {
            head: END,
            tail: END,
            added: 0,
            stamp: self.submitted,
        };
        self.queue_rested(a, b, &mut queued);
        self.splice(&queued);
    }
}

/// The runs of slots a release over several words leaves idle: each
/// queued once the next one is known not to continue it, so runs that
/// meet at a word's edge are queued as one.
struct Runs {
    /// The run found last, not queued yet.
    open: Option<(u32, u32)>,
    queued: Queued,
}

impl Runs {
    /// Slots `a..=b` left idle, after every run added before.
    #[inline(always)]
    fn add(&mut self, map: &mut ChunkMap, a: u32, b: u32) {
        self.open = match self.open {
            Some((oa, ob)) if ob + 1 == a => Some((oa, b)),
            Some((oa, ob)) => {
                map.queue_run(oa, ob, &mut self.queued);
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }

    /// The slots of bit word `w` set in `bits`, left idle, run by run.
    #[inline(always)]
    fn add_word(&mut self, map: &mut ChunkMap, w: usize, mut bits: u64) {
        let base = w as u32 * 64;
        while bits != 0 {
            let a = bits.trailing_zeros();
            let len = (!(bits >> a)).trailing_zeros();
            bits &= !(u64::MAX >> (64 - len) << a);
            self.add(map, base + a, base + a + len - 1);
        }
    }
}
