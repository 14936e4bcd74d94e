//! Budget ops: reservations and raw allocations on the manager or its
//! overlay, whose refusals are predicted exactly from the two ledgers.

use mem_budget::{AllocTag, BudgetError, BudgetScope, GpuMemoryManager};

use crate::error::Violation;
use crate::ops::Ctx;
use crate::world::World;
use crate::world::model::{Block, pattern};

impl World {
    pub(crate) fn budget_manager(&self, overlay: bool) -> std::sync::Arc<GpuMemoryManager> {
        if overlay {
            self.overlay.clone()
        } else {
            self.parent.clone()
        }
    }

    /// (local fits, global fits) for `bytes` more, from the ledgers now.
    pub(crate) fn budget_fits(&self, bytes: u64) -> (bool, bool) {
        let local = self.parent.allocated_bytes();
        let global = self.device.global().charged();
        (
            local
                .checked_add(bytes)
                .is_some_and(|t| t <= self.limits.local),
            global
                .checked_add(bytes)
                .is_some_and(|t| t <= self.limits.global),
        )
    }

    pub(crate) fn ledgers(&self) -> (u64, u64) {
        (
            self.parent.allocated_bytes(),
            self.device.global().charged(),
        )
    }

    pub(crate) fn budget_refused(
        &mut self,
        ctx: Ctx,
        error: BudgetError,
        bytes: u64,
        expect: Option<BudgetScope>,
        before: (u64, u64),
    ) -> Result<(), Violation> {
        self.summary.refusals += 1;
        let allowed = match (&error, expect) {
            (
                BudgetError::ResourceExhausted {
                    requested, which, ..
                },
                Some(scope),
            ) => *requested == bytes && *which == scope,
            (BudgetError::Kernel { .. }, None) => self.hit(ctx),
            _ => false,
        };
        if !allowed {
            return Err(ctx.unexpected(format!("{error} (expected refusal: {expect:?})")));
        }
        let after = self.ledgers();
        for (what, b, a) in [
            ("local ledger", before.0, after.0),
            ("global ledger", before.1, after.1),
        ] {
            if b != a {
                return Err(Violation::HalfChanged {
                    step: ctx.step,
                    op: format!("{:?}", ctx.op),
                    error: error.to_string(),
                    what,
                    before: b,
                    after: a,
                });
            }
        }
        Ok(())
    }

    pub(crate) fn budget_reserve(
        &mut self,
        ctx: Ctx,
        overlay: bool,
        bytes: u64,
    ) -> Result<(), Violation> {
        let (local, global) = self.budget_fits(bytes);
        // The device budget is claimed first for reservations.
        let expect = if !global {
            Some(BudgetScope::Global)
        } else if !local {
            Some(BudgetScope::Local)
        } else {
            None
        };
        let before = self.ledgers();
        match self.budget_manager(overlay).reserve_bytes(bytes) {
            Ok(r) => {
                if let Some(scope) = expect {
                    return Err(ctx.succeeded(format!("ResourceExhausted ({scope})")));
                }
                if r.bytes() != bytes {
                    return Err(Violation::mismatch(
                        ctx.step,
                        "reservation bytes",
                        bytes,
                        r.bytes(),
                    ));
                }
                self.model.reservations.push(r);
                Ok(())
            }
            Err(e) => self.budget_refused(ctx, e, bytes, expect, before),
        }
    }

    pub(crate) fn budget_alloc(
        &mut self,
        ctx: Ctx,
        overlay: bool,
        bytes: u64,
    ) -> Result<(), Violation> {
        let (local, global) = self.budget_fits(bytes);
        // Allocations claim locally first, then the stack claims the device budget.
        let expect = if !local {
            Some(BudgetScope::Local)
        } else if !global {
            Some(BudgetScope::Global)
        } else {
            None
        };
        let before = self.ledgers();
        let Ok(len) = usize::try_from(bytes) else {
            return Ok(());
        };
        match self
            .budget_manager(overlay)
            .alloc_raw(len, AllocTag::new("reliability"))
        {
            Ok(block) => {
                if let Some(scope) = expect {
                    return Err(ctx.succeeded(format!("ResourceExhausted ({scope})")));
                }
                let data = pattern(bytes ^ 0x5a, bytes.min(32) as usize);
                let written = match block.write(&data) {
                    Ok(()) => data,
                    Err(_) if self.hit(ctx) => Vec::new(),
                    Err(e) => return Err(ctx.unexpected(e)),
                };
                self.model.blocks.push(Block { block, written });
                Ok(())
            }
            Err(e) => self.budget_refused(ctx, e, bytes, expect, before),
        }
    }
}
