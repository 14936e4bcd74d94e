//! `ResourceStorage`: [`ComputeStorage`] over any [`DeviceResource`].
//!
//! One page is one resource allocation, on the storage's stream. Pages live
//! in a map keyed by a never-reused [`StorageId`]; `dealloc` moves a page to
//! a queue that `flush` gives back, so a page a stream may still be using is
//! freed at a point the caller chooses. Every view is checked against its
//! page before an address is formed, and every byte movement again by the
//! resource, so a stale id or an overrunning view is an error, not a write
//! into a neighbour.

use std::collections::HashMap;

use crate::error::StorageError;
use crate::id::{DevicePtr, StorageHandle, StorageId, StreamId};
use crate::resource::DeviceResource;
use crate::storage::virtual_pages::VirtualPages;
use crate::storage::{ComputeStorage, DeviceView};

mod compute_storage;
mod named;
mod virtual_memory;

pub use named::{HostStorage, SimulatedStorage};

#[derive(Debug, Clone, Copy)]
struct Page {
    ptr: DevicePtr,
    size: u64,
}

/// [`ComputeStorage`] over any [`DeviceResource`], on one stream.
#[derive(Debug)]
pub struct ResourceStorage<R: DeviceResource> {
    resource: R,
    stream: StreamId,
    live: HashMap<StorageId, Page>,
    pending: Vec<(StorageId, Page)>,
    next_id: u64,
    bytes: u64,
    /// Virtual pages and chunks, when given a [`VirtualMemory`](crate::VirtualMemory).
    pub(crate) virt: Option<VirtualPages>,
}

impl<R: DeviceResource> ResourceStorage<R> {
    /// Pages from `resource`, allocated and freed in order on the default stream.
    pub fn new(resource: R) -> Self {
        Self::on_stream(resource, StreamId::DEFAULT)
    }

    /// Pages from `resource`, allocated and freed in order on `stream`.
    pub fn on_stream(resource: R, stream: StreamId) -> Self {
        Self {
            resource,
            stream,
            live: HashMap::new(),
            pending: Vec::new(),
            next_id: 0,
            bytes: 0,
            virt: None,
        }
    }

    /// A fresh page id.
    fn next_page_id(&mut self) -> StorageId {
        let id = StorageId(self.next_id);
        self.next_id += 1;
        id
    }

    /// The resource pages come from.
    pub fn resource(&self) -> &R {
        &self.resource
    }

    /// The stream pages are allocated, freed and copied on.
    pub fn stream(&self) -> StreamId {
        self.stream
    }

    /// Number of live pages (not counting pages queued for deallocation).
    pub fn page_count(&self) -> usize {
        self.live.len()
    }

    /// Address range of a view, checked against its page.
    fn locate(&self, handle: &StorageHandle) -> Result<DeviceView, StorageError> {
        let virtual_page = self
            .virt
            .as_ref()
            .and_then(|v| v.page(handle.id))
            .map(|p| Page {
                ptr: p.range.base,
                size: p.range.len,
            });
        let page = virtual_page
            .as_ref()
            .or_else(|| self.live.get(&handle.id))
            .ok_or(StorageError::UnknownId { id: handle.id })?;
        let out_of_bounds = StorageError::OutOfBounds {
            id: handle.id,
            start: handle.offset(),
            end: handle.offset().saturating_add(handle.size()),
            page_size: page.size,
        };
        match handle.utilization.end() {
            Some(end) if end <= page.size => Ok(DeviceView {
                page: handle.id,
                ptr: page.ptr.checked_add(handle.offset()).ok_or(out_of_bounds)?,
                size: handle.size(),
            }),
            _ => Err(out_of_bounds),
        }
    }
}

impl<R: DeviceResource> Drop for ResourceStorage<R> {
    fn drop(&mut self) {
        // Give everything back; a storage going away owns no memory after.
        let _ = self.synchronize();
        if let Some(virt) = self.virt.as_mut() {
            virt.release_all();
        }
        // In id order, not the map's: the same program frees in the same
        // order in every process (a logged or faulted teardown replays).
        let mut pages: Vec<_> = self.live.drain().chain(self.pending.drain(..)).collect();
        pages.sort_unstable_by_key(|(id, _)| *id);
        for (id, page) in pages {
            if let Err(err) = self.resource.deallocate(page.ptr, page.size, self.stream) {
                tracing::error!(%id, %err, "page could not be freed while dropping its storage");
            }
        }
    }
}
