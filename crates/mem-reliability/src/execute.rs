//! Running one op and judging its own outcome against the model.
//!
//! Each op predicts what it can: a refusal the model can foresee (a size no
//! pool routes, a rounding overflow, a budget that cannot fit, a foreign
//! binding, a capture in progress) must be exactly that refusal; a refusal
//! the model cannot foresee (the global budget filling with pool pages, an
//! injected fault) must be of a kind the situation allows; and every
//! refusal must leave usage and ledgers as they were.

use mem_budget::{AllocTag, BudgetError, BudgetScope, GpuMemoryManager};
use mem_pools::{
    InstallMemoryPoolsError, IoError, MemoryAllocationMode, MemoryUsage, RelocationCopyError,
    StorageCopyQueue, TargetRoom,
};
use mem_storage::{ComputeStorage, StorageError};

use crate::error::Violation;
use crate::model::{Block, CapturePhase, Contents, Entry, PoolClass, pattern};
use crate::program::Op;
use crate::world::{World, layout, props};

/// Context of the op being run: for error messages and fault attribution.
#[derive(Clone, Copy)]
pub(crate) struct Ctx {
    step: usize,
    op: Op,
    injected: u64,
}

impl Ctx {
    fn unexpected(&self, error: impl std::fmt::Display) -> Violation {
        Violation::UnexpectedError {
            step: self.step,
            op: format!("{:?}", self.op),
            error: error.to_string(),
        }
    }

    fn succeeded(&self, expected: impl Into<String>) -> Violation {
        Violation::UnexpectedSuccess {
            step: self.step,
            op: format!("{:?}", self.op),
            expected: expected.into(),
        }
    }
}

impl World {
    fn hit(&self, ctx: Ctx) -> bool {
        self.device.injected() > ctx.injected
    }

    fn stream(&self, s: u8) -> usize {
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

    /// Refused calls must leave usage exactly as it was.
    fn unchanged(
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
                for e in self.model.entries.iter_mut().filter(|e| e.stream == s) {
                    e.graph.clear();
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
        }
    }

    fn reserve(&mut self, ctx: Ctx, s: usize, size: u64) -> Result<(), Violation> {
        self.drain(s);
        let model = self.model.streams[s];
        let persistent = model.persistent();
        let route_max = layout(model.layout).1;
        let alignment = props().alignment;
        let overflow = size.max(1).checked_next_multiple_of(alignment).is_none();
        let too_big = !persistent && size > route_max;
        let before = self.managers[s].memory_usage();
        match self.managers[s].reserve(size) {
            Ok(handle) => {
                if too_big {
                    return Err(ctx.succeeded(format!("BufferTooBig (max {route_max})")));
                }
                if overflow {
                    return Err(ctx.succeeded("InvalidSize"));
                }
                if handle.size() != size {
                    return Err(Violation::mismatch(
                        ctx.step,
                        "handle size",
                        size,
                        handle.size(),
                    ));
                }
                let id = self.model.next_id();
                self.model.entries.push(Entry {
                    id,
                    stream: s,
                    size,
                    binding: handle.binding(),
                    user: Some(handle),
                    graph: Vec::new(),
                    primed: model.capture == CapturePhase::Priming,
                    pool: if persistent {
                        PoolClass::Persistent
                    } else {
                        PoolClass::Dynamic
                    },
                    contents: None,
                    raw: None,
                    pinned: None,
                });
                let i = self.model.entries.len() - 1;
                self.write_entry(ctx, i, id)
            }
            Err(error) => {
                self.summary.refusals += 1;
                let allowed = match &error {
                    IoError::BufferTooBig { size: s2, max } => {
                        too_big && *s2 == size && *max == route_max
                    }
                    _ if too_big => false,
                    IoError::InvalidSize {
                        size: s2,
                        alignment: a,
                    } => overflow && *s2 == size && *a == alignment,
                    _ if overflow => false,
                    IoError::CaptureWouldAllocate { size: s2, .. } => {
                        model.capture == CapturePhase::Recording && *s2 == size
                    }
                    IoError::PageSizesExhausted { .. } => true,
                    IoError::Storage(StorageError::OutOfMemory { .. })
                    | IoError::Storage(StorageError::TooBig { .. }) => true,
                    IoError::Storage(StorageError::Injected { .. }) => self.hit(ctx),
                    _ => false,
                };
                if !allowed {
                    return Err(ctx.unexpected(&error));
                }
                let after = self.managers[s].memory_usage();
                self.unchanged(ctx, &error, before, after)
            }
        }
    }

    /// Write a fresh head and tail pattern into entry `i`.
    fn write_entry(&mut self, ctx: Ctx, i: usize, seed: u64) -> Result<(), Violation> {
        let (s, size, binding) = {
            let e = &self.model.entries[i];
            (e.stream, e.size, e.binding)
        };
        let contents = Contents::for_size(seed, size);
        let manager = &mut self.managers[s];
        let head = manager.write(binding, &contents.head);
        let tail = manager.get_storage(binding).and_then(|view| {
            let tail = view
                .narrow(Some(size - contents.tail.len() as u64), None)
                .ok_or(IoError::OutOfBounds {
                    start: size - contents.tail.len() as u64,
                    end: size,
                    size: view.size(),
                })?;
            manager.storage().write(&tail, &contents.tail)?;
            Ok(())
        });
        match head.and(tail) {
            Ok(()) => self.model.entries[i].contents = Some(contents),
            Err(e) if self.hit(ctx) => {
                self.summary.refusals += 1;
                // Part of the pattern may have landed: the bytes are unknown now.
                let _ = e;
                self.model.entries[i].contents = None;
            }
            Err(e) => return Err(ctx.unexpected(e)),
        }
        Ok(())
    }

    /// `bind` passes the reserved handle by value (the user gives it up
    /// whatever the outcome) and a clone of the assigned one.
    fn bind(&mut self, ctx: Ctx, reserved: u8, assigned: u8, cursor: u64) -> Result<(), Violation> {
        let (Some(ri), Some(ai)) = (
            self.model.pick_user(reserved),
            self.model.pick_user(assigned),
        ) else {
            return Ok(());
        };
        let (rs, as_) = (self.model.entries[ri].stream, self.model.entries[ai].stream);
        let a = self.model.entries[ai].user.clone();
        let r = if ri == ai {
            a.clone()
        } else {
            self.model.entries[ri].user.take()
        };
        let (Some(r), Some(a)) = (r, a) else {
            return Ok(());
        };
        let holders = 1 + self.model.entries[ri].graph.len();
        let expected = if rs != as_ {
            Some(IoError::ForeignBinding {
                expected: self.managers[rs].id(),
                found: self.managers[as_].id(),
            })
        } else if ri == ai {
            None
        } else if holders > 1 {
            Some(IoError::SharedReserved { holders })
        } else if self.model.entries[ai].pinned.is_some() {
            Some(IoError::AssignedPinned {
                size: self.model.entries[ai].size,
            })
        } else {
            None
        };
        let result = self.managers[rs].bind(r, a, cursor);
        match (result, expected) {
            (Ok(()), Some(e)) => return Err(ctx.succeeded(e.to_string())),
            (Err(e), Some(x)) if e == x => {
                self.summary.refusals += 1;
                return Ok(());
            }
            (Err(e), _) => return Err(ctx.unexpected(e)),
            (Ok(()), None) => {}
        }
        self.summary.binds += 1;
        if ri != ai {
            let (size, contents, pool, raw, pinned) = {
                let r = &mut self.model.entries[ri];
                r.primed = false;
                (r.size, r.contents.take(), r.pool, r.raw.take(), r.pinned)
            };
            let priming = self.model.streams[rs].capture == CapturePhase::Priming;
            let a = &mut self.model.entries[ai];
            a.size = size;
            a.contents = contents;
            a.pool = pool;
            a.raw = raw;
            a.pinned = pinned;
            a.primed |= priming;
            if let Some(h) = &a.user {
                a.binding = h.binding();
            }
        }
        let binding = self.model.entries[ai].binding;
        let found = self.managers[rs]
            .get_cursor(binding)
            .map_err(|e| ctx.unexpected(e))?;
        if found != cursor {
            return Err(Violation::mismatch(
                ctx.step,
                "cursor after bind",
                cursor,
                found,
            ));
        }
        Ok(())
    }

    fn install(&mut self, ctx: Ctx, s: usize, index: u8) -> Result<(), Violation> {
        self.drain(s);
        let index = usize::from(index);
        let model = self.model.streams[s];
        let alive = self
            .model
            .entries
            .iter()
            .filter(|e| e.stream == s && e.alive());
        let (mut dynamic, mut dynamic_bytes, mut unknown) = (0usize, 0u64, 0usize);
        for e in alive {
            match e.pool {
                PoolClass::Dynamic => {
                    dynamic += 1;
                    dynamic_bytes += e.size;
                }
                PoolClass::Unknown => unknown += 1,
                PoolClass::Persistent => {}
            }
        }
        let capturing = model.capture != CapturePhase::Off;
        match self.managers[s].install_pools(layout(index).0, &props()) {
            Ok(()) => {
                if capturing {
                    return Err(ctx.succeeded("CaptureActive"));
                }
                if dynamic > 0 || model.quarantined {
                    return Err(ctx.succeeded(format!("PoolsInUse ({dynamic} live)")));
                }
                self.model.streams[s].layout = index;
                Ok(())
            }
            Err(e) => {
                self.summary.refusals += 1;
                let allowed = match &e {
                    InstallMemoryPoolsError::CaptureActive => capturing,
                    InstallMemoryPoolsError::PoolsInUse {
                        live_slices,
                        live_bytes,
                    } => {
                        !capturing
                            && (model.quarantined
                                || unknown > 0
                                || (*live_slices == dynamic && *live_bytes == dynamic_bytes))
                            && (dynamic > 0 || unknown > 0 || model.quarantined)
                    }
                };
                if allowed {
                    Ok(())
                } else {
                    Err(ctx.unexpected(e))
                }
            }
        }
    }

    fn relocate(&mut self, ctx: Ctx, s: usize, may_allocate: bool) -> Result<(), Violation> {
        self.drain(s);
        let before = self.managers[s].memory_usage();
        let room = if may_allocate {
            TargetRoom::MayAllocate
        } else {
            TargetRoom::Held
        };
        let capturing = self.model.streams[s].capture != CapturePhase::Off;
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
            Err(RelocationCopyError::Copy { source, .. }) if self.hit(ctx) => {
                self.summary.refusals += 1;
                let _ = source;
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
    fn relocate_for(&mut self, ctx: Ctx, s: usize, reason: u8) -> Result<(), Violation> {
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
        match relocate_memory(&mut self.managers[s], reason, &mut StorageCopyQueue) {
            Ok(outcome) => {
                self.summary.moved += outcome.moved_slices as u64;
                if self.model.streams[s].capture != CapturePhase::Off && outcome.moved_slices > 0 {
                    return Err(ctx.succeeded("nothing moved during a capture"));
                }
            }
            Err(RelocationError::Copy { .. }) if self.hit(ctx) => self.summary.refusals += 1,
            Err(RelocationError::Wait { leaked_bytes, .. }) if self.hit(ctx) => {
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

    fn raw(
        &mut self,
        ctx: Ctx,
        alloc: u8,
        start: Option<u64>,
        end: Option<u64>,
    ) -> Result<(), Violation> {
        let Some(i) = self.model.pick_alive(alloc) else {
            return Ok(());
        };
        let (s, size, binding) = {
            let e = &self.model.entries[i];
            (e.stream, e.size, e.binding)
        };
        let (lo, hi) = (start.unwrap_or(0), end.unwrap_or(size));
        let valid = lo <= hi && hi <= size;
        match self.managers[s].get_resource(binding, start, end) {
            Ok(view) => {
                if !valid {
                    return Err(ctx.succeeded(format!("OutOfBounds {lo}..{hi} of {size}")));
                }
                if view.size != hi - lo {
                    return Err(Violation::mismatch(
                        ctx.step,
                        "raw view size",
                        hi - lo,
                        view.size,
                    ));
                }
                let base = view.ptr.0 - lo;
                let e = &mut self.model.entries[i];
                if let Some(previous) = e.raw
                    && previous != base
                {
                    return Err(Violation::mismatch(
                        ctx.step,
                        "raw address of a raw-out allocation",
                        previous,
                        base,
                    ));
                }
                e.raw = Some(base);
                Ok(())
            }
            Err(IoError::OutOfBounds {
                start: s0,
                end: e0,
                size: z,
            }) if !valid => {
                self.summary.refusals += 1;
                if (s0, e0, z) != (lo, hi, size) {
                    return Err(ctx.unexpected(format!(
                        "OutOfBounds names {s0}..{e0} of {z}, asked {lo}..{hi} of {size}"
                    )));
                }
                Ok(())
            }
            Err(e) => Err(ctx.unexpected(e)),
        }
    }

    /// Priming ended on `s`: the engine dropped its clones.
    fn unprime(&mut self, s: usize) {
        for e in self.model.entries.iter_mut().filter(|e| e.stream == s) {
            e.primed = false;
        }
        self.model.sweep();
    }

    fn capture_end(&mut self, ctx: Ctx, s: usize) -> Result<(), Violation> {
        let handles = self.managers[s].capture_end();
        if self.model.streams[s].capture == CapturePhase::Off {
            if !handles.is_empty() {
                return Err(Violation::mismatch(
                    ctx.step,
                    "handles from capture_end without a capture",
                    0,
                    handles.len() as u64,
                ));
            }
            return Ok(());
        }
        self.model.streams[s].capture = CapturePhase::Off;
        self.unprime(s);
        let mut matched = Vec::new();
        self.summary.graph_handles += handles.len() as u64;
        for handle in handles {
            let binding = handle.binding();
            let found = self
                .model
                .entries
                .iter()
                .position(|e| e.stream == s && e.alive() && e.binding == binding);
            match found {
                Some(i) if matched.contains(&i) => {
                    return Err(Violation::mismatch(
                        ctx.step,
                        format!(
                            "graph handles naming allocation #{}",
                            self.model.entries[i].id
                        ),
                        1,
                        2,
                    ));
                }
                Some(i) => {
                    matched.push(i);
                    let at = self.address_of(s, binding).map_err(|e| ctx.unexpected(e))?;
                    let e = &mut self.model.entries[i];
                    e.graph.push(handle);
                    e.pinned.get_or_insert(at);
                }
                None => {
                    let at = self.address_of(s, binding).map_err(|e| ctx.unexpected(e))?;
                    let id = self.model.next_id();
                    self.model.entries.push(Entry {
                        id,
                        stream: s,
                        size: handle.size(),
                        binding,
                        user: None,
                        graph: vec![handle],
                        primed: false,
                        pool: PoolClass::Unknown,
                        contents: None,
                        raw: None,
                        pinned: Some(at),
                    });
                    matched.push(self.model.entries.len() - 1);
                }
            }
        }
        Ok(())
    }

    fn budget_manager(&self, overlay: bool) -> std::sync::Arc<GpuMemoryManager> {
        if overlay {
            self.overlay.clone()
        } else {
            self.parent.clone()
        }
    }

    /// (local fits, global fits) for `bytes` more, from the ledgers now.
    fn budget_fits(&self, bytes: u64) -> (bool, bool) {
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

    fn ledgers(&self) -> (u64, u64) {
        (
            self.parent.allocated_bytes(),
            self.device.global().charged(),
        )
    }

    fn budget_refused(
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

    fn budget_reserve(&mut self, ctx: Ctx, overlay: bool, bytes: u64) -> Result<(), Violation> {
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

    fn budget_alloc(&mut self, ctx: Ctx, overlay: bool, bytes: u64) -> Result<(), Violation> {
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

/// Used by the checker: read `len` bytes at `offset` of an entry's view.
pub(crate) fn read_at<S: ComputeStorage>(
    manager: &mut mem_pools::MemoryManagement<S>,
    binding: mem_pools::ManagedMemoryBinding,
    offset: u64,
    out: &mut [u8],
) -> Result<(), IoError> {
    let view = manager.get_storage(binding)?;
    let narrowed = view
        .narrow(Some(offset), Some(offset + out.len() as u64))
        .ok_or(IoError::OutOfBounds {
            start: offset,
            end: offset + out.len() as u64,
            size: view.size(),
        })?;
    Ok(manager.storage().read(&narrowed, out)?)
}
