//! `gpumem::Device` with its defaults as a replay backend: what a user of
//! the facade gets (on the simulated 80 GiB device: arenas over a range of
//! twice the device, the facade's statistics and locks), so the tables put
//! it beside the engine-level rows and the peers, in the same run.

use gpumem::prelude::*;
use gpumem_cli::replay::AllocBackend;
use gpumem_cli::trace::Mode;
use gpumem_cli::{CliError, Result};

/// One stream of a default simulated device.
#[derive(Debug)]
pub struct DeviceBackend {
    device: Device,
    stream: Stream,
    live: u64,
    persistent: Vec<gpumem::PersistentWindow>,
}

impl DeviceBackend {
    /// `Device::simulated(capacity)` with every default (`GPUMEM_CONF` ignored).
    ///
    /// # Errors
    /// The facade's refusal to build, as a backend error.
    pub fn new(capacity: u64) -> Result<Self> {
        let device = Device::simulated(capacity)
            .ignore_env()
            .build()
            .map_err(|e| failed(e.to_string()))?;
        let stream = device.default_stream();
        Ok(Self {
            device,
            stream,
            live: 0,
            persistent: Vec::new(),
        })
    }

    /// Whether the device runs on arenas (its report says so).
    pub fn uses_arenas(&self) -> bool {
        self.device.memory_report().virtual_memory.is_some()
    }
}

fn failed(message: String) -> CliError {
    CliError::Backend {
        backend: "gpumem::Device",
        message,
    }
}

impl AllocBackend for DeviceBackend {
    type Token = ManagedMemoryHandle;

    fn name(&self) -> &'static str {
        "gpumem::Device"
    }

    fn reserve(&mut self, size: u64, _stream: u64) -> Result<ManagedMemoryHandle> {
        let handle = self
            .stream
            .reserve(size)
            .map_err(|e| failed(e.to_string()))?;
        self.live += size;
        Ok(handle)
    }

    fn free(&mut self, token: ManagedMemoryHandle) -> Result<()> {
        self.live -= token.size();
        drop(token);
        Ok(())
    }

    fn mode(&mut self, mode: Mode) {
        match mode {
            Mode::Persistent => self.persistent.push(self.stream.persistent()),
            Mode::Auto => drop(self.persistent.pop()),
        }
    }

    fn cleanup(&mut self) {
        self.stream.cleanup();
    }

    fn live_bytes(&self) -> u64 {
        self.live
    }

    fn reserved_bytes(&self) -> u64 {
        self.device.stats().reserved_bytes.current
    }

    fn peak_reserved_bytes(&self) -> Option<u64> {
        Some(self.device.stats().reserved_bytes.peak)
    }

    fn storage_allocs(&self) -> u64 {
        let stats = self.device.stats();
        stats.storage_allocs + stats.chunks.creates
    }

    fn settle(&mut self) {
        self.device.drain();
    }
}
