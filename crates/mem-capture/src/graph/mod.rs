//! `CapturedGraph`: a sealed graph and the memory it replays against.
//!
//! A graph's nodes hold raw addresses, so the memory behind them must stay
//! where it was for the graph's whole life: the graph owns a claim on every
//! slice `capture_end` returned (see [`crate::GraphPool`]), which keeps the
//! pool from reusing them and relocation from moving them. Dropping the
//! graph destroys the backend graph *first* (the CUDA one waits for its
//! stream), then releases the claim — never the other way round, which would
//! hand memory to the pool while a launch may still write it. The raw pins
//! on declared outside buffers ([`crate::Capture::uses`]) go last, for the
//! same reason: they are the graph's own, so exactly they end.

use crate::backend::GraphBackend;
use mem_pools::RawPin;

use crate::error::CaptureError;
use crate::graph::external::External;
use crate::graph::pins::{GraphPool, PinClaim};
use crate::streams::{CapturePool, CaptureStreams};

pub(crate) mod external;
mod lend;
pub(crate) mod pins;

/// A sealed graph with its pinned memory.
#[derive(Debug)]
pub struct CapturedGraph<G> {
    // Field order is drop order: the graph goes before its memory.
    graph: G,
    claim: PinClaim,
    externals: Vec<(External, RawPin)>,
    pools: usize,
}

impl<G> CapturedGraph<G> {
    pub(crate) fn new(
        graph: G,
        claim: PinClaim,
        externals: Vec<(External, RawPin)>,
        pools: usize,
    ) -> Self {
        Self {
            graph,
            claim,
            externals,
            pools,
        }
    }

    /// Check the graph's memory and launch it once.
    ///
    /// `streams` must be the streams it was captured over (pool indices are
    /// positions in their `capture_pools`).
    ///
    /// # Errors
    /// [`CaptureError::GraphMemoryInvalidated`] when a pinned slice was
    /// freed, rebound or given away (the graph never launches then);
    /// [`CaptureError::PoolCountChanged`]; the backend's launch failure.
    pub fn replay<B, S>(&self, backend: &mut B, streams: &mut S) -> Result<(), CaptureError>
    where
        B: GraphBackend<Graph = G>,
        S: CaptureStreams + ?Sized,
    {
        let mut pools = streams.capture_pools();
        if pools.len() != self.pools {
            return Err(CaptureError::PoolCountChanged {
                expected: self.pools,
                found: pools.len(),
            });
        }
        self.check(&mut pools)?;
        backend.replay(&self.graph, &mut pools)
    }

    /// Check, without launching, that every pinned slice is still in place.
    ///
    /// # Errors
    /// As [`CapturedGraph::replay`], before the launch.
    pub fn verify<S: CaptureStreams + ?Sized>(&self, streams: &mut S) -> Result<(), CaptureError> {
        let mut pools = streams.capture_pools();
        self.check(&mut pools)
    }

    fn check(&self, pools: &mut [&mut dyn CapturePool]) -> Result<(), CaptureError> {
        self.claim.pool.verify(&self.claim.keys, pools)?;
        self.externals.iter().try_for_each(|(e, _)| e.verify(pools))
    }

    /// Outside buffers the graph uses (declared with [`crate::Capture::uses`]).
    pub fn outside_buffers(&self) -> usize {
        self.externals.len()
    }

    /// Slices this graph pins.
    pub fn pinned_slices(&self) -> usize {
        self.claim.keys.len()
    }

    /// The pool of graph memory this graph belongs to; pass it to
    /// [`crate::Capture::sharing`] to capture another graph into it.
    pub fn graph_pool(&self) -> &GraphPool {
        &self.claim.pool
    }

    /// The backend's graph (e.g. the host operations, the CUDA executable).
    pub fn backend_graph(&self) -> &G {
        &self.graph
    }
}
