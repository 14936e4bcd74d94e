//! The atomics and shared pointers of the handles and the drop queue,
//! switched for loom's under `cfg(loom)`, so the same source runs in
//! production (std, zero cost) and under the loom models of
//! `handle_cell_loom.rs` (`cargo xtask loom`).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex};
