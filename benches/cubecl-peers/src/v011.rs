//! CubeCL's engine as published in cubecl-server 0.11.3.
//!
//! The engine and storage sources are shared with the other version:
//! `MemoryManagement`'s API is the same in 0.11.3 and 0.12.0-pre.1, so
//! each version compiles the same two files against its own crates.

pub use cubecl_environment_011 as environment;
pub use cubecl_ir_011 as ir;
pub use cubecl_server_011 as server;

/// The row's name.
pub const NAME: &str = "cubecl 0.11.3";

// On purpose: each version compiles the same source against its own crates.
#[allow(clippy::duplicate_mod)]
#[path = "engine.rs"]
pub mod engine;
#[allow(clippy::duplicate_mod)]
#[path = "storage.rs"]
pub mod storage;
