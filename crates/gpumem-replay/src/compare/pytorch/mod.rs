//! A modeled PyTorch `CUDACachingAllocator`: what PyTorch would reserve on
//! any trace, for `gpumem compare`'s `pytorch` and `pytorch-expandable`
//! rows.
//!
//! The model follows the allocator's published policy
//! (`c10/cuda/CUDACachingAllocator.cpp`), not its code:
//! - requests round up to 512 B (or to `roundup_power2_divisions` steps);
//! - rounded sizes up to 1 MiB use the small pool, whose segments are
//!   2 MiB; larger ones the large pool, whose segments are 20 MiB below
//!   10 MiB and the size rounded up to 2 MiB from there;
//! - a request takes the best-fitting cached block of its own stream and
//!   pool (never another stream's), and a block is split when the rest is
//!   at least 512 B (small pool, expandable segments) or more than 1 MiB
//!   (large pool, and only below `max_split_size`); freed blocks merge with
//!   free neighbours of the same segment;
//! - when the device cannot hold a new segment, PyTorch's two retries run
//!   (`release.rs`): with `max_split_size` set, cached oversize blocks of
//!   the stream and pool are freed until the request fits; then every
//!   cached segment that is wholly free is released (`cudaFree`);
//! - `expandable_segments`: segments per stream and pool, each reserving
//!   1⅛ × the device of address space, whose 2 MiB (small) or 20 MiB
//!   (large) pages are mapped when needed and unmapped when the cache is
//!   released (see `expandable.rs`); best fit counts a free block before
//!   unmapped space as that much larger.
//!
//! Not modeled: events and `record_stream` (a freed block is reusable at
//! once on its stream), CUDA graph pools, the garbage-collection threshold,
//! `set_per_process_memory_fraction`, and switching `expandable_segments`
//! on or off during a run (docs/cli.md, "The pytorch rows", lists what the
//! expandable variant was checked against and what it leaves out).

mod backend;
mod blocks;
mod caching;
mod conf;
mod error;
mod expandable;
mod policy;
mod release;

pub use backend::PytorchBackend;
pub use blocks::{Calls, MappedRange};
pub use caching::CachingAllocator;
pub use conf::{PYTORCH_CONF_KEYS, parse_pytorch_conf};
pub use error::ModelError;
pub use policy::{
    LARGE_BUFFER, MIN_BLOCK, MIN_LARGE_ALLOC, Policy, Pool, ROUND_LARGE, SMALL_BUFFER, SMALL_SIZE,
};

#[cfg(test)]
mod expandable_tests;
#[cfg(test)]
mod expandable_torch_tests;
#[cfg(test)]
mod invariants_tests;
#[cfg(test)]
mod test_models;
#[cfg(test)]
mod tests;
