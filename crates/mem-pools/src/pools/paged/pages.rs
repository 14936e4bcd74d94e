//! Page lifecycle: allocate a page (one free slice wide), map a lazy page
//! on first use, and release an empty page back to the storage.
//!
//! Allocation does its fallible steps (a node index, the storage call, a
//! page index) before it links anything, so a refusal leaves the pool as it
//! was. Releases are deferred by the storage until the engine flushes.

use mem_storage::{ComputeStorage, StorageHandle};

use crate::config::PoolType;
use crate::error::IoError;
use crate::pools::paged::pool::Pool;
use crate::tables::chunk_map::ChunkMap;
use crate::tables::floor::Tables;
use crate::tables::nodes::{Page, SliceNode};
use crate::tables::slots::NIL;

impl Pool {
    /// `found` (a free slice the pool's index gave), else the one free
    /// slice of a new page of `size` bytes ([`Pool::new_page`]): every
    /// pool kind's reservation starts here.
    #[inline]
    pub(crate) fn found_or_new_page<S: ComputeStorage>(
        &mut self,
        t: &mut Tables,
        storage: &mut S,
        found: Option<u32>,
        (pool, size): (u32, u64),
        (requested, may_allocate): (u64, bool),
    ) -> Result<u32, IoError> {
        match found {
            Some(slice) => Ok(slice),
            None => {
                let page = self.new_page(t, storage, (pool, size), (requested, may_allocate))?;
                Ok(t.pages[page].head)
            }
        }
    }

    /// A new page of `size` bytes in `pool`'s current list, one free slice wide.
    ///
    /// `may_allocate` false (inside a capture window) refuses with
    /// [`IoError::CaptureWouldAllocate`] naming `requested`.
    pub(crate) fn new_page<S: ComputeStorage>(
        &mut self,
        t: &mut Tables,
        storage: &mut S,
        (pool, size): (u32, u64),
        (requested, may_allocate): (u64, bool),
    ) -> Result<u32, IoError> {
        if !may_allocate {
            return Err(IoError::CaptureWouldAllocate {
                size: requested,
                page_size: size,
            });
        }
        let arena = matches!(self.kind, PoolType::VirtualArena { .. });
        // An arena page is a virtual range: no memory until chunks map.
        let granularity = match arena {
            true => Some(storage.chunk_granularity().ok_or(IoError::Storage(
                storage.no_virtual_memory("an arena pool (VirtualArena)"),
            ))?),
            false => None,
        };
        let size = match granularity {
            Some(g) => size.checked_next_multiple_of(g).unwrap_or(size),
            None => size,
        };
        let node = t.slices.insert(SliceNode::free(NIL, 0, size))?;
        let handle = if t.lazy && !arena {
            None
        } else {
            let allocated = match arena {
                true => storage.alloc_virtual(size),
                false => storage.alloc(size),
            };
            match allocated {
                Ok(h) => Some(h),
                Err(err) => {
                    t.slices.remove(node);
                    return Err(err.into());
                }
            }
        };
        let pos = self.current.len() as u32;
        let page = Page {
            uid: t.next_page_uid,
            pool,
            size,
            storage: handle,
            head: node,
            live: 0,
            live_bytes: 0,
            outdated: false,
            pos,
            raw_out: 0,
            pinned: 0,
            quarantined: 0,
            idle_since: t.clock,
            // Built on the page's first extent lookup (`extent.rs`).
            starts: None,
            chunks: granularity.map(|g| {
                let mut map = ChunkMap::new(g);
                (map.submitted, map.completed) = t.progress;
                Box::new(map)
            }),
        };
        let page = match t.pages.insert(page) {
            Ok(p) => p,
            Err(err) => {
                t.slices.remove(node);
                if let Some(h) = handle {
                    let _ = storage.dealloc(h.id);
                }
                return Err(err);
            }
        };
        t.next_page_uid += 1;
        if let Some(h) = handle {
            t.by_storage.insert(h.id, page);
        }
        t.slices[node].page = page;
        let p = self;
        p.current.push(page);
        p.usage.pages += 1;
        // An arena's reserved bytes are its mapped chunks (`arena/chunks.rs`).
        let held = if arena { 0 } else { size };
        p.usage.bytes_reserved += held;
        if handle.is_none() {
            p.usage.pages_unmapped += 1;
        }
        p.usage.mark();
        t.stats.on_page(held);
        if arena {
            t.stats.chunks.virtual_bytes += size;
        }
        if handle.is_some() {
            t.stats.storage_allocs += 1;
        }
        p.index.insert(&mut t.slices, node);
        Ok(page)
    }

    /// Give empty `page` of this pool back to the storage (deferred until
    /// `flush`); an arena page's chunks went first (`Core::release_page`).
    pub(crate) fn release_page<S: ComputeStorage>(
        &mut self,
        t: &mut Tables,
        storage: &mut S,
        page: u32,
    ) {
        let Some(info) = t.pages.remove(page) else {
            return;
        };
        let arena = info.chunks.is_some();
        let mut cursor = info.head;
        while cursor != NIL {
            let next = t.slices[cursor].next;
            self.index.remove(&mut t.slices, cursor);
            t.slices.remove(cursor);
            cursor = next;
        }
        let pool = self;
        let list = if info.outdated {
            if let Some(n) = pool.outdated_sizes.get_mut(&info.size) {
                *n -= 1;
                if *n == 0 {
                    pool.outdated_sizes.remove(&info.size);
                }
            }
            &mut pool.outdated
        } else {
            &mut pool.current
        };
        list.swap_remove(info.pos as usize);
        let moved = list.get(info.pos as usize).copied();
        pool.usage.pages -= 1;
        let held = if arena { 0 } else { info.size };
        pool.usage.bytes_reserved -= held;
        if info.storage.is_none() {
            pool.usage.pages_unmapped -= 1;
        }
        if let Some(moved) = moved {
            t.pages[moved].pos = info.pos;
        }
        t.stats.on_page_release(held);
        if arena {
            t.stats.chunks.virtual_bytes -= info.size;
        }
        if let Some(handle) = info.storage {
            t.by_storage.remove(&handle.id);
            t.stats.storage_frees += 1;
            if let Err(err) = storage.dealloc(handle.id) {
                tracing::warn!(%err, page = info.uid, "page release refused by the storage");
            }
        }
    }

    /// Back lazy `page` of this pool with storage memory (no-op when
    /// mapped).
    pub(crate) fn materialize<S: ComputeStorage>(
        &mut self,
        t: &mut Tables,
        storage: &mut S,
        page: u32,
        may_allocate: bool,
    ) -> Result<StorageHandle, IoError> {
        if let Some(handle) = t.pages[page].storage {
            return Ok(handle);
        }
        let size = t.pages[page].size;
        if !may_allocate {
            return Err(IoError::CaptureWouldAllocate {
                size,
                page_size: size,
            });
        }
        let handle = storage.alloc(size)?;
        t.pages[page].storage = Some(handle);
        t.by_storage.insert(handle.id, page);
        self.usage.pages_unmapped -= 1;
        t.stats.storage_allocs += 1;
        Ok(handle)
    }
}
