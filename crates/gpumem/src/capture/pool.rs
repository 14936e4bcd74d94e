//! A stream's pool as mem-capture's `CapturePool`, locked per call.
//!
//! mem-capture reaches a pool through `&mut dyn CapturePool` for the whole
//! of a capture, while the warmup and the recorded pass reserve through the
//! facade's [`Stream`](crate::Stream) — which locks the same engine. Holding
//! the engine's lock for the capture would deadlock that; so this pool
//! holds only the device and the stream index, and each call takes the lock
//! for its own duration (through the device's `run`, so statistics and held
//! allocations stay current).

use std::fmt;
use std::sync::Arc;

use mem_capture::CapturePool;
use mem_pools::{
    CaptureState, IoError, ManagedMemoryBinding, ManagedMemoryHandle, MemoryAllocationMode, RawPin,
};
use mem_storage::{ComputeStorage, StorageError, StorageHandle};

use crate::shared::DeviceShared;

/// One stream's engine, reached by locking it per call.
pub(crate) struct StreamPool {
    device: Arc<DeviceShared>,
    index: usize,
}

impl StreamPool {
    pub(crate) fn new(device: Arc<DeviceShared>, index: usize) -> Self {
        Self { device, index }
    }
}

impl fmt::Debug for StreamPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamPool")
            .field("stream", &self.index)
            .finish()
    }
}

impl CapturePool for StreamPool {
    fn capture_begin(&mut self) {
        self.device.run(self.index, |st| st.engine.capture_begin());
    }
    fn capture_priming_end(&mut self) {
        self.device
            .run(self.index, |st| st.engine.capture_priming_end());
    }
    fn capture_end(&mut self) -> Vec<ManagedMemoryHandle> {
        self.device.run(self.index, |st| st.engine.capture_end())
    }
    fn capture_abort(&mut self) {
        self.device.run(self.index, |st| st.engine.capture_abort());
    }
    fn capture_state(&self) -> CaptureState {
        self.device.streams[self.index]
            .lock()
            .engine
            .capture_state()
    }
    fn drain_frees(&mut self) {
        self.device.run(self.index, |st| {
            st.engine.drain_drops();
        });
    }
    fn effective_mode(&self) -> MemoryAllocationMode {
        self.device.streams[self.index]
            .lock()
            .engine
            .effective_mode()
    }
    fn view(&mut self, binding: ManagedMemoryBinding) -> Result<StorageHandle, IoError> {
        self.device
            .run(self.index, |st| st.engine.get_storage(binding))
    }
    fn pin_raw(&mut self, binding: ManagedMemoryBinding) -> Result<RawPin, IoError> {
        self.device.run(self.index, |st| st.engine.raw_pin(binding))
    }
    fn reclaim_extent(&mut self, view: &StorageHandle) -> Option<ManagedMemoryHandle> {
        self.device
            .run(self.index, |st| st.engine.reclaim_extent(view))
    }
    fn write_view(&mut self, view: &StorageHandle, data: &[u8]) -> Result<(), StorageError> {
        self.device
            .run(self.index, |st| st.engine.storage().write(view, data))
    }
    fn read_view(&mut self, view: &StorageHandle, out: &mut [u8]) -> Result<(), StorageError> {
        self.device
            .run(self.index, |st| st.engine.storage().read(view, out))
    }
    fn fill_view(&mut self, view: &StorageHandle, value: u8) -> Result<(), StorageError> {
        self.device
            .run(self.index, |st| st.engine.storage().fill(view, value))
    }
    fn copy_view(&mut self, src: &StorageHandle, dst: &StorageHandle) -> Result<(), StorageError> {
        self.device
            .run(self.index, |st| st.engine.storage().copy(src, dst))
    }
}
