//! `sleep` / `wake` on the engine: every arena page's chunks released (and
//! their bytes preserved on the host when asked), then mapped back. The
//! state between them and the arena's side are `pools/arena/sleep.rs`.

use mem_storage::ComputeStorage;

use crate::engine::state::MemoryManagement;
use crate::error::IoError;
use crate::pools::arena::sleep::{Asleep, SleepContents, SleepReport, slot_view};

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
        if self.core.arenas.asleep.is_some() {
            return Err(IoError::Asleep {
                operation: "sleep",
                sleeping_bytes: self
                    .core
                    .arenas
                    .live_chunk_bytes(&self.core.tables, &self.core.pools),
            });
        }
        self.storage.synchronize()?;
        self.core.arenas.asleep = Some(Asleep::default());
        let mut report = SleepReport {
            kept_paged_bytes: self.core.tables.stats.reserved_bytes.current,
            ..SleepReport::default()
        };
        let (a, t, p) = self.core.arena_parts();
        report.released_bytes += a.release_chunk_cache(t, p, &mut self.storage, |_| true);
        for page in a.arena_pages(t, p) {
            self.sleep_page(page, contents, &mut report)?;
        }
        report.kept_paged_bytes = self.core.tables.stats.reserved_bytes.current;
        self.flush();
        Ok(report)
    }

    fn sleep_page(
        &mut self,
        page: u32,
        contents: SleepContents,
        report: &mut SleepReport,
    ) -> Result<(), IoError> {
        let Some(id) = self.core.tables.pages[page].storage.map(|h| h.id) else {
            return Ok(());
        };
        let Some(map) = self.core.tables.pages[page].chunks.as_deref() else {
            return Ok(());
        };
        let g = map.granularity;
        let extents: Vec<(u32, u32)> = (0..map.slots.len() as u32)
            .filter(|&s| map.slots[s as usize].head == s)
            .map(|s| map.extent(s))
            .collect();
        for (head, len) in extents {
            for s in head..head + len {
                let live = self.core.tables.pages[page]
                    .chunks
                    .as_deref()
                    .is_some_and(|m| m.slots[s as usize].live > 0);
                if live && contents == SleepContents::Preserve && self.storage.holds_memory() {
                    let mut bytes = vec![0u8; g as usize];
                    self.storage.read(&slot_view(id, s, g), &mut bytes)?;
                    report.preserved_bytes += g;
                    if let Some(asleep) = self.core.arenas.asleep.as_mut() {
                        asleep.saved.insert((page, s), bytes);
                    }
                }
            }
            let (a, t, p) = self.core.arena_parts();
            a.release_extent_asleep(t, p, &mut self.storage, page, id, (head, len))?;
            report.released_bytes += u64::from(len) * g;
        }
        Ok(())
    }

    /// `MemoryManagement::wake`'s body (its contract is on the method).
    pub(crate) fn wake_arenas(&mut self) -> Result<u64, IoError> {
        if self.core.arenas.asleep.is_none() {
            return Ok(0);
        }
        let mut mapped = 0;
        for page in self
            .core
            .arenas
            .arena_pages(&self.core.tables, &self.core.pools)
        {
            mapped += self.wake_page(page)?;
        }
        self.core.arenas.asleep = None;
        Ok(mapped)
    }

    fn wake_page(&mut self, page: u32) -> Result<u64, IoError> {
        let Some(id) = self.core.tables.pages[page].storage.map(|h| h.id) else {
            return Ok(0);
        };
        let Some(map) = self.core.tables.pages[page].chunks.as_deref() else {
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
            let (a, t, p) = self.core.arena_parts();
            a.map_run(
                t,
                p,
                &mut self.storage,
                page,
                id,
                (first, len as u32),
                crate::pools::arena::run_cover::Spill::NONE,
            )?;
            mapped += len as u64 * g;
            for &s in &asleep[i..i + len] {
                let saved = self
                    .core
                    .arenas
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
