//! `RelocationNeed`: whether memory wants a relocation, as plain data.
//!
//! It is computed from one stream's [`RelocationState`] and the device's
//! capacity *before* the device's byte count is known, because that count
//! sums every stream's storage — a caller holding one stream's memory
//! borrowed cannot read it. [`RelocationNeed::reason`] then asks for the
//! bytes lazily, and only when the answer depends on them.
//!
//! The pressure rule: relocate while the device still has a page to spare,
//! that is when `allocated + next_page > capacity − next_page` — allocating
//! the next page would leave less than one more page free, the last moment
//! a move (which may need room of its own) is still possible.

use mem_pools::RelocationState;

use crate::reason::RelocationReason;

/// Whether a stream's memory wants a relocation (plain data).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RelocationNeed {
    /// Nothing is outdated, nothing outdated can move, the shape has not
    /// changed since a relocation that moved nothing, or no capacity is
    /// known to measure pressure against.
    #[default]
    Nothing,
    /// A growable pool holds as many page sizes as it may: relocate before
    /// its next growth fails.
    #[doc(alias = "ArenaFull")]
    OutOfPageSizes,
    /// Outdated pages are held and the device's capacity is known: relocate
    /// if the device's allocated bytes leave less than a page to spare.
    UnderPressure {
        /// Bytes the device holds in all.
        capacity: u64,
        /// What the next page costs.
        page_size: u64,
    },
}

impl RelocationNeed {
    /// The need of memory in `state` on a device of `capacity` bytes (if
    /// known), ignoring any stalled-shape memo (see
    /// [`crate::RelocationTrigger`] for that).
    pub fn from_state(state: &RelocationState, capacity: Option<u64>) -> Self {
        let shape = &state.shape;
        let movable = shape.outdated_pages > shape.outdated_pinned && shape.outdated_live_bytes > 0;
        if !state.has_outdated || !movable {
            return RelocationNeed::Nothing;
        }
        if state.out_of_page_sizes {
            return RelocationNeed::OutOfPageSizes;
        }
        match capacity {
            Some(capacity) => RelocationNeed::UnderPressure {
                capacity,
                page_size: state.next_page_size,
            },
            None => RelocationNeed::Nothing,
        }
    }

    /// Whether no relocation is wanted, whatever the device holds.
    pub fn is_nothing(&self) -> bool {
        matches!(self, RelocationNeed::Nothing)
    }

    /// The reason to relocate now, if any. `bytes_allocated` (the bytes
    /// every stream's memory holds from the device) is called only for
    /// [`RelocationNeed::UnderPressure`], at most once.
    pub fn reason(self, bytes_allocated: impl FnOnce() -> u64) -> Option<RelocationReason> {
        match self {
            RelocationNeed::Nothing => None,
            RelocationNeed::OutOfPageSizes => Some(RelocationReason::PoolsOutOfPageSizes),
            RelocationNeed::UnderPressure {
                capacity,
                page_size,
            } => pressured(bytes_allocated(), page_size, capacity)
                .then_some(RelocationReason::MemoryPressure),
        }
    }
}

/// `allocated + page > capacity − page`, without overflow: allocating one
/// more page would leave less than one more page free.
pub fn pressured(allocated: u64, page_size: u64, capacity: u64) -> bool {
    allocated.saturating_add(page_size) > capacity.saturating_sub(page_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pressure_starts_when_the_next_page_leaves_less_than_a_page_free() {
        // capacity 10 pages of 1: after the 9th page only 1 page is left.
        assert!(!pressured(8, 1, 10));
        assert!(pressured(9, 1, 10));
        assert!(pressured(0, 8, 10), "a page larger than half the device");
        assert!(pressured(u64::MAX, u64::MAX, 0), "no overflow");
    }

    #[test]
    fn the_device_bytes_are_only_asked_for_under_pressure() {
        let asked = std::cell::Cell::new(0);
        let count = || {
            asked.set(asked.get() + 1);
            0
        };
        assert_eq!(RelocationNeed::Nothing.reason(count), None);
        assert_eq!(
            RelocationNeed::OutOfPageSizes.reason(count),
            Some(RelocationReason::PoolsOutOfPageSizes)
        );
        assert_eq!(asked.get(), 0);
        let need = RelocationNeed::UnderPressure {
            capacity: 100,
            page_size: 10,
        };
        assert_eq!(need.reason(|| 79), None);
        assert_eq!(need.reason(|| 81), Some(RelocationReason::MemoryPressure));
        assert_eq!(need.reason(count), None);
        assert_eq!(asked.get(), 1);
    }
}
