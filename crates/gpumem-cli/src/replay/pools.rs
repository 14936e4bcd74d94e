//! gpumem's pool engine as a replay backend: `MemoryManagement` over
//! `ResourceStorage<R>` for any mem-storage resource (simulated, host, CUDA).
//!
//! One manager serves the whole trace, so streams are not separated (one
//! manager per stream is the facade's job); the trace's stream numbers are
//! accepted and ignored. With `check_patterns` (the host backend), every
//! reservation carries an edge pattern (see `pattern.rs`) checked before its
//! free; a mismatch stops the replay with the offset that was overwritten.

use std::sync::Arc;

use mem_pools::{
    ManagedMemoryBinding, ManagedMemoryHandle, MemoryAllocationMode, MemoryConfiguration,
    MemoryDeviceProperties, MemoryManagement, MemoryManagementOptions, MemoryReport,
    PoolReportKind, ServerLogger,
};
use mem_storage::{DeviceResource, ResourceStorage, StorageHandle};

use super::backend::AllocBackend;
use super::pattern::Patterns;
use crate::error::{CliError, Result};
use crate::report::{PoolLine, human_bytes};
use crate::trace::Mode;

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
    patterns: Patterns,
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
            patterns: Patterns::default(),
            last_freed: None,
        }
    }

    /// The engine, for reports after a replay.
    pub fn manager(&self) -> &MemoryManagement<ResourceStorage<R>> {
        &self.manager
    }

    fn backend_error(&self, message: String) -> CliError {
        CliError::Backend {
            backend: self.name,
            message,
        }
    }

    fn view(&mut self, token: &PoolToken, when: &str) -> Result<StorageHandle> {
        self.manager
            .get_storage(token.handle.binding())
            .map_err(|e| self.backend_error(format!("resolving an allocation {when}: {e}")))
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
            .map_err(|e| self.backend_error(format!("reserve: {e}")))?;
        let token = PoolToken {
            handle,
            tag: self.next_tag,
        };
        self.next_tag += 1;
        if self.check_patterns {
            let view = self.view(&token, "after its reservation")?;
            self.patterns
                .write(self.manager.storage(), &view, token.tag)
                .map_err(|m| self.backend_error(m))?;
        }
        Ok(token)
    }

    fn free(&mut self, token: PoolToken) -> Result<()> {
        if self.check_patterns {
            let view = self.view(&token, "before its free")?;
            self.patterns
                .check(self.manager.storage(), &view, token.tag)
                .map_err(|m| self.backend_error(m))?;
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

    fn peak_reserved_bytes(&self) -> Option<u64> {
        Some(self.manager.stats().reserved_bytes.peak)
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
