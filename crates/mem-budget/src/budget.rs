//! `MemoryBudget`: how many device bytes a manager (or a device) may hold.
//!
//! A budget is always resolved to bytes before it is enforced, so the ledger
//! compares integers only. A fraction of device memory is resolved once,
//! against the total that [`DeviceResource::mem_info`] reports — the total,
//! not the free bytes, so the budget does not shrink because another process
//! happens to hold memory at the moment it is built.

use mem_storage::DeviceResource;

use crate::error::{BudgetError, Result};

/// A device byte limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    /// The most bytes that may be held at once.
    pub device_bytes: u64,
}

impl MemoryBudget {
    /// A budget of exactly `device_bytes` bytes.
    pub fn bytes(device_bytes: u64) -> Self {
        Self { device_bytes }
    }

    /// No limit beyond what the device itself refuses (`u64::MAX` bytes).
    pub fn unlimited() -> Self {
        Self {
            device_bytes: u64::MAX,
        }
    }

    /// A fraction in `(0, 1]` of the total memory of `resource`'s device,
    /// rounded down to whole bytes.
    ///
    /// # Errors
    /// [`BudgetError::InvalidFraction`] for a fraction outside `(0, 1]` or NaN;
    /// [`BudgetError::Kernel`] when the device cannot report its memory.
    pub fn fraction_of(resource: &dyn DeviceResource, fraction: f64) -> Result<Self> {
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(BudgetError::InvalidFraction { fraction });
        }
        let info = resource
            .mem_info()
            .map_err(|e| BudgetError::kernel("mem_info", e))?;
        // f64 has 53 bits of mantissa: exact for every device below 8 PiB,
        // and the product never exceeds `total` because fraction ≤ 1.
        let bytes = ((info.total as f64) * fraction).floor() as u64;
        Ok(Self {
            device_bytes: bytes.min(info.total),
        })
    }

    /// Whether this budget limits anything.
    pub fn is_unlimited(&self) -> bool {
        self.device_bytes == u64::MAX
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use mem_storage::HostResource;

    #[test]
    fn a_fraction_resolves_against_total_device_memory() {
        let device = HostResource::with_capacity(1000);
        assert_eq!(
            MemoryBudget::fraction_of(&device, 0.25).unwrap(),
            MemoryBudget::bytes(250)
        );
        assert_eq!(
            MemoryBudget::fraction_of(&device, 1.0)
                .unwrap()
                .device_bytes,
            1000
        );
    }

    #[test]
    fn a_fraction_outside_zero_to_one_is_refused_with_its_value() {
        let device = HostResource::with_capacity(1000);
        for bad in [0.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
            match MemoryBudget::fraction_of(&device, bad) {
                Err(BudgetError::InvalidFraction { fraction }) => {
                    assert!(fraction.is_nan() == bad.is_nan() && (bad.is_nan() || fraction == bad))
                }
                other => panic!("fraction {bad} gave {other:?}"),
            }
        }
    }
}
