//! `Device`'s API for what moves or releases memory across its streams:
//! relocation, reclaim, and sleep/wake (bodies in `sleep.rs` and
//! `relocation/`).

use mem_pools::{SleepContents, SleepReport};
use mem_relocate::{RelocationReason, RelocationSummary};

use super::sleep;
use crate::error::Result;
use crate::relocation;
use crate::shared::Device;

impl Device {
    /// Move what every stream holds on outdated pages onto current pages,
    /// with the room `reason` allows.
    ///
    /// # Errors
    /// [`crate::GpuMemError::Recording`] while any stream records a graph (nothing
    /// moves); a copy error (see [`mem_relocate::RelocationError`] for what
    /// leaked).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let summary = device.relocate(RelocationReason::Explicit)?;
    /// assert_eq!(summary.moved_slices, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn relocate(&self, reason: RelocationReason) -> Result<RelocationSummary> {
        relocation::relocate_device(&self.shared, reason)
    }

    /// Give back everything the streams hold and nothing needs: outdated
    /// pages' live data moves into room already held, sparse current pages
    /// are compacted, then every empty page goes back. Reserved bytes never
    /// grow.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// drop(stream.reserve(MIB)?);
    /// device.reclaim()?;
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn reclaim(&self) -> Result<RelocationSummary> {
        relocation::reclaim_device(&self.shared)
    }

    /// Release the physical memory of every stream's arenas, keeping every
    /// address (handles, raw pointers and captured graphs stay valid);
    /// [`SleepContents::Preserve`] copies live allocations' bytes to host
    /// memory first. Paged pools keep their pages.
    ///
    /// # Errors
    /// [`crate::GpuMemError::Recording`] while a stream records a graph (nothing
    /// released); a storage refusal partway (the device counts as asleep and
    /// [`Device::wake`] maps back what was released);
    /// [`mem_pools::IoError::Asleep`] when already asleep.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(MIB)?;
    /// stream.write(&buffer, &[7])?;
    /// device.sleep(SleepContents::Preserve)?;
    /// device.wake()?;
    /// let mut byte = [0];
    /// stream.read(&buffer, &mut byte)?;
    /// assert_eq!(byte, [7]);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn sleep(&self, contents: SleepContents) -> Result<SleepReport> {
        sleep::sleep(&self.shared, contents)
    }

    /// Map fresh memory at every address live allocations had at
    /// [`Device::sleep`] and copy back what it preserved; returns the bytes
    /// mapped (0 when not asleep).
    ///
    /// # Errors
    /// A storage refusal: what was mapped stays mapped, the device stays
    /// asleep, and calling `wake` again maps the rest.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// device.sleep(SleepContents::Discard)?;
    /// assert!(device.wake().is_ok());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn wake(&self) -> Result<u64> {
        sleep::wake(&self.shared)
    }

    /// Whether any stream's arenas are asleep.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert!(!device.is_asleep());
    /// device.sleep(SleepContents::Discard)?;
    /// assert!(device.is_asleep());
    /// device.wake()?;
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn is_asleep(&self) -> bool {
        sleep::is_asleep(&self.shared)
    }
}
