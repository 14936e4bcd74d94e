//! `Capture`: the one place the capture sequence lives.
//!
//! ```text
//!   Idle ──prepare──▶ WarmingUp ──begin──▶ Recording ──end──▶ Sealed
//!     ▲                   │                    │                │
//!     └───────────────────┴──────abort─────────┴────────────────┘
//! ```
//!
//! - `prepare`: refuse if any stream records or a pool already captures;
//!   relocate every stream's outdated memory (reason: capture); mark the
//!   recording stream (`set_recording`); `capture_begin` on every pool the
//!   recording touches; lend a shared pool's temporaries to the window. The
//!   warmup runs next.
//! - `begin`: drain deferred frees (the runtime's, then each pool's drop
//!   queue); `capture_priming_end`; begin stream capture. The recorded pass
//!   runs next, issuing work to [`Capture::recorder`].
//! - `end`: end stream capture *first* (so the stream is never wedged, and a
//!   graph with memory nodes is refused); `capture_end` on every pool; pin
//!   what it returned on the graph; seal.
//! - `abort`: from any stage; stops stream capture, ends every pool's window
//!   (mode, priming and touched set restored, warmup's slices freed),
//!   unmarks the recording stream, re-pins lent temporaries. From `Sealed`
//!   it only makes the capture reusable; the graph it made stays valid.
//!
//! A step called out of order is [`CaptureError::WrongStage`] and changes
//! nothing; so are the checks each step makes before acting. A failure after
//! a step started acting (the driver refused, `capture_end` returned a handle
//! that does not resolve) aborts the capture, then reports.

use mem_pools::ManagedMemoryBinding;

use crate::backend::GraphBackend;
use crate::error::CaptureError;
use crate::graph::pins::{GraphPool, PinKey};
use crate::stage::CaptureStage;
use crate::streams::CaptureStreams;

mod run;
mod seal;

/// One graph capture over a device's streams (see the module docs).
///
/// # Dropping mid-way does not abort
/// A `Capture` borrows its streams and backend only for each step, so its
/// `Drop` cannot reach them: dropping it in `WarmingUp` or `Recording`
/// leaves every pool in capture mode (Persistent, priming, touching) and the
/// stream marked recording — relocation and cleanup then refuse on every
/// stream — until [`Capture::abort`] is called with the same streams and
/// backend. It only logs an error. So on every way out of a manual sequence,
/// call `abort`; or use [`Capture::run`], which aborts on an error and on a
/// panicking pass; or gpumem's `Stream::begin_capture` type-state, whose
/// steps own the streams and abort when dropped.
#[derive(Debug)]
pub struct Capture {
    pub(crate) stage: CaptureStage,
    /// This capture marked the recording stream.
    pub(crate) marked: bool,
    pub(crate) pools: usize,
    pub(crate) share: GraphPool,
    pub(crate) lent: Vec<PinKey>,
    pub(crate) externals: Vec<(usize, ManagedMemoryBinding)>,
}

impl Capture {
    /// A capture whose graph gets a graph pool of its own.
    pub fn new() -> Self {
        Self::sharing(&GraphPool::new())
    }

    /// A capture into `pool`, shared with the graphs already in it: their
    /// temporaries are lent to this window, so the new graph reuses them.
    /// Graphs of one pool must never run concurrently (`docs/capture.md`).
    pub fn sharing(pool: &GraphPool) -> Self {
        Self {
            stage: CaptureStage::Idle,
            marked: false,
            pools: 0,
            share: pool.clone(),
            lent: Vec::new(),
            externals: Vec::new(),
        }
    }

    /// The stage the capture is in.
    pub fn stage(&self) -> CaptureStage {
        self.stage
    }

    pub(crate) fn expect(
        &self,
        call: &'static str,
        expected: CaptureStage,
    ) -> Result<(), CaptureError> {
        if self.stage == expected {
            Ok(())
        } else {
            Err(CaptureError::WrongStage {
                call,
                expected,
                found: self.stage,
            })
        }
    }

    pub(crate) fn same_pools<S: CaptureStreams + ?Sized>(
        &self,
        streams: &mut S,
    ) -> Result<(), CaptureError> {
        let found = streams.capture_pools().len();
        if found == self.pools {
            Ok(())
        } else {
            Err(CaptureError::PoolCountChanged {
                expected: self.pools,
                found,
            })
        }
    }

    /// Open the window; the warmup runs after this (see the module docs).
    ///
    /// # Errors
    /// [`CaptureError::WrongStage`], [`CaptureError::Streams`] (another
    /// stream records and some memory is outdated, so the relocation before
    /// the warmup cannot run), [`CaptureError::NoPools`], [`CaptureError::PoolAlreadyCapturing`],
    /// [`CaptureError::PoolCountChanged`]; each before anything changes.
    pub fn prepare<S: CaptureStreams + ?Sized>(
        &mut self,
        streams: &mut S,
    ) -> Result<(), CaptureError> {
        self.expect("prepare", CaptureStage::Idle)?;
        // Beside another recording only when the relocation it skips would
        // move nothing (see `CaptureStreams::device_has_outdated`).
        let beside = match streams.recording_streams() {
            0 => false,
            recording if streams.device_has_outdated() => {
                return Err(CaptureError::already_recording(recording));
            }
            _ => true,
        };
        let count = {
            let pools = streams.capture_pools();
            if pools.is_empty() {
                return Err(CaptureError::NoPools);
            }
            for (pool, p) in pools.iter().enumerate() {
                let state = p.capture_state();
                if state.active {
                    return Err(CaptureError::PoolAlreadyCapturing {
                        pool,
                        touched: state.touched,
                    });
                }
            }
            pools.len()
        };
        self.share.check_pools(count)?;
        if !beside {
            streams.relocate_device();
        }
        streams.set_recording(true);
        self.marked = true;
        let mut pools = streams.capture_pools();
        for pool in pools.iter_mut() {
            pool.capture_begin();
        }
        // Lent inside the window, so the freed slices stay in the pools.
        self.lent = self.share.lend_temporaries();
        for pool in pools.iter_mut() {
            pool.drain_frees();
        }
        self.pools = count;
        self.stage = CaptureStage::WarmingUp;
        Ok(())
    }

    /// End priming and start recording; the recorded pass runs after this.
    ///
    /// # Errors
    /// [`CaptureError::WrongStage`], [`CaptureError::PoolCountChanged`],
    /// [`CaptureError::BackendBusy`] before anything changes; the backend's
    /// refusal to begin after aborting the capture.
    pub fn begin<S, B>(&mut self, streams: &mut S, backend: &mut B) -> Result<(), CaptureError>
    where
        S: CaptureStreams + ?Sized,
        B: GraphBackend,
    {
        self.expect("begin", CaptureStage::WarmingUp)?;
        self.same_pools(streams)?;
        if backend.is_capturing() {
            return Err(CaptureError::BackendBusy);
        }
        streams.drain_deferred_frees();
        for pool in streams.capture_pools().iter_mut() {
            pool.drain_frees();
            pool.capture_priming_end();
        }
        if let Err(err) = backend.begin_capture() {
            self.abort(streams, backend);
            return Err(err);
        }
        self.stage = CaptureStage::Recording;
        Ok(())
    }
}

impl Default for Capture {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if matches!(
            self.stage,
            CaptureStage::WarmingUp | CaptureStage::Recording
        ) {
            tracing::error!(
                stage = %self.stage,
                "a capture was dropped mid-way: its pools stay in capture mode and its stream marked recording; call abort"
            );
        }
    }
}
