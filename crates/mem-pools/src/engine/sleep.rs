//! `sleep` / `wake` on the engine: the checks, the storage's synchronize
//! and flush around them, and each arena page's turn. What a page does —
//! its chunks released (their bytes preserved on the host when asked),
//! then mapped back — and the state between them are the arena's
//! (`pools/arena/sleep.rs`).

use mem_storage::ComputeStorage;

use crate::engine::state::MemoryManagement;
use crate::error::IoError;
use crate::pools::arena::sleep::{SleepContents, SleepReport};
use crate::pools::arena::state::Asleep;

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
        let (a, mut cx) = self.core.arena(&mut self.storage);
        report.released_bytes += a.release_chunk_cache(&mut cx, |_| true);
        for page in a.arena_pages(cx.t, cx.pools) {
            a.sleep_page(&mut cx, page, contents, &mut report)?;
        }
        report.kept_paged_bytes = self.core.tables.stats.reserved_bytes.current;
        self.flush();
        Ok(report)
    }

    /// `MemoryManagement::wake`'s body (its contract is on the method).
    pub(crate) fn wake_arenas(&mut self) -> Result<u64, IoError> {
        if self.core.arenas.asleep.is_none() {
            return Ok(0);
        }
        let mut mapped = 0;
        let (a, mut cx) = self.core.arena(&mut self.storage);
        for page in a.arena_pages(cx.t, cx.pools) {
            mapped += a.wake_page(&mut cx, page)?;
        }
        self.core.arenas.asleep = None;
        Ok(mapped)
    }
}
