//! Relocation: the engine's plan → copy → commit, and mem-relocate's
//! `relocate_memory`. Neither may change what is live, move anything during
//! a capture, or (for a held-room reason) grow reserved bytes.

use mem_pools::{IoError, RelocationCopyError, StorageCopyQueue, TargetRoom};
use mem_storage::StorageError;

use crate::error::Violation;
use crate::ops::Ctx;
use crate::world::World;
use crate::world::model::CapturePhase;

impl World {
    pub(crate) fn relocate(
        &mut self,
        ctx: Ctx,
        s: usize,
        may_allocate: bool,
    ) -> Result<(), Violation> {
        self.drain(s);
        let before = self.managers[s].memory_usage();
        let room = if may_allocate {
            TargetRoom::MayAllocate
        } else {
            TargetRoom::Held
        };
        let capturing = self.model.streams[s].capture != CapturePhase::Off;
        self.submit_copies(s);
        let plan = self.managers[s].plan_relocation(room);
        if capturing && !plan.is_empty() {
            return Err(ctx.succeeded("an empty plan during a capture"));
        }
        let moves = plan.moves();
        match self.managers[s].copy_relocation(plan, &mut StorageCopyQueue) {
            Ok(landed) => {
                let outcome = self.managers[s]
                    .commit_relocation(landed)
                    .map_err(|e| ctx.unexpected(e))?;
                if moves > 0 {
                    // The copy queue synchronized the stream around its copies.
                    self.synchronized(s);
                }
                self.summary.moved += outcome.moved_slices as u64;
                if outcome.moved_slices > moves {
                    return Err(Violation::mismatch(
                        ctx.step,
                        "moved slices ≤ planned moves",
                        moves as u64,
                        outcome.moved_slices as u64,
                    ));
                }
            }
            Err(RelocationCopyError::Copy { source, .. })
                if self.copy_refusal_allowed(ctx, s, &source) =>
            {
                self.summary.refusals += 1;
            }
            Err(RelocationCopyError::Wait { leaked_bytes, .. }) if self.hit(ctx) => {
                self.summary.refusals += 1;
                self.leaked[s] += leaked_bytes;
                // A failed wait on an empty plan quarantines nothing.
                self.model.streams[s].quarantined |= leaked_bytes > 0;
            }
            Err(e) => return Err(ctx.unexpected(e)),
        }
        self.drain(s);
        let after = self.managers[s].memory_usage();
        for (what, b, a) in [
            ("number_allocs", before.number_allocs, after.number_allocs),
            ("bytes_in_use", before.bytes_in_use, after.bytes_in_use),
        ] {
            if b != a {
                return Err(Violation::mismatch(
                    ctx.step,
                    format!("{what} across relocation"),
                    b,
                    a,
                ));
            }
        }
        Ok(())
    }

    /// The same move through mem-relocate's `relocate_memory`: an empty
    /// plan touches no device, a capture moves nothing, contents survive.
    pub(crate) fn relocate_for(&mut self, ctx: Ctx, s: usize, reason: u8) -> Result<(), Violation> {
        use mem_relocate::{RelocationError, RelocationReason, relocate_memory};
        let reason = match reason % 4 {
            0 => RelocationReason::Explicit,
            1 => RelocationReason::MemoryPressure,
            2 => RelocationReason::PoolsOutOfPageSizes,
            _ => RelocationReason::Capture,
        };
        self.drain(s);
        let before = self.managers[s].memory_usage();
        let reserved = before.bytes_reserved;
        self.submit_copies(s);
        match relocate_memory(&mut self.managers[s], reason, &mut StorageCopyQueue) {
            Ok(outcome) => {
                if outcome.moved_slices > 0 {
                    // The copy queue synchronized the stream around its copies.
                    self.synchronized(s);
                }
                self.summary.moved += outcome.moved_slices as u64;
                if self.model.streams[s].capture != CapturePhase::Off && outcome.moved_slices > 0 {
                    return Err(ctx.succeeded("nothing moved during a capture"));
                }
            }
            Err(RelocationError::Copy(RelocationCopyError::Copy { source, .. }))
                if self.copy_refusal_allowed(ctx, s, &source) =>
            {
                self.summary.refusals += 1
            }
            Err(RelocationError::Copy(RelocationCopyError::Wait { leaked_bytes, .. }))
                if self.hit(ctx) =>
            {
                self.summary.refusals += 1;
                self.leaked[s] += leaked_bytes;
                self.model.streams[s].quarantined |= leaked_bytes > 0;
            }
            Err(e) => return Err(ctx.unexpected(e)),
        }
        self.drain(s);
        let after = self.managers[s].memory_usage();
        if !reason.may_allocate() && after.bytes_reserved > reserved {
            return Err(Violation::mismatch(
                ctx.step,
                format!(
                    "reserved bytes after a {} relocation (may not grow)",
                    reason.as_str()
                ),
                reserved,
                after.bytes_reserved,
            ));
        }
        for (what, b, a) in [
            ("number_allocs", before.number_allocs, after.number_allocs),
            ("bytes_in_use", before.bytes_in_use, after.bytes_in_use),
        ] {
            if b != a {
                return Err(Violation::mismatch(
                    ctx.step,
                    format!("{what} across relocation"),
                    b,
                    a,
                ));
            }
        }
        Ok(())
    }

    /// A relocation copy may fail on an injected fault, on a lazy stream
    /// when a target's page cannot be mapped (the engine reports that as the
    /// storage's refusal or as an unsupported "materialize target").
    /// Inside a capture window the copy is refused outright: nothing is
    /// enqueued, nothing moves.
    fn copy_refusal_allowed(&self, ctx: Ctx, s: usize, source: &StorageError) -> bool {
        match source {
            StorageError::Unsupported { .. }
                if self.model.streams[s].capture != CapturePhase::Off =>
            {
                true
            }
            StorageError::Unsupported {
                operation: "materialize target",
                ..
            } => self.model.streams[s].lazy,
            other => self.deref_refusal_allowed(ctx, s, &IoError::Storage(other.clone())),
        }
    }
}
