//! Giving memory back and replacing the layout: `cleanup` and `install_pools`.
//!
//! Cleanup policy:
//! - during a capture nothing is given back (a free would synchronize and
//!   break the recording); the drop queue is still drained, so slices freed
//!   in the window are reusable in it;
//! - every cleanup releases outdated pages that have emptied;
//! - a periodic cleanup (`explicit == false`) releases exclusive pages idle
//!   for their pool's `dealloc_period` (reservations also do this, gated);
//! - an explicit cleanup releases every empty page of every pool, persistent
//!   included, then flushes the storage.

use mem_storage::ComputeStorage;

use crate::config::{MemoryConfiguration, MemoryDeviceProperties};
use crate::engine::state::MemoryManagement;
use crate::error::InstallMemoryPoolsError;
use crate::pools::paged::pool::Pool;
use crate::pools::persistent::PERSISTENT;

impl<S: ComputeStorage> MemoryManagement<S> {
    /// `cleanup`'s body (the policy is in the module docs); with
    /// `keep_ranges` (`release_cached`) an empty arena gives back its
    /// chunks but keeps its address range.
    pub(crate) fn give_back(&mut self, explicit: bool, keep_ranges: bool) {
        self.drain();
        if self.capture.is_some() {
            return;
        }
        let before = self.core.tables.stats.segment_count.freed;
        let ids: Vec<u32> = (0..self.core.pools.len() as u32)
            .chain([PERSISTENT])
            .collect();
        for pool in ids {
            let p = self.core.pool(pool);
            let mut empty: Vec<u32> = p
                .outdated
                .iter()
                .copied()
                .filter(|&pg| {
                    self.core.tables.pages[pg].live == 0
                        && self.core.tables.pages[pg].quarantined == 0
                })
                .collect();
            if explicit {
                let pages = &self.core.tables.pages;
                let kept = |pg: u32| keep_ranges && pages[pg].chunks.is_some();
                empty.extend(
                    p.current.iter().copied().filter(|&pg| {
                        pages[pg].live == 0 && pages[pg].quarantined == 0 && !kept(pg)
                    }),
                );
                // An arena still in use (or kept) gives back its idle chunks.
                let busy_arenas: Vec<u32> = p
                    .current
                    .iter()
                    .copied()
                    .filter(|&pg| pages[pg].chunks.is_some() && (pages[pg].live > 0 || kept(pg)))
                    .collect();
                for page in busy_arenas {
                    let (a, mut cx) = self.core.arena(&mut self.storage);
                    a.trim_chunks(&mut cx, page, 0);
                }
                // And its shed chunks kept for reuse.
                let (a, mut cx) = self.core.arena(&mut self.storage);
                a.release_chunk_cache(&mut cx, |p| p == pool);
            } else if let Some(period) = p.dealloc_period {
                let clock = self.core.tables.clock;
                empty.extend(p.current.iter().copied().filter(|&pg| {
                    let page = &self.core.tables.pages[pg];
                    page.live == 0 && page.quarantined == 0 && clock - page.idle_since >= period
                }));
            }
            for page in empty {
                self.core.release_page(&mut self.storage, page);
            }
        }
        self.flush();
        let after = self.core.tables.stats.segment_count.freed;
        self.logger.cleanup(explicit, after - before);
    }

    /// `install_pools`' body.
    ///
    /// The old pools are cleaned up first (every free page returned) and then
    /// discarded; this only happens when nothing is live in them, because a
    /// live slice carries its pool position. Refused with
    /// [`InstallMemoryPoolsError::PoolsInUse`] while anything is live in the
    /// dynamic pools, [`InstallMemoryPoolsError::PagesQuarantined`] while
    /// nothing is but a page holds memory a failed relocation wait
    /// quarantined (never given back, so no retry helps),
    /// [`InstallMemoryPoolsError::PagesHeld`] while nothing is but the
    /// cleanup could not give every page back (an arena's idle chunk whose
    /// work runs), and [`InstallMemoryPoolsError::CaptureActive`]
    /// during a capture (nothing can be given back then); the old layout is
    /// kept.
    pub(crate) fn replace_pools(
        &mut self,
        config: MemoryConfiguration,
        properties: &MemoryDeviceProperties,
    ) -> Result<(), InstallMemoryPoolsError> {
        if self.capture.is_some() {
            return Err(InstallMemoryPoolsError::CaptureActive);
        }
        self.cleanup(true);
        let (live_slices, live_bytes) = self.core.pools.iter().fold((0, 0), |acc, p| {
            (
                acc.0 + p.usage.slices as usize,
                acc.1 + p.usage.bytes_in_use,
            )
        });
        if live_slices > 0 {
            return Err(InstallMemoryPoolsError::PoolsInUse {
                live_slices,
                live_bytes,
            });
        }
        // Quarantined memory is never given back, so no retry helps: say so
        // before the refusal that asks for one.
        let (quarantined_pages, quarantined_page_bytes) = self
            .core
            .pools
            .iter()
            .flat_map(|p| p.current.iter().chain(&p.outdated))
            .map(|&pg| &self.core.tables.pages[pg])
            .filter(|page| page.quarantined > 0)
            .fold((0, 0), |acc, page| (acc.0 + 1, acc.1 + page.size));
        if quarantined_pages > 0 {
            return Err(InstallMemoryPoolsError::PagesQuarantined {
                pages: quarantined_pages,
                reserved_bytes: quarantined_page_bytes,
                leaked_bytes: self.core.tables.stats.leaked_bytes,
            });
        }
        let (pages, reserved_bytes) = self.core.pools.iter().fold((0, 0), |acc, p| {
            (acc.0 + p.usage.pages, acc.1 + p.usage.bytes_reserved)
        });
        if pages > 0 {
            return Err(InstallMemoryPoolsError::PagesHeld {
                pages,
                reserved_bytes,
            });
        }
        self.core.pools = config
            .resolve(properties)
            .iter()
            .map(Pool::from_spec)
            .collect();
        self.core.tables.max_page = properties.effective_max_page();
        // New pools, new aging checks: find the first due at the next call.
        self.age_due = 0;
        self.properties = *properties;
        self.config = config;
        self.epoch += 1;
        Ok(())
    }
}
