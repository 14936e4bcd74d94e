//! `TestStreams`: the smallest runtime of the `RelocatingStreams` protocol,
//! for these tests only (gpumem's `Device` is the runtime users get). Each
//! stream is a pool engine and its trigger; one copy queue serves them all;
//! every protocol step runs through `DeviceRelocation` over `Memories`, and
//! its log is kept.

#![allow(dead_code)] // each test binary and the example use a part of it

use mem_pools::{CopyQueue, IoError, ManagedMemoryHandle, MemoryManagement};
use mem_relocate::{
    DeviceRelocation, RelocatingStreams, RelocationError, RelocationLog, RelocationNeed,
    RelocationReason, RelocationTrigger, ReserveRetry, RetryStep, StreamMemories, StreamParts,
};
use mem_storage::{ComputeStorage, StorageError};

struct Stream<S: ComputeStorage> {
    memory: MemoryManagement<S>,
    recording: bool,
    trigger: RelocationTrigger,
}

/// Streams of one device with a relocating stream, a capacity the triggers
/// measure pressure against, and the log of every relocation.
pub struct TestStreams<S: ComputeStorage> {
    streams: Vec<Stream<S>>,
    relocating: usize,
    queue: Box<dyn CopyQueue<S> + Send>,
    capacity: Option<u64>,
    log: RelocationLog,
}

impl<S: ComputeStorage> TestStreams<S> {
    /// One stream on `first`, moving memory through `queue`.
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

    /// Add a stream; returns its index.
    pub fn add_stream(&mut self, memory: MemoryManagement<S>) -> usize {
        let trigger = RelocationTrigger::new(self.capacity);
        self.streams.push(Stream {
            memory,
            recording: false,
            trigger,
        });
        self.streams.len() - 1
    }

    pub fn stream_count(&self) -> usize {
        self.streams.len()
    }

    pub fn relocating(&self) -> usize {
        self.relocating
    }

    pub fn set_relocating(&mut self, stream: usize) -> Result<(), RelocationError> {
        self.check(stream)?;
        self.relocating = stream;
        Ok(())
    }

    pub fn capacity(&self) -> Option<u64> {
        self.capacity
    }

    pub fn set_capacity(&mut self, capacity: Option<u64>) {
        self.capacity = capacity;
        for s in &mut self.streams {
            s.trigger.set_capacity(capacity);
        }
    }

    pub fn memory(&mut self, stream: usize) -> Result<&mut MemoryManagement<S>, RelocationError> {
        self.check(stream)?;
        Ok(&mut self.streams[stream].memory)
    }

    pub fn trigger(&self, stream: usize) -> Result<&RelocationTrigger, RelocationError> {
        self.check(stream)?;
        Ok(&self.streams[stream].trigger)
    }

    pub fn log(&self) -> &RelocationLog {
        &self.log
    }

    pub fn recording_streams(&self) -> Vec<usize> {
        (0..self.streams.len())
            .filter(|&i| self.streams[i].recording)
            .collect()
    }

    /// Start recording on `stream` (its engine captures). Refused when it
    /// already records.
    pub fn begin_recording(&mut self, stream: usize) -> Result<(), &'static str> {
        let s = self.streams.get_mut(stream).ok_or("no such stream")?;
        if s.recording {
            return Err("the stream already records");
        }
        s.recording = true;
        s.memory.capture_begin();
        Ok(())
    }

    /// Stop recording on `stream`; returns the handles that pin what the
    /// recording touched. Refused when it does not record.
    pub fn end_recording(
        &mut self,
        stream: usize,
    ) -> Result<Vec<ManagedMemoryHandle>, &'static str> {
        let s = self.streams.get_mut(stream).ok_or("no such stream")?;
        if !s.recording {
            return Err("the stream does not record");
        }
        s.recording = false;
        Ok(s.memory.capture_end())
    }

    /// Reserve on `stream`: relocate when wanted, then the one retry rule.
    pub fn reserve(
        &mut self,
        stream: usize,
        size: u64,
    ) -> Result<ManagedMemoryHandle, RelocationError> {
        self.set_relocating(stream)?;
        self.relocate_when_wanted();
        let mut retry = ReserveRetry::new();
        loop {
            let err = match self.streams[stream].memory.reserve(size) {
                Ok(handle) => return Ok(handle),
                Err(err) => err,
            };
            match retry.next(&err) {
                RetryStep::RelocateForPageSizes => {
                    self.relocate(RelocationReason::PoolsOutOfPageSizes)
                }
                RetryStep::FreeCachedMemory => self.steps(|s| s.free_cached()),
                RetryStep::GiveUp => return Err(err.into()),
            }
        }
    }

    fn check(&self, stream: usize) -> Result<(), RelocationError> {
        let streams = self.streams.len();
        if stream < streams {
            Ok(())
        } else {
            Err(RelocationError::UnknownStream { stream, streams })
        }
    }

    /// Run one operation's steps over every stream and keep its log.
    fn steps<R>(&mut self, f: impl FnOnce(&mut DeviceRelocation<Memories<'_, S>>) -> R) -> R {
        let memories = Memories {
            streams: &mut self.streams,
            queue: &mut *self.queue,
        };
        let mut steps = DeviceRelocation::new(memories, self.relocating).expect("a checked stream");
        let out = f(&mut steps);
        self.log.merge(steps.into_log());
        out
    }
}

/// What the steps reach: every stream and the copy queue.
struct Memories<'a, S: ComputeStorage> {
    streams: &'a mut [Stream<S>],
    queue: &'a mut (dyn CopyQueue<S> + Send),
}

impl<S: ComputeStorage> StreamMemories for Memories<'_, S> {
    type Storage = S;
    type Error = RelocationError;

    fn stream_count(&self) -> usize {
        self.streams.len()
    }

    fn with_stream<R>(&mut self, index: usize, f: impl FnOnce(StreamParts<'_, S>) -> R) -> R {
        let stream = &mut self.streams[index];
        f(StreamParts {
            memory: &mut stream.memory,
            trigger: &mut stream.trigger,
            queue: &mut *self.queue,
        })
    }

    fn recording_streams(&mut self) -> usize {
        self.streams.iter().filter(|s| s.recording).count()
    }

    fn finish(&mut self) -> Result<(), RelocationError> {
        let mut first: Option<StorageError> = None;
        for s in self.streams.iter_mut() {
            if let Err(err) = s.memory.storage().synchronize() {
                first.get_or_insert(err);
            }
        }
        first.map_or(Ok(()), |err| {
            Err(RelocationError::Engine(IoError::Storage(err)))
        })
    }
}

impl<S: ComputeStorage> RelocatingStreams for TestStreams<S> {
    fn recording(&mut self) -> bool {
        self.streams.iter().any(|s| s.recording)
    }

    fn has_outdated(&mut self) -> bool {
        self.streams[self.relocating].memory.has_outdated()
    }

    fn relocation_need(&mut self) -> RelocationNeed {
        self.steps(|s| s.relocation_need())
    }

    fn bytes_allocated(&mut self) -> u64 {
        self.steps(|s| s.bytes_allocated())
    }

    fn finish(&mut self) {
        self.steps(|s| s.finish());
    }

    fn relocate_memory(&mut self, reason: RelocationReason) {
        self.steps(|s| s.relocate_memory(reason));
    }

    fn device_has_outdated(&mut self) -> bool {
        self.streams.iter().any(|s| s.memory.has_outdated())
    }

    fn relocate_device_memory(&mut self, reason: RelocationReason) {
        self.steps(|s| s.relocate_device_memory(reason));
    }

    fn cleanup_memory(&mut self) {
        self.steps(|s| s.cleanup_memory());
    }

    fn refuse_while_recording(&mut self) -> Result<(), RelocationError> {
        self.steps(|s| s.refuse_while_recording())
    }

    fn reclaim(&mut self) -> Result<(), RelocationError> {
        self.steps(|s| s.reclaim())
    }

    fn relocate_when_wanted(&mut self) {
        self.steps(|s| s.relocate_when_wanted());
    }

    fn relocate(&mut self, reason: RelocationReason) {
        self.steps(|s| s.relocate(reason));
    }

    fn relocate_device(&mut self, reason: RelocationReason) {
        self.steps(|s| s.relocate_device(reason));
    }
}
