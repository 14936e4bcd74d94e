//! Giving a storage's virtual pages back: the queued ranges at a flush,
//! and everything at once when the storage goes away.
//!
//! Why runs: a dropped arena may hold thousands of chunks, and one unmap
//! call covers any span of whole mappings, so each run of adjacent mapped
//! chunks goes in one call (one at a time only if that is refused, so a
//! refusal keeps nothing else mapped). Linear in what the storage holds.

use crate::error::StorageError;
use crate::storage::virtual_pages::VirtualPages;

impl VirtualPages {
    /// Free the queued ranges; one that fails stays queued.
    pub(crate) fn flush(&mut self) -> Result<(), StorageError> {
        let mut first = None;
        let mut kept = Vec::new();
        for (id, range) in std::mem::take(&mut self.pending) {
            match self.vm.free_range(range.id) {
                Ok(()) => self.virtual_bytes -= range.len,
                Err(err) => {
                    tracing::warn!(%id, %err, "virtual range free failed; it stays queued");
                    first.get_or_insert(err);
                    kept.push((id, range));
                }
            }
        }
        self.pending = kept;
        first.map_or(Ok(()), Err)
    }

    /// Unmap, release and free everything (the storage is going away).
    /// Linear in what it holds: each run of adjacent mapped chunks goes in
    /// one unmap call, each chunk in one release.
    pub(crate) fn release_all(&mut self) {
        let g = self.granularity;
        for page in std::mem::take(&mut self.live) {
            let (id, range) = (page.id, page.range);
            let mapped = page.mapped.mappings();
            let mut run = 0;
            while run < mapped.len() {
                // `mapped[run..end]` are adjacent mappings.
                let start = mapped[run].0;
                let mut next = start;
                let len = mapped[run..]
                    .iter()
                    .take_while(|&&(granule, _, n)| {
                        let adjacent = granule == next;
                        next = granule + n;
                        adjacent
                    })
                    .count();
                let end = run + len;
                let granules: u64 = mapped[run..end].iter().map(|&(_, _, n)| n).sum();
                if self.vm.unmap(range.id, start * g, granules * g).is_err() {
                    // One at a time, so one refusal keeps no other mapped.
                    for &(granule, _, n) in &mapped[run..end] {
                        if let Err(err) = self.vm.unmap(range.id, granule * g, n * g) {
                            let offset = granule * g;
                            tracing::error!(%id, offset, %err, "chunk could not be unmapped on drop");
                        }
                    }
                }
                run = end;
            }
            self.pending.push((id, range));
        }
        for (chunk, bytes) in std::mem::take(&mut self.chunks) {
            match self.vm.release_chunk(chunk) {
                Ok(()) => self.chunk_bytes -= bytes,
                Err(err) => tracing::error!(%chunk, %err, "chunk could not be released on drop"),
            }
        }
        if let Err(err) = self.flush() {
            tracing::error!(%err, "virtual ranges could not be freed on drop");
        }
    }
}
