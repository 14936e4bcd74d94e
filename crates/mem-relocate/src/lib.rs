//! # mem-relocate — moving live memory off outdated pages, across streams
//!
//! Pools grow by pages of a larger size; the older pages become *outdated*:
//! they serve no new reservation and go back to the device once empty. A
//! long-lived allocation can keep an outdated page alive forever. This crate
//! decides when to move such allocations and drives the move across a
//! device's streams, over the pool engine's plan → copy → commit
//! ([`mem_pools::MemoryManagement::plan_relocation`] and friends).
//!
//! ## Example
//!
//! One host stream whose growable pool leaves a live allocation on an
//! outdated page; one relocation (plan, copy, commit) moves it, and its
//! handle follows. A runtime with several streams (gpumem's `Device`) runs
//! the same moves through [`RelocatingStreams`] and [`DeviceRelocation`].
//!
//! ```
//! use std::sync::Arc;
//!
//! use mem_pools::{
//!     MemoryConfiguration, MemoryDeviceProperties, MemoryManagement, MemoryPoolOptions,
//!     PoolType, ServerLogger,
//! };
//! use mem_relocate::{RelocationReason, StorageCopyQueue, relocate_memory};
//! use mem_storage::HostStorage;
//!
//! // One sliced pool whose pages start at 4 KiB and grow up to 256 KiB.
//! let config = MemoryConfiguration::Custom {
//!     pool_options: vec![MemoryPoolOptions {
//!         pool_type: PoolType::SlicedPages { page_size: 4 << 10, max_slice_size: 256 << 10 },
//!         dealloc_period: None,
//!     }],
//! };
//! let properties = MemoryDeviceProperties { max_page_size: 256 << 10, alignment: 256 };
//! let mut mm = MemoryManagement::from_configuration(
//!     HostStorage::host(),
//!     &properties,
//!     config,
//!     Arc::new(ServerLogger::default()),
//!     Default::default(),
//! );
//!
//! let old = mm.reserve(1 << 10)?; // on the first 4 KiB page
//! mm.write(old.binding(), b"kept")?;
//! let big = mm.reserve(5 << 10)?; // needs a larger page: the 4 KiB one is outdated
//! assert!(mm.has_outdated());
//!
//! let moved = relocate_memory(&mut mm, RelocationReason::Explicit, &mut StorageCopyQueue)?;
//! assert_eq!(moved.moved_slices, 1);
//! mm.cleanup(true); // the emptied outdated page goes back
//! assert!(!mm.has_outdated());
//! let mut back = [0; 4];
//! mm.read(old.binding(), &mut back)?;
//! assert_eq!(&back, b"kept");
//! # drop(big);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Contract
//! - **The order of steps lives in one place**: [`RelocatingStreams`]'s
//!   provided methods (the `RelocatingStreams` protocol); it cannot be
//!   reordered.
//! - **The steps live in one place too**: [`DeviceRelocation`] implements
//!   the nine steps for any runtime that supplies [`StreamMemories`] —
//!   access to stream *i*'s memory, recording, finishing work, bytes held.
//!   The gpumem facade runs on it, and
//!   both follow one retry rule for refused reservations ([`ReserveRetry`]).
//! - **Nothing moves while any stream records a graph**, and every
//!   stream's work is finished before a byte moves.
//! - **Which reasons may allocate** ([`RelocationReason::room`]): an
//!   explicit relocation or one under memory pressure only uses room the
//!   pools already hold (reserved bytes never grow); running out of page
//!   sizes or preparing a capture may allocate new current pages.
//! - **Compaction** ([`compact`]): for a reason whose room is held
//!   (explicit, memory pressure) a relocation also empties sparse *current*
//!   pages into room other pages hold, after moving what outdated pages
//!   hold; [`DeviceRelocation`]'s cleanup step compacts too, so
//!   [`RelocatingStreams::reclaim`] does even with nothing outdated, and its
//!   trigger asks for a pressure relocation when holes add up to a page.
//!   Reserved bytes never grow for either reason.
//! - **When** ([`RelocationTrigger`]): while the device still has a page to
//!   spare (`allocated + next page > capacity − one page`), or before the
//!   pools run out of page sizes; never again on an unchanged shape after a
//!   relocation that moved nothing.
//! - **Plan → copy → commit as types** ([`Planned`], [`Copied`]): only a
//!   completed copy can be committed, on the manager that planned it;
//!   dropping either is a lossless abort; a failed wait leaks (logged at
//!   error level), never frees. Pages pinned by a graph or with a raw
//!   address out never move; a page moves all-or-nothing.
//! - **Copies** go through a [`CopyQueue`]: [`StorageCopyQueue`] (host
//!   memcpy through the storage) or [`CudaCopyQueue`] (a copy stream
//!   ordered after every stream by events, waited before commit).
//! - **The runtime** is gpumem's `Device` (several streams, each with its
//!   own `MemoryManagement`, one relocating stream): it implements
//!   [`StreamMemories`] and runs every step through [`DeviceRelocation`].
//!   Moves never cross streams: each stream's memory relocates within
//!   itself.
//! - Bad input (an unknown stream) is a typed [`RelocationError`] and
//!   changes nothing; no call panics.
//!
//! ## Non-goals
//! - Planning which slice goes where, and rewriting handles: the pool
//!   engine does that (mem-pools).
//! - Graph objects and the capture state machine (mem-capture); budgets
//!   (mem-budget); wiring streams of a runtime (the gpumem facade).
//! - Choosing a compaction's moves (the engine's `plan_compaction`), or
//!   compacting for a reason that may allocate: out of page sizes or before
//!   a capture, only outdated pages are emptied.

mod device_relocation;
mod error;
mod execute;
mod reason;
mod streams;
mod trigger;

pub use device_relocation::log::RelocationLog;
pub use device_relocation::memories::{StreamMemories, StreamParts};
pub use device_relocation::retry::{ReserveRetry, RetryStep};
pub use device_relocation::{DeviceRelocation, RelocationSummary};
pub use error::{RelocationError, ServerError};
pub use execute::compact::{Compaction, compact_memory, compaction_worthwhile};
pub use execute::cuda::{CudaCopyQueue, CudaStreamStorage};
pub use execute::modeled::ModeledCopyQueue;
pub use execute::{Copied, Planned, compact, relocate_memory};
pub use mem_pools::{CompactionState, CopyQueue, RelocationOutcome, StorageCopyQueue};
pub use reason::{RelocationReason, TargetRoom};
pub use streams::RelocatingStreams;
pub use trigger::RelocationTrigger;
pub use trigger::need::{self, RelocationNeed};
