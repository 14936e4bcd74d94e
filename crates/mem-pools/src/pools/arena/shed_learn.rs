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
//! creates it again (3.2 TB created again for 10 TB reserved at the
//! default share: 138 × expandable segments' driver time for 5 % less
//! memory), while on BERT inference with varying batch the same shed is
//! what holds 1.039 × live (1.25 % of the bytes reserved are created
//! again).
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
//! Measured (docs/benchmarks.md, `gpumem compare --splits`, `a100`
//! driver µs per op, reserved ÷ live): growth 4,198 → 31.2 µs at 1.156 →
//! 1.217 × live (expandable segments: 30.3 µs at 1.217); random 12.04 →
//! 11.86 µs at 1.135 → 1.129; serving, bert-infer and the recorded
//! traces unchanged.
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
//! phases; 9–21 % of its due sheds come within 3 % of the live peak,
//! bert-infer's none) the sheds in the troughs are what holds the peak,
//! and they stay. Measured (eval.sh, seeds 42, 1–5): random
//! 1.129/1.127/1.131/1.139/1.138/1.123 → 1.117/1.121/1.127/1.119/1.120/
//! 1.119 × live at 11.86/11.73/11.81/11.78/11.85/11.86 → 11.47/11.43/
//! 11.47/11.39/11.37/11.51 µs; serving seed 1 1.037 → 1.039 at 20.67 →
//! 20.30 µs (151 → 42 calls in the second half); every other source
//! unchanged. Those are the rule alone: with the learner's kept bytes
//! and the cache's floor for a shed's run (`chunk_cache.rs`) random holds
//! 1.123/1.132/1.127/1.119/1.120/1.127 at 11.47/11.57/11.47/11.39/11.37/
//! 11.54 µs; over seeds 1–16, +0.0033 × live over expandable segments on
//! average where the engine before either change held +0.0127. Tried: the rule in the ramp only, random 1.128–1.140; in
//! the steady state only (every shed due at the peak), 1.122–1.143;
//! everywhere without the learned share, random as now but serving seed
//! 3 24.72 → 25.51 µs (its steady-state sheds at the peak are a
//! minority, which the learned share lets run); the learned share alone
//! (at 97 % of the peak, no ramp rule), random 1.121–1.133.

/// Re-created bytes past 1/`KEEP_RATIO` of the bytes reserved skip sheds.
/// Measured: at 1/16 growth paid 263 µs driver time per op (sheds went on
/// longer before they stopped), at 1/32 46.0 µs (31.2 with chunks sized to
/// the slice, `chunks.rs`), at 1/64 bert-infer (1.25 % re-created over its
/// run, more in bursts) stopped shedding and held 1.092 × live instead of
/// 1.039.
pub(crate) const KEEP_RATIO: u64 = 32;

/// The learned counts halve once the bytes reserved pass `HORIZON` × the
/// physical bytes held (at least [`HORIZON_FLOOR`]). First measured
/// alone: 64 and 256 the same as 16 on growth (132.5 µs at 1/16). With
/// the kept bytes, the trial shed and the cache's floor (re-swept
/// 2026-12-05, eval.sh seeds 42, 1–5 plus seeds 1–16 of random, growth,
/// serving): 128 ages a kept learner out half as often, so growth seed 15
/// runs one trial shed fewer that the next step creates again: 35.24 →
/// 29.37 µs driver time per op (`a100`) at the same 1.279 × live
/// (expandable segments 31.3), `--scale 3` 11.84 → 9.88 (10.53); growth
/// over seeds 1–16 −1.38 → −1.74 µs/op against expandable segments, at
/// or under it on 15 → 16 of 16; no line of eval.sh moves, nor random or
/// serving over 16 seeds. 96, 256 and 512 measured as 128; 32 growth
/// −0.87 (14/16); 16 put bert-infer at 1.103 × live (sheds stopped by
/// a burst of re-creation kept too long) and growth seed 4 at 33.9 µs.
pub(crate) const HORIZON: u64 = 128;

/// Live bytes within 1/`NEAR_PEAK` of their peak count as at the peak.
/// Measured (eval.sh, seeds 42, 1–5): at 1/200 random held 1.118–1.132
/// × live (a 64 MiB allocation is 1/256 of its cap: many sheds due at
/// the cap were missed), at 1/100 1.117–1.127; at 1/67 random the same
/// but serving seeds 42, 2, 3, 5 held 1.045/1.045/1.051/1.047 instead
/// of 1.032/1.040/1.041/1.041 (sheds of its busy phases skipped).
pub(crate) const NEAR_PEAK: u64 = 100;

/// The live peak counts as rising while it has grown by more than
/// 1/`PEAK_RISE` within the last turnover of the physical bytes held
/// (not varied: the one value measured).
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
    /// created again (seed 4: 449 creates, 73.5 µs driver time per op,
    /// 2.6 × expandable segments'; seed 3 53.0 µs, 1.8 ×). Instead the
    /// evidence ages: each [`HORIZON`] of kept bytes halves the re-created
    /// count, so shedding is tried again after one horizon per factor of
    /// two the share stood above its threshold. Measured with the cache's
    /// floor (`chunk_cache.rs`), `a100` driver µs per op, growth seeds
    /// 42/1/2/3/4/5: 31.17/27.57/34.03/52.95/73.48/34.85 → 28.51/26.60/
    /// 28.98/27.08/27.05/28.53 (expandable segments 30.33/28.34/30.82/
    /// 29.00/28.73/30.53); serving and the recorded traces never skip a
    /// shed and are unchanged.
    kept: u64,
    /// Set when `kept` aged the learner out of skipping sheds: the next
    /// shed is a trial. At its first release the counts restart from one
    /// turnover of the memory then held (`reserved` = physical bytes,
    /// nothing re-created), so what the trial's release shows decides
    /// alone. Without it the reservations since the learner last shed —
    /// all landing on mapped chunks, no shed run, so no evidence either
    /// way — were counted, and the trial needed 1/32 of them created
    /// again before sheds stopped: growth seed 15 let one step's shed
    /// storm release 52 GB and create 48 GB (91.3 µs driver time per op,
    /// 2.9 × expandable segments' 31.3; with the restart 35.2 µs at 1.279
    /// × live, expandable 1.279; at `--scale 3` 30.7 → 11.8 µs, expandable
    /// 10.5). No line of eval.sh moves (seeds 16–25 unchanged too).
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
