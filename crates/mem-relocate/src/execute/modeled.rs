//! Relocation copies on a backend whose work completes in call order (the
//! host and simulated devices), charged as a GPU would pay for them.
//!
//! [`ModeledCopyQueue`] copies through the storage, like
//! [`StorageCopyQueue`], and charges its [`DriverMeter`] the calls
//! [`crate::CudaCopyQueue`] makes for the same relocation on CUDA: an event
//! recorded on each of the device's `streams` (the copy stream waits on
//! each, the host does not), then one on the copy stream and the host's
//! wait for it. `StorageCopyQueue` synchronized the storage before and
//! after instead, which on these backends waits for nothing but was
//! charged two stream synchronizes per relocation and no event: not what
//! the CUDA path does (the stand-in driver's parity test,
//! crates/gpumem/tests/driver_parity.rs, counts both).

use std::sync::Arc;

use mem_pools::CopyQueue;
use mem_storage::{ComputeStorage, DriverCall, DriverMeter, StorageError, StorageHandle};

#[cfg(doc)]
use mem_pools::StorageCopyQueue;

/// Storage copies charged as CUDA's copy stream and events (module docs).
#[derive(Debug, Clone)]
pub struct ModeledCopyQueue {
    streams: u64,
    meter: Arc<DriverMeter>,
}

impl ModeledCopyQueue {
    /// A queue for a device of `streams` streams charging `meter`.
    pub fn new(streams: usize, meter: Arc<DriverMeter>) -> Self {
        ModeledCopyQueue {
            streams: streams as u64,
            meter,
        }
    }
}

impl<S: ComputeStorage> CopyQueue<S> for ModeledCopyQueue {
    fn wait_device(&mut self, _storage: &mut S) -> Result<(), StorageError> {
        // Work on these backends is complete when its call returns.
        self.meter
            .charge_many(DriverCall::EventRecord, self.streams, 0);
        Ok(())
    }

    fn copy(
        &mut self,
        storage: &mut S,
        src: &StorageHandle,
        dst: &StorageHandle,
    ) -> Result<(), StorageError> {
        storage.copy(src, dst)
    }

    fn wait_copies(&mut self, _storage: &mut S) -> Result<(), StorageError> {
        self.meter.charge(DriverCall::EventRecord, 0);
        self.meter.charge(DriverCall::StreamSynchronize, 0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mem_storage::{DriverCosts, HostStorage};

    #[test]
    fn a_relocation_is_charged_an_event_per_stream_then_one_event_and_one_host_wait() {
        let meter = Arc::new(DriverMeter::new(DriverCosts::default()));
        let mut queue = ModeledCopyQueue::new(3, meter.clone());
        let mut storage = HostStorage::host();
        let a = storage.alloc(4096).unwrap();
        let b = storage.alloc(4096).unwrap();
        storage.write(&a, &[7; 4096]).unwrap();
        CopyQueue::wait_device(&mut queue, &mut storage).unwrap();
        queue.copy(&mut storage, &a, &b).unwrap();
        CopyQueue::<HostStorage>::wait_copies(&mut queue, &mut storage).unwrap();
        let mut back = vec![0; 4096];
        storage.read(&b, &mut back).unwrap();
        assert_eq!(back, vec![7; 4096], "the bytes moved");
        let t = meter.snapshot();
        assert_eq!(t.calls(DriverCall::EventRecord), 4);
        assert_eq!(t.calls(DriverCall::StreamSynchronize), 1);
        assert_eq!(t.total_calls(), 5);
    }
}
