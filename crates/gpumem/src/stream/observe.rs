//! `Stream`'s API for looking in: the engine itself, its statistics and
//! its report.

use mem_pools::MemoryReport;

use crate::backend::StreamMemory;
use crate::shared::Stream;
use crate::stats::MemoryStats;

impl Stream {
    /// Run `f` on this stream's pool engine (everything the
    /// CubeCL-compatible `MemoryManagement` offers), the stream locked while
    /// it runs: use the engine `f` is given, not this stream's methods.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let _usage = stream.with_memory(|mm| mm.memory_usage());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn with_memory<T>(&self, f: impl FnOnce(&mut StreamMemory) -> T) -> T {
        self.device.run(self.index, |st| {
            st.engine.drain_drops();
            f(&mut st.engine)
        })
    }

    /// Process the handles dropped on any thread since this stream's last
    /// call, so its statistics and reports are current.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// drop(stream.reserve(64)?);
    /// stream.drain();
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn drain(&self) {
        self.device.drain_stream(self.index);
    }

    /// This stream's statistics, current (handles dropped before the call
    /// are counted freed).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let _buffer = stream.reserve(4096)?;
    /// assert!(stream.stats().allocated_bytes.current >= 4096);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn stats(&self) -> MemoryStats {
        self.device.drain_stream(self.index);
        self.shared().lock().stats_now()
    }

    /// Lower this stream's peaks to their current levels.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// drop(stream.reserve(MIB)?);
    /// stream.drain(); // the drop is counted freed
    /// stream.reset_peak_stats();
    /// assert_eq!(stream.stats().allocated_bytes.peak, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn reset_peak_stats(&self) {
        self.device.reset_stream_peaks(self.index);
    }

    /// The per-pool report of this stream's engine, current as
    /// [`Stream::stats`] is.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let _report = stream.memory_report();
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn memory_report(&self) -> MemoryReport {
        self.device.run(self.index, |st| {
            st.engine.drain_drops();
            st.engine.memory_report()
        })
    }
}
