//! `Device`'s API for looking in: the budget, the driver's free and
//! total bytes, statistics and the report.

use std::sync::atomic::Ordering;

use mem_budget::GlobalBudgetHandle;
use mem_storage::{DeviceResource, MemInfo};

use super::report;
use crate::error::Result;
use crate::shared::Device;
use crate::stats::device_stats::levels;
use crate::stats::{DeviceReport, MemoryStats};

impl Device {
    /// The device budget's ledger: limit, charged bytes, peak, reservations.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let device = Device::host().budget(Budget::Bytes(64 * MIB)).ignore_env().build()?;
    /// assert_eq!(device.budget().limit(), 64 * MIB);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn budget(&self) -> GlobalBudgetHandle {
        self.shared.resource.handle()
    }

    /// Free and total bytes of the device itself (below the budget).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert!(device.mem_info()?.total > 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn mem_info(&self) -> Result<MemInfo> {
        Ok(self.shared.resource.upstream().mem_info()?)
    }

    /// Device-wide statistics (see [`MemoryStats`]), current: every handle
    /// dropped before the call, on any thread, is counted freed.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let _buffer = stream.reserve(4096)?;
    /// assert!(device.stats().allocated_bytes.current >= 4096);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn stats(&self) -> MemoryStats {
        self.drain();
        let mut stats = self.shared.device_stats();
        stats.num_alloc_retries = self.shared.retries.load(Ordering::Relaxed);
        stats.num_ooms = self.shared.ooms.load(Ordering::Relaxed);
        stats.driver = self.shared.driver.snapshot();
        stats.waits = self.shared.waits.read(&stats.driver);
        stats
    }

    /// Lower every peak of the device, of each stream and of the budget's
    /// ledger to its current level (`reset_peak_memory_stats`).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// drop(stream.reserve(MIB)?);
    /// device.drain(); // the drop is counted freed
    /// device.reset_peak_stats();
    /// assert_eq!(device.stats().allocated_bytes.peak, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn reset_peak_stats(&self) {
        for stream in &self.shared.streams {
            let mut st = stream.lock();
            st.reset_peaks();
            stream.levels.reset_high();
        }
        let current = levels(&self.shared.device_stats());
        self.shared.peaks.reset(&current);
        self.shared.budget_reset_peak();
    }

    /// Everything about the device's memory, as a value (`Display` prints
    /// it); current as [`Device::stats`] is.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// println!("{}", device.memory_report());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn memory_report(&self) -> DeviceReport {
        self.drain();
        report::memory_report(&self.shared, || self.stats())
    }
}
