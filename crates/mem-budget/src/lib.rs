//! # mem-budget — exact, race-free device memory budgets
//!
//! [`GpuMemoryManager`] enforces a byte budget on a device with an atomic
//! ledger, and [`DeviceRuntime`] is the resource stack every allocation of a
//! device goes through: [`GlobalDeviceBudget`] (one hard cap shared by every
//! user of the device) → middle layers (logging, statistics) → the device's
//! backend resource from mem-storage.
//!
//! ```
//! use std::sync::Arc;
//! use mem_budget::{AllocTag, BudgetDevice, DeviceRuntime, GpuMemoryManager, MemoryBudget};
//!
//! let device = BudgetDevice::host_with_capacity(1 << 20);
//! // Everyone on the device shares a 64 KiB cap; this manager may use 48 KiB of it.
//! let runtime = Arc::new(DeviceRuntime::standard(device.clone(), MemoryBudget::bytes(64 << 10)));
//! let manager = Arc::new(GpuMemoryManager::with_runtime(device, MemoryBudget::bytes(48 << 10), runtime)?);
//!
//! let batch = manager.reserve_bytes(16 << 10)?; // claimed, nothing allocated
//! let slice = manager.alloc::<f32>(1024)?;      // 4 KiB through the stack
//! slice.write(&[1.0; 1024])?;
//! let block = manager.alloc_raw(4096, AllocTag::SCRATCH)?;
//! assert_eq!(manager.allocated_bytes(), (16 << 10) + 8192);
//! assert!(manager.alloc::<u8>(40 << 10).is_err()); // past the local budget
//! drop((batch, slice, block));
//! assert_eq!(manager.allocated_bytes(), 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Contract
//! - **A budget is a ledger, not a guess.** Claims are compare-and-swap
//!   loops that only ever add what fits: no interleaving of threads can take
//!   a ledger past its limit. A manager and its overlays share one ledger.
//! - **Nothing half-done.** A refused or failed allocation rolls back every
//!   claim it made; a refused manual release changes no counter.
//! - **A failed free stays charged** and is counted: release was not proven,
//!   and counting it free could oversubscribe the device. A runtime retries
//!   it at the next [`DeviceRuntime::reap_pending_deallocations`].
//! - **Reservations allocate nothing.** [`GpuMemoryManager::reserve_bytes`]
//!   claims bytes (device budget first, then local) and never touches the
//!   device or [`GpuMemoryManager::alloc_count`].
//! - **Pool pages pay too.** [`GlobalDeviceBudget`] is a `DeviceResource`,
//!   so `ResourceStorage` over it (or over [`DeviceRuntime::resource`])
//!   charges the pool engine's pages to the same device budget.
//! - Every error is a [`BudgetError`] carrying the numbers: requested,
//!   allocated, limit, remaining, and which budget refused.
//!
//! ## Non-goals
//! - Slicing, caching or reusing memory (mem-pools does that above a
//!   storage built on this crate's stack).
//! - Owning CUDA driver code: CUDA resources come from mem-storage.
//! - Soft limits, eviction or waiting for room: a refusal is immediate and
//!   the caller decides (free, reap, relocate, retry).
//!
//! ## Names
//! The xlog-compatible `GpuMemoryManager` API's product names are kept as
//! doc aliases: `XlogDeviceRuntime` → [`DeviceRuntime`], `XlogError` →
//! [`BudgetError`], `TrackedCudaSlice` → [`TrackedSlice`]. That API's
//! `Arc<CudaDevice>` is a
//! [`BudgetDevice`], which is the host, a CUDA device, or any resource.

mod account;
mod budget;
mod cuda;
mod device;
mod error;
mod global;
mod global_handle;
mod ledger;
mod manager;
mod runtime;
mod runtime_builder;

pub use budget::MemoryBudget;
pub use device::BudgetDevice;
pub use error::{BudgetError, BudgetScope, Result};
pub use global::{BudgetedVirtualMemory, GlobalDeviceBudget};
pub use global_handle::{GLOBAL_BUDGET_BACKEND, GlobalBudgetHandle, GlobalReservation};
pub use ledger::{Ledger, Refusal};
pub use manager::GpuMemoryManager;
pub use manager::element::{AllocTag, DeviceElement};
pub use manager::reservation::GpuMemoryReservation;
pub use manager::tracked::{RuntimeAllocBlock, TrackedSlice};
pub use runtime::{DeviceRuntime, Layer, RuntimeLog};
pub use runtime_builder::DeviceRuntimeBuilder;
