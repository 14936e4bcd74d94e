//! The A100 table under the three splits of its 2 MiB figures.
//!
//! The published A100 figures are measured at 2 MiB only (docs/storage.md,
//! "What a driver call costs"), so how much of each is paid per call and
//! how much per 2 MiB of size is an assumption until a GPU measures it.
//! [`DriverCosts::A100`] charges half of each per call and half per 2 MiB.
//! A result that holds only under that split is not a result, so the two
//! ends are named too: [`DriverCosts::A100_PER_CALL`] charges all of each
//! 2 MiB figure per call (a big call costs what a 2 MiB one does), and
//! [`DriverCosts::A100_PER_BYTE`] all of it per 2 MiB (a big call costs as
//! many 2 MiB calls as it spans). Under every split a 2 MiB call costs
//! exactly its measured figure. The split applies to every call whose
//! latency depends on size — the measured create, set-access and unmap,
//! the estimated release, and the calls composed of them (`cuMemAlloc` =
//! create + map + set-access, `cuMemFree` = unmap + release, and so the
//! default pool's growth and trim, priced as those parts by the meter) —
//! so every row of a comparison that pays those calls moves with it. Calls
//! whose figure is a single fixed measurement (map, the address calls, the
//! waits, the events, the pooled `cuMemAllocAsync` path) are the same under
//! every split.

use super::table::{DriverCall, DriverCosts, Latency};

/// How the 2 MiB figures divide into a per-call and a per-2 MiB part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CostSplit {
    /// Half per call, half per 2 MiB ([`DriverCosts::A100`], the default).
    Half,
    /// All per call ([`DriverCosts::A100_PER_CALL`]).
    PerCall,
    /// All per 2 MiB ([`DriverCosts::A100_PER_BYTE`]).
    PerByte,
}

impl CostSplit {
    /// Every split, the default first.
    pub const ALL: [CostSplit; 3] = [CostSplit::Half, CostSplit::PerCall, CostSplit::PerByte];

    /// Its name in `GPUMEM_CONF driver_cost:` (`a100`, `a100-per-call`,
    /// `a100-per-byte`).
    pub const fn name(self) -> &'static str {
        match self {
            CostSplit::Half => "a100",
            CostSplit::PerCall => "a100-per-call",
            CostSplit::PerByte => "a100-per-byte",
        }
    }

    /// The split named `name` (case-insensitive).
    pub fn from_name(name: &str) -> Option<CostSplit> {
        CostSplit::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(name))
    }

    /// The A100 table under this split.
    pub const fn a100(self) -> DriverCosts {
        match self {
            CostSplit::Half => DriverCosts::A100,
            CostSplit::PerCall => DriverCosts::A100_PER_CALL,
            CostSplit::PerByte => DriverCosts::A100_PER_BYTE,
        }
    }
}

/// The sized calls' 2 MiB figures and the parts that do not split.
const CREATE: u64 = 193_320;
const SET_ACCESS: u64 = 35_990;
const UNMAP: u64 = 25_630;
/// An estimate, as unmap.
const RELEASE: u64 = UNMAP;
const MAP: u64 = 1_450;

impl DriverCosts {
    /// The A100 table with all of each 2 MiB figure charged per call.
    pub const A100_PER_CALL: DriverCosts = DriverCosts::A100
        .with(DriverCall::Create, Latency::fixed(CREATE))
        .with(DriverCall::SetAccess, Latency::fixed(SET_ACCESS))
        .with(DriverCall::Unmap, Latency::fixed(UNMAP))
        .with(DriverCall::Release, Latency::fixed(RELEASE))
        .with(DriverCall::Alloc, Latency::fixed(CREATE + MAP + SET_ACCESS))
        .with(DriverCall::Free, Latency::fixed(UNMAP + RELEASE));

    /// The A100 table with all of each 2 MiB figure charged per 2 MiB.
    pub const A100_PER_BYTE: DriverCosts = DriverCosts::A100
        .with(DriverCall::Create, Latency::sized(0, CREATE))
        .with(DriverCall::SetAccess, Latency::sized(0, SET_ACCESS))
        .with(DriverCall::Unmap, Latency::sized(0, UNMAP))
        .with(DriverCall::Release, Latency::sized(0, RELEASE))
        .with(DriverCall::Alloc, Latency::sized(MAP, CREATE + SET_ACCESS))
        .with(DriverCall::Free, Latency::sized(0, UNMAP + RELEASE));

    /// This table with `call`'s latency replaced (a `const` [`Self::set`]).
    pub const fn with(mut self, call: DriverCall, latency: Latency) -> DriverCosts {
        self.latencies[call as usize] = latency;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver_cost::COST_GRANULE;

    #[test]
    fn a_two_mib_call_costs_the_same_under_every_split() {
        for call in DriverCall::ALL {
            let figures: Vec<u64> = CostSplit::ALL
                .iter()
                .map(|s| s.a100().ns(call, COST_GRANULE))
                .collect();
            assert!(
                figures.windows(2).all(|w| w[0] == w[1]),
                "{call:?}: {figures:?}"
            );
        }
    }

    #[test]
    fn a_big_call_costs_one_figure_per_call_and_one_per_granule_per_byte() {
        let big = 100 * COST_GRANULE;
        for call in [DriverCall::Create, DriverCall::Unmap, DriverCall::Alloc] {
            let two = DriverCosts::A100.ns(call, COST_GRANULE);
            assert_eq!(DriverCosts::A100_PER_CALL.ns(call, big), two, "{call:?}");
            let fixed = DriverCosts::A100_PER_BYTE.latency(call).fixed_ns;
            assert_eq!(
                DriverCosts::A100_PER_BYTE.ns(call, big),
                fixed + 100 * (two - fixed),
                "{call:?}"
            );
            let half = DriverCosts::A100.ns(call, big);
            assert!(two < half && half < DriverCosts::A100_PER_BYTE.ns(call, big));
        }
    }

    #[test]
    fn the_splits_are_named_and_found_by_name() {
        for split in CostSplit::ALL {
            assert_eq!(CostSplit::from_name(split.name()), Some(split));
        }
        assert_eq!(
            CostSplit::from_name("A100-PER-CALL"),
            Some(CostSplit::PerCall)
        );
        assert_eq!(CostSplit::from_name("a100-per-granule"), None);
    }
}
