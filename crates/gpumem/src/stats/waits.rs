//! Where the host waits for the device, counted.
//!
//! docs/design.md: "a device-wide wait is a bug" on a reserve, free or cleanup
//! path. A device-wide wait is the host blocking until every stream's
//! queued work is done; the facade makes one in four places (an explicit
//! [`Device::synchronize`](crate::Device::synchronize), `sleep`, the
//! "finish every stream" of relocation and compaction, the out-of-memory
//! retry), each counted here by source, and the backend makes its own
//! (`cuMemFree`'s implicit one; the CUDA unmap makes none), which the
//! driver meter counts. Stream waits (`cuStreamSynchronize`)
//! come from the meter: a "finish every stream" is one device-wide wait
//! here and one stream wait per stream there.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use mem_storage::DriverTime;

/// Why the facade waited for the whole device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitSource {
    /// `Device::synchronize`, asked for.
    Synchronize,
    /// `Device::sleep` finishes every stream before releasing memory.
    Sleep,
    /// Relocation, compaction or reclaim finish every stream first.
    Relocation,
    /// The out-of-memory retry's free-cached step.
    OomRetry,
}

/// The facade's device-wide waits, by source.
#[derive(Debug, Default)]
pub(crate) struct WaitCounters {
    synchronize: AtomicU64,
    sleep: AtomicU64,
    relocation: AtomicU64,
    oom_retry: AtomicU64,
}

impl WaitCounters {
    pub(crate) fn count(&self, source: WaitSource) {
        let counter = match source {
            WaitSource::Synchronize => &self.synchronize,
            WaitSource::Sleep => &self.sleep,
            WaitSource::Relocation => &self.relocation,
            WaitSource::OomRetry => &self.oom_retry,
        };
        counter.fetch_add(1, Relaxed);
    }

    /// The counts, with the backend's waits from the driver meter.
    pub(crate) fn read(&self, driver: &DriverTime) -> WaitStats {
        let synchronize = self.synchronize.load(Relaxed);
        let sleep = self.sleep.load(Relaxed);
        let relocation = self.relocation.load(Relaxed);
        let oom_retry = self.oom_retry.load(Relaxed);
        let backend = driver.device_waits();
        WaitStats {
            device_waits: synchronize + sleep + relocation + oom_retry + backend,
            stream_waits: driver.stream_waits(),
            synchronize,
            sleep,
            relocation,
            oom_retry,
            backend,
        }
    }
}

/// How often the host waited for the device, and why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct WaitStats {
    /// Waits for every stream of the device: the sum of the five below.
    pub device_waits: u64,
    /// Waits for one stream (`cuStreamSynchronize`, whatever made them;
    /// a device-wide finish makes one per stream).
    pub stream_waits: u64,
    /// `Device::synchronize` calls.
    pub synchronize: u64,
    /// `Device::sleep` finishing every stream.
    pub sleep: u64,
    /// Relocation, compaction and reclaim finishing every stream.
    pub relocation: u64,
    /// The out-of-memory retry finishing every stream.
    pub oom_retry: u64,
    /// The backend's own: the device synchronize inside `cuMemFree` (the
    /// CUDA unmap waits for nothing: arenas unmap only chunks whose
    /// stream work is complete).
    pub backend: u64,
}

impl WaitStats {
    /// The device-wide waits by source, as both reports print them:
    /// `2 synchronize, 0 sleep, 1 relocation, 0 OOM retry, 0 backend`.
    ///
    /// ```
    /// let waits = gpumem::stats::WaitStats { device_waits: 3, synchronize: 2, relocation: 1, ..Default::default() };
    /// assert_eq!(
    ///     waits.sources().to_string(),
    ///     "2 synchronize, 0 sleep, 1 relocation, 0 OOM retry, 0 backend"
    /// );
    /// ```
    pub fn sources(&self) -> impl fmt::Display + '_ {
        Sources(self)
    }
}

/// [`WaitStats::sources`]'s text.
struct Sources<'a>(&'a WaitStats);

impl fmt::Display for Sources<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = self.0;
        write!(
            f,
            "{} synchronize, {} sleep, {} relocation, {} OOM retry, {} backend",
            w.synchronize, w.sleep, w.relocation, w.oom_retry, w.backend
        )
    }
}

/// `3 device-wide (2 synchronize, 0 sleep, 1 relocation, 0 OOM retry, 0
/// backend), 4 stream`: the device-wide waits with their sources, then the
/// stream waits.
///
/// ```
/// let waits = gpumem::stats::WaitStats { device_waits: 1, sleep: 1, stream_waits: 4, ..Default::default() };
/// assert_eq!(
///     waits.to_string(),
///     "1 device-wide (0 synchronize, 1 sleep, 0 relocation, 0 OOM retry, 0 backend), 4 stream"
/// );
/// ```
impl fmt::Display for WaitStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} device-wide ({}), {} stream",
            self.device_waits,
            self.sources(),
            self.stream_waits
        )
    }
}
