//! What a capture needs from the runtime: its pools and its streams.
//!
//! [`CapturePool`] is the memory side of one pool, object-safe so a device
//! pool and a pinned-host staging pool over different storages sit in one
//! list; it is implemented for every [`MemoryManagement`]. [`CaptureStreams`]
//! is the device: the pools a recording touches, the relocation to run before
//! warmup, the runtime's own deferred frees, and marking the recording
//! stream (see [`crate::RecordingFlag`]).

use mem_pools::{
    CaptureState, IoError, ManagedMemoryBinding, ManagedMemoryHandle, MemoryAllocationMode,
    MemoryManagement, RawPin,
};
use mem_storage::{ComputeStorage, StorageError, StorageHandle};

/// The memory side of capture for one pool (see [`MemoryManagement`]'s
/// `capture_*` methods for the semantics each forwards to).
pub trait CapturePool {
    /// Open the window: force Persistent, start priming and touching.
    fn capture_begin(&mut self);
    /// End priming: the slices warmup retained become free in the pool.
    fn capture_priming_end(&mut self);
    /// Close the window: restore the mode, return a handle per touched slice.
    fn capture_end(&mut self) -> Vec<ManagedMemoryHandle>;
    /// Close the window of an abandoned capture: restore the mode, re-claim
    /// and pin nothing (what the window freed stays free).
    fn capture_abort(&mut self);
    /// Plain data about the window.
    fn capture_state(&self) -> CaptureState;
    /// Free every slice whose last handle dropped. Inside a window this gives
    /// nothing back to the storage; it only makes the slices reusable.
    fn drain_frees(&mut self);
    /// The mode reservations use now.
    fn effective_mode(&self) -> MemoryAllocationMode;
    /// The storage view of an allocation (page id, offset, size).
    fn view(&mut self, binding: ManagedMemoryBinding) -> Result<StorageHandle, IoError>;
    /// Pin an allocation the graph uses but did not reserve in the window:
    /// its page does not move while the returned guard lives (mem-pools'
    /// counted raw pin). The guard is the caller's own — dropping it, on any
    /// thread, ends that pin and no other, never the owner's
    /// `get_resource` flag.
    fn pin_raw(&mut self, binding: ManagedMemoryBinding) -> Result<RawPin, IoError>;
    /// Re-claim exactly the free extent `view` names (page, offset, size)
    /// as a pin handle; `None` (nothing changed) when it is not free.
    fn reclaim_extent(&mut self, view: &StorageHandle) -> Option<ManagedMemoryHandle>;
    /// Write `data` at the start of a view.
    fn write_view(&mut self, view: &StorageHandle, data: &[u8]) -> Result<(), StorageError>;
    /// Read the first `out.len()` bytes of a view.
    fn read_view(&mut self, view: &StorageHandle, out: &mut [u8]) -> Result<(), StorageError>;
    /// Set every byte of a view.
    fn fill_view(&mut self, view: &StorageHandle, value: u8) -> Result<(), StorageError>;
    /// Copy `src` into `dst` (same size) within this pool's storage.
    fn copy_view(&mut self, src: &StorageHandle, dst: &StorageHandle) -> Result<(), StorageError>;
}

impl<S: ComputeStorage> CapturePool for MemoryManagement<S> {
    fn capture_begin(&mut self) {
        MemoryManagement::capture_begin(self);
    }
    fn capture_priming_end(&mut self) {
        MemoryManagement::capture_priming_end(self);
    }
    fn capture_end(&mut self) -> Vec<ManagedMemoryHandle> {
        MemoryManagement::capture_end(self)
    }
    fn capture_abort(&mut self) {
        MemoryManagement::capture_abort(self);
    }
    fn capture_state(&self) -> CaptureState {
        MemoryManagement::capture_state(self)
    }
    fn drain_frees(&mut self) {
        self.drain_drops();
    }
    fn effective_mode(&self) -> MemoryAllocationMode {
        MemoryManagement::effective_mode(self)
    }
    fn view(&mut self, binding: ManagedMemoryBinding) -> Result<StorageHandle, IoError> {
        self.get_storage(binding)
    }
    fn pin_raw(&mut self, binding: ManagedMemoryBinding) -> Result<RawPin, IoError> {
        self.raw_pin(binding)
    }
    fn reclaim_extent(&mut self, view: &StorageHandle) -> Option<ManagedMemoryHandle> {
        MemoryManagement::reclaim_extent(self, view)
    }
    fn write_view(&mut self, view: &StorageHandle, data: &[u8]) -> Result<(), StorageError> {
        self.storage().write(view, data)
    }
    fn read_view(&mut self, view: &StorageHandle, out: &mut [u8]) -> Result<(), StorageError> {
        self.storage().read(view, out)
    }
    fn fill_view(&mut self, view: &StorageHandle, value: u8) -> Result<(), StorageError> {
        self.storage().fill(view, value)
    }
    fn copy_view(&mut self, src: &StorageHandle, dst: &StorageHandle) -> Result<(), StorageError> {
        self.storage().copy(src, dst)
    }
}

/// A device's streams, as a capture needs them.
///
/// The runtime implements it once per device. Pool indices are positions in
/// [`CaptureStreams::capture_pools`]; they must name the same pools on every
/// call, since graphs and recorded operations refer to pools by index.
pub trait CaptureStreams {
    /// How many streams of the device record a graph now.
    fn recording_streams(&mut self) -> usize;

    /// Mark the recording stream as recording (`true`, from `prepare`) or
    /// not (`false`, at seal or abort). While any stream is marked, nothing
    /// may move or be freed on any stream (relocation and cleanup refuse);
    /// [`crate::RecordingFlag`] is a ready-made counter for this.
    fn set_recording(&mut self, recording: bool);

    /// Move every stream's memory off outdated pages, before the warmup.
    ///
    /// A recording may touch memory any stream owns, and every page it
    /// touches is pinned for the graph's life, where no relocation can empty
    /// it. With mem-relocate this is
    /// `RelocatingStreams::relocate_device(RelocationReason::Capture)`.
    fn relocate_device(&mut self);

    /// Whether any stream's memory holds outdated pages, the ones
    /// [`CaptureStreams::relocate_device`] would move.
    ///
    /// A capture may open beside another stream's recording only when this
    /// is `false`: the pre-warmup relocation cannot run under a recording
    /// (it would move pages that recording touches), and with nothing
    /// outdated it has nothing to do. Arenas never leave pages outdated
    /// (their addresses never move), so on arenas streams capture at once.
    /// The default, `true`, keeps one recording per device for runtimes
    /// that cannot tell.
    fn device_has_outdated(&mut self) -> bool {
        true
    }

    /// Every pool the recording touches: the recording stream's device pool
    /// and any pinned-host staging pool, in a fixed order.
    fn capture_pools(&mut self) -> Vec<&mut dyn CapturePool>;

    /// Give back what the runtime itself defers (e.g. a double-buffered
    /// drop queue of staging buffers), so warmup's buffers come back to the
    /// pools before priming ends. Nothing by default.
    fn drain_deferred_frees(&mut self) {}
}
