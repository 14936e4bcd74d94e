//! Made-up device addresses: a next-fit cursor over a range of the 64-bit
//! space.
//!
//! What [`crate::SimulatedResource`] hands out (pages, from
//! [`PAGE_ADDRESSES`]) and what [`crate::SimulatedVirtualMemory`] reserves
//! (arena ranges, from [`CHUNK_ADDRESSES`]). The two ranges are apart, so
//! a page and an arena slice live at once never share an address, as on a
//! device (where both come from one address space): a runtime may key its
//! own tables by address. The cursor only moves
//! forward, so an allocation costs two ordered-map lookups (O(log live))
//! that find nothing in the way; the cursor wraps to the start only after
//! 2^63 bytes were handed out, and then skips past live allocations. Every
//! base and span is a multiple of the alignment, so every position tried
//! is aligned.

use std::collections::BTreeMap;
use std::ops::Range;

/// Pages' addresses: non-zero and far from anything real, so a simulated
/// address used as a host pointer by mistake faults at once. Each range
/// holds more than the largest capacity (2^62 bytes).
pub(crate) const PAGE_ADDRESSES: Range<u64> = 1 << 44..1 << 63;
/// Arena ranges' addresses: above every page's (and not canonical on any
/// host either).
pub(crate) const CHUNK_ADDRESSES: Range<u64> = 1 << 63..u64::MAX - (1 << 44);

/// Live ranges and the next-fit cursor.
#[derive(Debug)]
pub(crate) struct AddressSpace {
    /// Live allocations: base address → bytes requested.
    live: BTreeMap<u64, u64>,
    /// Next address to try.
    cursor: u64,
    /// Alignment of every base and span (a power of two ≤ 2^32).
    alignment: u64,
    /// Where addresses are handed out (aligned to any alignment ≤ 2^32).
    range: Range<u64>,
}

impl AddressSpace {
    pub(crate) fn new(alignment: u64, range: Range<u64>) -> Self {
        Self {
            live: BTreeMap::new(),
            cursor: range.start,
            alignment,
            range,
        }
    }

    /// Addresses an allocation of `bytes` occupies: at least one byte so
    /// every address is unique, rounded up to the alignment. `bytes` is at
    /// most 2^62 (the largest capacity), so the rounding cannot overflow.
    fn span(&self, bytes: u64) -> u64 {
        bytes.max(1).div_ceil(self.alignment) * self.alignment
    }

    pub(crate) fn len(&self) -> usize {
        self.live.len()
    }

    /// Claim room for `bytes` bytes; `None` when no gap is large enough.
    pub(crate) fn claim(&mut self, bytes: u64) -> Option<u64> {
        let span = self.span(bytes);
        let at = self.find_room(span)?;
        self.live.insert(at, bytes);
        self.cursor = at + span;
        Some(at)
    }

    /// Give back the allocation at `base` of `bytes`; false (and nothing
    /// changed) when there is no such allocation.
    pub(crate) fn release(&mut self, base: u64, bytes: u64) -> bool {
        if self.live.get(&base) != Some(&bytes) {
            return false;
        }
        self.live.remove(&base);
        true
    }

    /// Whether `ptr..ptr+len` lies inside one live allocation.
    pub(crate) fn contains(&self, ptr: u64, len: u64) -> bool {
        match self.live.range(..=ptr).next_back() {
            Some((&base, &bytes)) => (ptr - base)
                .checked_add(len)
                .is_some_and(|end| end <= bytes),
            None => false,
        }
    }

    /// Next-fit search for `span` free addresses from the cursor, wrapping
    /// to the start of the space once.
    fn find_room(&self, span: u64) -> Option<u64> {
        let mut at = self.cursor;
        let mut wrapped = false;
        loop {
            // `span ≤ 2^62 + 2^32 < range.end`, so the subtraction is exact.
            if at > self.range.end - span {
                if wrapped {
                    return None;
                }
                wrapped = true;
                at = self.range.start;
                continue;
            }
            // Allocations never overlap, so only the last one starting
            // before `at` can reach past it, and only the first one at or
            // after `at` can start inside the span. `at` grows every turn.
            if let Some((&base, &bytes)) = self.live.range(..at).next_back() {
                let end = base + self.span(bytes);
                if end > at {
                    at = end;
                    continue;
                }
            }
            match self.live.range(at..).next() {
                Some((&base, &bytes)) if base < at + span => at = base + self.span(bytes),
                _ => return Some(at),
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn set_cursor(&mut self, cursor: u64) {
        self.cursor = cursor;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADDRESS_BASE: u64 = PAGE_ADDRESSES.start;
    const ADDRESS_END: u64 = PAGE_ADDRESSES.end;

    #[test]
    fn the_cursor_wraps_and_skips_live_allocations() {
        let mut space = AddressSpace::new(256, PAGE_ADDRESSES);
        let first = space.claim(1000).unwrap();
        assert_eq!(first, ADDRESS_BASE);
        let second = space.claim(10).unwrap();
        assert_eq!(
            second,
            ADDRESS_BASE + 1024,
            "spans round up to the alignment"
        );
        // Near the end of the space the next claim must wrap and skip both.
        space.set_cursor(ADDRESS_END - 512);
        let wrapped = space.claim(1024).unwrap();
        assert_eq!(wrapped, ADDRESS_BASE + 1024 + 256);
        // Room freed at the start is found again after the next wrap.
        assert!(space.release(first, 1000));
        space.set_cursor(ADDRESS_END - 256);
        assert_eq!(space.claim(1024), Some(ADDRESS_BASE));
    }

    #[test]
    fn a_full_space_finds_no_room_instead_of_looping() {
        let mut space = AddressSpace::new(1 << 32, PAGE_ADDRESSES);
        let mut claimed = 0;
        while space.claim(1 << 61).is_some() {
            claimed += 1;
            assert!(claimed <= 4, "more than the space holds");
        }
        assert_eq!(space.claim(1 << 61), None);
        assert!(space.contains(ADDRESS_BASE, 1 << 61));
        assert!(!space.contains(ADDRESS_BASE, (1 << 61) + 1));
    }

    #[test]
    fn a_release_with_the_wrong_size_changes_nothing() {
        let mut space = AddressSpace::new(256, PAGE_ADDRESSES);
        let at = space.claim(100).unwrap();
        assert!(!space.release(at, 99));
        assert!(!space.release(at + 1, 100));
        assert_eq!(space.len(), 1);
        assert!(space.release(at, 100));
        assert_eq!(space.len(), 0);
    }
}
