//! Whether shedding pays, learned from what the engine sees.
//!
//! A shed (`shed.rs`) unmaps idle chunks before physical memory
//! grows; chunks past what the run lacks wait in the cache, and the
//! cache's bound (`chunk_cache.rs`) releases the oldest. That trade buys
//! memory when the released bytes stay released, and costs a release, a
//! create, a map and a set-access for nothing when the workload creates
//! them again soon after. Which one happens depends on the workload: on a
//! trace whose buffers grow by reallocation into GiB sizes (the `growth`
//! workload) every step sheds what the last one freed and the next step
//! creates it again (at the default share a large part of what it
//! reserves is created again, for little memory saved), while on
//! BERT inference with varying batch the same shed is what holds physical
//! memory near live bytes (little of what it reserves is created again).
//!
//! So the engine measures it, like PyTorch's garbage-collection threshold
//! but from the workload instead of a setting: bytes the cache's bound
//! released are remembered (up to the physical bytes then held), a create
//! that they could have served counts as *re-created*, and while the
//! re-created bytes pass 1/[`KEEP_RATIO`] of the bytes reserved on arena
//! pages, sheds are skipped: idle chunks stay mapped for the next runs to
//! land on, as with `arena_idle_share:never`. Both counts halve each time
//! the bytes reserved pass [`HORIZON`] × the physical bytes held, so an
//! old phase of the workload fades and shedding is tried again. While
//! sheds are skipped the bytes reserved are not counted (a skipped shed
//! can show no re-creation); the re-created count halves instead at each
//! horizon of them (`ShedLearner::kept`), and once that ages it out
//! of skipping, the next shed is a trial whose own release decides
//! (`ShedLearner::trial`). A refused
//! create (a full device, a budget) clears what was learned: the shed
//! runs, and the create is tried once more (`chunks.rs`).
//!
//! On growth this trades the little memory its sheds saved for the driver
//! time of expandable segments at their memory; on the other workloads
//! the re-created share stays far under the threshold and nothing changes
//! (docs/benchmarks.md).
//!
//! A second rule skips a shed that falls due while the live bytes are at
//! their peak (within 1/[`NEAR_PEAK`]): while the live peak is still
//! rising (it rose within the last turnover of the physical bytes held),
//! always; after that, while most of the sheds due since were at the
//! peak, as on a workload that runs at a cap of live bytes (`random`:
//! live sits within one 64 MiB allocation of its 16 GiB cap). There
//! the idle chunks are the holes of a full heap that the next
//! allocations fill: a shed moves them into the cache, still physical
//! memory, placement then creates elsewhere, and both the peak and the
//! driver time rise (`arena_idle_share:never` beat the default on every
//! random seed). Where live bytes swing (`serving`: quiet and busy
//! phases; a minority of its due sheds come near the live peak,
//! bert-infer's none) the sheds in the troughs are what holds the peak,
//! and they stay. On random the rule takes memory and driver time to about
//! expandable segments'; serving barely moves (docs/benchmarks.md). Why
//! both halves: the rule in the ramp only, in the steady state only, or
//! the learned share alone with no ramp rule each leave random holding
//! more; at every due shed at the peak, without the learned share, it
//! also skips serving's steady-state sheds at the peak, a minority that
//! the learned share lets run, and serving pays driver time. The
//! variants tried are in CHANGELOG.md.

/// Re-created bytes past 1/`KEEP_RATIO` of the bytes reserved skip sheds.
/// Why 1/32: a looser threshold (1/16) lets growth's sheds go on longer
/// before they stop; a tighter one (1/64) stops bert-infer's sheds, whose
/// re-creation is small over its run but comes in bursts, and bert-infer
/// loses the memory they hold. The numbers are in docs/benchmarks.md.
pub(crate) const KEEP_RATIO: u64 = 32;

/// The learned counts halve once the bytes reserved pass `HORIZON` × the
/// physical bytes held (at least [`HORIZON_FLOOR`]). Why 128: a shorter
/// horizon ages a kept learner out of skipping more often, and on growth
/// each such trial shed releases what the next step creates again; much
/// shorter, a burst of re-creation stops bert-infer's sheds and it passes
/// its memory bound. Longer horizons held the same as 128 on every
/// workload tried. The numbers are in docs/benchmarks.md; the values
/// tried and not kept are in CHANGELOG.md.
pub(crate) const HORIZON: u64 = 128;

/// Live bytes within 1/`NEAR_PEAK` of their peak count as at the peak.
/// Why 1/100: narrower, it misses sheds due at random's cap (one of its
/// 64 MiB allocations is 1/256 of the cap); wider, it skips the sheds of
/// serving's busy phases, which hold its memory. The values tried are in
/// CHANGELOG.md.
pub(crate) const NEAR_PEAK: u64 = 100;

/// The live peak counts as rising while it has grown by more than
/// 1/`PEAK_RISE` within the last turnover of the physical bytes held
/// (not tuned: no other value was tried).
pub(crate) const PEAK_RISE: u64 = 100;

/// The smallest horizon, so that a small engine does not forget at every
/// reservation.
pub(crate) const HORIZON_FLOOR: u64 = 1 << 30;

/// What the engine has seen of re-creation (see the module docs).
#[derive(Debug, Default, Clone)]
pub(crate) struct ShedLearner {
    /// Bytes the cache's bound released that no create has matched yet.
    released: u64,
    /// Bytes created that `released` matched (decayed with `reserved`).
    recreated: u64,
    /// Bytes reserved on arena pages while sheds ran (decayed).
    reserved: u64,
    /// Sheds due once the live peak stopped rising (decayed), and those
    /// of them with live bytes at the peak.
    due: u64,
    due_at_peak: u64,
    /// The live bytes' peak as this learner has seen it: the statistics'
    /// peak, which `reset_peaks` lowers, never lowers it (a user's reset
    /// of what is reported changes no policy).
    live_peak: u64,
    /// Bytes ever reserved (not decayed), and their count when the live
    /// peak last rose past `peak_mark` by 1/[`PEAK_RISE`].
    total: u64,
    peak_mark: u64,
    total_at_mark: u64,
    /// A create was refused: every due shed runs until the next horizon.
    short: bool,
    /// Bytes reserved on arena pages while sheds were skipped, since the
    /// re-created count last aged. A skipped shed releases nothing, so
    /// nothing can be created again: these reservations are no evidence
    /// either way, and counting them in `reserved` (as the learner first
    /// did) diluted the re-created share under its threshold within a
    /// few steps of `growth`; each retry then shed GiB that the next step
    /// created again, at several times expandable segments' driver time.
    /// Instead the evidence ages: each [`HORIZON`] of kept bytes halves the
    /// re-created count, so shedding is tried again after one horizon per
    /// factor of two the share stood above its threshold. Serving and the
    /// recorded traces never skip a shed, so this does not touch them; the
    /// numbers are in docs/pools.md and docs/benchmarks.md.
    kept: u64,
    /// Set when `kept` aged the learner out of skipping sheds: the next
    /// shed is a trial. At its first release the counts restart from one
    /// turnover of the memory then held (`reserved` = physical bytes,
    /// nothing re-created), so what the trial's release shows decides
    /// alone. Without it the reservations since the learner last shed —
    /// all landing on mapped chunks, no shed run, so no evidence either
    /// way — were counted, and the trial needed 1/32 of them created
    /// again before sheds stopped: on growth one step's shed storm could
    /// release and create again tens of GB before the learner kept chunks
    /// again. The numbers are in docs/pools.md; the measurement without
    /// the restart is in CHANGELOG.md.
    trial: bool,
}

impl ShedLearner {
    /// A reservation of `bytes` on an arena page, with `physical` bytes held.
    /// While sheds are skipped the bytes count toward `kept` instead (see
    /// there).
    #[inline]
    pub(crate) fn on_reserve(&mut self, bytes: u64, physical: u64) {
        let horizon = physical.saturating_mul(HORIZON).max(HORIZON_FLOOR);
        self.total = self.total.saturating_add(bytes);
        if self.keeps() {
            self.kept = self.kept.saturating_add(bytes);
            if self.kept > horizon {
                self.kept = 0;
                self.recreated /= 2;
                self.trial = !self.keeps();
            }
            return;
        }
        self.reserved = self.reserved.saturating_add(bytes);
        if self.reserved > horizon {
            self.reserved /= 2;
            self.recreated /= 2;
            self.due /= 2;
            self.due_at_peak /= 2;
            self.short = false;
        }
    }

    /// A shed is due (idle chunks past their share before physical memory
    /// grows) with `live` bytes live, `peak` at most, and `physical` held;
    /// returns whether it is skipped (see the module docs: the live bytes
    /// are at their peak while it rises, or while most due sheds were).
    pub(crate) fn skips_at_peak(&mut self, live: u64, peak: u64, physical: u64) -> bool {
        if self.short {
            return false;
        }
        let peak = peak.max(self.live_peak);
        self.live_peak = peak;
        if peak > self.peak_mark.saturating_add(self.peak_mark / PEAK_RISE) {
            self.peak_mark = peak;
            self.total_at_mark = self.total;
        }
        let at_peak = live.saturating_add(peak / NEAR_PEAK) >= peak;
        if self.total - self.total_at_mark < physical {
            return at_peak;
        }
        self.due += 1;
        self.due_at_peak += u64::from(at_peak);
        at_peak && self.due_at_peak.saturating_mul(2) > self.due
    }

    /// The cache's bound released `bytes`, with `physical` bytes held.
    pub(crate) fn on_release(&mut self, bytes: u64, physical: u64) {
        if std::mem::take(&mut self.trial) {
            self.reserved = physical;
            self.recreated = 0;
        }
        self.released = self.released.saturating_add(bytes).min(physical.max(bytes));
    }

    /// A chunk of `bytes` was created; returns the bytes of it that were
    /// released shortly before (re-created).
    pub(crate) fn on_create(&mut self, bytes: u64) -> u64 {
        let again = bytes.min(self.released);
        self.released -= again;
        self.recreated = self.recreated.saturating_add(again);
        again
    }

    /// Whether sheds are skipped: re-created bytes past 1/[`KEEP_RATIO`]
    /// of the bytes reserved.
    pub(crate) fn keeps(&self) -> bool {
        !self.short && self.recreated.saturating_mul(KEEP_RATIO) > self.reserved
    }

    /// Whether a refused create has made every due shed run.
    pub(crate) fn is_short(&self) -> bool {
        self.short
    }

    /// A learner that skips sheds (re-creation as high as it counts).
    #[cfg(test)]
    pub(crate) fn keeping() -> Self {
        Self {
            recreated: u64::MAX / KEEP_RATIO,
            reserved: 1,
            ..Self::default()
        }
    }

    /// Forget what was learned (a create was refused: memory is short, so
    /// shedding pays whatever it costs, until the next horizon).
    pub(crate) fn forget(&mut self) {
        *self = Self {
            short: true,
            ..Self::default()
        };
    }
}
