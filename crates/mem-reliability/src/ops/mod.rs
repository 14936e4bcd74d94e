//! Running one op and judging its own outcome against the model.
//!
//! Each op predicts what it can: a refusal the model can foresee (a size no
//! pool routes, a rounding overflow, a budget that cannot fit, a foreign
//! binding, a capture in progress) must be exactly that refusal; a refusal
//! the model cannot foresee (the global budget filling with pool pages, an
//! injected fault) must be of a kind the situation allows; and every
//! refusal must leave usage and ledgers as they were.

use mem_pools::{IoError, MemoryAllocationMode, MemoryUsage};
use mem_storage::ComputeStorage;

use crate::error::Violation;
use crate::program::Op;
use crate::world::World;
use crate::world::model::CapturePhase;

mod bind;
mod budget;
mod capture;
mod install;
mod relocate;
pub(crate) mod reserve;

/// Context of the op being run: for error messages and fault attribution.
#[derive(Clone, Copy)]
pub(crate) struct Ctx {
    pub(crate) step: usize,
    pub(crate) op: Op,
    pub(crate) injected: u64,
}

impl Ctx {
    pub(crate) fn unexpected(&self, error: impl std::fmt::Display) -> Violation {
        Violation::UnexpectedError {
            step: self.step,
            op: format!("{:?}", self.op),
            error: error.to_string(),
        }
    }

    pub(crate) fn succeeded(&self, expected: impl Into<String>) -> Violation {
        Violation::UnexpectedSuccess {
            step: self.step,
            op: format!("{:?}", self.op),
            expected: expected.into(),
        }
    }
}

impl World {
    pub(crate) fn hit(&self, ctx: Ctx) -> bool {
        self.device.injected() > ctx.injected
    }

    pub(crate) fn stream(&self, s: u8) -> usize {
        usize::from(s) % self.managers.len()
    }

    /// Free what was dropped on `stream` (the engine drains at its next call).
    pub(crate) fn drain(&mut self, stream: usize) {
        self.managers[stream].drain_drops();
    }

    /// The device address an allocation's first byte lives at now.
    pub(crate) fn address_of(
        &mut self,
        stream: usize,
        binding: mem_pools::ManagedMemoryBinding,
    ) -> Result<u64, IoError> {
        let manager = &mut self.managers[stream];
        let view = manager.get_storage(binding)?;
        Ok(manager.storage().get(&view)?.ptr.0)
    }

    /// Whether reaching an allocation's memory on `stream` may be refused
    /// with `error`: an injected fault the op absorbed, or — on a lazy
    /// stream, where the first dereference allocates the page — the device
    /// or budget refusing that page, or a capture window forbidding it.
    pub(crate) fn deref_refusal_allowed(&self, ctx: Ctx, stream: usize, error: &IoError) -> bool {
        let model = self.model.streams[stream];
        match error {
            IoError::Storage(mem_storage::StorageError::Injected { .. }) => self.hit(ctx),
            _ if !model.lazy => false,
            IoError::Storage(
                mem_storage::StorageError::OutOfMemory { .. }
                | mem_storage::StorageError::TooBig { .. },
            ) => true,
            IoError::CaptureWouldAllocate { .. } => model.capture == CapturePhase::Recording,
            _ => false,
        }
    }

    /// Refused calls must leave usage exactly as it was.
    pub(crate) fn unchanged(
        &self,
        ctx: Ctx,
        error: &dyn std::fmt::Display,
        before: MemoryUsage,
        after: MemoryUsage,
    ) -> Result<(), Violation> {
        let pairs = [
            ("number_allocs", before.number_allocs, after.number_allocs),
            ("bytes_in_use", before.bytes_in_use, after.bytes_in_use),
            (
                "bytes_reserved",
                before.bytes_reserved,
                after.bytes_reserved,
            ),
        ];
        for (what, before, after) in pairs {
            if before != after {
                return Err(Violation::HalfChanged {
                    step: ctx.step,
                    op: format!("{:?}", ctx.op),
                    error: error.to_string(),
                    what,
                    before,
                    after,
                });
            }
        }
        Ok(())
    }

    pub(crate) fn execute(&mut self, op: Op, step: usize, injected: u64) -> Result<(), Violation> {
        let ctx = Ctx { step, op, injected };
        match op {
            Op::Reserve { stream, size } => self.reserve(ctx, self.stream(stream), size),
            Op::Write { alloc, seed } => match self.model.pick_alive(alloc) {
                Some(i) => self.write_entry(ctx, i, u64::from(seed) << 8),
                None => Ok(()),
            },
            Op::Drop { alloc } => {
                if let Some(i) = self.model.pick_user(alloc) {
                    drop(self.model.entries[i].user.take());
                }
                Ok(())
            }
            Op::DropOnThread { alloc } => {
                if let Some(i) = self.model.pick_user(alloc) {
                    let handle = self.model.entries[i].user.take();
                    std::thread::spawn(move || drop(handle))
                        .join()
                        .map_err(|_| ctx.unexpected("a handle drop panicked on its thread"))?;
                }
                Ok(())
            }
            Op::Bind {
                reserved,
                assigned,
                cursor,
            } => self.bind(ctx, reserved, assigned, cursor),
            Op::Mode { stream, persistent } => {
                let s = self.stream(stream);
                let model = &mut self.model.streams[s];
                if persistent {
                    self.managers[s].mode(MemoryAllocationMode::Persistent);
                    model.persistent_depth = model.persistent_depth.saturating_add(1);
                } else {
                    self.managers[s].mode(MemoryAllocationMode::Auto);
                    model.persistent_depth = model.persistent_depth.saturating_sub(1);
                }
                Ok(())
            }
            Op::Cleanup { stream, explicit } => {
                let s = self.stream(stream);
                self.managers[s].cleanup(explicit);
                Ok(())
            }
            Op::Install { stream, layout } => self.install(ctx, self.stream(stream), layout),
            Op::Relocate {
                stream,
                may_allocate,
            } => self.relocate(ctx, self.stream(stream), may_allocate),
            Op::RelocateFor { stream, reason } => {
                let s = self.stream(stream);
                self.relocate_for(ctx, s, reason)
            }
            Op::Raw { alloc, start, end } => self.raw(ctx, alloc, start, end),
            Op::ReleaseRaw { alloc } => {
                let Some(i) = self.model.pick_alive(alloc) else {
                    return Ok(());
                };
                let (s, binding) = (self.model.entries[i].stream, self.model.entries[i].binding);
                self.managers[s]
                    .release_raw(binding)
                    .map_err(|e| ctx.unexpected(e))?;
                self.model.entries[i].raw = None;
                Ok(())
            }
            Op::CaptureBegin { stream } => {
                let s = self.stream(stream);
                self.managers[s].capture_begin();
                let model = &mut self.model.streams[s];
                if model.capture == CapturePhase::Off {
                    model.capture = CapturePhase::Priming;
                }
                Ok(())
            }
            Op::CapturePrimingEnd { stream } => {
                let s = self.stream(stream);
                self.managers[s].capture_priming_end();
                if self.model.streams[s].capture == CapturePhase::Priming {
                    self.model.streams[s].capture = CapturePhase::Recording;
                    self.unprime(s);
                }
                Ok(())
            }
            Op::CaptureEnd { stream } => self.capture_end(ctx, self.stream(stream)),
            Op::DropGraphs { stream } => {
                let s = self.stream(stream);
                // The pins end with the graph; the memory lives on if held.
                for e in self.model.entries.iter_mut().filter(|e| e.stream == s) {
                    e.graph.clear();
                    e.pinned = false;
                    e.pinned_at = None;
                }
                Ok(())
            }
            Op::BudgetReserve { overlay, bytes } => self.budget_reserve(ctx, overlay, bytes),
            Op::BudgetAlloc { overlay, bytes } => self.budget_alloc(ctx, overlay, bytes),
            Op::BudgetDrop { index } => {
                let n = self.model.reservations.len() + self.model.blocks.len();
                if n > 0 {
                    let i = usize::from(index) % n;
                    if i < self.model.reservations.len() {
                        drop(self.model.reservations.remove(i));
                    } else {
                        drop(self.model.blocks.remove(i - self.model.reservations.len()));
                    }
                }
                Ok(())
            }
            Op::BudgetReap => {
                for m in [&self.parent, &self.overlay] {
                    if let Err(e) = m.reap_pending_deallocations() {
                        if !self.hit(ctx) {
                            return Err(ctx.unexpected(e));
                        }
                        self.summary.refusals += 1;
                    }
                }
                Ok(())
            }
            Op::FailNext => {
                self.fail_next = true;
                Ok(())
            }
            Op::Complete { stream, ops } => {
                self.complete(self.stream(stream), ops);
                Ok(())
            }
        }
    }
}
