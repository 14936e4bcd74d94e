//! `sleep` / `wake`: give the arenas' physical memory back and keep every
//! address.
//!
//! Why: RL loops and model swapping (vLLM's sleep mode) need a process to
//! hand its GPU memory to another and get it back without rebuilding
//! anything — handles, raw pointers and captured graphs all name addresses,
//! and an arena's addresses are a virtual range that needs no memory. So
//! `sleep` unmaps and releases every chunk of every arena range (copying
//! what live slices' chunks hold to host memory first when asked), and
//! `wake` maps fresh chunks under exactly the slots live slices touch and
//! copies the bytes back. Paged pools are not touched: their pages are
//! their addresses.
//!
//! While asleep a reservation is [`IoError::Asleep`]; bytes of a live arena
//! slice are unreachable (a storage `UnmappedAddress` error, never a
//! fault). Either step may be refused halfway by the device: what it did
//! stays done and consistent, and calling it again finishes the job.

use std::collections::HashMap;

use mem_storage::{ComputeStorage, StorageHandle, StorageUtilization};

use crate::engine::core::Core;
use crate::engine::state::MemoryManagement;
use crate::error::IoError;

/// Whether [`MemoryManagement::sleep`] keeps what the arenas hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SleepContents {
    /// Give the memory back; after `wake` live slices hold unspecified bytes
    /// (weights to be reloaded, caches to be refilled).
    Discard,
    /// Copy every chunk live slices touch to host memory first and restore
    /// it at `wake` (costs host memory and two copies of those bytes).
    Preserve,
}

/// What a [`MemoryManagement::sleep`] gave back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SleepReport {
    /// Bytes of chunks unmapped and released (live and cached).
    pub released_bytes: u64,
    /// Bytes copied to host memory (chunks under live slices).
    pub preserved_bytes: u64,
    /// Bytes of paged pools' pages, kept (their pages are their addresses).
    pub kept_paged_bytes: u64,
}

/// The view of slot `s` (granule size `g`) of virtual page `id`.
fn slot_view(id: mem_storage::StorageId, s: u32, g: u64) -> StorageHandle {
    StorageHandle {
        id,
        utilization: StorageUtilization {
            offset: u64::from(s) * g,
            size: g,
        },
    }
}

/// The state between `sleep` and `wake`.
#[derive(Debug, Default)]
pub(crate) struct Asleep {
    /// (arena page, slot) → the chunk's bytes, when preserved.
    saved: HashMap<(u32, u32), Vec<u8>>,
}

impl Core {
    /// Arena pages of every pool.
    fn arena_pages(&self) -> Vec<u32> {
        self.pools
            .iter()
            .flat_map(|p| &p.current)
            .copied()
            .filter(|&pg| self.pages[pg].chunks.is_some())
            .collect()
    }

    /// Unmap and release the chunk at slot `head` of `page` covering `len`
    /// slots, live or idle (the slots keep their live counts: they are
    /// asleep). `Err` when the unmap is refused (the slots stay as they
    /// were).
    fn release_extent_asleep<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        page: u32,
        id: mem_storage::StorageId,
        (head, len): (u32, u32),
    ) -> Result<(), IoError> {
        let pool = self.pages[page].pool;
        let map = self.arena_map(page);
        let g = map.granularity;
        let chunk = storage.unmap_chunk(id, u64::from(head) * g)?;
        for s in head..head + len {
            if map.slots[s as usize].idle {
                map.unqueue(s);
            }
        }
        map.set_extent(head, len, None);
        self.stats.chunks.unmaps += 1;
        self.drop_chunk(storage, pool, chunk, u64::from(len) * g);
        Ok(())
    }

    /// Bytes of the chunks live arena slices touch, mapped or not.
    pub(crate) fn live_chunk_bytes(&self) -> u64 {
        self.arena_pages()
            .iter()
            .filter_map(|&pg| self.pages[pg].chunks.as_deref())
            .map(|m| m.slots.iter().filter(|s| s.live > 0).count() as u64 * m.granularity)
            .sum()
    }
}

impl<S: ComputeStorage> MemoryManagement<S> {
    /// `MemoryManagement::sleep`'s body (its contract is on the method).
    pub(crate) fn sleep_arenas(&mut self, contents: SleepContents) -> Result<SleepReport, IoError> {
        self.drain();
        if self.capture.is_some() {
            return Err(IoError::Storage(mem_storage::StorageError::Unsupported {
                operation: "sleep while a graph capture is open",
                backend: "mem-pools",
            }));
        }
        if self.core.asleep.is_some() {
            return Err(IoError::Asleep {
                operation: "sleep",
                sleeping_bytes: self.core.live_chunk_bytes(),
            });
        }
        self.storage.synchronize()?;
        self.core.asleep = Some(Asleep::default());
        let mut report = SleepReport {
            kept_paged_bytes: self.core.stats.reserved_bytes.current,
            ..SleepReport::default()
        };
        report.released_bytes += self.core.release_chunk_cache(&mut self.storage, |_| true);
        for page in self.core.arena_pages() {
            self.sleep_page(page, contents, &mut report)?;
        }
        report.kept_paged_bytes = self.core.stats.reserved_bytes.current;
        self.flush();
        Ok(report)
    }

    fn sleep_page(
        &mut self,
        page: u32,
        contents: SleepContents,
        report: &mut SleepReport,
    ) -> Result<(), IoError> {
        let Some(id) = self.core.pages[page].storage.map(|h| h.id) else {
            return Ok(());
        };
        let Some(map) = self.core.pages[page].chunks.as_deref() else {
            return Ok(());
        };
        let g = map.granularity;
        let extents: Vec<(u32, u32)> = (0..map.slots.len() as u32)
            .filter(|&s| map.slots[s as usize].head == s)
            .map(|s| map.extent(s))
            .collect();
        for (head, len) in extents {
            for s in head..head + len {
                let live = self.core.pages[page]
                    .chunks
                    .as_deref()
                    .is_some_and(|m| m.slots[s as usize].live > 0);
                if live && contents == SleepContents::Preserve && self.storage.holds_memory() {
                    let mut bytes = vec![0u8; g as usize];
                    self.storage.read(&slot_view(id, s, g), &mut bytes)?;
                    report.preserved_bytes += g;
                    if let Some(asleep) = self.core.asleep.as_mut() {
                        asleep.saved.insert((page, s), bytes);
                    }
                }
            }
            self.core
                .release_extent_asleep(&mut self.storage, page, id, (head, len))?;
            report.released_bytes += u64::from(len) * g;
        }
        Ok(())
    }

    /// `MemoryManagement::wake`'s body (its contract is on the method).
    pub(crate) fn wake_arenas(&mut self) -> Result<u64, IoError> {
        if self.core.asleep.is_none() {
            return Ok(0);
        }
        let mut mapped = 0;
        for page in self.core.arena_pages() {
            mapped += self.wake_page(page)?;
        }
        self.core.asleep = None;
        Ok(mapped)
    }

    fn wake_page(&mut self, page: u32) -> Result<u64, IoError> {
        let Some(id) = self.core.pages[page].storage.map(|h| h.id) else {
            return Ok(0);
        };
        let Some(map) = self.core.pages[page].chunks.as_deref() else {
            return Ok(0);
        };
        let g = map.granularity;
        let asleep: Vec<u32> = (0..map.slots.len() as u32)
            .filter(|&s| {
                let slot = &map.slots[s as usize];
                slot.live > 0 && slot.chunk.is_none()
            })
            .collect();
        let mut mapped = 0;
        let mut i = 0;
        while i < asleep.len() {
            // A run of adjacent asleep slots gets one chunk.
            let first = asleep[i];
            let len = asleep[i..]
                .iter()
                .zip(first..)
                .take_while(|&(&s, want)| s == want)
                .count();
            self.core.map_run(
                &mut self.storage,
                page,
                id,
                (first, len as u32),
                crate::arena::run_cover::Spill::NONE,
            )?;
            mapped += len as u64 * g;
            for &s in &asleep[i..i + len] {
                let saved = self
                    .core
                    .asleep
                    .as_mut()
                    .and_then(|a| a.saved.remove(&(page, s)));
                if let Some(bytes) = saved {
                    self.storage.write(&slot_view(id, s, g), &bytes)?;
                }
            }
            i += len;
        }
        Ok(mapped)
    }
}
