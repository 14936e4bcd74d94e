//! Graph capture on a stream, as a type-state: warm up → record → graph memory.
//!
//! The memory side of seed 000's capture protocol, owned once for the
//! facade's streams:
//!
//! 1. [`Stream::begin_capture`] refuses if any stream already records,
//!    relocates every stream's outdated memory (so no recorded page is one
//!    relocation would later need to empty), opens the engine's capture and
//!    marks the stream recording — from here no stream's memory moves.
//! 2. The warmup pass runs on the returned [`CaptureWarmup`]; every slice it
//!    touches is retained, so the pool grows to the pass's whole working set.
//! 3. [`CaptureWarmup::start_recording`] releases them free in the pool; the
//!    recorded pass reuses them and never allocates (a reservation that would
//!    is `IoError::CaptureWouldAllocate`, naming the size).
//! 4. [`CaptureRecording::end`] returns [`GraphMemory`]: the handles of every
//!    touched slice, pinned — keep it as long as the graph lives.
//!
//! Dropping a `CaptureWarmup` or `CaptureRecording` aborts: the engine's
//! capture is ended, its handles dropped, the stream no longer records.
//! Driving a backend graph (CUDA stream capture, instantiate, launch) is
//! mem-capture's job (re-exported as [`crate::capture`]); this is the part a
//! runtime needs to keep gpumem memory valid under a graph.

use std::sync::atomic::Ordering;

use mem_pools::{ManagedMemoryHandle, TargetRoom};

use crate::error::{GpuMemError, Result};
use crate::stream::Stream;

/// A capture in its warmup phase. Drop to abort.
#[derive(Debug)]
#[must_use = "dropping the warmup aborts the capture"]
pub struct CaptureWarmup {
    stream: Option<Stream>,
}

/// A capture whose recorded pass is running. Drop to abort.
#[derive(Debug)]
#[must_use = "dropping the recording aborts the capture"]
pub struct CaptureRecording {
    stream: Option<Stream>,
}

/// The memory a captured graph replays against: keep it as long as the graph.
///
/// Every slice the capture window touched, pinned against relocation and
/// reuse; dropping this releases them.
#[derive(Debug)]
pub struct GraphMemory {
    stream: usize,
    handles: Vec<ManagedMemoryHandle>,
}

impl Stream {
    /// Begin a graph capture on this stream (see the module docs).
    ///
    /// # Errors
    /// [`GpuMemError::Recording`] when a stream already records; a
    /// relocation error (nothing is captured then).
    pub fn begin_capture(&self) -> Result<CaptureWarmup> {
        let device = &self.device;
        let _moving = device.moving();
        if let Some(stream) = device.recording_stream() {
            return Err(GpuMemError::Recording {
                stream,
                operation: "beginning another capture",
            });
        }
        let all: Vec<usize> = (0..device.streams.len()).collect();
        device.relocate_locked(&all, TargetRoom::MayAllocate, false)?;
        device.run(self.index, |st| st.engine.capture_begin());
        self.shared().recording.store(true, Ordering::Release);
        Ok(CaptureWarmup {
            stream: Some(self.clone()),
        })
    }
}

fn abort(stream: &Stream) {
    let handles = stream
        .device
        .run(stream.index, |st| st.engine.capture_end());
    drop(handles);
    stream.shared().recording.store(false, Ordering::Release);
    stream.device.run(stream.index, |_| ());
}

impl CaptureWarmup {
    /// The stream being captured (reserve the warmup's buffers on it).
    pub fn stream(&self) -> &Stream {
        self.stream
            .as_ref()
            .expect("a warmup always holds its stream until consumed")
    }

    /// End the warmup: the slices it touched become free in the pool, and
    /// the recorded pass may begin.
    pub fn start_recording(mut self) -> CaptureRecording {
        let stream = self.stream.take().expect("a warmup is consumed once");
        stream
            .device
            .run(stream.index, |st| st.engine.capture_priming_end());
        CaptureRecording {
            stream: Some(stream),
        }
    }

    /// Abort the capture (the same as dropping it).
    pub fn abort(self) {}
}

impl Drop for CaptureWarmup {
    fn drop(&mut self) {
        if let Some(stream) = self.stream.take() {
            abort(&stream);
        }
    }
}

impl CaptureRecording {
    /// The stream being captured.
    pub fn stream(&self) -> &Stream {
        self.stream
            .as_ref()
            .expect("a recording always holds its stream until consumed")
    }

    /// End the capture: the touched slices are pinned in the returned
    /// [`GraphMemory`], and the stream no longer records.
    pub fn end(mut self) -> GraphMemory {
        let stream = self.stream.take().expect("a recording is consumed once");
        let handles = stream
            .device
            .run(stream.index, |st| st.engine.capture_end());
        stream.shared().recording.store(false, Ordering::Release);
        GraphMemory {
            stream: stream.index,
            handles,
        }
    }

    /// Abort the capture (the same as dropping it).
    pub fn abort(self) {}
}

impl Drop for CaptureRecording {
    fn drop(&mut self) {
        if let Some(stream) = self.stream.take() {
            abort(&stream);
        }
    }
}

impl GraphMemory {
    /// The stream the graph was captured on.
    pub fn stream(&self) -> usize {
        self.stream
    }

    /// The pinned allocations, one per touched slice.
    pub fn handles(&self) -> &[ManagedMemoryHandle] {
        &self.handles
    }

    /// Number of pinned allocations.
    pub fn len(&self) -> usize {
        self.handles.len()
    }

    /// Whether the window touched nothing.
    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// Requested bytes pinned for the graph.
    pub fn bytes(&self) -> u64 {
        self.handles.iter().map(ManagedMemoryHandle::size).sum()
    }
}
