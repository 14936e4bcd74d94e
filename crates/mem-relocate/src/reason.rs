//! Why a relocation runs, and where its targets may go.
//!
//! The reason decides the [`TargetRoom`]: whether the plan may allocate new
//! current-size pages for the memory it moves, or only use room the pools
//! already hold. The rule:
//!
//! | reason | room | why |
//! |---|---|---|
//! | [`Explicit`](RelocationReason::Explicit) | [`Held`](TargetRoom::Held) | a reclaim gives memory back; it must never raise reserved bytes |
//! | [`MemoryPressure`](RelocationReason::MemoryPressure) | [`Held`](TargetRoom::Held) | the device has about one page to spare; allocating a target page could take it |
//! | [`PoolsOutOfPageSizes`](RelocationReason::PoolsOutOfPageSizes) | [`MayAllocate`](TargetRoom::MayAllocate) | the pool cannot grow at all until its outdated pages go; a new current page is the price of growing again |
//! | [`Capture`](RelocationReason::Capture) | [`MayAllocate`](TargetRoom::MayAllocate) | a capture guards every page it touches for the graph's life; what is not moved now stays stranded that long |
//!
//! A relocation that may allocate can raise reserved memory for a moment
//! (a target page is allocated before the outdated page it empties goes
//! back); one limited to held room never does.

use std::fmt;

pub use mem_pools::TargetRoom;

/// Why a relocation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RelocationReason {
    /// Asked for by a caller (a reclaim, an explicit cleanup).
    Explicit,
    /// The device would have less than one page free after the next page.
    MemoryPressure,
    /// A growable pool holds as many page sizes as it may; it cannot grow
    /// again until its outdated pages are emptied.
    #[doc(alias = "ArenaFull")]
    PoolsOutOfPageSizes,
    /// A graph capture is about to guard every page it touches.
    Capture,
}

impl RelocationReason {
    /// Every reason, in declaration order.
    pub const ALL: [RelocationReason; 4] = [
        RelocationReason::Explicit,
        RelocationReason::MemoryPressure,
        RelocationReason::PoolsOutOfPageSizes,
        RelocationReason::Capture,
    ];

    /// Where this reason's plan may put targets (see the module docs).
    pub fn room(self) -> TargetRoom {
        match self {
            RelocationReason::Explicit | RelocationReason::MemoryPressure => TargetRoom::Held,
            RelocationReason::PoolsOutOfPageSizes | RelocationReason::Capture => {
                TargetRoom::MayAllocate
            }
        }
    }

    /// Whether a relocation for this reason may raise reserved bytes.
    pub fn may_allocate(self) -> bool {
        self.room() == TargetRoom::MayAllocate
    }

    /// A short name for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            RelocationReason::Explicit => "explicit",
            RelocationReason::MemoryPressure => "memory pressure",
            RelocationReason::PoolsOutOfPageSizes => "pools out of page sizes",
            RelocationReason::Capture => "capture",
        }
    }
}

impl fmt::Display for RelocationReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_out_of_page_sizes_and_capture_may_allocate() {
        let allocating: Vec<_> = RelocationReason::ALL
            .into_iter()
            .filter(|r| r.may_allocate())
            .collect();
        assert_eq!(
            allocating,
            [
                RelocationReason::PoolsOutOfPageSizes,
                RelocationReason::Capture
            ]
        );
        assert_eq!(RelocationReason::Explicit.room(), TargetRoom::Held);
        assert_eq!(RelocationReason::MemoryPressure.room(), TargetRoom::Held);
    }
}
