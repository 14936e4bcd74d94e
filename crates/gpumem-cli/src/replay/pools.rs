//! gpumem's pool engine as a replay backend: `MemoryManagement` over
//! `ResourceStorage<R>` for any mem-storage resource (simulated, host, CUDA).
//!
//! One manager serves the whole trace, so streams are not separated (one
//! manager per stream is the facade's job); the trace's stream numbers are
//! accepted and ignored. With `check_patterns` (the host backend), every
//! reservation gets a pattern derived from its sequence number written into
//! its first and last 4 KiB, checked before it is freed: slices that overlap
//! or a page freed under a live slice corrupt a neighbour's edge, which is
//! where overlaps show. Whole-allocation patterns would make a 50 GiB trace
//! write terabytes.

use std::sync::Arc;

use mem_pools::{
    ManagedMemoryBinding, ManagedMemoryHandle, MemoryAllocationMode, MemoryConfiguration,
    MemoryDeviceProperties, MemoryManagement, MemoryManagementOptions, MemoryReport,
    PoolReportKind, ServerLogger,
};
use mem_storage::{ComputeStorage, DeviceResource, ResourceStorage, StorageHandle};

use super::backend::AllocBackend;
use crate::error::{CliError, Result};
use crate::report::{PoolLine, human_bytes};
use crate::trace::Mode;

/// Bytes checked at each end of an allocation.
pub const PATTERN_WINDOW: u64 = 4096;

/// A live reservation: the handle, and the tag its pattern derives from.
#[derive(Debug)]
pub struct PoolToken {
    handle: ManagedMemoryHandle,
    tag: u64,
}

/// `MemoryManagement` over a resource, as an [`AllocBackend`].
#[derive(Debug)]
pub struct PoolBackend<R: DeviceResource> {
    manager: MemoryManagement<ResourceStorage<R>>,
    name: &'static str,
    check_patterns: bool,
    next_tag: u64,
    buffer: Vec<u8>,
    /// Binding of the last freed reservation, used by `settle`.
    last_freed: Option<ManagedMemoryBinding>,
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
    /// Pools laid out by `config` over `resource`, a device of `capacity` bytes.
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
        let storage = ResourceStorage::new(resource);
        let options = MemoryManagementOptions {
            name: format!("gpumem-{name}"),
            lazy_pages,
        };
        let logger = Arc::new(ServerLogger::named("gpumem-cli"));
        PoolBackend {
            manager: MemoryManagement::from_configuration(
                storage,
                &properties,
                config,
                logger,
                options,
            ),
            name,
            check_patterns,
            next_tag: 0,
            buffer: Vec::new(),
            last_freed: None,
        }
    }

    /// The engine, for reports after a replay.
    pub fn manager(&self) -> &MemoryManagement<ResourceStorage<R>> {
        &self.manager
    }

    fn windows(view: &StorageHandle) -> [Option<StorageHandle>; 2] {
        let size = view.size();
        let head = size.min(PATTERN_WINDOW);
        let tail_start = size.saturating_sub(PATTERN_WINDOW).max(head);
        [
            (head > 0).then(|| view.narrow(None, Some(head))).flatten(),
            (tail_start < size)
                .then(|| view.narrow(Some(tail_start), None))
                .flatten(),
        ]
    }

    fn fill_pattern(buffer: &mut Vec<u8>, tag: u64, start: u64, len: u64) {
        buffer.clear();
        let seed = tag.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        buffer.extend(
            (start..start + len).map(|i| (seed.rotate_left((i % 64) as u32) as u8) ^ i as u8),
        );
    }

    fn storage_error(&self, what: &str, err: impl std::fmt::Display) -> CliError {
        CliError::Backend {
            backend: self.name,
            message: format!("{what}: {err}"),
        }
    }

    fn write_patterns(&mut self, token: &PoolToken) -> Result<()> {
        let view = self
            .manager
            .get_storage(token.handle.binding())
            .map_err(|e| self.storage_error("resolving a fresh allocation", e))?;
        for window in Self::windows(&view).into_iter().flatten() {
            let start = window.offset() - view.offset();
            Self::fill_pattern(&mut self.buffer, token.tag, start, window.size());
            self.manager
                .storage()
                .write(&window, &self.buffer)
                .map_err(|e| CliError::Backend {
                    backend: self.name,
                    message: format!("writing the check pattern: {e}"),
                })?;
        }
        Ok(())
    }

    fn check_patterns(&mut self, token: &PoolToken) -> Result<()> {
        let view = self
            .manager
            .get_storage(token.handle.binding())
            .map_err(|e| self.storage_error("resolving an allocation before its free", e))?;
        let mut expected = Vec::new();
        for window in Self::windows(&view).into_iter().flatten() {
            let start = window.offset() - view.offset();
            Self::fill_pattern(&mut expected, token.tag, start, window.size());
            self.buffer.resize(expected.len(), 0);
            self.manager
                .storage()
                .read(&window, &mut self.buffer)
                .map_err(|e| CliError::Backend {
                    backend: self.name,
                    message: format!("reading the check pattern: {e}"),
                })?;
            if let Some(at) = expected.iter().zip(&self.buffer).position(|(a, b)| a != b) {
                return Err(CliError::Backend {
                    backend: self.name,
                    message: format!(
                        "allocation #{} of {} was overwritten at byte {}: another allocation \
                         shares its memory (pool bug or corruption)",
                        token.tag,
                        human_bytes(view.size()),
                        start + at as u64
                    ),
                });
            }
        }
        Ok(())
    }
}

/// A report line for one pool of a memory report.
pub fn pool_lines(report: &MemoryReport) -> Vec<PoolLine> {
    report
        .pools
        .iter()
        .map(|p| PoolLine {
            pool: match p.kind {
                PoolReportKind::Sliced {
                    page_size,
                    max_slice_size,
                    ..
                } => format!(
                    "sliced({} pages, slices ≤ {})",
                    human_bytes(page_size),
                    human_bytes(max_slice_size)
                ),
                PoolReportKind::Exclusive { max_alloc_size } => {
                    format!("exclusive(≤ {})", human_bytes(max_alloc_size))
                }
                PoolReportKind::Persistent => "persistent".to_string(),
            },
            pages: p.pages,
            bytes_in_use: p.bytes_in_use,
            bytes_reserved: p.bytes_reserved,
            peak_bytes_in_use: p.peak_bytes_in_use,
            peak_bytes_reserved: p.peak_bytes_reserved,
        })
        .collect()
}

impl<R: DeviceResource> AllocBackend for PoolBackend<R> {
    type Token = PoolToken;

    fn name(&self) -> &'static str {
        self.name
    }

    fn reserve(&mut self, size: u64, _stream: u64) -> Result<PoolToken> {
        let handle = self
            .manager
            .reserve(size)
            .map_err(|e| self.storage_error("reserve", e))?;
        let token = PoolToken {
            handle,
            tag: self.next_tag,
        };
        self.next_tag += 1;
        if self.check_patterns {
            self.write_patterns(&token)?;
        }
        Ok(token)
    }

    fn free(&mut self, token: PoolToken) -> Result<()> {
        if self.check_patterns {
            self.check_patterns(&token)?;
        }
        self.last_freed = Some(token.handle.binding());
        drop(token.handle);
        Ok(())
    }

    fn mode(&mut self, mode: Mode) {
        self.manager.mode(match mode {
            Mode::Persistent => MemoryAllocationMode::Persistent,
            Mode::Auto => MemoryAllocationMode::Auto,
        });
    }

    fn cleanup(&mut self) {
        self.manager.cleanup(true);
    }

    fn live_bytes(&self) -> u64 {
        self.manager.memory_usage().bytes_in_use
    }

    fn reserved_bytes(&self) -> u64 {
        self.manager.memory_usage().bytes_reserved
    }

    fn storage_allocs(&self) -> u64 {
        self.manager.stats().storage_allocs
    }

    /// The engine frees dropped handles at its next call (its drop queue).
    /// Resolving the last freed binding is such a call with no other effect:
    /// the queue is drained first, then the binding is stale and the lookup
    /// fails before touching any page, so nothing is allocated or mapped.
    fn settle(&mut self) {
        if let Some(binding) = self.last_freed.take() {
            let _stale = self.manager.get_storage(binding);
        }
    }

    fn pool_lines(&self) -> Vec<PoolLine> {
        pool_lines(&self.manager.memory_report())
    }
}
