//! Graph memory: the slices a graph replays against, pinned while it lives.
//!
//! A [`GraphPool`] holds one handle per pinned slice, keyed by where the
//! slice is (pool, page, offset) — the address a graph baked in. Each graph
//! holds a [`PinClaim`] on the keys it uses; when the last claim on a key
//! drops, the handle drops and the pool may reuse the slice.
//!
//! **Sharing** (PyTorch's `pool=` between graphs): a capture made with
//! [`crate::Capture::sharing`] starts by giving the pool's *temporaries* —
//! pinned slices no one but the graphs holds — back to the window, so the
//! new graph reuses them instead of growing the pool. At its end every such
//! slice is pinned again: by the new graph's `capture_end` if it touched it,
//! otherwise re-claimed from the pool. The rule that makes this safe is in
//! `docs/capture.md`: graphs of one pool never run concurrently.

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
struct PinEntry {
    /// Requested bytes when last pinned (what a re-claim reserves).
    size: u64,
    /// `None` while lent to a sharing capture's window.
    handle: Option<ManagedMemoryHandle>,
    /// Graphs claiming this slice.
    users: usize,
}

#[derive(Debug, Default)]
struct PinSet {
    entries: HashMap<PinKey, PinEntry>,
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

    fn lock(&self) -> MutexGuard<'_, PinSet> {
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

    /// Lend every temporary (a slice only the graphs hold) to an open
    /// window: drop its handle so the window may reuse it.
    pub(crate) fn lend_temporaries(&self) -> Vec<PinKey> {
        let mut set = self.lock();
        let mut lent = Vec::new();
        for (key, entry) in &mut set.entries {
            if entry
                .handle
                .as_ref()
                .is_some_and(ManagedMemoryHandle::can_mut)
            {
                entry.handle = None;
                lent.push(*key);
            }
        }
        lent
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

    /// Pin again every lent slice no window took; returns the ones lost
    /// (now someone else's), whose graphs will refuse to replay.
    pub(crate) fn reclaim_lent(
        &self,
        lent: &[PinKey],
        pools: &mut [&mut dyn CapturePool],
    ) -> usize {
        let mut set = self.lock();
        let mut lost = 0;
        for key in lent {
            let Some(entry) = set.entries.get_mut(key) else {
                continue;
            };
            if entry.handle.is_some() {
                continue;
            }
            match pools.get_mut(key.pool) {
                Some(pool) => entry.handle = reclaim(&mut **pool, *key, entry.size),
                None => entry.handle = None,
            }
            if entry.handle.is_none() {
                lost += 1;
                tracing::warn!(
                    ?key,
                    size = entry.size,
                    "a lent graph slice was taken; its graphs will refuse to replay"
                );
            }
        }
        lost
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

/// Reserve `size` persistent bytes until the pool hands out the slice at
/// `key`; give back the others. `None` when that slice is not free.
fn reclaim(pool: &mut dyn CapturePool, key: PinKey, size: u64) -> Option<ManagedMemoryHandle> {
    // Each persistent slice is its own page with an exact-size free list, so
    // at most the free slices of this size come back before ours does.
    const MAX_TRIES: usize = 4096;
    let mut others = Vec::new();
    let mut found = None;
    for _ in 0..MAX_TRIES {
        let allocs = pool.storage_allocs();
        let Ok(handle) = pool.reserve_persistent(size) else {
            break;
        };
        let here = pool
            .view(handle.binding())
            .ok()
            .map(|v| PinKey::of(key.pool, &v));
        if here == Some(key) {
            found = Some(handle);
            break;
        }
        others.push(handle);
        if pool.storage_allocs() != allocs {
            break; // a fresh page: no free slice of this size is left
        }
    }
    drop(others);
    found
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
