//! `StreamSet`: the reference [`RelocatingStreams`](crate::RelocatingStreams)
//! over several streams, each with its own `MemoryManagement`.
//!
//! One manager per stream, as CUDA runtimes do: each stream's storage
//! allocates, frees and copies in its stream's order. The set adds what a
//! relocation across them needs — which stream's memory relocates, which
//! streams record a graph, one [`RelocationTrigger`] per stream (its
//! stalled-shape memo belongs to that stream's pools), the device's
//! capacity, and one [`CopyQueue`] for every stream's moves. The trait's
//! steps are in `stream_set_steps.rs`.
//!
//! Recording: [`StreamSet::begin_recording`] marks a stream and opens the
//! capture window on its memory (nothing is given back, reservations go to
//! exact-fit pages); [`StreamSet::end_recording`] closes it and returns the
//! handles that pin every touched slice for the graph's life. While any
//! stream records, nothing moves on any stream.

use mem_pools::{CopyQueue, ManagedMemoryHandle, MemoryManagement};
use mem_storage::ComputeStorage;

use crate::error::RelocationError;
use crate::log::RelocationLog;
use crate::trigger::RelocationTrigger;

pub(crate) struct Stream<S: ComputeStorage> {
    pub(crate) memory: MemoryManagement<S>,
    pub(crate) recording: bool,
    pub(crate) trigger: RelocationTrigger,
}

/// Several streams' memories, relocated as one device (see the module docs).
pub struct StreamSet<S: ComputeStorage> {
    pub(crate) streams: Vec<Stream<S>>,
    pub(crate) relocating: usize,
    pub(crate) queue: Box<dyn CopyQueue<S> + Send>,
    pub(crate) capacity: Option<u64>,
    pub(crate) log: RelocationLog,
}

impl<S: ComputeStorage> StreamSet<S> {
    /// A set of one stream (index 0, the relocating one) whose moves go
    /// through `queue`; no device capacity is known, so only pools running
    /// out of page sizes trigger a relocation until
    /// [`StreamSet::set_capacity`].
    pub fn new(first: MemoryManagement<S>, queue: impl CopyQueue<S> + Send + 'static) -> Self {
        let mut set = Self {
            streams: Vec::new(),
            relocating: 0,
            queue: Box::new(queue),
            capacity: None,
            log: RelocationLog::default(),
        };
        set.add_stream(first);
        set
    }

    /// Add a stream with its own memory; returns its index.
    pub fn add_stream(&mut self, memory: MemoryManagement<S>) -> usize {
        self.streams.push(Stream {
            memory,
            recording: false,
            trigger: RelocationTrigger::new(self.capacity),
        });
        self.streams.len() - 1
    }

    /// Number of streams (at least 1).
    pub fn stream_count(&self) -> usize {
        self.streams.len()
    }

    /// The stream whose memory `relocate_memory` and `cleanup_memory` act on.
    pub fn relocating(&self) -> usize {
        self.relocating
    }

    /// Make `stream` the relocating stream.
    ///
    /// # Errors
    /// [`RelocationError::UnknownStream`]; the relocating stream is unchanged.
    pub fn set_relocating(&mut self, stream: usize) -> Result<(), RelocationError> {
        self.check(stream)?;
        self.relocating = stream;
        Ok(())
    }

    /// The device capacity pressure is measured against.
    pub fn capacity(&self) -> Option<u64> {
        self.capacity
    }

    /// Measure pressure against a device of `capacity` bytes (`None`: never).
    pub fn set_capacity(&mut self, capacity: Option<u64>) {
        self.capacity = capacity;
        for s in &mut self.streams {
            s.trigger.set_capacity(capacity);
        }
    }

    /// Stream `stream`'s memory.
    ///
    /// # Errors
    /// [`RelocationError::UnknownStream`].
    pub fn memory(&mut self, stream: usize) -> Result<&mut MemoryManagement<S>, RelocationError> {
        self.check(stream)?;
        Ok(&mut self.streams[stream].memory)
    }

    /// Stream `stream`'s trigger (its stalled-shape memo).
    ///
    /// # Errors
    /// [`RelocationError::UnknownStream`].
    pub fn trigger(&self, stream: usize) -> Result<&RelocationTrigger, RelocationError> {
        self.check(stream)?;
        Ok(&self.streams[stream].trigger)
    }

    /// What every relocation so far did.
    pub fn log(&self) -> &RelocationLog {
        &self.log
    }

    /// Streams recording a graph, in index order.
    pub fn recording_streams(&self) -> Vec<usize> {
        (0..self.streams.len())
            .filter(|&i| self.streams[i].recording)
            .collect()
    }

    /// Start recording a graph on `stream`: from now until
    /// [`StreamSet::end_recording`] nothing moves on any stream, and the
    /// stream's memory opens its capture window.
    ///
    /// # Errors
    /// [`RelocationError::UnknownStream`], [`RelocationError::AlreadyRecording`];
    /// nothing changes.
    pub fn begin_recording(&mut self, stream: usize) -> Result<(), RelocationError> {
        self.check(stream)?;
        let s = &mut self.streams[stream];
        if s.recording {
            return Err(RelocationError::AlreadyRecording { stream });
        }
        s.recording = true;
        s.memory.capture_begin();
        Ok(())
    }

    /// Seal `stream`'s recording: close its capture window and return the
    /// handles pinning every slice the recording touched (hold them for the
    /// graph's life; their pages never move meanwhile).
    ///
    /// # Errors
    /// [`RelocationError::UnknownStream`], [`RelocationError::NotRecording`];
    /// nothing changes.
    pub fn end_recording(
        &mut self,
        stream: usize,
    ) -> Result<Vec<ManagedMemoryHandle>, RelocationError> {
        self.check(stream)?;
        let s = &mut self.streams[stream];
        if !s.recording {
            return Err(RelocationError::NotRecording { stream });
        }
        s.recording = false;
        Ok(s.memory.capture_end())
    }

    pub(crate) fn check(&self, stream: usize) -> Result<(), RelocationError> {
        if stream < self.streams.len() {
            Ok(())
        } else {
            Err(RelocationError::UnknownStream {
                stream,
                streams: self.streams.len(),
            })
        }
    }
}

impl<S: ComputeStorage> std::fmt::Debug for StreamSet<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamSet")
            .field("streams", &self.streams.len())
            .field("relocating", &self.relocating)
            .field("recording", &self.recording_streams())
            .field("capacity", &self.capacity)
            .field("log", &self.log)
            .finish_non_exhaustive()
    }
}
