//! Replay: a compiled trace driven through an [`AllocBackend`], timed alone.
//!
//! gpumem is replayed through `gpumem::Device` ([`DeviceBackend`]); the
//! system allocator is the baseline ([`SystemBackend`]).

mod backend;
mod device;
mod device_ops;
mod pattern;
mod pool_lines;
mod program;
mod relocations;
mod run;
mod streams;
mod system;
mod timeline;

pub use backend::AllocBackend;
pub use device::{DeviceBackend, DeviceToken};
pub use pattern::PATTERN_WINDOW;
pub use program::{Op, Program};
pub use run::{ReplayOptions, ReplayRun, replay};
pub(crate) use streams::device_streams;
pub use streams::{MAX_STREAMS, StreamMode};
pub use system::SystemBackend;
pub use timeline::{Sample, Timeline};

pub use crate::report::ReplayReport;
