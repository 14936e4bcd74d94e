//! A run's limits (device and budget sizes) and what it did, for the report.

/// Sizes of the device and of the two budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Host memory the device may hold.
    pub host_capacity: u64,
    /// The global (device-wide) budget.
    pub global: u64,
    /// The budget manager's local budget.
    pub local: u64,
}

impl Default for Limits {
    /// 16 MiB of host, 3 MiB global budget, 768 KiB local budget: the host
    /// never refuses before the global budget does.
    fn default() -> Self {
        Self {
            host_capacity: 16 << 20,
            global: 3 << 20,
            local: 768 << 10,
        }
    }
}

/// What a run did, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunSummary {
    /// Ops executed.
    pub ops: u64,
    /// Typed refusals observed (each one checked against the model).
    pub refusals: u64,
    /// Faults injected into device calls.
    pub faults: u64,
    /// Invariant passes run.
    pub checks: u64,
    /// Allocations moved by committed relocations.
    pub moved: u64,
    /// Binds that handed memory over.
    pub binds: u64,
    /// Handles returned by `capture_end`.
    pub graph_handles: u64,
    /// Refused reservations that had given empty pages back first (the
    /// growth's documented give-back, harmless: docs/reliability.md;
    /// tolerated outside a strict world).
    pub released_on_refusal: u64,
    /// Refused arena reservations that changed the idle chunks because the
    /// device refused their undo too (a later call failed as well: only in
    /// [`crate::FaultMode::From`] runs): a chunk it created stays mapped,
    /// idle and trimmable, or a chunk it moved is released. Nothing live
    /// changes.
    pub idle_on_refusal: u64,
    /// Refused arena reservations that had shed idle chunks before the
    /// refused call (mem-pools sheds idle chunks past their share before
    /// it creates one, so physical memory does not grow): only the cache
    /// went down, by exactly what reserved bytes lost. Nothing live changes.
    pub shed_on_refusal: u64,
    /// Unmaps (and range frees) the reclamation oracle checked (arena
    /// worlds; every one on a world with lazy streams is checked against
    /// the uses then incomplete).
    pub unmaps_checked: u64,
    /// Of those, the ones made while some recorded use was incomplete
    /// (somewhere else: the oracle found none under the unmap).
    pub unmaps_beside_open: u64,
}

impl RunSummary {
    /// The sum of two summaries.
    pub fn add(&mut self, other: RunSummary) {
        self.ops += other.ops;
        self.refusals += other.refusals;
        self.faults += other.faults;
        self.checks += other.checks;
        self.moved += other.moved;
        self.binds += other.binds;
        self.graph_handles += other.graph_handles;
        self.released_on_refusal += other.released_on_refusal;
        self.idle_on_refusal += other.idle_on_refusal;
        self.shed_on_refusal += other.shed_on_refusal;
        self.unmaps_checked += other.unmaps_checked;
        self.unmaps_beside_open += other.unmaps_beside_open;
    }
}
