//! [`HookedResource`]: the hooks' contract for pages, the whole driver
//! allocations a resource makes (`cuMemAlloc`, `cuMemAllocAsync`).
//!
//! A page is announced after it is allocated, before the allocate returns
//! (so before any slice in it is handed out), and withdrawn before the
//! deallocate is called. A stream-ordered free (`cuMemFreeAsync`) is
//! ordered after the work queued on its stream, so that work may still run
//! when the page is withdrawn: a library that must not deregister under
//! running work waits for the stream in its hook.

use std::fmt;
use std::sync::Arc;

use super::{ChunkHooks, MappedChunk, table::Mapped};
use crate::error::StorageError;
use crate::id::{DevicePtr, StreamId};
use crate::resource::DeviceResource;

/// A resource whose every page is announced to [`ChunkHooks`] (see the
/// module's contract and the hooks' own, in [`ChunkHooks`]).
pub struct HookedResource<R> {
    inner: R,
    hooks: Arc<dyn ChunkHooks>,
    live: Mapped,
}

impl<R: DeviceResource> HookedResource<R> {
    /// `inner`, its pages announced to `hooks`.
    pub fn new(inner: R, hooks: Arc<dyn ChunkHooks>) -> Self {
        Self {
            inner,
            hooks,
            live: Mapped::default(),
        }
    }
}

impl<R> fmt::Debug for HookedResource<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookedResource")
            .field("pages", &self.live.len())
            .finish_non_exhaustive()
    }
}

impl<R: DeviceResource> DeviceResource for HookedResource<R> {
    fn allocate(&self, bytes: u64, stream: StreamId) -> Result<DevicePtr, StorageError> {
        let ptr = self.inner.allocate(bytes, stream)?;
        let page = MappedChunk {
            chunk: None,
            ptr,
            bytes,
        };
        if let Err(reason) = self.hooks.mapped(page) {
            if let Err(err) = self.inner.deallocate(ptr, bytes, stream) {
                tracing::error!(%err, ptr = ptr.0, "freeing a page its hook refused failed");
            }
            return Err(StorageError::HookRefused {
                what: "page",
                ptr,
                bytes,
                reason,
            });
        }
        self.live.insert((0, ptr.0), page);
        Ok(ptr)
    }

    fn deallocate(&self, ptr: DevicePtr, bytes: u64, stream: StreamId) -> Result<(), StorageError> {
        let page = self.live.remove((0, ptr.0));
        if let Some(page) = page {
            self.hooks.unmapping(page);
        }
        let freed = self.inner.deallocate(ptr, bytes, stream);
        if let (Err(_), Some(page)) = (&freed, page) {
            // Still allocated: announce it again, so that what is
            // allocated stays what is registered.
            match self.hooks.mapped(page) {
                Ok(()) => self.live.insert((0, ptr.0), page),
                Err(reason) => {
                    tracing::error!(%reason, ptr = ptr.0, "re-registering a page whose free failed");
                }
            }
        }
        freed
    }

    crate::forward_device_resource!(inner);
}

impl<R> Drop for HookedResource<R> {
    fn drop(&mut self) {
        for page in self.live.take_all() {
            self.hooks.unmapping(page);
        }
    }
}
