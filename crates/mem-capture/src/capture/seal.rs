//! The closing steps of [`Capture`]: `end` (seal a graph) and `abort`
//! (from any stage), and what both do last.

use crate::backend::GraphBackend;
use crate::capture::Capture;
use crate::error::CaptureError;
use crate::graph::CapturedGraph;
use crate::graph::external::External;
use crate::graph::pins::PinKey;
use crate::stage::CaptureStage;
use crate::streams::CaptureStreams;

impl Capture {
    /// Stop recording, pin the touched memory on the graph, seal.
    ///
    /// # Errors
    /// [`CaptureError::WrongStage`], [`CaptureError::PoolCountChanged`]
    /// before anything changes; after aborting the capture: the backend's
    /// refusal ([`CaptureError::MemoryNodes`], [`CaptureError::EmptyGraph`],
    /// ...), a pinned handle or declared outside buffer that does not
    /// resolve (the pins already taken on outside buffers are released).
    pub fn end<S, B>(
        &mut self,
        streams: &mut S,
        backend: &mut B,
    ) -> Result<CapturedGraph<B::Graph>, CaptureError>
    where
        S: CaptureStreams + ?Sized,
        B: GraphBackend,
    {
        self.expect("end", CaptureStage::Recording)?;
        self.same_pools(streams)?;
        let graph = match backend.end_capture() {
            Ok(graph) => graph,
            Err(err) => {
                self.abort(streams, backend);
                return Err(err);
            }
        };
        let mut pools = streams.capture_pools();
        let mut pinned = Vec::new();
        let mut failure = None;
        for (index, pool) in pools.iter_mut().enumerate() {
            for handle in pool.capture_end() {
                match pool.view(handle.binding()) {
                    Ok(view) => pinned.push((PinKey::of(index, &view), handle)),
                    Err(err) => {
                        failure.get_or_insert(CaptureError::from(err));
                    }
                }
            }
        }
        // Each guard is the graph's own pin: on failure dropping them undoes
        // exactly these pins, so no outside buffer stays pinned for a graph
        // that never was.
        let mut externals = Vec::with_capacity(self.externals.len());
        for &(pool, binding) in &self.externals {
            match External::pin(pool, binding, &mut pools) {
                Ok(pinned) => externals.push(pinned),
                Err(err) => {
                    failure.get_or_insert(err);
                }
            }
        }
        drop(pools);
        if let Some(err) = failure {
            drop((graph, pinned, externals));
            self.close(streams);
            return Err(err);
        }
        let claim = self.share.adopt(self.pools, pinned);
        self.close(streams);
        self.stage = CaptureStage::Sealed;
        Ok(CapturedGraph::new(graph, claim, externals, self.pools))
    }

    /// Abandon the capture from any stage (see the module docs). Never fails:
    /// whatever a step left open is closed.
    pub fn abort<S, B>(&mut self, streams: &mut S, backend: &mut B)
    where
        S: CaptureStreams + ?Sized,
        B: GraphBackend,
    {
        match self.stage {
            CaptureStage::Idle => {}
            CaptureStage::Sealed => self.stage = CaptureStage::Idle,
            CaptureStage::WarmingUp | CaptureStage::Recording => {
                if self.stage == CaptureStage::Recording {
                    backend.abort_capture();
                }
                for pool in streams.capture_pools().iter_mut() {
                    if pool.capture_state().active {
                        pool.capture_abort();
                        pool.drain_frees();
                    }
                }
                self.close(streams);
            }
        }
    }

    /// After every pool's window closed: pin lent temporaries again,
    /// unmark the recording stream, back to idle.
    fn close<S: CaptureStreams + ?Sized>(&mut self, streams: &mut S) {
        let lent = std::mem::take(&mut self.lent);
        self.share.reclaim_lent(&lent, &mut streams.capture_pools());
        if std::mem::take(&mut self.marked) {
            streams.set_recording(false);
        }
        self.externals.clear();
        self.stage = CaptureStage::Idle;
    }
}
