//! The virtual-page side of a [`ResourceStorage`]: given a
//! [`VirtualMemory`], it serves the `ComputeStorage` virtual-page calls the
//! pool engine's arenas use (the table itself is `virtual_pages.rs`), and
//! moves bytes between a virtual page and a resource page through the host.

use std::sync::Arc;

use crate::error::StorageError;
use crate::id::{StorageHandle, StorageId};
use crate::resource::DeviceResource;
use crate::storage::ComputeStorage;
use crate::storage::resource_storage::ResourceStorage;
use crate::storage::virtual_pages::VirtualPages;
use crate::vm::VirtualMemory;

impl<R: DeviceResource> ResourceStorage<R> {
    /// Also serve virtual pages (arena pools) from `vm`, which may be shared
    /// with other storages of the same device: each storage frees only the
    /// ranges and chunks it made.
    pub fn with_virtual_memory(mut self, vm: Arc<dyn VirtualMemory>) -> Self {
        self.virt = Some(VirtualPages::new(vm));
        self
    }

    /// The virtual memory this storage's virtual pages come from.
    pub fn virtual_memory(&self) -> Option<&Arc<dyn VirtualMemory>> {
        self.virt.as_ref().map(|v| &v.vm)
    }

    pub(crate) fn virt_mut(
        &mut self,
        operation: &'static str,
    ) -> Result<&mut VirtualPages, StorageError> {
        self.virt.as_mut().ok_or(StorageError::Unsupported {
            operation,
            backend: "this storage (no virtual memory)",
        })
    }

    /// Whether `id` is a live virtual page.
    pub(crate) fn is_virtual(&self, id: StorageId) -> bool {
        self.virt.as_ref().is_some_and(|v| v.is_live(id))
    }

    /// Copy `bytes` from `src` to `dst` through a host buffer of at most
    /// 1 MiB (a copy between a virtual page and a resource page).
    pub(crate) fn bounce(
        &mut self,
        src: &StorageHandle,
        dst: &StorageHandle,
        bytes: u64,
    ) -> Result<(), StorageError> {
        const PIECE: u64 = 1 << 20;
        let mut buf = vec![0u8; PIECE.min(bytes) as usize];
        let mut done = 0;
        while done < bytes {
            let n = PIECE.min(bytes - done);
            let at = |h: &StorageHandle| StorageHandle {
                id: h.id,
                utilization: crate::id::StorageUtilization {
                    offset: h.offset() + done,
                    size: n,
                },
            };
            let piece = &mut buf[..n as usize];
            self.read(&at(src), piece)?;
            self.write(&at(dst), piece)?;
            done += n;
        }
        Ok(())
    }
}
