//! Replay: a compiled trace driven through an [`AllocBackend`], timed alone.

mod backend;
mod pattern;
mod pool_lines;
mod pool_ops;
mod pool_streams;
mod pools;
mod program;
mod run;
mod system;
mod timeline;

pub use backend::AllocBackend;
pub use pattern::PATTERN_WINDOW;
pub use pool_lines::pool_lines;
pub use pool_streams::MAX_STREAMS;
pub use pools::{PoolBackend, PoolStorage, PoolToken, StreamMode, device_properties};
pub use program::{Op, Program};
pub use run::{ReplayOptions, ReplayRun, replay};
pub use system::SystemBackend;
pub use timeline::{Sample, Timeline};

pub use crate::report::ReplayReport;
