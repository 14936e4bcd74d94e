//! # gpumem-benches — gpumem measured against its peers, side by side
//!
//! Shared pieces of the criterion targets (`benches/*.rs`), the quick
//! deterministic table (`bench-quick`, run by `cargo xtask bench`) and the
//! GPU measurements (`gpu-bench`, run by `cargo xtask gpu-bench`).
//!
//! - [`arenas`]: the arena table — `gpumem compare`'s rows (its library)
//!   for `Device` on paged pools and on its default (arenas) and
//!   offset-allocator's extent, beside the floor, which only this table has.
//! - [`device_peer`]: gpumem as every table measures it — `gpumem::Device`
//!   through the `gpumem` command's own replay backend, with its defaults
//!   or on paged pools: the figures a user of the facade gets.
//! - [`sizes`]: seeded size mixes and churn plans, so every peer replays the
//!   very same sequence of sizes and slots.
//! - [`churn`]: the reserve+drop pair and the steady-state churn over a set
//!   of live slices, for three peers: gpumem's pool engine
//!   (`MemoryManagement` on a simulated device: these micro-benchmarks
//!   time the engine alone), `offset-allocator` (the
//!   bare O(1) offset allocator) and the system allocator on host memory.
//! - [`replay_peers`]: `offset-allocator` and the system allocator as
//!   replay backends of the `gpumem` command's library, so the built-in
//!   workloads run through every peer.
//! - [`size_sweep`]: one reservation plus its free through `Device`'s
//!   defaults, 2 MiB to 64 GiB: what a pair costs against the slots it
//!   spans (the `size_sweep` group and the `size-sweep` binary).
//! - [`relocating`]: `Device` on paged pools with a relocation policy
//!   (none, the trigger, or explicit relocation after every op).
//! - [`fragmentation`]: the fragmentation table (peak and final reserved ÷
//!   live) of every workload, relocation off and on.
//! - [`tight`]: relocation on a device sized just above each workload's
//!   peak (where the trigger policy acts), counting failed allocations.
//! - [`quick`], [`summary`], [`table`]: the quick suite and its printed
//!   tables and goals (its replay rows time `gpumem compare`'s rows).
//! - [`gpu`]: measurements that need a CUDA device (skipped with a printed
//!   reason when [`mem_storage::cuda_available`] is false).
//!
//! ## Contract
//! - Every sequence is deterministic (fixed seeds); only timings vary.
//! - Setup (building a live set, generating a workload) is never timed.
//! - Errors are [`BenchError`]s that say which peer failed on what; nothing
//!   here panics on a failed allocation.
//!
//! ## Non-goals
//! - Speed goals are not asserted anywhere: they are read off the tables
//!   (`docs/benchmarks.md`), never timed tests.
//! - Multi-threaded allocation (the ledger bench covers the one shared
//!   atomic path; the pool engine is one manager per stream by design).

pub mod arenas;
pub mod churn;
pub mod device_peer;
pub mod error;
pub mod fragmentation;
pub mod gpu;
pub mod quick;
pub mod relocating;
pub mod replay_peers;
pub mod size_sweep;
pub mod sizes;
pub mod summary;
pub mod table;
pub mod tight;

pub use error::{BenchError, Result};

pub use mem_storage::units::{GIB, KIB, MIB};

/// The simulated device every host-side measurement uses: an H100/H200-class
/// 80 GiB, as the `gpumem` command's default.
pub const DEVICE_BYTES: u64 = 80 * GIB;
