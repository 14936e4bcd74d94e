//! Sharing a [`GraphPool`] (PyTorch's `pool=` between graphs).
//!
//! A capture made with [`crate::Capture::sharing`] starts by lending the
//! pool's *temporaries* — pinned slices no one but the graphs holds — to its
//! window, so the new graph reuses them instead of growing the pool. When the
//! window closes (seal or abort) every lent slice is pinned again: by the new
//! graph's `capture_end` if it touched it, otherwise re-claimed from the
//! pool. A slice someone else took meanwhile is lost to the graphs that used
//! it; they refuse to replay. The rule that makes lending safe: graphs of
//! one pool never run concurrently, and a graph's outputs are read before
//! another graph of the pool replays.

use mem_pools::ManagedMemoryHandle;

use crate::pins::{GraphPool, PinKey};
use crate::streams::CapturePool;

impl GraphPool {
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
