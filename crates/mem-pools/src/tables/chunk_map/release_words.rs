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
    /// slice queued in slot order. The end words' marks come off first
    /// (no uniform word is among them: a uniform word is wholly inside
    /// one slice or one idle run, and the end words hold this slice's
    /// ends); they say whether the release can leave one run from the
    /// first word to the last. The words inside it that only this slice
    /// touches, all mapped (the usual case), are checked by one pass,
    /// cleared by another and queued as one run with the end words' freed
    /// slots, when those meet it (all but a first or last slot a neighbour
    /// shares: the usual case too), with no search for runs.
    #[inline(never)]
    pub(super) fn release_in_words(&mut self, first: u32, last: u32) {
        let (fw, lw) = ((first / 64) as usize, (last / 64) as usize);
        let (head, tail) = (u64::MAX << (first % 64), u64::MAX >> (63 - last % 64));
        let freed_first = self.uncover_word(fw, head) & self.mapped_bits[fw];
        let freed_last = self.uncover_word(lw, tail) & self.mapped_bits[lw];
        // Freed from `first` (or the slot after it) to the word's end,
        // and from the word's start to `last` (or the slot before it).
        let from_first = freed_first | 1 << (first % 64) == head;
        let to_last = freed_last | 1 << (last % 64) == tail;
        let a = first + u32::from(freed_first != head);
        let b = last - u32::from(freed_last != tail);
        // One run that starts in the first word and ends in the last: the
        // words inside can be left rested (`uniform.rs`).
        let crossing = from_first && to_last && a as usize / 64 == fw && b as usize / 64 == lw;
        let inner = fw + 1..lw;
        if self.uniform_words != 0 {
            if crossing && !inner.is_empty() && self.all_uniform(inner.start, inner.end, false) {
                self.set_rested(inner.start, inner.end, true);
                return self.queue_crossing(a, b);
            }
            // The passes below read the inside words' columns.
            self.settle_words(inner.start, lw);
        }
        // Two folds, each a plain reduction the compiler vectorizes (one
        // over a zip of the three columns with two compares per word did
        // not): all covered and mapped, none counted.
        let covered = self.covered_bits[inner.clone()].iter();
        let all = covered
            .zip(&self.mapped_bits[inner.clone()])
            .fold(u64::MAX, |all, (&covered, &mapped)| all & covered & mapped);
        let counted = self.counted_bits[inner.clone()].iter();
        let whole = all == u64::MAX && counted.fold(0, |any, &word| any | word) == 0;
        if whole && crossing {
            // One run from the first word to the last: over many words,
            // the words inside are left rested (`uniform.rs`); over fewer,
            // written idle and chained (as `unlink_crossing` clears them). The end words'
            // bits and the links as a rested run's.
            if inner.len() >= UNIFORM_MIN {
                self.covered_bits[inner.clone()].fill(0);
                self.make_uniform(inner.start, inner.end, true);
            } else if inner.len() > FEW_WORDS {
                self.idle_bits[inner.clone()].fill(u64::MAX);
                self.chain_bits[inner.clone()].fill(u64::MAX);
                self.stamp_bits[inner.clone()].fill(u64::MAX);
                self.covered_bits[inner].fill(0);
            } else {
                let idle = self.idle_bits[inner.clone()].iter_mut();
                let chain = self.chain_bits[inner.clone()].iter_mut();
                let stamp = self.stamp_bits[inner.clone()].iter_mut();
                let covered = self.covered_bits[inner].iter_mut();
                for (((i, c), s), v) in idle.zip(chain).zip(stamp).zip(covered) {
                    (*i, *c, *s, *v) = (u64::MAX, u64::MAX, u64::MAX, 0);
                }
            }
            return self.queue_crossing(a, b);
        }
        if whole && !inner.is_empty() {
            self.covered_bits[inner.clone()].fill(0);
        }
        if whole && from_first && to_last {
            if a <= b {
                let mut queued = self.no_runs();
                self.queue_run(a, b, &mut queued);
                self.splice(&queued);
            }
            return;
        }
        let mut runs = Runs {
            open: None,
            queued: self.no_runs(),
        };
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
        if let Some((a, b)) = runs.open {
            self.queue_run(a, b, &mut runs.queued);
        }
        self.splice(&runs.queued);
    }

    /// No run queued yet by a release, stamped with the cursor now.
    #[inline(always)]
    fn no_runs(&self) -> Queued {
        Queued {
            head: END,
            tail: END,
            added: 0,
            stamp: self.submitted,
        }
    }

    /// Queue `a..=b`, the one run a release left idle, from its first
    /// word to its last, its inside words already written idle and
    /// chained (or rested) and stamped with the slot before, as the
    /// list's newest: the end words' bits, one stamp and the links at its
    /// ends, as queueing the run and [`Self::splice`] would, in one step.
    #[inline]
    fn queue_crossing(&mut self, a: u32, b: u32) {
        let (fw, lw) = ((a / 64) as usize, (b / 64) as usize);
        debug_assert!(fw < lw);
        self.stamp[a as usize] = self.submitted;
        let head = u64::MAX << (a % 64);
        let tail = u64::MAX >> (63 - b % 64);
        self.idle_bits[fw] |= head;
        self.chain_bits[fw] |= head;
        self.stamp_bits[fw] |= head & !(1 << (a % 64));
        self.idle_bits[lw] |= tail;
        // Each slot's newer neighbour is the next, but the last one's.
        self.chain_bits[lw] = (self.chain_bits[lw] | tail) & !(1 << (b % 64));
        self.stamp_bits[lw] |= tail;
        self.append_newest(a, b);
    }
}

/// Inside words a crossing run's claim or release writes in one pass over
/// the columns together; past them, a fill per column (a `memset` call
/// each, whose fixed cost the few words' stores are under). Tests take 1,
/// so that spans of a few words meet both ways.
#[cfg(not(test))]
pub(super) const FEW_WORDS: usize = 8;
#[cfg(test)]
pub(super) const FEW_WORDS: usize = 1;

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
