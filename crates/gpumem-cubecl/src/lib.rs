//! # gpumem-cubecl — CubeCL's memory management, served by gpumem
//!
//! [`MemoryManagement<S>`] has every public function of
//! `cubecl_server::memory_management::MemoryManagement<S>` at cubecl-server
//! `0.12.0-pre.1`, with the same signatures, over any CubeCL
//! `ComputeStorage` `S` (cubecl-wgpu's `WgpuStorage` included). A runtime
//! switches by swapping two paths:
//!
//! ```text
//! cubecl_server::memory_management::{MemoryManagement, MemoryManagementOptions}
//!   -> gpumem_cubecl::{MemoryManagement, MemoryManagementOptions}
//! ```
//!
//! and keeps calling `MemoryManagement::from_configuration(storage,
//! &properties, config, logger, MemoryManagementOptions::new(name))`.
//!
//! In cubecl-wgpu 0.12.0-pre.1 the swap itself is three lines (the main
//! memory only; its staging and uniform memories stay on CubeCL's engine),
//! plus the dependency `gpumem-cubecl` in its `Cargo.toml`. The patch the
//! project applies, `xtask/cubecl/cubecl-wgpu.patch` (`cargo xtask
//! cubecl-client`, docs/cubecl.md), puts the swap behind a feature and
//! also counts the main memory's wgpu buffers for the side-by-side table:
//!
//! ```text
//! src/compute/mem_manager.rs  main_memory(..) -> gpumem_cubecl::MemoryManagement<WgpuStorage>,
//!                             built by gpumem_cubecl::MemoryManagement::from_configuration(..)
//!                             with gpumem_cubecl::MemoryManagementOptions::new("Main GPU Memory")
//! src/compute/stream.rs       pub memory: gpumem_cubecl::MemoryManagement<WgpuStorage>
//!                             (and `MemoryManagement` dropped from its cubecl_server import)
//! ```
//!
//! On Mesa's lavapipe with that patch, cubecl-wgpu's `tests/graph.rs`,
//! `tests/relocation.rs`, `device_poisoned` and
//! `discarded_launch_profiling` pass with gpumem as the main memory, and
//! so do its unit tests (cubecl-core's and cubecl-std's exported runtime
//! tests) but those CubeCL itself ignores; `cargo xtask cubecl-client`
//! runs them and docs/cubecl.md has the table. One more,
//! `i64_ty::unary_int::test_reverse_bits`, aborts the process inside
//! lavapipe's LLVM ("Cannot emit physreg copy instruction") with CubeCL's
//! own engine too: a driver bug, skipped.
//!
//! ## How it maps
//! - **Pools.** gpumem's engine (`mem_pools::MemoryManagement`) carves the
//!   pages. CubeCL's `Adaptive` layout is gpumem's `SubSlices` and
//!   `ExclusivePages` is gpumem's `ExclusivePages`. `SubSlices` has
//!   `Adaptive`'s shape (a pool for slices up to 64 KiB, then one whose
//!   pages grow to the allocation that outgrew them) with smaller pages:
//!   2 MiB for the small slices where CubeCL's are 8 MiB, and a grown page
//!   is the smallest whole MiB above the allocation where CubeCL adds a MiB
//!   (docs/pools.md, "SubSlices"). CubeCL's storages (wgpu
//!   buffers) have no virtual memory, so gpumem uses its **paged layout**,
//!   never arenas; arenas need a storage that maps physical memory under
//!   reserved addresses (CUDA VMM, the host memfd backend).
//! - **Storage.** [`CubeStorage`] gives each CubeCL buffer a mem-storage page
//!   id and keeps CubeCL's own error when the storage refuses, so an
//!   `OutOfMemory` reaches the runtime unchanged.
//! - **Handles and cursors.** `reserve` returns a fresh CubeCL handle whose
//!   location names an entry pairing it with a gpumem handle; `bind(reserved,
//!   assigned, cursor)` moves the allocation to the client's handle, stamps
//!   the cursor and releases the failure claims, as CubeCL does. A stale or
//!   never-allocated handle is `IoError::NotFound`.
//! - **Frees.** CubeCL frees by dropping the last handle. The adapter gives
//!   such allocations back to the engine at its next `&mut` call, and
//!   reports subtract them before then, so `memory_report` is current the
//!   moment a handle drops.
//! - **Page updates.** `Allow` runs gpumem's periodic cleanup first,
//!   `AddOnly` does not, `Forbidden` refuses any new page
//!   (`IoError::PageUpdateForbidden`). gpumem never renumbers pages (its
//!   handles are an indirection), so locations stay valid under every mode.
//! - **Guards.** `guard(location)` keeps the allocation at that location from
//!   being freed, reused or relocated while the guard lives, even after its
//!   last handle drops. CubeCL guards the whole page; gpumem guards the
//!   allocation the recorded launch was given. An allocation given back
//!   before the guard is asked for (a temporary freed inside the recording)
//!   has its exact bytes re-claimed (`reclaim_extent`) if nothing took them
//!   since; if another allocation did, that one is what the graph replays
//!   into, and it is guarded only if a recorded launch touched it too.
//! - **Relocation** runs gpumem's plan → copy → commit with the copies on
//!   the runtime's `CopyQueue`; allocations with a binding out, or guarded,
//!   are pinned for its length. `relocation_need` is `UnderPressure` only
//!   where the device states a capacity, as CubeCL's.
//! - **Failures.** Each allocation carries CubeCL's own `Taint` (per-range
//!   claims refcounted into the `ErrorGraph`); `taint`, `written`, `failure`
//!   and every path that ends an allocation keep the counts as CubeCL does.
//!
//! ## What is approximated
//! - `Dedicated` windows have no pool of their own: their allocations go to
//!   the dynamic pools, and `memory_report().dedicated` is always empty.
//! - The persistent config `SizeMatch` behaves as `Enabled` (no automatic
//!   size matching into the persistent pool).
//! - A failed relocation wait leaks the moved allocations (gpumem's rule)
//!   where CubeCL frees them on a poisoned device.
//! - Report kinds are gpumem's pools named in CubeCL's words; page counts
//!   and sizes are gpumem's, not CubeCL's layout.
//! - A location's `pool` byte is 0 for every dynamic allocation (the
//!   location names the adapter's entry, not a pool), and the persistent
//!   sentinel for persistent ones.
//!
//! ## CubeCL's own tests
//! `tests/ported.rs` and `tests/ported_guards.rs` rewrite the unit tests of CubeCL's `memory_manage.rs`
//! (0.12.0-pre.1, 24 tests) against the adapter, with CubeCL's assertions
//! where they hold for any layout. Three assert CubeCL's own layout and do
//! not apply as written:
//! - `alloc_respects_alignment_size` and `noslice_alloc_respects_alignment_size`:
//!   an alignment of 50 bytes, so 10 bytes of padding per 40-byte slice.
//!   gpumem rounds the alignment up to a power of two (64: 24 bytes each);
//!   devices align to powers of two (wgpu: 32 or 256).
//! - `allocs_on_correct_page`: asserts the two allocations' locations name
//!   different pools (here the location names an entry) and that 8 MiB +
//!   5 MiB are reserved: both engines grow the adaptive page to 5 MiB for
//!   4 MiB, but gpumem's metadata pages are 2 MiB, so 7 MiB. Its
//!   behaviour, metadata and workload in separate pools, is ported.
//!
//! Ported with CubeCL's numbers because gpumem's `SubSlices` has the same
//! 64 KiB metadata limit and 2 MiB first adaptive pages:
//! `test_memory_usage`, `alloc_two_chunks_on_one_page`,
//! `alloc_allocs_new_storage`, `single_arena_reuses_across_sizes`,
//! `adaptive_preset_routes_near_page_sizes_to_the_adaptive_pool`.

mod adopt;
mod entries;
mod errors;
mod management;
mod options;
mod relocation;
mod report;
mod state;
mod storage;
mod trace;

pub use options::MemoryManagementOptions;
pub use state::MemoryManagement;
pub use storage::{CubeStorage, UNKNOWN_CAPACITY};
