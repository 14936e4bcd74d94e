//! gpumem's pool engine as a replay backend: mem-relocate's [`StreamSet`]
//! of `MemoryManagement`s over `ResourceStorage<Arc<R>>`, for any
//! mem-storage resource (simulated, host, CUDA).
//!
//! - **Streams** ([`StreamMode`]): `One` serves the whole trace from one
//!   memory; `PerTrace` gives each trace stream its own memory, as CUDA
//!   runtimes do. All share one device (see `pool_streams.rs`).
//! - **Relocation** ([`PoolBackend::with_relocation`]): every reservation
//!   goes through [`StreamSet::reserve`], which first relocates the stream's
//!   memory when its trigger wants it (the device would have less than a
//!   page to spare, or a pool is out of page sizes) and retries once after
//!   relocating when a pool ran out of page sizes. A `cleanup` event and the
//!   end of the replay reclaim every memory: what outdated pages hold moves
//!   to current pages, then every empty page goes back.
//! - **Patterns** (`check_patterns`, the host backend): every reservation
//!   carries an edge pattern checked before its free, wherever relocation
//!   has moved it since; a mismatch stops the replay with the offset.

use std::sync::Arc;

use mem_pools::{
    ManagedMemoryHandle, MemoryAllocationMode, MemoryConfiguration, MemoryDeviceProperties,
    MemoryManagement, MemoryManagementOptions, StorageCopyQueue,
};
use mem_relocate::StreamSet;
use mem_storage::{DeviceResource, ResourceStorage, VirtualMemory};

use super::pattern::Patterns;
use super::pool_streams::StreamState;
use crate::report::{PoolLine, RelocationSummary, StreamLine};

/// The storage of every stream memory: pages from one shared resource.
pub type PoolStorage<R> = ResourceStorage<Arc<R>>;

/// How trace streams map to pool memories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum StreamMode {
    /// One memory per trace stream, as CUDA runtimes keep one per stream.
    #[default]
    PerTrace,
    /// One memory for the whole trace; stream numbers are ignored.
    One,
}

/// A live reservation: the handle, its pattern's tag, and its memory.
#[derive(Debug)]
pub struct PoolToken {
    pub(crate) handle: ManagedMemoryHandle,
    pub(crate) tag: u64,
    pub(crate) memory: usize,
}

/// Stream memories over one resource, as an [`AllocBackend`](super::AllocBackend).
pub struct PoolBackend<R: DeviceResource> {
    pub(crate) set: StreamSet<PoolStorage<R>>,
    pub(crate) resource: Arc<R>,
    pub(crate) properties: MemoryDeviceProperties,
    pub(crate) config: MemoryConfiguration,
    pub(crate) options: MemoryManagementOptions,
    pub(crate) name: &'static str,
    pub(crate) relocate: bool,
    pub(crate) streams: StreamMode,
    /// Set index of each dense trace stream, once used.
    pub(crate) routes: Vec<Option<usize>>,
    /// Dense trace stream of each set index.
    pub(crate) labels: Vec<u64>,
    pub(crate) states: Vec<StreamState>,
    pub(crate) persistent_depth: u32,
    /// Σ reserved bytes of every memory, as last observed.
    pub(crate) reserved: u64,
    /// The device's peak reserved bytes, as observed.
    pub(crate) peak: u64,
    pub(crate) pools: Vec<PoolLine>,
    pub(crate) reclaim_error: Option<String>,
    pub(crate) check_patterns: bool,
    pub(crate) next_tag: u64,
    pub(crate) patterns: Patterns,
    /// Virtual memory for arena pools, shared by every stream memory.
    pub(crate) vm: Option<Arc<dyn VirtualMemory>>,
    /// Arena figures summed over the memories at `settle`.
    pub(crate) chunks: mem_pools::ChunkStats,
}

impl<R: DeviceResource> std::fmt::Debug for PoolBackend<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolBackend")
            .field("name", &self.name)
            .field("set", &self.set)
            .field("relocate", &self.relocate)
            .field("streams", &self.streams)
            .finish_non_exhaustive()
    }
}

/// Device properties for a device of `capacity` bytes: pages up to a quarter
/// of the device (CubeCL's rule), at the resource's alignment.
pub fn device_properties(capacity: u64, alignment: u64) -> MemoryDeviceProperties {
    MemoryDeviceProperties {
        max_page_size: (capacity / 4).max(alignment.max(1)),
        alignment,
    }
}

impl<R: DeviceResource> PoolBackend<R> {
    /// Pools laid out by `config` over `resource`, a device of `capacity`
    /// bytes: one memory, no relocation (see the builder methods).
    /// `lazy_pages` carves pages without device memory (dry runs).
    pub fn new(
        name: &'static str,
        resource: R,
        capacity: u64,
        config: MemoryConfiguration,
        lazy_pages: bool,
        check_patterns: bool,
    ) -> Self {
        let properties = device_properties(capacity, resource.alignment());
        let options = MemoryManagementOptions {
            name: format!("gpumem-{name}"),
            lazy_pages,
        };
        let resource = Arc::new(resource);
        let first = ResourceStorage::new(Arc::clone(&resource));
        let logger = Arc::new(mem_pools::ServerLogger::named("gpumem-cli"));
        let memory = MemoryManagement::from_configuration(
            first,
            &properties,
            config.clone(),
            logger,
            options.clone(),
        );
        let mut set = StreamSet::new(memory, StorageCopyQueue);
        set.set_capacity(Some(capacity));
        PoolBackend {
            set,
            resource,
            properties,
            config,
            options,
            name,
            relocate: false,
            streams: StreamMode::One,
            routes: Vec::new(),
            labels: vec![0],
            states: vec![StreamState::default()],
            persistent_depth: 0,
            reserved: 0,
            peak: 0,
            pools: Vec::new(),
            reclaim_error: None,
            check_patterns,
            next_tag: 0,
            patterns: Patterns::default(),
            vm: None,
            chunks: mem_pools::ChunkStats::default(),
        }
    }

    /// Serve arena pools from `vm` (before the replay starts: the first
    /// memory is rebuilt over it).
    pub fn with_virtual_memory(mut self, vm: Arc<dyn VirtualMemory>) -> Self {
        self.vm = Some(vm);
        let memory = self.new_memory();
        let mut set = StreamSet::new(memory, StorageCopyQueue);
        set.set_capacity(self.set.capacity());
        self.set = set;
        self
    }

    /// Relocate as a runtime would: before reservations when the trigger
    /// wants it, and a reclaim at every `cleanup` and at the end.
    pub fn with_relocation(mut self, relocate: bool) -> Self {
        self.relocate = relocate;
        self
    }

    /// How trace streams map to memories (before the replay starts).
    pub fn with_streams(mut self, streams: StreamMode) -> Self {
        self.streams = streams;
        self
    }

    /// Stream memory `index` (0 is the first stream used), for reports and
    /// tests after a replay.
    pub fn memory(&mut self, index: usize) -> Option<&mut MemoryManagement<PoolStorage<R>>> {
        self.set.memory(index).ok()
    }

    /// Memories the backend holds (at least 1).
    pub fn memories(&self) -> usize {
        self.set.stream_count()
    }

    pub(crate) fn relocation_summary(&self) -> Option<RelocationSummary> {
        if !self.relocate {
            return None;
        }
        let log = self.set.log();
        Some(RelocationSummary {
            relocations: log.productive,
            stalled: log.stalled,
            failed: log.failures,
            moved_slices: log.moved_slices,
            moved_bytes: log.moved_bytes,
            pages_freed: log.pages_freed,
            bytes_freed: log.bytes_freed,
            compactions: log.compactions,
            compacted_slices: log.compacted_slices,
            compacted_bytes: log.compacted_bytes,
            compacted_pages_freed: log.compacted_pages_freed,
            compacted_bytes_freed: log.compacted_bytes_freed,
            last_error: log
                .last_error
                .as_ref()
                .map(ToString::to_string)
                .or_else(|| self.reclaim_error.clone()),
        })
    }

    pub(crate) fn stream_summary(&self) -> Vec<StreamLine> {
        if self.set.stream_count() < 2 {
            return Vec::new();
        }
        self.states
            .iter()
            .zip(&self.labels)
            .map(|(s, &stream)| StreamLine {
                stream,
                allocs: s.allocs,
                peak_live_bytes: s.peak_live,
                final_live_bytes: s.live,
                peak_reserved_bytes: s.peak_reserved,
                final_reserved_bytes: s.reserved,
                storage_allocs: s.storage_allocs,
            })
            .collect()
    }
}

pub(crate) fn engine_mode(mode: crate::trace::Mode) -> MemoryAllocationMode {
    match mode {
        crate::trace::Mode::Persistent => MemoryAllocationMode::Persistent,
        crate::trace::Mode::Auto => MemoryAllocationMode::Auto,
    }
}
