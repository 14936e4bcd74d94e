//! `Stream`: its identity, ordering, reservation and mode here; the rest
//! of its public API by idea beside it: `sharing.rs` (memory more than
//! one stream uses), `access.rs` (a buffer's bytes), `moves.rs`
//! (relocation, reclaim, capture), `observe.rs` (statistics, report).
//! Bodies longer than a few lines live beside too:
//! `reserve.rs`, `out_of_memory.rs` (the one out-of-memory retry and its
//! report), `cross_stream.rs` (the cursor rule, `bind`, `record_use`),
//! `guards.rs`. Moves are in `relocation/`, capture in `capture/`.

mod access;
mod cross_stream;
mod guards;
mod launch;
mod moves;
mod observe;
mod out_of_memory;
mod reserve;
mod sharing;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mem_pools::{ManagedMemoryHandle, MemoryAllocationMode};
use mem_storage::StreamId;

use crate::error::Result;

pub use crate::shared::Stream;
pub use cross_stream::StreamWait;
pub use guards::{DevicePtrGuard, PersistentWindow};
pub use launch::LaunchGuard;

impl Stream {
    /// This stream's index on its device (0 is the default stream).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(device.stream(1)?.index(), 1);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn index(&self) -> usize {
        self.index
    }

    /// This stream's id in the device's resource.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(stream.id(), device.default_stream().id());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn id(&self) -> StreamId {
        self.shared().id
    }

    /// The device this stream belongs to.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(stream.device().name(), device.name());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn device(&self) -> crate::Device {
        crate::Device::new(self.device.clone())
    }

    /// Begin a launch that uses `buffers` (those of other streams get a
    /// [`Stream::record_use`]): until it is submitted or dropped no memory
    /// moves, so what [`LaunchGuard::view`] reads is what the work uses.
    ///
    /// # Errors
    /// A stale or foreign handle; `GpuMemError::LaunchOpen` when this thread
    /// already holds a launch of the device.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let a = stream.reserve(256)?;
    /// let launch = stream.launch(&[&a])?; // nothing moves until submit
    /// let _view = launch.view(&a)?; // what the kernel uses
    /// assert_eq!(launch.submit(), 1);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn launch(&self, buffers: &[&ManagedMemoryHandle]) -> Result<LaunchGuard<'_>> {
        launch::launch(self, buffers)
    }

    /// Count one launch-like operation; returns its number (1, 2, ...).
    /// Prefer [`Stream::launch`], which also keeps memory from moving.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!((stream.submit(), stream.submit()), (1, 2));
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn submit(&self) -> u64 {
        self.shared().submitted.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Operations submitted so far (the stream's operation counter).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// stream.submit();
    /// assert_eq!(stream.cursor(), 1);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn cursor(&self) -> u64 {
        self.shared().submitted()
    }

    /// Operations known to be complete.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let op = stream.submit();
    /// stream.complete_through(op)?;
    /// assert_eq!(stream.completed(), op);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn completed(&self) -> u64 {
        self.shared().completed()
    }

    /// Declare that operations up to `op` have completed (a runtime calls
    /// this when its event for `op` fires). Never moves backwards.
    ///
    /// # Errors
    /// [`crate::GpuMemError::CompletionAhead`] for an operation not yet submitted.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let op = stream.submit();
    /// stream.complete_through(op)?;
    /// assert!(stream.complete_through(op + 1).is_err());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn complete_through(&self, op: u64) -> Result<()> {
        self.device.complete_through(self.index, op)
    }

    /// Wait for all of this stream's work, then mark every operation complete.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// stream.submit();
    /// stream.synchronize()?;
    /// assert_eq!(stream.completed(), 1);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        self.device.synchronize_stream(self.index)
    }

    /// Reserve `size` bytes on this stream. A refusal by the device or its
    /// budget gives every stream's cached memory back (relocating outdated
    /// pages unless a graph records) and is tried once more.
    ///
    /// # Errors
    /// [`crate::GpuMemError::OutOfMemory`] with the report when the retry fails for
    /// lack of memory; the pool engine's error for anything else (a size no
    /// pool accepts, a capture window that would allocate, ...).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(4096)?;
    /// assert_eq!(buffer.size(), 4096);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn reserve(&self, size: u64) -> Result<ManagedMemoryHandle> {
        reserve::reserve(self, size)
    }

    /// Open (`Persistent`) or close (`Auto`) a persistent-allocation window.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// stream.mode(MemoryAllocationMode::Persistent);
    /// let _weights = stream.reserve(MIB)?;
    /// stream.mode(MemoryAllocationMode::Auto);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn mode(&self, mode: MemoryAllocationMode) {
        self.device.run(self.index, |st| st.engine.mode(mode));
    }

    /// Persistent mode on this stream until the guard drops (weights, graph
    /// memory: exact-fit pages never relocated). Windows nest.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let _weights = {
    ///     let _window = stream.persistent();
    ///     stream.reserve(MIB)?
    /// };
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn persistent(&self) -> PersistentWindow {
        PersistentWindow::open(self.device.clone(), vec![self.index])
    }

    /// Give back every page this stream holds that nothing uses. Gives
    /// nothing back while any stream records a graph.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// drop(stream.reserve(MIB)?);
    /// stream.cleanup();
    /// assert_eq!(stream.stats().allocated_bytes.current, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn cleanup(&self) {
        let device = &self.device;
        device.run(self.index, |st| device.cleanup(st));
    }

    /// The CUDA stream this stream's memory is ordered on; `None` off CUDA.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert!(stream.cuda_stream().is_none()); // a host device
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn cuda_stream(&self) -> Option<Arc<cudarc::driver::CudaStream>> {
        let cuda = self.device.cuda.as_ref()?;
        cuda.cuda_stream(self.id()).ok()
    }
}
