//! Capturing on a stream of mem-relocate's [`StreamSet`].
//!
//! The reference device of mem-relocate already knows which streams record
//! (its relocation and reclaim refuse meanwhile) and how to relocate every
//! stream. [`StreamSetCapture`] lends it to a [`crate::Capture`]: the pre-warmup
//! relocation is `relocate_device(RelocationReason::Capture)`, the recording
//! mark is `begin_recording` / `end_recording` on the chosen stream, and the
//! pool the recording touches is that stream's memory.

use mem_pools::MemoryManagement;
use mem_relocate::{RelocatingStreams, RelocationReason, StreamSet};
use mem_storage::ComputeStorage;

use crate::error::CaptureError;
use crate::streams::{CapturePool, CaptureStreams};

/// A [`StreamSet`] recording on stream `stream` (borrowed for the capture).
pub struct StreamSetCapture<'a, S: ComputeStorage> {
    /// The device; use it between the steps (warmup, recorded pass).
    pub set: &'a mut StreamSet<S>,
    /// The recording stream.
    pub stream: usize,
}

impl<'a, S: ComputeStorage> StreamSetCapture<'a, S> {
    /// Record on `stream` of `set`.
    pub fn new(set: &'a mut StreamSet<S>, stream: usize) -> Self {
        Self { set, stream }
    }

    /// The recording stream's memory, for the warmup and the recorded pass.
    ///
    /// # Errors
    /// [`CaptureError::Streams`] carrying the set's
    /// [`mem_relocate::RelocationError::UnknownStream`] when the set has no
    /// stream `stream`.
    pub fn memory(&mut self) -> Result<&mut MemoryManagement<S>, CaptureError> {
        Ok(self.set.memory(self.stream)?)
    }
}

impl<S: ComputeStorage> std::fmt::Debug for StreamSetCapture<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamSetCapture")
            .field("set", &self.set)
            .field("stream", &self.stream)
            .finish()
    }
}

impl<S: ComputeStorage> CaptureStreams for StreamSetCapture<'_, S> {
    fn recording_streams(&mut self) -> usize {
        self.set.recording_streams().len()
    }

    fn set_recording(&mut self, recording: bool) {
        // Both calls refuse only an unknown stream (then `capture_pools` is
        // empty and `prepare` refused before marking) or a repeated mark
        // (`prepare` refused while anything records): log, never panic.
        if recording {
            if let Err(err) = self.set.begin_recording(self.stream) {
                tracing::warn!(%err, "marking the recording stream failed");
            }
        } else {
            // The capture already took the pinned handles from the pool;
            // this second capture_end returns none.
            match self.set.end_recording(self.stream) {
                Ok(handles) => drop(handles),
                Err(err) => tracing::warn!(%err, "unmarking the recording stream failed"),
            }
        }
    }

    fn relocate_device(&mut self) {
        RelocatingStreams::relocate_device(self.set, RelocationReason::Capture);
    }

    fn capture_pools(&mut self) -> Vec<&mut dyn CapturePool> {
        match self.set.memory(self.stream) {
            Ok(memory) => vec![memory as &mut dyn CapturePool],
            Err(_) => Vec::new(),
        }
    }
}
