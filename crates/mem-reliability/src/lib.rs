//! # mem-reliability — does gpumem keep working and lose nothing?
//!
//! A test-support crate (never published): it drives the real engine
//! (mem-pools), the real budgets (mem-budget) and a real host device
//! (mem-storage) with programs, injected faults and adversarial inputs, and
//! checks every step against a model.
//!
//! - [`decode`] turns any bytes into a [`Program`] of [`Op`]s across several
//!   streams (reserve, write, drop, bind, mode, cleanup, install, relocate,
//!   raw addresses, capture begin / priming end / end, budget reserve /
//!   alloc / drop / reap, and "fail the next device call"). The fuzz target
//!   in `fuzz/` and the corpus test on stable use the same decoder.
//! - [`World`] owns one host device stack ([`TestDevice`]: tracking →
//!   fault injection → global budget), one pool manager per stream, a
//!   budget manager with an overlay, and the [`Model`] of what must be
//!   true. [`World::step`] runs one op and checks the outcome against the
//!   model; [`World::check`] checks every invariant; [`World::finish`] drops
//!   everything and proves nothing is outstanding.
//! - [`Scenario`]s are fixed programs (growth, relocation, capture, budget
//!   overlay, install_pools, and four on arenas); [`sweep`] runs one once to
//!   count its device calls, then once per `k` with the k-th call failing.
//! - An arena world ([`World::arenas`], asked for by [`Program::arenas`])
//!   gives every storage the device's virtual memory (host memfd, real
//!   bytes; tracked, fault-injected, its chunks charged to the global
//!   budget) and arena layouts ([`arena_layout`]); its sweep fails each
//!   virtual-memory call in turn (reserve / free a range, create / release
//!   a chunk, map, unmap), and its checks add the arena invariants: the
//!   arenas' reserved bytes are the bytes the VM maps, exactly the granules
//!   under live slices plus idle chunks, and an explicit cleanup of an
//!   emptied world leaves the VM holding nothing.
//! - A world with lazy streams ([`World::lazy_streams`], asked for by
//!   [`Program::lazy_streams`], decoded by [`decode_lazy`]) is an arena
//!   world whose streams complete their work late: writes and relocation
//!   copies are recorded in a [`UseLog`] as uses of device addresses, they
//!   complete at [`Op::Complete`] or a synchronize, and the engines are
//!   told both cursors before every call. The reclamation oracle
//!   ([`CheckedVm`] in the VM stack) fails the run with
//!   [`Violation::UnmappedInUse`] if any unmap takes physical memory from
//!   under a use still incomplete.
//!
//! ## Contract
//! - Every failure is a [`Violation`] naming the step, the op and the
//!   numbers that disagree; a panic inside the code under test is caught
//!   and reported as [`Violation::Panic`], never propagated.
//! - The same bytes always decode to the same program, so a finding
//!   replays, and the same program makes the same device calls, refusals
//!   and outcomes in every run and process (the engine orders what it
//!   drops or pins in bulk; `tests/fault_sweep.rs` sweeps a program again
//!   and compares).
//!
//! ## Non-goals
//! - Timing and throughput (criterion benches live elsewhere).
//! - CUDA: the device is host memory, so contents can be checked byte for
//!   byte. mem-relocate is driven through `relocate_memory` with the
//!   storage copy queue (its CUDA queue is not); programs drive capture
//!   through the engine's windows, and `tests/capture_faults.rs` drives
//!   mem-capture's `Capture::run` with the host graph backend.

mod device;
mod error;
mod ops;
mod program;
mod streams;
mod sweep;
mod world;

pub use device::{Faulty, FaultyVm, PoolStorage, TestDevice, Tracked, TrackedVm, VM_CALLS};
pub use error::Violation;
pub use program::decode::{MAX_OPS, decode, decode_lazy};
pub use program::{Op, Program};
pub use streams::{CheckedVm, Cursors, Finding, Use, UseLog};
pub use sweep::scenario::Scenario;
pub use sweep::{FaultMode, SweepReport, count_calls, run_with_fault, sweep, sweep_program};
pub use world::model::{CapturePhase, Contents, Entry, Model, PoolClass, pattern};
pub use world::teardown::TEARDOWN;
pub use world::{
    ARENA_GRANULARITY, ARENA_LAYOUTS, LAYOUTS, LAZY_STREAM, Limits, RunSummary, STREAMS, World,
    arena_layout, layout, props, run_program,
};
