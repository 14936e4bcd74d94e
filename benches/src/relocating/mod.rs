//! gpumem on paged pools as a replay backend that relocates between ops,
//! through `gpumem::Device` (one stream, `pools:sub_slices`; see
//! [`crate::device_peer::paged_config`]) on a simulated device, where
//! copies are range-checked no-ops: the tables are about bytes held, not
//! copy speed. The policies ([`Policy`]) are calls a runtime makes on the
//! facade: none, [`Stream::relocate_when_wanted`] before every
//! reservation, or [`Stream::relocate`] (explicit) after every op that
//! left something to move or compact.
//!
//! Arenas are not relocated (their physical memory already follows live
//! data); the arena table measures them.

use gpumem::prelude::*;
use gpumem_replay::replay::{AllocBackend, DeviceBackend, DeviceToken, Program};
use gpumem_replay::report::Relocations;
use gpumem_replay::trace::Mode;
use gpumem_replay::{ReplayError, Result};
use mem_pools::CompactionState;
use mem_relocate::compaction_worthwhile;

use crate::device_peer::paged_device;

mod policy;

pub use policy::Policy;

/// The shape a fruitless eager relocation saw (not retried until it changes).
type Shape = (mem_pools::RelocationShape, CompactionState);

/// A paged device's one stream, relocating per [`Policy`].
#[derive(Debug)]
pub struct RelocatingBackend {
    inner: DeviceBackend,
    stream: Stream,
    policy: Policy,
    tally: Relocations,
    reclaim_at_end: bool,
    settle_error: Option<String>,
    stalled: Option<Shape>,
}

fn failed(err: &GpuMemError) -> ReplayError {
    ReplayError::Backend {
        backend: "sim+relocate",
        message: format!("relocation: {err}"),
    }
}

impl RelocatingBackend {
    /// The paged default on a simulated device of `capacity` bytes, sized
    /// for `program`'s largest allocation.
    ///
    /// # Errors
    /// The facade's refusal to build the device.
    pub fn new(program: &Program, capacity: u64, policy: Policy) -> crate::Result<Self> {
        let inner = paged_device(program, capacity)?;
        let stream = inner.device().default_stream();
        Ok(RelocatingBackend {
            inner,
            stream,
            policy,
            tally: Relocations::default(),
            reclaim_at_end: false,
            settle_error: None,
            stalled: None,
        })
    }

    /// Reclaim when the replay settles ([`Device::reclaim`] with a policy,
    /// a cleanup without), before its final numbers are read.
    pub fn reclaim_at_end(mut self, reclaim: bool) -> Self {
        self.reclaim_at_end = reclaim;
        self
    }

    /// The error of the reclaim at the end, if it failed (`settle` cannot
    /// return one).
    pub fn settle_error(&self) -> Option<&str> {
        self.settle_error.as_deref()
    }

    /// What relocation did so far.
    pub fn tally(&self) -> Relocations {
        self.tally.clone()
    }

    fn after_op(&mut self) -> Result<()> {
        if self.policy != Policy::Eager {
            return Ok(());
        }
        let (movable, shape) = self.stream.with_memory(|memory| {
            memory.drain_drops();
            let shape = memory.relocation_state().shape;
            let compaction = memory.compaction_state();
            let movable =
                shape.outdated_pages > shape.outdated_pinned && shape.outdated_live_bytes > 0;
            (
                movable || compaction_worthwhile(&compaction),
                (shape, compaction),
            )
        });
        if !movable || self.stalled == Some(shape) {
            return Ok(());
        }
        let done = self
            .stream
            .relocate(RelocationReason::Explicit)
            .map_err(|e| failed(&e))?;
        self.stalled = (done.moved_slices == 0 && done.pages_freed == 0).then_some(shape);
        self.tally.record(Ok(done));
        Ok(())
    }
}

impl AllocBackend for RelocatingBackend {
    type Token = DeviceToken;

    fn name(&self) -> &'static str {
        match self.policy {
            Policy::Off => "sim",
            Policy::Trigger => "sim+trigger",
            Policy::Eager => "sim+eager",
        }
    }

    fn reserve(&mut self, size: u64, stream: u64) -> Result<DeviceToken> {
        if self.policy == Policy::Trigger {
            let done = self.stream.relocate_when_wanted().map_err(|e| failed(&e))?;
            self.tally.record(Ok(done));
        }
        let token = self.inner.reserve(size, stream)?;
        self.after_op()?;
        Ok(token)
    }

    fn free(&mut self, token: DeviceToken) -> Result<()> {
        self.inner.free(token)?;
        self.after_op()
    }

    fn mode(&mut self, mode: Mode) {
        self.inner.mode(mode);
    }

    fn cleanup(&mut self) {
        self.inner.cleanup();
    }

    fn live_bytes(&self) -> u64 {
        self.inner.live_bytes()
    }

    fn reserved_bytes(&self) -> u64 {
        self.inner.reserved_bytes()
    }

    fn peak_reserved_bytes(&self) -> u64 {
        self.inner.peak_reserved_bytes()
    }

    fn storage_allocs(&self) -> u64 {
        self.inner.storage_allocs()
    }

    fn pool_lines(&self) -> Vec<mem_pools::PoolReport> {
        self.inner.pool_lines()
    }

    fn settle(&mut self) {
        if self.reclaim_at_end {
            self.inner.device().drain();
            match self.policy {
                Policy::Off => self.stream.cleanup(),
                _ => match self.inner.device().reclaim() {
                    Ok(done) => self.tally.record(Ok(done)),
                    Err(err) => self.settle_error = Some(err.to_string()),
                },
            }
        }
        self.inner.settle();
    }
}
