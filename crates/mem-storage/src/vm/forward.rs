//! `VirtualMemory` through `Arc`, `Box` and `&`: one backend shared by every
//! pool of a device, or held as a trait object.

use std::sync::Arc;

use crate::vm::VirtualMemory;

macro_rules! forward_vm {
    ($ty:ty) => {
        impl<V: VirtualMemory + ?Sized> VirtualMemory for $ty {
            crate::forward_virtual_memory!(
                *: reserve_range, free_range, create_chunk, release_chunk, map, unmap
            );
            crate::forward_virtual_memory!(*);
        }
    };
}

forward_vm!(Arc<V>);
forward_vm!(Box<V>);
forward_vm!(&V);
