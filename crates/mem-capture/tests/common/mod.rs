//! A host-simulated device for the capture tests: streams with real host
//! memory, counted by a shared `StatsResource`, relocation by the pools'
//! plan → copy → commit.
#![allow(missing_docs)]
#![allow(dead_code)]

use std::sync::Arc;

use mem_capture::{CapturePool, CaptureStreams, RecordingFlag};
use mem_pools::{
    ManagedMemoryHandle, MemoryConfiguration, MemoryDeviceProperties, MemoryManagement,
    MemoryManagementOptions, MemoryPoolOptions, PoolType, ServerLogger, StorageCopyQueue,
    TargetRoom,
};
pub use mem_storage::units::{KIB, MIB};
use mem_storage::{HostResource, ResourceStorage, StatsResource};

pub type Counted = Arc<StatsResource<HostResource>>;
pub type Pool = MemoryManagement<ResourceStorage<Counted>>;

/// One growable sliced pool (64 KiB pages, slices up to 1 MiB), then exclusive pages.
pub fn growable() -> MemoryConfiguration {
    MemoryConfiguration::Custom {
        pool_options: vec![
            MemoryPoolOptions {
                pool_type: PoolType::SlicedPages {
                    page_size: 64 * KIB,
                    max_slice_size: MIB,
                },
                dealloc_period: None,
            },
            MemoryPoolOptions {
                pool_type: PoolType::ExclusivePages {
                    max_alloc_size: 16 * MIB,
                },
                dealloc_period: None,
            },
        ],
    }
}

pub fn pool(resource: &Counted) -> Pool {
    MemoryManagement::from_configuration(
        ResourceStorage::new(resource.clone()),
        &MemoryDeviceProperties {
            max_page_size: 64 * MIB,
            alignment: 256,
        },
        growable(),
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    )
}

/// A device: `streams[0]` records; `capture_count` of the first pools are
/// the capture pools (the recording stream's, then e.g. a staging pool).
pub struct HostDevice {
    pub flag: RecordingFlag,
    pub resource: Counted,
    pub streams: Vec<Pool>,
    pub capture_count: usize,
    pub relocations: usize,
    /// Frees the runtime itself defers (dropped by `drain_deferred_frees`).
    pub deferred: Vec<ManagedMemoryHandle>,
}

impl HostDevice {
    pub fn new(streams: usize, capture_count: usize) -> Self {
        let resource: Counted = Arc::new(StatsResource::new(HostResource::new()));
        Self {
            flag: RecordingFlag::new(),
            streams: (0..streams).map(|_| pool(&resource)).collect(),
            resource,
            capture_count,
            relocations: 0,
            deferred: Vec::new(),
        }
    }

    /// Storage allocations made so far on the whole device.
    pub fn device_allocs(&self) -> u64 {
        self.resource.stats().total_count
    }

    /// What relocation does for any stream: refused while recording.
    pub fn relocate_stream(&mut self, stream: usize) -> usize {
        if self.flag.is_recording() {
            return 0;
        }
        let mm = &mut self.streams[stream];
        let plan = mm.plan_relocation(TargetRoom::MayAllocate);
        if plan.is_empty() {
            return 0;
        }
        let landed = mm
            .copy_relocation(plan, &mut StorageCopyQueue)
            .expect("host copies succeed");
        mm.commit_relocation(landed)
            .expect("commit on the planning manager")
            .moved_slices
    }
}

impl CaptureStreams for HostDevice {
    fn recording_streams(&mut self) -> usize {
        self.flag.recording_streams()
    }

    fn set_recording(&mut self, recording: bool) {
        if recording {
            self.flag.start();
        } else {
            self.flag.stop();
        }
    }

    fn relocate_device(&mut self) {
        self.relocations += 1;
        for stream in 0..self.streams.len() {
            self.relocate_stream(stream);
        }
    }

    fn device_has_outdated(&mut self) -> bool {
        self.streams.iter().any(|pool| pool.has_outdated())
    }

    fn capture_pools(&mut self) -> Vec<&mut dyn CapturePool> {
        self.streams
            .iter_mut()
            .take(self.capture_count)
            .map(|p| p as &mut dyn CapturePool)
            .collect()
    }

    fn drain_deferred_frees(&mut self) {
        self.deferred.clear();
    }
}

pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seed.wrapping_mul(31).wrapping_add(i as u64 * 7) % 251) as u8)
        .collect()
}

pub mod fixtures;
pub mod pass;

pub fn read(mm: &mut Pool, handle: &ManagedMemoryHandle, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    mm.read(handle.binding(), &mut out).expect("readable");
    out
}
