//! # gpumem-cli — the `gpumem` command's library
//!
//! The command's arguments and output on top of `gpumem_replay`, which
//! holds the trace readers, the workloads, the replay loop, the peer
//! models and the reports.
//!
//! - [`cli`]: the command-line front end used by the `gpumem` binary; it
//!   runs a parsed command in-process, writing to the streams it is given.
//! - [`input`]: where the events come from (a trace file or a built-in
//!   workload) and the notes about them on stderr.
//! - [`compare`], [`plan`]: the `gpumem compare` and `gpumem plan`
//!   commands (arguments, output) over `gpumem_replay::compare` and
//!   `gpumem_replay::plan`.
//! - [`plot`], [`html`]: a replay as an SVG timeline and as one
//!   self-contained HTML page.
//!
//! Errors are the library's ([`CliError`] is `gpumem_replay::ReplayError`):
//! the command adds no failure of its own beyond what it prints.

pub mod cli;
pub mod compare;
pub mod html;
pub mod input;
pub mod plan;
pub mod plot;

pub use gpumem_replay::{ReplayError as CliError, Result};
