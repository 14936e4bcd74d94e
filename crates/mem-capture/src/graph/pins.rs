//! Graph memory: the slices a graph replays against, pinned while it lives.
//!
//! A [`GraphPool`] holds one handle per pinned slice, keyed by where the
//! slice is (pool, page, offset) — the address a graph baked in. Each graph
//! holds a [`PinClaim`] on the keys it uses; when the last claim on a key
//! drops, the handle drops and the pool may reuse the slice.
//!
//! Several graphs may share one pool (see `lend.rs` and `docs/capture.md`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use mem_pools::ManagedMemoryHandle;
use mem_storage::{StorageHandle, StorageId};

use crate::error::CaptureError;
use crate::streams::CapturePool;

/// Where a pinned slice starts: what a graph's recorded operations point at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct PinKey {
    pub(crate) pool: usize,
    pub(crate) page: StorageId,
    pub(crate) offset: u64,
}

impl PinKey {
    pub(crate) fn of(pool: usize, view: &StorageHandle) -> Self {
        Self {
            pool,
            page: view.id,
            offset: view.offset(),
        }
    }
}

#[derive(Debug)]
pub(crate) struct PinEntry {
    /// Requested bytes when last pinned (what a re-claim reserves).
    pub(crate) size: u64,
    /// `None` while lent to a sharing capture's window.
    pub(crate) handle: Option<ManagedMemoryHandle>,
    /// Graphs claiming this slice.
    users: usize,
}

#[derive(Debug, Default)]
pub(crate) struct PinSet {
    pub(crate) entries: HashMap<PinKey, PinEntry>,
    pools: Option<usize>,
}

/// The memory one or more graphs replay against (cheap to clone).
#[derive(Debug, Clone, Default)]
pub struct GraphPool {
    inner: Arc<Mutex<PinSet>>,
}

impl GraphPool {
    /// An empty pool for graphs to share.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, PinSet> {
        // Nothing here panics while holding the lock; recover regardless.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Slices pinned now (lent ones excluded).
    pub fn pinned_slices(&self) -> usize {
        self.lock()
            .entries
            .values()
            .filter(|e| e.handle.is_some())
            .count()
    }

    /// Requested bytes of the slices pinned now.
    pub fn pinned_bytes(&self) -> u64 {
        let set = self.lock();
        set.entries
            .values()
            .filter_map(|e| e.handle.as_ref().map(ManagedMemoryHandle::size))
            .sum()
    }

    /// Refuse streams offering a different number of pools than the graphs.
    pub(crate) fn check_pools(&self, pools: usize) -> Result<(), CaptureError> {
        match self.lock().pools {
            Some(expected) if expected != pools => Err(CaptureError::PoolCountChanged {
                expected,
                found: pools,
            }),
            _ => Ok(()),
        }
    }

    /// Pin what a `capture_end` returned and claim it for one graph.
    pub(crate) fn adopt(
        &self,
        pools: usize,
        pinned: Vec<(PinKey, ManagedMemoryHandle)>,
    ) -> PinClaim {
        let mut set = self.lock();
        set.pools = Some(pools);
        let mut keys = Vec::with_capacity(pinned.len());
        for (key, handle) in pinned {
            let entry = set.entries.entry(key).or_insert(PinEntry {
                size: handle.size(),
                handle: None,
                users: 0,
            });
            entry.size = handle.size();
            entry.handle = Some(handle);
            entry.users += 1;
            keys.push(key);
        }
        PinClaim {
            pool: self.clone(),
            keys,
        }
    }

    /// Check that every key still names a live slice at the same place.
    pub(crate) fn verify(
        &self,
        keys: &[PinKey],
        pools: &mut [&mut dyn CapturePool],
    ) -> Result<(), CaptureError> {
        let set = self.lock();
        let count = pools.len();
        for key in keys {
            let invalid = |why, size| CaptureError::GraphMemoryInvalidated {
                pool: key.pool,
                page: key.page.0,
                offset: key.offset,
                size,
                why,
            };
            let Some(entry) = set.entries.get(key) else {
                return Err(invalid("was unpinned", 0));
            };
            let Some(handle) = &entry.handle else {
                return Err(invalid("was given to another allocation", entry.size));
            };
            let pool = pools.get_mut(key.pool).ok_or(CaptureError::UnknownPool {
                pool: key.pool,
                pools: count,
            })?;
            match pool.view(handle.binding()) {
                Ok(view) if PinKey::of(key.pool, &view) == *key => {}
                Ok(_) => return Err(invalid("moved (its handle was rebound)", entry.size)),
                Err(_) => return Err(invalid("was freed", entry.size)),
            }
        }
        Ok(())
    }

    fn unpin(&self, keys: &[PinKey]) {
        let mut set = self.lock();
        for key in keys {
            if let Some(entry) = set.entries.get_mut(key) {
                entry.users = entry.users.saturating_sub(1);
                if entry.users == 0 {
                    set.entries.remove(key);
                }
            }
        }
    }
}

/// One graph's claim on its pinned slices; dropping it unpins them.
#[derive(Debug)]
pub(crate) struct PinClaim {
    pub(crate) pool: GraphPool,
    pub(crate) keys: Vec<PinKey>,
}

impl Drop for PinClaim {
    fn drop(&mut self) {
        self.pool.unpin(&self.keys);
    }
}
