//! Replay: a compiled trace driven through an [`AllocBackend`], timed alone.

mod backend;
mod program;
mod run;
mod system;
mod timeline;

pub use backend::AllocBackend;
pub use program::{Op, Program};
pub use run::{ReplayOptions, ReplayRun, replay};
pub use system::SystemBackend;
pub use timeline::{Sample, Timeline};
mod pools;
pub use pools::replay_on_pools;
