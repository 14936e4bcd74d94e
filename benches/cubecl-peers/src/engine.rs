//! CubeCL's memory engine, one cubecl-server version, as a replay backend.
//!
//! It drives `MemoryManagement` the way cubecl-server's `Command` does for
//! a CUDA stream, so the row measures what a CubeCL program's allocations
//! cost, not the bare pool call:
//!
//! - **construction** as cubecl-cuda's `create_stream`:
//!   `MemoryConfiguration::default()` (`Adaptive`: tiny and small pools,
//!   then the growing arena), `MemoryDeviceProperties` with
//!   `max_page_size` = capacity ÷ 4, alignment 512 and `max_memory` =
//!   capacity, one memory manager per stream;
//! - **reserve** as `Command::reserve`: `relocate_when_wanted` (CubeCL's
//!   own `RelocatingStreams` default method), then
//!   `reserve(size, PageUpdate::Allow)`, and on an error that a reclaim may
//!   cure, `make_room` (relocate on `PageSizesExhausted`, else
//!   `memory_cleanup`) and one retry;
//! - **free** as CubeCL frees: the last handle drops (no call at all; the
//!   engine sees the slice free at its next reservation);
//! - **cleanup** (a trace's `empty_cache`) as `memory_cleanup` on every
//!   stream: `reclaim`, i.e. relocate what outdated pages hold, then an
//!   explicit cleanup;
//! - **mode** as `allocation_mode`, on every stream (trace modes carry no
//!   stream).
//!
//! Left out, because the trace has no kernels: `bind` to a client handle,
//! the drop queue behind fences, the metadata info cache, and capture.

use std::sync::Arc;

use gpumem_replay::ReplayError;
use gpumem_replay::replay::AllocBackend;
use gpumem_replay::trace::Mode;

use super::NAME;
use super::ir::MemoryDeviceProperties;
use super::server::logging::ServerLogger;
use super::server::memory_management::relocation::{
    RelocatingStreams, RelocationNeed, RelocationReason,
};
use super::server::memory_management::{
    Cleanup, ErrorGraph, ManagedMemoryHandle, MemoryAllocationMode, MemoryConfiguration,
    MemoryManagement, MemoryManagementOptions, PageUpdate,
};
use super::server::server::IoError;
use super::storage::{Ledger, NoCopies, NullStorage};

/// cubecl-cuda's memory offset alignment (`runtime.rs`: `mem_alignment = 512`).
pub const CUDA_ALIGNMENT: u64 = 512;

type Memory = MemoryManagement<NullStorage>;

/// CubeCL's engine on a simulated CUDA device.
pub struct CubeclBackend {
    streams: Vec<Memory>,
    failures: ErrorGraph,
    ledger: Arc<Ledger>,
    live: u64,
}

impl std::fmt::Debug for CubeclBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CubeclBackend")
            .field("version", &NAME)
            .field("streams", &self.streams.len())
            .field("ledger", &self.ledger)
            .field("live", &self.live)
            .finish()
    }
}

/// A live reservation: the engine's handle (dropping it frees the slice)
/// and the requested size.
#[derive(Debug)]
pub struct CubeclToken {
    handle: ManagedMemoryHandle,
    size: u64,
}

impl CubeclBackend {
    /// A device of `capacity` bytes with one memory manager for each of
    /// `streams` trace streams (at least one).
    pub fn new(capacity: u64, streams: usize) -> Self {
        let ledger = Arc::new(Ledger::default());
        let properties =
            MemoryDeviceProperties::new(capacity / 4, CUDA_ALIGNMENT).with_max_memory(capacity);
        let logger = Arc::new(ServerLogger::default());
        let streams = (0..streams.max(1))
            .map(|_| {
                MemoryManagement::from_configuration(
                    NullStorage::new(ledger.clone(), capacity, CUDA_ALIGNMENT as usize),
                    &properties,
                    MemoryConfiguration::default(),
                    logger.clone(),
                    MemoryManagementOptions::new("Main GPU Memory"),
                )
            })
            .collect();
        CubeclBackend {
            streams,
            failures: ErrorGraph::default(),
            ledger,
            live: 0,
        }
    }

    fn on(&mut self, current: usize) -> Streams<'_> {
        Streams {
            memories: &mut self.streams,
            current,
            failures: &mut self.failures,
        }
    }

    fn refuse(err: &IoError) -> ReplayError {
        ReplayError::Backend {
            backend: NAME,
            message: err.to_string().lines().next().unwrap_or("").to_string(),
        }
    }
}

/// The device's streams as cubecl-server's relocation rules see them: the
/// ordering lives in CubeCL's `RelocatingStreams` default methods, this
/// supplies the primitive steps as `Command` does.
struct Streams<'a> {
    memories: &'a mut [Memory],
    current: usize,
    failures: &'a mut ErrorGraph,
}

impl Streams<'_> {
    /// `Command::reserve`.
    fn reserve(&mut self, size: u64) -> Result<ManagedMemoryHandle, IoError> {
        self.relocate_when_wanted();
        let memory = &mut self.memories[self.current];
        match memory.reserve(size, PageUpdate::Allow, self.failures) {
            Ok(handle) => Ok(handle),
            Err(err) if !err.may_succeed_after_reclaim() => Err(err),
            Err(err) => {
                self.make_room(&err);
                self.memories[self.current].reserve(size, PageUpdate::Allow, self.failures)
            }
        }
    }

    /// `Command::make_room`.
    fn make_room(&mut self, err: &IoError) {
        match err {
            IoError::PageSizesExhausted { .. } => {
                RelocatingStreams::relocate(self, RelocationReason::ArenaFull);
            }
            // `memory_cleanup`: nothing records, so `reclaim` cannot refuse.
            _ => {
                let _ = self.reclaim();
            }
        }
    }
}

impl RelocatingStreams for Streams<'_> {
    fn recording(&mut self) -> bool {
        false
    }

    fn has_outdated(&mut self) -> bool {
        self.memories[self.current].has_outdated()
    }

    fn relocation_need(&mut self) -> RelocationNeed {
        self.memories[self.current].relocation_need()
    }

    fn bytes_allocated(&mut self) -> u64 {
        self.memories.iter().map(Memory::bytes_allocated).sum()
    }

    fn finish(&mut self) {}

    fn relocate_memory(&mut self, reason: RelocationReason) {
        self.memories[self.current].relocate(&mut NoCopies, reason, self.failures);
    }

    fn device_has_outdated(&mut self) -> bool {
        self.memories.iter().any(Memory::has_outdated)
    }

    fn relocate_device_memory(&mut self, reason: RelocationReason) {
        for memory in self.memories.iter_mut().filter(|m| m.has_outdated()) {
            memory.relocate(&mut NoCopies, reason, self.failures);
        }
    }

    fn cleanup_memory(&mut self) {
        self.memories[self.current].cleanup(Cleanup::Explicit, self.failures);
    }
}

impl AllocBackend for CubeclBackend {
    type Token = CubeclToken;

    fn name(&self) -> &'static str {
        NAME
    }

    fn reserve(&mut self, size: u64, stream: u64) -> gpumem_replay::Result<CubeclToken> {
        let current = usize::try_from(stream)
            .ok()
            .filter(|&s| s < self.streams.len())
            .ok_or_else(|| ReplayError::Backend {
                backend: NAME,
                message: format!("stream {stream} is not one of the trace's"),
            })?;
        let handle = self
            .on(current)
            .reserve(size)
            .map_err(|e| Self::refuse(&e))?;
        self.live += size;
        Ok(CubeclToken { handle, size })
    }

    fn free(&mut self, token: CubeclToken) -> gpumem_replay::Result<()> {
        drop(token.handle);
        self.live -= token.size;
        Ok(())
    }

    fn mode(&mut self, mode: Mode) {
        let mode = match mode {
            Mode::Persistent => MemoryAllocationMode::Persistent,
            Mode::Auto => MemoryAllocationMode::Auto,
        };
        for memory in &mut self.streams {
            memory.mode(mode);
        }
    }

    fn cleanup(&mut self) {
        for current in 0..self.streams.len() {
            let _ = self.on(current).reclaim();
        }
    }

    fn live_bytes(&self) -> u64 {
        self.live
    }

    fn reserved_bytes(&self) -> u64 {
        self.ledger.allocated()
    }

    fn peak_reserved_bytes(&self) -> u64 {
        self.ledger.peak()
    }

    fn storage_allocs(&self) -> u64 {
        self.ledger.allocs()
    }
}

impl CubeclBackend {
    /// Page allocations plus page frees: what a driver was asked.
    pub fn storage_calls(&self) -> u64 {
        self.ledger.allocs() + self.ledger.frees()
    }
}

#[cfg(test)]
mod tests {
    use gpumem_replay::replay::{AllocBackend, Program, ReplayOptions, replay};
    use gpumem_replay::workload::{Workload, WorkloadSpec};

    use mem_storage::units::{GIB, MIB};

    use super::CubeclBackend;

    #[test]
    fn a_workload_replays_whole_and_reserves_at_least_its_live_peak() {
        let spec = WorkloadSpec {
            seed: 5,
            scale: 0.02,
        };
        let events = Workload::Serving.generate(&spec).unwrap();
        let program = Program::compile(&events).unwrap();
        let mut backend = CubeclBackend::new(80 * GIB, program.streams.len());
        let report = replay("t", &program, &mut backend, &ReplayOptions::default())
            .unwrap()
            .report;
        assert_eq!(report.failed_allocs, 0, "{:?}", report.first_failure);
        assert!(report.peak_reserved_bytes >= report.peak_live_bytes);
        assert_eq!(backend.live_bytes(), 0, "the replay frees what is left");
    }

    #[test]
    fn a_cleanup_after_every_free_gives_every_page_back() {
        let mut backend = CubeclBackend::new(80 * GIB, 1);
        let tokens: Vec<_> = [100 * 1024, 3 * MIB, 7 * MIB, 20 * MIB, 0]
            .into_iter()
            .map(|size| backend.reserve(size, 0).unwrap())
            .collect();
        assert!(backend.reserved_bytes() >= 30 * MIB);
        for token in tokens {
            backend.free(token).unwrap();
        }
        backend.cleanup();
        assert_eq!(backend.reserved_bytes(), 0);
        assert!(backend.peak_reserved_bytes() >= 30 * MIB);
        assert_eq!(backend.storage_calls(), 2 * backend.storage_allocs());
    }

    #[test]
    fn a_full_device_and_an_unknown_stream_are_errors_not_panics() {
        let mut backend = CubeclBackend::new(GIB, 1);
        let held: Vec<_> = (0..4)
            .map(|_| backend.reserve(200 * MIB, 0).unwrap())
            .collect();
        assert!(backend.reserve(300 * MIB, 0).is_err(), "past the device");
        assert!(backend.reserve(2 * GIB, 0).is_err(), "past max_page_size");
        assert!(backend.reserve(MIB, 1).is_err(), "no stream 1");
        assert_eq!(backend.live_bytes(), 800 * MIB);
        drop(held);
    }
}
