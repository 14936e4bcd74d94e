//! `World`: the system under test, its model, and the step loop.
//!
//! Three pool managers (one per stream) share one [`TestDevice`]; a budget
//! manager and its overlay allocate through two runtimes over the same
//! global budget. [`World::step`] runs one op (which checks
//! its own outcome) and then every invariant ([`crate::world::check`]);
//! [`World::apply`] runs an op without the invariant pass, for sweeps whose
//! call counts must not include the checker's reads.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use mem_budget::GpuMemoryManager;
use mem_pools::{MemoryConfiguration, MemoryManagement, MemoryManagementOptions, ServerLogger};

use crate::device::{PoolStorage, TestDevice};
use crate::error::Violation;
use crate::program::{Op, Program};
use crate::world::model::Model;

mod check;
mod check_arenas;
mod layouts;
pub(crate) mod model;
mod read;
mod streams;
mod summary;
pub(crate) mod teardown;

pub use layouts::{ARENA_GRANULARITY, ARENA_LAYOUTS, LAYOUTS, arena_layout, layout, props};
pub use summary::{Limits, RunSummary};

/// Pool managers (streams) in a world.
pub const STREAMS: usize = 3;

/// The stream whose manager maps pages lazily (`lazy_pages`; paged worlds
/// only, see [`World::arenas`]): pages get memory at their first
/// dereference, which may then be refused.
pub const LAZY_STREAM: usize = 2;

/// The system under test and its model.
pub struct World {
    pub(crate) device: TestDevice,
    pub(crate) managers: Vec<MemoryManagement<PoolStorage>>,
    pub(crate) parent: Arc<GpuMemoryManager>,
    pub(crate) overlay: Arc<GpuMemoryManager>,
    pub(crate) model: Model,
    pub(crate) limits: Limits,
    /// Bytes each stream reported leaked by failed relocation waits.
    pub(crate) leaked: Vec<u64>,
    pub(crate) fail_next: bool,
    /// Refusals must change nothing at all (no tolerance for known bugs).
    pub(crate) strict: bool,
    /// Storages have virtual memory and layouts are [`arena_layout`]s.
    pub(crate) arenas: bool,
    /// Streams complete their work lazily ([`World::lazy_streams`]).
    pub(crate) lazy_streams: bool,
    /// Progress reports claim all work complete ([`World::misreport_progress`]).
    pub(crate) misreport: bool,
    pub(crate) summary: RunSummary,
    step: usize,
}

impl World {
    /// A fresh world: empty managers with layout 0, empty budgets.
    pub fn new(limits: Limits) -> Self {
        Self::build(limits, TestDevice::new(limits.host_capacity, limits.global))
    }

    /// A fresh arena world: as [`World::new`], on a device with virtual
    /// memory ([`TestDevice::with_virtual_memory`]: as much as the host,
    /// [`ARENA_GRANULARITY`] chunks charged to the global budget), every
    /// manager with [`arena_layout`] 0; `Install` ops pick arena layouts.
    /// No stream maps pages lazily (arenas never do, and the gpumem facade
    /// gives a `lazy_pages` device paged pools), so the checker can resolve
    /// any allocation without allocating a page.
    pub fn arenas(limits: Limits) -> Self {
        let device = TestDevice::with_virtual_memory(
            limits.host_capacity,
            limits.global,
            limits.host_capacity,
            ARENA_GRANULARITY,
        );
        Self::build(limits, device)
    }

    /// The world `program` asks for ([`Program::arenas`],
    /// [`Program::lazy_streams`]).
    pub fn for_program(program: &Program, limits: Limits) -> Self {
        match (program.arenas, program.lazy_streams) {
            (true, true) => Self::lazy_streams(limits),
            (true, false) => Self::arenas(limits),
            (false, _) => Self::new(limits),
        }
    }

    fn build(limits: Limits, device: TestDevice) -> Self {
        let arenas = device.has_virtual_memory();
        let lazy = |s: usize| s == LAZY_STREAM && !arenas;
        let first = match arenas {
            true => arena_layout(0).0,
            false => layout(0).0,
        };
        let managers = (0..STREAMS)
            .map(|s| {
                MemoryManagement::from_configuration(
                    device.storage(s as u64),
                    &props(),
                    first.clone(),
                    Arc::new(ServerLogger::default()),
                    MemoryManagementOptions {
                        lazy_pages: lazy(s),
                        ..MemoryManagementOptions::named(format!("stream {s}"))
                    },
                )
            })
            .collect();
        let (parent, overlay) = device.budget_pair(limits.local, 0, 1);
        Self {
            device,
            managers,
            parent,
            overlay,
            model: {
                let mut model = Model::new(STREAMS);
                model.streams[LAZY_STREAM].lazy = lazy(LAZY_STREAM);
                model
            },
            limits,
            leaked: vec![0; STREAMS],
            fail_next: false,
            strict: false,
            arenas,
            lazy_streams: false,
            misreport: false,
            summary: RunSummary::default(),
            step: 0,
        }
    }

    /// Layout `index` of this world's table ([`layout`], or
    /// [`arena_layout`] on an arena world) and its largest routed size.
    pub fn layout_of(&self, index: usize) -> (MemoryConfiguration, u64) {
        match self.arenas {
            true => arena_layout(index),
            false => layout(index),
        }
    }

    /// A fresh world that tolerates no known bug: a refused reservation
    /// must leave reserved bytes exactly as they were (see
    /// [`RunSummary::released_on_refusal`] for what [`World::new`] tolerates).
    pub fn strict(limits: Limits) -> Self {
        Self {
            strict: true,
            ..Self::new(limits)
        }
    }

    /// The device stack (tracking, faults, global budget).
    pub fn device(&self) -> &TestDevice {
        &self.device
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Pool manager `stream`.
    pub fn manager(&mut self, stream: usize) -> &mut MemoryManagement<PoolStorage> {
        &mut self.managers[stream]
    }

    /// Tell the model that a relocation wait failed on `stream` outside
    /// the ops (a test driving a manager directly, e.g. through
    /// mem-capture), leaking `leaked_bytes`: the statistic and teardown
    /// then expect them.
    pub fn note_failed_wait(&mut self, stream: usize, leaked_bytes: u64) {
        self.leaked[stream] += leaked_bytes;
        self.model.streams[stream].quarantined |= leaked_bytes > 0;
    }

    /// The budget manager and its overlay.
    pub fn budgets(&self) -> (&Arc<GpuMemoryManager>, &Arc<GpuMemoryManager>) {
        (&self.parent, &self.overlay)
    }

    /// Run `op`, check its outcome, then check every invariant.
    pub fn step(&mut self, op: Op) -> Result<(), Violation> {
        let step = self.apply(op)?;
        self.check(step)
    }

    /// Run `op` and check its own outcome (no invariant pass); returns its
    /// step index. A panic is caught and returned as [`Violation::Panic`].
    pub fn apply(&mut self, op: Op) -> Result<usize, Violation> {
        let step = self.step;
        self.step += 1;
        self.summary.ops += 1;
        let arm = std::mem::take(&mut self.fail_next);
        if arm {
            self.device.arm_next();
        }
        let injected = self.device.injected();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            self.report_progress();
            self.execute(op, step, injected)
        }));
        if arm {
            self.device.disarm();
        }
        self.summary.faults += self.device.injected() - injected;
        let result = match outcome {
            Ok(result) => result,
            Err(payload) => Err(Violation::Panic {
                step,
                op: format!("{op:?}"),
                message: panic_text(payload.as_ref()),
            }),
        };
        self.model.sweep();
        result.and_then(|()| self.reclamation(step))?;
        Ok(step)
    }

    /// Check every invariant (listed in docs/reliability.md: contents,
    /// addresses, stale bindings, usage, ledgers, and on lazy streams the
    /// reclamation oracle's findings); `step` labels findings.
    pub fn check(&mut self, step: usize) -> Result<(), Violation> {
        self.summary.checks += 1;
        let outcome = catch_unwind(AssertUnwindSafe(|| self.check_all(step)));
        outcome.unwrap_or_else(|payload| {
            Err(Violation::Panic {
                step,
                op: "check".into(),
                message: panic_text(payload.as_ref()),
            })
        })
    }

    /// What the run did so far.
    pub fn summary(&self) -> RunSummary {
        self.summary
    }
}

pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-text panic payload".into())
}

/// Run `program` on a fresh world, checking after every step, then tear
/// down and prove nothing is outstanding.
pub fn run_program(program: &Program) -> Result<RunSummary, Violation> {
    let mut world = World::for_program(program, Limits::default());
    for &op in &program.ops {
        world.step(op)?;
    }
    world.finish()
}
