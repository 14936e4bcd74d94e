//! The atomics the ledger is built from, switched for loom's under `cfg(loom)`.
//!
//! Why a switch module: loom explores every interleaving of atomic operations
//! only if the code under test uses loom's atomic types. Routing the ledger's
//! imports through here lets the very same ledger source run both in
//! production (std atomics, zero cost) and under the loom model
//! (`RUSTFLAGS="--cfg loom" cargo test -p mem-budget --release --lib loom`).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};
