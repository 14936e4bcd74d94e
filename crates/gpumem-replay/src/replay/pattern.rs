//! Check patterns for the host backend: a pattern derived from each
//! reservation's sequence number is written into its first and last
//! [`PATTERN_WINDOW`] bytes and verified before it is freed.
//!
//! Overlapping slices, or a page released under a live slice, corrupt a
//! neighbour's edge, which is where the windows look. Checking edges rather
//! than whole allocations keeps a 50 GiB trace from writing terabytes.

use gpumem::storage::{ComputeStorage, StorageHandle};

use gpumem::storage::units::format_bytes;

/// Bytes checked at each end of an allocation.
pub const PATTERN_WINDOW: u64 = 4096;

/// Reusable buffers for writing and checking patterns.
#[derive(Debug, Default)]
pub(crate) struct Patterns {
    expected: Vec<u8>,
    found: Vec<u8>,
}

/// The head and tail windows of `view` (one window when they would overlap).
fn windows(view: &StorageHandle) -> [Option<StorageHandle>; 2] {
    let size = view.size();
    let head = size.min(PATTERN_WINDOW);
    let tail_start = size.saturating_sub(PATTERN_WINDOW).max(head);
    [
        (head > 0).then(|| view.narrow(None, Some(head))).flatten(),
        (tail_start < size)
            .then(|| view.narrow(Some(tail_start), None))
            .flatten(),
    ]
}

/// Pattern bytes `start..start + len` of reservation `tag`.
fn fill(buffer: &mut Vec<u8>, tag: u64, start: u64, len: u64) {
    buffer.clear();
    let seed = tag.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    buffer
        .extend((start..start + len).map(|i| (seed.rotate_left((i % 64) as u32) as u8) ^ i as u8));
}

impl Patterns {
    /// Writes reservation `tag`'s pattern into the windows of `view`.
    pub(crate) fn write<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        view: &StorageHandle,
        tag: u64,
    ) -> Result<(), String> {
        for window in windows(view).into_iter().flatten() {
            fill(
                &mut self.expected,
                tag,
                window.offset() - view.offset(),
                window.size(),
            );
            storage
                .write(&window, &self.expected)
                .map_err(|e| format!("writing the check pattern: {e}"))?;
        }
        Ok(())
    }

    /// Checks reservation `tag`'s pattern in the windows of `view`.
    pub(crate) fn check<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        view: &StorageHandle,
        tag: u64,
    ) -> Result<(), String> {
        for window in windows(view).into_iter().flatten() {
            let start = window.offset() - view.offset();
            fill(&mut self.expected, tag, start, window.size());
            self.found.resize(self.expected.len(), 0);
            storage
                .read(&window, &mut self.found)
                .map_err(|e| format!("reading the check pattern: {e}"))?;
            if let Some(at) = self
                .expected
                .iter()
                .zip(&self.found)
                .position(|(a, b)| a != b)
            {
                return Err(format!(
                    "allocation #{tag} of {} was overwritten at byte {}: another allocation \
                     shares its memory (pool bug or corruption)",
                    format_bytes(view.size()),
                    start + at as u64
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use gpumem::storage::HostStorage;

    use super::*;

    #[test]
    fn an_intact_pattern_passes_and_an_overwritten_edge_is_caught() {
        let mut storage = HostStorage::host();
        let page = storage.alloc(3 * PATTERN_WINDOW).unwrap();
        let mut patterns = Patterns::default();
        patterns.write(&mut storage, &page, 7).unwrap();
        patterns.check(&mut storage, &page, 7).unwrap();
        assert!(
            patterns.check(&mut storage, &page, 8).is_err(),
            "another tag's pattern differs"
        );

        let last = page.narrow(Some(3 * PATTERN_WINDOW - 1), None).unwrap();
        let mut byte = [0u8];
        storage.read(&last, &mut byte).unwrap();
        storage.write(&last, &[!byte[0]]).unwrap();
        let err = patterns.check(&mut storage, &page, 7).unwrap_err();
        assert!(
            err.contains(&format!("byte {}", 3 * PATTERN_WINDOW - 1)),
            "{err}"
        );
    }

    #[test]
    fn a_small_allocation_has_one_window() {
        let mut storage = HostStorage::host();
        let page = storage.alloc(100).unwrap();
        assert_eq!(windows(&page).iter().flatten().count(), 1);
        let empty = page.narrow(Some(0), Some(0)).unwrap();
        assert_eq!(windows(&empty).iter().flatten().count(), 0);
    }
}
