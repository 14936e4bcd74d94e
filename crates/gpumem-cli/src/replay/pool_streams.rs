//! The stream memories behind [`PoolBackend`]: building them, routing a
//! trace stream to one, keeping the device-wide counters the replay reads,
//! and reclaiming.
//!
//! Every memory is a `MemoryManagement` over `ResourceStorage<Arc<R>>`: one
//! resource (one device) shared by all, so mem-relocate's [`StreamSet`]
//! measures pressure against the whole device and finishes every stream's
//! work before a byte moves. Memories are created on a stream's first
//! reservation, in the persistent-window depth the trace is in then.
//!
//! The engine's counters need `&mut` access through the set, while the
//! replay reads the backend through `&self`; so reserved bytes are observed
//! after every call that can change them, and the rest (live bytes, storage
//! allocations, pool lines) at [`AllocBackend::settle`](super::AllocBackend::settle).

use std::sync::Arc;

use mem_pools::{MemoryAllocationMode, MemoryManagement, ServerLogger};
use mem_relocate::RelocatingStreams;
use mem_storage::{DeviceResource, ResourceStorage, StreamId};

use super::pools::{PoolBackend, PoolStorage, StreamMode};
use crate::error::{CliError, Result};

/// Stream memories one replay may create (dense indices below this).
pub const MAX_STREAMS: usize = 1 << 16;

/// What the backend knows of one stream memory between engine calls.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StreamState {
    pub(crate) allocs: u64,
    pub(crate) live: u64,
    pub(crate) peak_live: u64,
    pub(crate) reserved: u64,
    pub(crate) peak_reserved: u64,
    pub(crate) storage_allocs: u64,
}

impl<R: DeviceResource> PoolBackend<R> {
    /// A new memory with the backend's layout, on the shared device.
    pub(crate) fn new_memory(&self) -> MemoryManagement<PoolStorage<R>> {
        let storage = ResourceStorage::on_stream(Arc::clone(&self.resource), StreamId::DEFAULT);
        let storage = match &self.vm {
            Some(vm) => storage.with_virtual_memory(Arc::clone(vm)),
            None => storage,
        };
        let logger = Arc::new(ServerLogger::named("gpumem-cli"));
        let mut memory = MemoryManagement::from_configuration(
            storage,
            &self.properties,
            self.config.clone(),
            logger,
            self.options.clone(),
        );
        for _ in 0..self.persistent_depth {
            memory.mode(MemoryAllocationMode::Persistent);
        }
        memory
    }

    /// The set index serving dense trace stream `stream`, created on first use.
    ///
    /// # Errors
    /// A stream index of [`MAX_STREAMS`] or more: the replay passes dense
    /// indices ([`Program::compile`](super::Program::compile) makes them),
    /// and a raw stream number would size the routing table by its value.
    pub(crate) fn route(&mut self, stream: u64) -> Result<usize> {
        if self.streams == StreamMode::One {
            return Ok(0);
        }
        let dense = usize::try_from(stream)
            .ok()
            .filter(|&d| d < MAX_STREAMS)
            .ok_or_else(|| CliError::Backend {
                backend: self.name,
                message: format!(
                    "stream index {stream} is not a dense index below {MAX_STREAMS}; \
                     replay a compiled Program, whose indices are dense"
                ),
            })?;
        if let Some(Some(index)) = self.routes.get(dense) {
            return Ok(*index);
        }
        let index = if self.routes.iter().all(Option::is_none) {
            0 // the set's first memory waits for the first stream used
        } else {
            let memory = self.new_memory();
            self.states.push(StreamState::default());
            self.set.add_stream(memory)
        };
        if self.routes.len() <= dense {
            self.routes.resize(dense.saturating_add(1), None);
        }
        self.routes[dense] = Some(index);
        self.labels.resize(self.set.stream_count(), 0);
        self.labels[index] = stream;
        Ok(index)
    }

    /// Stream memory `index`, or an error naming the backend.
    pub(crate) fn memory_at(
        &mut self,
        index: usize,
    ) -> Result<&mut MemoryManagement<PoolStorage<R>>> {
        let name = self.name;
        self.set.memory(index).map_err(|e| CliError::Backend {
            backend: name,
            message: format!("stream memory {index}: {e}"),
        })
    }

    /// Re-reads memory `index`'s usage after a call on it. With `within`
    /// (the device's other bytes, when peaks were reset before the call),
    /// also reads the engine's high-water mark of the call, so a page taken
    /// and another released inside it counts toward the device peak.
    pub(crate) fn observe(&mut self, index: usize, within: Option<u64>) {
        let Ok(memory) = self.set.memory(index) else {
            return;
        };
        let usage = memory.memory_usage();
        let stats = within.map(|_| memory.stats());
        let state = &mut self.states[index];
        self.reserved = self.reserved - state.reserved + usage.bytes_reserved;
        state.reserved = usage.bytes_reserved;
        state.live = usage.bytes_in_use;
        state.peak_live = state.peak_live.max(usage.bytes_in_use);
        state.peak_reserved = state.peak_reserved.max(usage.bytes_reserved);
        self.peak = self.peak.max(self.reserved);
        if let (Some(others), Some(stats)) = (within, stats) {
            state.peak_reserved = state.peak_reserved.max(stats.reserved_bytes.peak);
            state.storage_allocs = stats.storage_allocs;
            self.peak = self.peak.max(others + stats.reserved_bytes.peak);
        }
    }

    /// Every stream memory, relocating or not, gives back what it can:
    /// with relocation, a reclaim (move what outdated pages hold, compact
    /// sparse current pages into held room, then free every empty page);
    /// without, an explicit cleanup.
    pub(crate) fn give_back(&mut self) {
        for index in 0..self.set.stream_count() {
            let reclaimed = self.relocate
                && self.set.set_relocating(index).is_ok()
                && match self.set.reclaim() {
                    Ok(()) => true,
                    Err(err) => {
                        self.reclaim_error = Some(err.to_string());
                        false
                    }
                };
            if !reclaimed && let Ok(memory) = self.set.memory(index) {
                memory.cleanup(true);
            }
            self.observe(index, None);
        }
    }

    /// Reads every memory's final numbers (after its drop queue is drained).
    pub(crate) fn settle_all(&mut self) {
        for index in 0..self.set.stream_count() {
            if let Ok(memory) = self.set.memory(index) {
                memory.drain_drops();
            }
        }
        if self.relocate {
            self.give_back();
        }
        let single = self.set.stream_count() == 1;
        let mut reports = Vec::new();
        self.chunks = mem_pools::ChunkStats::default();
        for index in 0..self.set.stream_count() {
            self.observe(index, None);
            let Ok(memory) = self.set.memory(index) else {
                continue;
            };
            let stats = memory.stats();
            reports.push(memory.memory_report());
            self.chunks += stats.chunks;
            let state = &mut self.states[index];
            state.storage_allocs = stats.storage_allocs;
            if single {
                // One memory, never reset: its own high-water mark (which
                // sees inside every call) is the device's.
                state.peak_reserved = state.peak_reserved.max(stats.reserved_bytes.peak);
                state.peak_live = state.peak_live.max(stats.requested_bytes.peak);
                self.peak = self.peak.max(stats.reserved_bytes.peak);
            }
        }
        self.pools = super::pool_lines::merged_pool_lines(&reports);
    }
}
