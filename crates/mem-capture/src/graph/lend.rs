//! Sharing a [`GraphPool`] (PyTorch's `pool=` between graphs).
//!
//! A capture made with [`crate::Capture::sharing`] starts by lending the
//! pool's *temporaries* — pinned slices no one but the graphs holds — to its
//! window, so the new graph reuses them instead of growing the pool. When the
//! window closes (seal or abort) every lent slice is pinned again: by the new
//! graph's `capture_end` if it touched it, otherwise re-claimed from the
//! pool exactly (`reclaim_extent`: the same page, offset and size, as a pin
//! handle, so it does not move under relocation either). A slice someone else took meanwhile is lost to the graphs that used
//! it; they refuse to replay. The rule that makes lending safe: graphs of
//! one pool never run concurrently, and a graph's outputs are read before
//! another graph of the pool replays.

use mem_pools::ManagedMemoryHandle;
use mem_storage::{StorageHandle, StorageUtilization};

use crate::graph::pins::{GraphPool, PinKey};
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

/// Re-claim exactly the extent at `key` (`size` bytes) as a pin handle:
/// `None` when that extent is not free (someone else took it, its page went
/// back). The engine's own exact re-claim, the one `capture_end` uses.
fn reclaim(pool: &mut dyn CapturePool, key: PinKey, size: u64) -> Option<ManagedMemoryHandle> {
    pool.reclaim_extent(&StorageHandle {
        id: key.page,
        utilization: StorageUtilization {
            offset: key.offset,
            size,
        },
    })
}
