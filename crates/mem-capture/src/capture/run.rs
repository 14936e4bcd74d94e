//! What the passes use — the recorder, declared outside buffers — and
//! `Capture::run`, the whole sequence in one call for a runtime whose
//! warmup and recorded pass are closures.

use mem_pools::ManagedMemoryBinding;

use crate::backend::GraphBackend;
use crate::capture::Capture;
use crate::error::CaptureError;
use crate::graph::CapturedGraph;
use crate::stage::CaptureStage;
use crate::streams::CaptureStreams;

impl Capture {
    /// Where the recorded pass issues its work.
    ///
    /// # Errors
    /// [`CaptureError::WrongStage`] outside `Recording`.
    pub fn recorder<'b, B: GraphBackend>(
        &self,
        backend: &'b mut B,
    ) -> Result<&'b mut B::Recorder, CaptureError> {
        self.expect("recorder", CaptureStage::Recording)?;
        Ok(backend.recorder())
    }

    /// Declare that the graph uses an allocation of `pools[pool]` it does
    /// not reserve in the window (a static input, weights). At `end` the
    /// graph takes its own counted raw pin (`mem_pools::RawPin`) on it, so
    /// its page never moves while the graph lives, and the graph refuses to
    /// replay once it was freed or rebound. It stays its owner's: the graph
    /// holds no handle to it, so keep it alive.
    ///
    /// The pin ends with the graph (or with a failing `end`): dropping the
    /// graph releases exactly its pins — the owner's own `get_resource` /
    /// `release_raw` flag and other graphs' pins on the same buffer are
    /// untouched. While the graph lives, a `bind` that would retire or free
    /// the buffer's slot is refused (`AssignedPinned` / `SharedReserved`).
    ///
    /// # Errors
    /// [`CaptureError::WrongStage`] once sealed (declare before `end`).
    pub fn uses(&mut self, pool: usize, binding: ManagedMemoryBinding) -> Result<(), CaptureError> {
        if self.stage() == CaptureStage::Sealed {
            return Err(CaptureError::WrongStage {
                call: "uses",
                expected: CaptureStage::Recording,
                found: CaptureStage::Sealed,
            });
        }
        self.externals.push((pool, binding));
        Ok(())
    }

    /// Capture a graph: `prepare`, run `warmup`, `begin`, run `record`
    /// (issuing work to the backend's recorder), `end`.
    ///
    /// `warmup` should be the recorded pass itself run once for real (or
    /// anything that reserves every buffer it reserves): priming keeps every
    /// slice it touches, so the recorded pass finds its whole working set
    /// free and never allocates. Any step or closure failing — or panicking —
    /// aborts the capture (nothing stays open) and returns its error (or
    /// resumes the panic); an engine error converts
    /// with `?` ([`CaptureError::Engine`]; a reservation the window cannot
    /// serve is the engine's `IoError::CaptureWouldAllocate`).
    ///
    /// # Errors
    /// Those of the steps, and the closures'.
    pub fn run<S, B, W, R>(
        &mut self,
        streams: &mut S,
        backend: &mut B,
        warmup: W,
        record: R,
    ) -> Result<CapturedGraph<B::Graph>, CaptureError>
    where
        S: CaptureStreams + ?Sized,
        B: GraphBackend,
        W: FnOnce(&mut S) -> Result<(), CaptureError>,
        R: FnOnce(&mut S, &mut B::Recorder) -> Result<(), CaptureError>,
    {
        self.prepare(streams)?;
        // From here the guard aborts on every way out but success — an
        // error, and a closure that panics (unwinding drops the guard), so a
        // panicking pass never leaves the pools in capture mode or the
        // stream marked.
        let mut open = AbortOnDrop {
            capture: self,
            streams,
            backend,
            sealed: false,
        };
        let g = &mut open;
        warmup(g.streams)?;
        // A step that refuses before acting leaves the capture open; the
        // guard's abort closes whatever is (a no-op when the step aborted
        // itself).
        g.capture.begin(g.streams, g.backend)?;
        record(g.streams, g.backend.recorder())?;
        let graph = g.capture.end(g.streams, g.backend)?;
        g.sealed = true;
        Ok(graph)
    }
}

/// Aborts the capture it borrows when dropped unless it sealed.
struct AbortOnDrop<'a, S: CaptureStreams + ?Sized, B: GraphBackend> {
    capture: &'a mut Capture,
    streams: &'a mut S,
    backend: &'a mut B,
    sealed: bool,
}

impl<S: CaptureStreams + ?Sized, B: GraphBackend> Drop for AbortOnDrop<'_, S, B> {
    fn drop(&mut self) {
        if !self.sealed {
            self.capture.abort(self.streams, self.backend);
        }
    }
}
