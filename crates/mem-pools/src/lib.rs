//! # mem-pools — the gpumem pool engine
//!
//! [`MemoryManagement`] carves storage pages (from mem-storage's
//! [`ComputeStorage`](mem_storage::ComputeStorage)) into slices and hands them
//! out as [`ManagedMemoryHandle`]s.
//!
//! ## Example
//!
//! A manager over host memory: reserve, write through a binding, drop the
//! handle (an O(1) free, processed at the next call), give the page back.
//!
//! ```
//! use std::sync::Arc;
//!
//! use mem_pools::{
//!     MemoryConfiguration, MemoryDeviceProperties, MemoryManagement, ServerLogger,
//! };
//! use mem_storage::HostStorage;
//!
//! let properties = MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 };
//! let mut memory = MemoryManagement::from_configuration(
//!     HostStorage::host(),
//!     &properties,
//!     MemoryConfiguration::SubSlices,
//!     Arc::new(ServerLogger::default()),
//!     Default::default(),
//! );
//! let handle = memory.reserve(1000)?;
//! memory.write(handle.binding(), b"abc")?;
//! let mut back = [0; 3];
//! memory.read(handle.binding(), &mut back)?;
//! assert_eq!(&back, b"abc");
//! let usage = memory.memory_usage();
//! assert_eq!((usage.number_allocs, usage.bytes_in_use), (1, 1000));
//!
//! let binding = handle.binding();
//! drop(handle); // the last holder: the slice is free at the next call
//! memory.cleanup(true); // and its empty page goes back to the storage
//! assert_eq!(memory.memory_usage().bytes_reserved, 0);
//! // A binding that outlived its handle is an error, never other memory.
//! assert!(memory.read(binding, &mut back).is_err());
//! # Ok::<(), mem_pools::IoError>(())
//! ```
//!
//! ## Contract
//! - **Handles are an indirection.** A handle names a slot (index +
//!   generation); the slot names the slice. Relocation and `bind` rewrite
//!   the slot, so every handle and [`ManagedMemoryBinding`] follows. Indices
//!   are checked `u32`s that never wrap (exhaustion is a typed error, a slot
//!   at its last generation is retired); a stale or foreign binding is an
//!   [`IoError`], never another allocation's memory.
//! - **Freeing is O(1).** Dropping the last holder of a handle, on any
//!   thread, pushes its cell onto the drop queue (a lock-free stack) the
//!   engine drains at its next call; nothing scans slices to find free ones.
//! - **Finding a slice is O(1).** Segregated free lists with bitmaps (TLSF)
//!   for sliced and exclusive pools, exact-size lists for the persistent
//!   pool; split and coalesce use each slice's neighbour links.
//! - **Pools grow by pages; old pages become outdated** and are emptied by
//!   relocation (plan → copy → commit, all-or-nothing per page; dropping a
//!   plan loses nothing; a failed wait leaks instead of freeing).
//!   `plan_compaction` sends sparse *current* pages of sliced pools down
//!   the same path, into room other pages already hold (it never
//!   allocates); [`CompactionState`] tells a trigger what it could gain.
//! - **No page exceeds the device's largest page**, persistent ones
//!   included: a larger request is [`IoError::BufferTooBig`] at the engine.
//! - **Raw addresses pin.** `get_resource` marks the allocation raw-out
//!   (its page never moves) until `release_raw` or its free: one flag, the
//!   owner's. Anyone else takes a counted [`RawPin`] (`raw_pin`,
//!   `get_resource_pinned`), released by its drop on any thread; a page
//!   with the flag or any guard on a slice never moves. `capture_end`
//!   returns *pin handles*, holders of their own: the memory does not move
//!   while the graph holds one, and is movable again once the graph drops
//!   them even if the user keeps the buffer. `get_storage` views do not pin:
//!   a view of a freed page is a stale id, never an alias.
//! - **Capture never allocates inside the window** (see [`CaptureState`]),
//!   and no relocation copy runs on the capturing stream. `capture_abort`
//!   ends a window without pinning; `reclaim_extent` re-claims one known
//!   free extent exactly, as a pin handle.
//! - **A refused bind can keep its handles**: `try_bind` gives both back
//!   in a [`BindRefused`]; `bind_would_refuse` runs the checks without
//!   consuming them. Plain `bind` drops them on refusal (documented there).
//! - **Everything is a value**: [`MemoryUsage`], [`MemoryReport`], [`PoolStats`].
//!   [`MemoryManagement::memory_usage`] and [`MemoryManagement::memory_report`]
//!   count a dropped handle as freed at once, before the queue is drained
//!   — a graph's dropped pin handles too, once they were an allocation's
//!   last holders (its pages, and so `bytes_reserved`, change at the drain:
//!   [`MemoryManagement::drain_drops`]); [`PoolStats`] counts at the drain.
//! - No call panics on any input; bad input is a typed error or a
//!   documented no-op, and an error leaves the engine as it was.
//!
//! ## Layout
//! One folder per noun, in layers that point down only (no module names
//! one above it; `cargo xtask layout` checks for circles):
//! - `engine/` (top): [`MemoryManagement`], its whole public API in
//!   `engine/management.rs` (an example per method), its fields, and its
//!   machinery a file per concern: reserve, access, `bind`, pins, the free
//!   path, cleanup and install, the capture window, `reclaim_extent`,
//!   relocation and compaction, `sleep` / `wake`, the reports.
//! - `capture/`, `relocation/`, `report/`: the values the engine shows and
//!   takes — [`CaptureState`], the relocation types and [`CopyQueue`],
//!   [`MemoryUsage`], [`MemoryReport`], [`PoolStats`].
//! - `pools/`: `Core` (the floor's `Tables` beside the pools and the
//!   arenas' state, routing a size to its pool); `dispatch.rs` (a request
//!   to its pool: a reservation down its kind's path, a free, a page's
//!   release, a known extent, with the arena's step between); `persistent.rs` (the
//!   persistent pool, its own type over a paged pool's page lists);
//!   `paged/` (sliced and exclusive pages: `Pool`, whose methods take
//!   `&mut Tables` — carving and the free path, pages, page-size growth,
//!   a known extent — and the free index);
//!   `arena/` (virtual-memory arenas: `Arenas`, their shared state, and
//!   its methods — taking `ArenaCtx`, the floor, the pools and the
//!   storage borrowed together — a file per concern:
//!   the reserve path and placement on mapped chunks, chunks, moves, the
//!   cache, release, stream-ordered reclamation, the arena's side of
//!   sleep).
//! - `tables/` (the floor, knowing no pool kind): `Tables` (`floor.rs`,
//!   the floor in one value, with a slice's pin and cursor counts), the
//!   slot table, the slice and page tables, `bind`'s cursors, and the
//!   per-page indexes (slice starts; the chunk map, `chunk_map/`, a file
//!   per question it answers).
//! - `handles/`: handles and bindings, slot keys and drop records, the
//!   counted cells and their pool, the drop queue, [`RawPin`].
//! - `config.rs`, `pool_kind.rs` (the one table of pool-kind names),
//!   `error/`, `logger.rs`.
//!
//! ## Non-goals
//! - Copying bytes between pages (mem-relocate supplies the [`CopyQueue`];
//!   [`StorageCopyQueue`] is a plain one for tests).
//! - Deciding *when* to relocate, graph objects, budgets: mem-relocate,
//!   mem-capture, mem-budget.
//! - Thread safety of the engine itself: one manager per stream, `&mut self`.

mod capture;
mod config;
mod engine;
mod error;
mod handles;
mod logger;
mod pool_kind;
mod pools;
mod relocation;
mod report;
mod tables;

pub use capture::record::CaptureState;
pub use config::{
    DEFAULT_RELEASE_THRESHOLD, MemoryAllocationMode, MemoryConfiguration, MemoryDeviceProperties,
    MemoryManagementOptions, MemoryPoolOptions, PoolType,
};
pub use engine::state::MemoryManagement;
pub use error::BindRefused;
pub use error::{InstallMemoryPoolsError, IoError, RelocationCopyError};
pub use handles::handle_cell::ManagedMemoryHandle;
pub use handles::keys::ManagedMemoryBinding;
pub use handles::raw_pin::RawPin;
pub use logger::ServerLogger;
pub use pool_kind::PoolKind;
pub use pools::arena::chunk_cache::CACHE_SHARE;
pub use pools::arena::sleep::{SleepContents, SleepReport};
pub use pools::arena::state::{DEFAULT_MAX_CHUNK, IDLE_SHARE};
pub use pools::paged::pool::MAX_PAGE_SIZES;
pub use relocation::{
    CompactionState, CopyQueue, Landed, RelocationOutcome, RelocationPlan, RelocationShape,
    RelocationState, StorageCopyQueue, TargetRoom,
};
pub use report::pools::{MemoryReport, PoolReport, PoolReportKind};
pub use report::stats::{ChunkStats, PoolStats, Stat};
pub use report::usage::MemoryUsage;
