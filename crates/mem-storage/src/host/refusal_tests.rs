//! How a full host device refuses: as the device, and only that is out of memory.

use crate::{DeviceResource, HostResource, Refuser, StorageError, StreamId};

#[test]
fn a_full_host_device_refuses_as_the_device_and_only_that_is_out_of_memory() {
    let host = HostResource::with_capacity(4096);
    let held = host.allocate(3072, StreamId::DEFAULT).unwrap();
    let err = host.allocate(3072, StreamId::DEFAULT).unwrap_err();
    host.deallocate(held, 3072, StreamId::DEFAULT).unwrap();
    assert!(err.is_out_of_memory(), "{err}");
    assert!(err.is_retryable());
    assert_eq!(err.refused_by(), Some(Refuser::Device));
    assert!(err.to_string().contains("refused by the device"), "{err}");
    let injected = StorageError::Injected {
        call: 1,
        operation: "allocate",
    };
    assert!(injected.is_retryable() && !injected.is_out_of_memory());
    assert_eq!(injected.refused_by(), None);
    let too_big = StorageError::TooBig {
        backend: "host",
        refused_by: Refuser::DeviceBudget,
        requested: 2,
        max: 1,
    };
    assert!(!too_big.is_out_of_memory() && !too_big.is_retryable());
    assert_eq!(too_big.refused_by(), Some(Refuser::DeviceBudget));
}
