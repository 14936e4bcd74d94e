//! Fixtures the capture tests share: an input buffer with known bytes, the
//! bytes the recorded pass should leave, and the "capture left nothing
//! open" check every abort path makes.

use mem_capture::{Capture, CaptureStage, CaptureStreams, GraphBackend, HostGraphBackend};
use mem_pools::{CaptureState, ManagedMemoryHandle, MemoryAllocationMode};

use super::{HostDevice, pattern, read};

/// A `size`-byte buffer on the recording stream holding `pattern(seed, size)`.
pub fn input(dev: &mut HostDevice, size: u64, seed: u64) -> ManagedMemoryHandle {
    let mm = &mut dev.streams[0];
    let h = mm.reserve(size).unwrap();
    mm.write(h.binding(), &pattern(seed, size as usize))
        .unwrap();
    h
}

/// A one-stream device (which records) with an [`input`] on it.
pub fn device_with_input(
    size: u64,
    seed: u64,
) -> (HostDevice, HostGraphBackend, ManagedMemoryHandle) {
    let mut dev = HostDevice::new(1, 1);
    let inp = input(&mut dev, size, seed);
    (dev, HostGraphBackend::new(), inp)
}

/// What the recorded pass (`out = input + seed`) leaves in `out`.
pub fn expected(dev: &mut HostDevice, input: &ManagedMemoryHandle, seed: u8) -> Vec<u8> {
    let size = input.size() as usize;
    read(&mut dev.streams[0], input, size)
        .iter()
        .map(|b| b.wrapping_add(seed))
        .collect()
}

/// Nothing is left open: the capture is idle, no stream is marked, the
/// backend does not capture, every capture pool is out of its window in
/// `Auto` mode, and the recording stream holds `allocs` allocations.
pub fn assert_restored<B: GraphBackend>(
    dev: &mut HostDevice,
    backend: &B,
    capture: &Capture,
    allocs: u64,
) {
    assert_eq!(capture.stage(), CaptureStage::Idle);
    assert!(!dev.flag.is_recording());
    assert!(!backend.is_capturing());
    for pool in dev.capture_pools() {
        assert_eq!(pool.capture_state(), CaptureState::default());
        assert_eq!(pool.effective_mode(), MemoryAllocationMode::Auto);
    }
    assert_eq!(dev.streams[0].memory_usage().number_allocs, allocs);
}
