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

use mem_storage::{ComputeStorage, StorageHandle, StorageUtilization};

use crate::error::IoError;
use crate::pools::arena::run_cover::Spill;
use crate::pools::arena::state::{ArenaCtx, Arenas};
use crate::pools::paged::pool::Pool;
use crate::tables::floor::Tables;

/// Whether [`MemoryManagement::sleep`](crate::MemoryManagement::sleep) keeps what the arenas hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SleepContents {
    /// Give the memory back; after `wake` live slices hold unspecified bytes
    /// (weights to be reloaded, caches to be refilled).
    Discard,
    /// Copy every chunk live slices touch to host memory first and restore
    /// it at `wake` (costs host memory and two copies of those bytes).
    Preserve,
}

/// What a [`MemoryManagement::sleep`](crate::MemoryManagement::sleep) gave back.
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

impl Arenas {
    /// Arena pages of every pool.
    pub(crate) fn arena_pages(&self, t: &Tables, pools: &[Pool]) -> Vec<u32> {
        pools
            .iter()
            .flat_map(|p| &p.current)
            .copied()
            .filter(|&pg| t.pages[pg].chunks.is_some())
            .collect()
    }

    /// Unmap and release the chunk at slot `head` of `page` covering `len`
    /// slots, live or idle (the slots keep their live counts: they are
    /// asleep). `Err` when the unmap is refused (the slots stay as they
    /// were).
    pub(crate) fn release_extent_asleep<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        page: u32,
        id: mem_storage::StorageId,
        (head, len): (u32, u32),
    ) -> Result<(), IoError> {
        let pool = cx.t.pages[page].pool;
        let map = cx.t.arena_map(page);
        let g = map.granularity;
        let chunk = cx.storage.unmap_chunk(id, u64::from(head) * g)?;
        for s in head..head + len {
            if map.is_idle(s) {
                map.unqueue(s);
            }
        }
        map.set_extent(head, len, None);
        cx.t.stats.chunks.unmaps += 1;
        self.drop_chunk(cx, pool, chunk, u64::from(len) * g);
        Ok(())
    }

    /// Bytes of the chunks live arena slices touch, mapped or not.
    pub(crate) fn live_chunk_bytes(&self, t: &Tables, pools: &[Pool]) -> u64 {
        self.arena_pages(t, pools)
            .iter()
            .filter_map(|&pg| t.pages[pg].chunks.as_deref())
            .map(|m| m.live_slots() * m.granularity)
            .sum()
    }

    /// `sleep`'s turn on arena page `page`: copy the chunks live slices
    /// touch to the host first when `contents` asks, then unmap and
    /// release every chunk; counted in `report`.
    pub(crate) fn sleep_page<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        page: u32,
        contents: SleepContents,
        report: &mut SleepReport,
    ) -> Result<(), IoError> {
        let Some(id) = cx.t.pages[page].storage.map(|h| h.id) else {
            return Ok(());
        };
        let Some(map) = cx.t.pages[page].chunks.as_deref() else {
            return Ok(());
        };
        let g = map.granularity;
        let extents: Vec<(u32, u32)> = (0..map.slots.len() as u32)
            .filter(|&s| map.slots[s as usize].head == s)
            .map(|s| map.extent(s))
            .collect();
        for (head, len) in extents {
            for s in head..head + len {
                let live = cx.t.pages[page]
                    .chunks
                    .as_deref()
                    .is_some_and(|m| m.is_live(s));
                if live && contents == SleepContents::Preserve && cx.storage.holds_memory() {
                    let mut bytes = vec![0u8; g as usize];
                    cx.storage.read(&slot_view(id, s, g), &mut bytes)?;
                    report.preserved_bytes += g;
                    if let Some(asleep) = self.asleep.as_mut() {
                        asleep.saved.insert((page, s), bytes);
                    }
                }
            }
            self.release_extent_asleep(cx, page, id, (head, len))?;
            report.released_bytes += u64::from(len) * g;
        }
        Ok(())
    }

    /// `wake`'s turn on arena page `page`: a fresh chunk under each run of
    /// slots live slices touch, their bytes restored where `sleep` kept
    /// them. Returns the bytes mapped.
    pub(crate) fn wake_page<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        page: u32,
    ) -> Result<u64, IoError> {
        let Some(id) = cx.t.pages[page].storage.map(|h| h.id) else {
            return Ok(0);
        };
        let Some(map) = cx.t.pages[page].chunks.as_deref() else {
            return Ok(0);
        };
        let g = map.granularity;
        let asleep: Vec<u32> = (0..map.slots.len() as u32)
            .filter(|&s| map.is_live(s) && map.slots[s as usize].chunk.is_none())
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
            self.map_run(cx, page, id, (first, len as u32), Spill::NONE)?;
            mapped += len as u64 * g;
            for &s in &asleep[i..i + len] {
                let saved = self
                    .asleep
                    .as_mut()
                    .and_then(|a| a.saved.remove(&(page, s)));
                if let Some(bytes) = saved {
                    cx.storage.write(&slot_view(id, s, g), &bytes)?;
                }
            }
            i += len;
        }
        Ok(mapped)
    }
}
