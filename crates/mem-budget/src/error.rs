//! The one error type of this crate.
//!
//! Every variant carries the numbers a caller needs to act: a refused
//! request says what was asked, what was held, the limit, what is left, and
//! *which* budget refused — the manager's own (local) or the device-wide one
//! shared by every user of the device (global), because the remedy differs
//! (free your own buffers vs. wait for other users of the device).

use mem_storage::StorageError;

/// Which budget refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetScope {
    /// The manager's own [`MemoryBudget`](crate::MemoryBudget), shared with its overlays.
    Local,
    /// The device-wide [`GlobalDeviceBudget`](crate::GlobalDeviceBudget) under the runtime.
    Global,
}

impl std::fmt::Display for BudgetScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Local => "local",
            Self::Global => "global device",
        })
    }
}

/// What went wrong in a budget, reservation or allocation call.
///
/// The xlog-compatible `GpuMemoryManager` API calls this `XlogError`.
#[doc(alias = "XlogError")]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// The request would take a budget past its limit. Nothing was claimed.
    #[error(
        "{which} budget exhausted: requested {requested} bytes with {allocated} of {limit} bytes \
         allocated ({remaining} remaining); free or drop allocations, reap pending frees, or raise the budget"
    )]
    ResourceExhausted {
        /// Bytes asked for.
        requested: u64,
        /// Bytes held against that budget when it refused.
        allocated: u64,
        /// The budget's limit.
        limit: u64,
        /// Bytes that could still be claimed when it refused.
        remaining: u64,
        /// Which budget refused.
        which: BudgetScope,
    },
    /// The device, the runtime or the driver failed (or no runtime is attached
    /// where one is required). Local and global claims were rolled back.
    #[error("device operation `{operation}` failed: {detail}")]
    Kernel {
        /// What was being done.
        operation: &'static str,
        /// What went wrong and what to do about it.
        detail: String,
        /// The resource's error, when one caused this.
        #[source]
        source: Option<StorageError>,
    },
    /// A budget fraction outside `(0, 1]` or not a number.
    #[error("budget fraction {fraction} is invalid: give a fraction of device memory in (0, 1]")]
    InvalidFraction {
        /// The fraction given.
        fraction: f64,
    },
    /// A typed allocation whose byte size does not fit in `u64`/`usize`.
    #[error(
        "allocation of {len} elements of {element_bytes} bytes overflows the address space; request fewer elements"
    )]
    SizeOverflow {
        /// Elements asked for.
        len: usize,
        /// Size of one element.
        element_bytes: usize,
    },
    /// A manual release larger than what is accounted.
    #[error(
        "cannot release {requested} bytes: only {allocated} bytes are accounted; nothing was changed"
    )]
    Underflow {
        /// Bytes the caller asked to release.
        requested: u64,
        /// Bytes accounted at the time.
        allocated: u64,
    },
    /// An operation that needs an idle ledger found live bytes.
    #[error(
        "{operation} refused: {live_bytes} tracked bytes are live; drop every allocation and reservation first \
         (tracked allocations release themselves on drop)"
    )]
    LiveAllocations {
        /// What was refused.
        operation: &'static str,
        /// Bytes live at the time.
        live_bytes: u64,
    },
    /// A reservation was asked of a runtime that has no finite global budget to claim from.
    #[error(
        "the attached runtime has no finite global device budget to reserve against; \
         build it with a global budget (DeviceRuntime::builder(..).global_budget(..))"
    )]
    NoGlobalBudget,
    /// An overlay runtime that does not drive the manager's device.
    #[error(
        "runtime is for device `{runtime_device}`, but the manager is on device `{manager_device}`; \
         build the runtime from a clone of the manager's device (devices built separately are distinct \
         even when their names match)"
    )]
    DeviceMismatch {
        /// The manager's device.
        manager_device: String,
        /// The runtime's device.
        runtime_device: String,
    },
    /// A device that cannot be opened on this machine.
    #[error("device unavailable: {reason}")]
    DeviceUnavailable {
        /// Why.
        reason: String,
    },
}

impl BudgetError {
    /// Whether this is an out-of-memory refusal: a budget exhausted
    /// ([`BudgetError::ResourceExhausted`], local or global), or the device's
    /// own out-of-memory carried by [`BudgetError::Kernel`].
    pub fn is_out_of_memory(&self) -> bool {
        match self {
            Self::ResourceExhausted { .. } => true,
            Self::Kernel {
                source: Some(source),
                ..
            } => source.is_out_of_memory(),
            _ => false,
        }
    }

    /// Wrap a resource error from `operation` as [`BudgetError::Kernel`].
    pub(crate) fn kernel(operation: &'static str, source: StorageError) -> Self {
        Self::Kernel {
            operation,
            detail: source.to_string(),
            source: Some(source),
        }
    }

    /// A refusal of `which` budget with the ledger's numbers.
    pub(crate) fn exhausted(refusal: crate::ledger::Refusal, which: BudgetScope) -> Self {
        Self::ResourceExhausted {
            requested: refusal.requested,
            allocated: refusal.claimed,
            limit: refusal.limit,
            remaining: refusal.remaining(),
            which,
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = BudgetError> = std::result::Result<T, E>;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn every_message_carries_its_numbers_and_a_remedy() {
        let cases: Vec<(BudgetError, &[&str])> = vec![
            (
                BudgetError::ResourceExhausted {
                    requested: 4096,
                    allocated: 1000,
                    limit: 2048,
                    remaining: 1048,
                    which: BudgetScope::Global,
                },
                &["global device", "4096", "1000", "2048", "1048", "reap"],
            ),
            (
                BudgetError::InvalidFraction { fraction: 1.5 },
                &["1.5", "(0, 1]"],
            ),
            (
                BudgetError::SizeOverflow {
                    len: 7,
                    element_bytes: 8,
                },
                &["7 elements", "8 bytes", "fewer"],
            ),
            (
                BudgetError::Underflow {
                    requested: 9,
                    allocated: 3,
                },
                &["9", "3", "nothing was changed"],
            ),
            (
                BudgetError::LiveAllocations {
                    operation: "reset_tracking",
                    live_bytes: 77,
                },
                &["reset_tracking", "77", "drop"],
            ),
            (BudgetError::NoGlobalBudget, &["global_budget"]),
            (
                BudgetError::DeviceMismatch {
                    manager_device: "host:0".into(),
                    runtime_device: "cuda:1".into(),
                },
                &["host:0", "cuda:1", "clone"],
            ),
        ];
        for (error, needles) in cases {
            let text = error.to_string();
            for needle in needles {
                assert!(text.contains(needle), "`{text}` lacks `{needle}`");
            }
        }
    }

    #[test]
    fn a_kernel_error_keeps_the_device_error_as_its_source() {
        let cause = StorageError::OutOfMemory {
            backend: "host",
            refused_by: mem_storage::Refuser::Device,
            requested: 10,
            free: 5,
            total: 100,
        };
        let error = BudgetError::kernel("alloc", cause.clone());
        assert!(error.to_string().contains("alloc"));
        let source = std::error::Error::source(&error).expect("a source");
        assert_eq!(source.to_string(), cause.to_string());
    }
}
