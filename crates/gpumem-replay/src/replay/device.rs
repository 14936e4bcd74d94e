//! gpumem as a replay backend: a `gpumem::Device` built as a user builds
//! one, with one `gpumem::Stream` per trace stream.
//!
//! Every number the report takes from the allocator comes from the facade:
//! peak and final reserved bytes and storage allocations from
//! [`Device::stats`] (its peak sees inside every call, across streams),
//! per-pool and per-stream lines from [`Device::memory_report`], chunk
//! driver calls from the statistics' chunk counters. So `gpumem replay`
//! measures the engine a program gets from `Device`, configured the same.
//!
//! - **Relocation** (`--relocate`): before every reservation the stream's
//!   trigger ([`Stream::relocate_when_wanted`], what `relocate:auto` runs),
//!   and a [`Device::reclaim`] at every `cleanup` event and at the end.
//!   Without it a `cleanup` event is [`Stream::cleanup`] on every stream.
//! - **Patterns** (the host backend): every reservation carries an edge
//!   pattern checked before its free, wherever relocation moved it since.

use gpumem::pools::{ManagedMemoryHandle, MemoryAllocationMode, PoolReport};
use gpumem::stats::DeviceReport;
use gpumem::{Device, Stream};

use super::pattern::Patterns;
use super::pool_lines::merged_pools;
use crate::error::{ReplayError, Result};
use crate::report::{ArenaSummary, Relocations, StreamLine};
use crate::trace::Mode;

/// A live reservation: the handle, its pattern's tag (0 when patterns are
/// off), and its stream.
#[derive(Debug)]
pub struct DeviceToken {
    pub(crate) handle: ManagedMemoryHandle,
    pub(crate) tag: u64,
    pub(crate) stream: usize,
}

/// A device and its streams, as an [`AllocBackend`](super::AllocBackend).
#[derive(Debug)]
pub struct DeviceBackend {
    pub(crate) device: Device,
    pub(crate) streams: Vec<Stream>,
    pub(crate) name: &'static str,
    pub(crate) relocate: bool,
    pub(crate) relocation: Relocations,
    pub(crate) check_patterns: bool,
    pub(crate) next_tag: u64,
    pub(crate) patterns: Patterns,
    /// Successful reservations per stream.
    pub(crate) allocs: Vec<u64>,
    /// The device's report, read once at `settle`.
    pub(crate) settled: Option<DeviceReport>,
}

impl DeviceBackend {
    /// Replays on `device` (built with as many streams as the trace needs,
    /// see [`StreamMode`](super::StreamMode)), named `name` in reports.
    pub fn new(name: &'static str, device: Device) -> Self {
        let streams = device.streams();
        DeviceBackend {
            allocs: vec![0; streams.len()],
            device,
            streams,
            name,
            relocate: false,
            relocation: Relocations::default(),
            check_patterns: false,
            next_tag: 0,
            patterns: Patterns::default(),
            settled: None,
        }
    }

    /// Relocate as a runtime would: the trigger before every reservation,
    /// a reclaim at every `cleanup` and at the end.
    pub fn with_relocation(mut self, relocate: bool) -> Self {
        self.relocate = relocate;
        self
    }

    /// Write a pattern into every reservation's edges and check it before
    /// its free (needs a backend that holds memory: host, CUDA).
    pub fn with_patterns(mut self, check: bool) -> Self {
        self.check_patterns = check;
        self
    }

    /// The device under replay (its statistics and reports stay readable
    /// after the replay).
    pub fn device(&self) -> &Device {
        &self.device
    }

    pub(crate) fn error(&self, message: String) -> ReplayError {
        ReplayError::Backend {
            backend: self.name,
            message,
        }
    }

    /// The device stream serving dense trace stream `stream` (all of them
    /// when the device has one stream).
    pub(crate) fn stream_index(&self, stream: u64) -> Result<usize> {
        if self.streams.len() == 1 {
            return Ok(0);
        }
        usize::try_from(stream)
            .ok()
            .filter(|&s| s < self.streams.len())
            .ok_or_else(|| {
                self.error(format!(
                    "trace stream index {stream} has no device stream (the device has {}); \
                     replay a compiled Program on a device built for its streams",
                    self.streams.len()
                ))
            })
    }

    /// Gives back what every stream can: a reclaim with relocation on (its
    /// outcome counted), else an explicit cleanup of every stream.
    pub(crate) fn give_back(&mut self) {
        if self.relocate {
            let outcome = self.device.reclaim();
            self.relocation.record(outcome);
        } else {
            for stream in &self.streams {
                stream.cleanup();
            }
        }
    }

    pub(crate) fn write_pattern(&mut self, token: &DeviceToken) -> Result<()> {
        let patterns = &mut self.patterns;
        let written = self.streams[token.stream].with_memory(|engine| {
            let view = engine
                .get_storage(token.handle.binding())
                .map_err(|e| format!("resolving an allocation after its reservation: {e}"))?;
            patterns.write(engine.storage(), &view, token.tag)
        });
        written.map_err(|message| self.error(message))
    }

    #[inline(never)]
    pub(crate) fn check_pattern(&mut self, token: &DeviceToken) -> Result<()> {
        let patterns = &mut self.patterns;
        let checked = self.streams[token.stream].with_memory(|engine| {
            let view = engine
                .get_storage(token.handle.binding())
                .map_err(|e| format!("resolving an allocation before its free: {e}"))?;
            patterns.check(engine.storage(), &view, token.tag)
        });
        checked.map_err(|message| self.error(message))
    }

    pub(crate) fn pool_lines_now(&self) -> Vec<PoolReport> {
        self.settled.as_ref().map_or_else(Vec::new, |report| {
            merged_pools(report.streams.iter().map(|s| &s.pools))
        })
    }

    /// One line per stream, from each stream's own statistics (peaks
    /// included), when the device has more than one.
    pub(crate) fn stream_lines_now(&self) -> Vec<StreamLine> {
        let Some(report) = &self.settled else {
            return Vec::new();
        };
        if report.streams.len() < 2 {
            return Vec::new();
        }
        report
            .streams
            .iter()
            .map(|s| StreamLine {
                stream: s.index as u64,
                allocs: self.allocs.get(s.index).copied().unwrap_or(0),
                peak_live_bytes: s.stats.requested_bytes.peak,
                final_live_bytes: s.stats.requested_bytes.current,
                peak_reserved_bytes: s.stats.reserved_bytes.peak,
                final_reserved_bytes: s.stats.reserved_bytes.current,
                storage_allocs: s.stats.storage_allocs,
            })
            .collect()
    }

    pub(crate) fn arena_summary(&self, ops: u64) -> Option<ArenaSummary> {
        let report = self.settled.as_ref()?;
        report.virtual_memory.as_ref()?;
        let chunks = report.stats.chunks;
        Some(ArenaSummary {
            chunks,
            driver_calls_per_100_ops: chunks.driver_calls() as f64 * 100.0 / ops.max(1) as f64,
        })
    }
}

pub(crate) fn engine_mode(mode: Mode) -> MemoryAllocationMode {
    match mode {
        Mode::Persistent => MemoryAllocationMode::Persistent,
        Mode::Auto => MemoryAllocationMode::Auto,
    }
}
