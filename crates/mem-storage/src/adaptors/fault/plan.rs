//! What [`crate::FaultInjection`] counts and which calls it fails.
//!
//! Calls are named by [`Operation`] and seen by a plan as a [`Call`]
//! (index, operation, bytes, pointer, stream), so a test can say "the 7th
//! call", "every call from the 7th on" (a device that went away) or "every
//! allocation over 1 MiB" without knowing the code under test.

use std::fmt;
use std::sync::Arc;

use crate::id::{DevicePtr, StreamId};

/// A resource operation, as counted by [`crate::FaultInjection`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `allocate`.
    Allocate,
    /// `deallocate`.
    Deallocate,
    /// `write`.
    Write,
    /// `read`.
    Read,
    /// `fill`.
    Fill,
    /// `copy`.
    Copy,
    /// `synchronize`.
    Synchronize,
    /// `stream_wait`.
    StreamWait,
    /// `mem_info`, and `physical_info` of virtual memory.
    MemInfo,
    /// `reserve_range` (virtual memory).
    ReserveRange,
    /// `free_range` (virtual memory).
    FreeRange,
    /// `create_chunk` (virtual memory).
    CreateChunk,
    /// `release_chunk` (virtual memory).
    ReleaseChunk,
    /// `map` (virtual memory).
    Map,
    /// `unmap` (virtual memory).
    Unmap,
}

impl Operation {
    /// Every operation. Byte access through virtual memory counts as
    /// `Write`, `Read`, `Fill` and `Copy`.
    pub const ALL: [Operation; 15] = [
        Operation::Allocate,
        Operation::Deallocate,
        Operation::Write,
        Operation::Read,
        Operation::Fill,
        Operation::Copy,
        Operation::Synchronize,
        Operation::StreamWait,
        Operation::MemInfo,
        Operation::ReserveRange,
        Operation::FreeRange,
        Operation::CreateChunk,
        Operation::ReleaseChunk,
        Operation::Map,
        Operation::Unmap,
    ];

    /// The method's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Allocate => "allocate",
            Operation::Deallocate => "deallocate",
            Operation::Write => "write",
            Operation::Read => "read",
            Operation::Fill => "fill",
            Operation::Copy => "copy",
            Operation::Synchronize => "synchronize",
            Operation::StreamWait => "stream_wait",
            Operation::MemInfo => "mem_info",
            Operation::ReserveRange => "reserve_range",
            Operation::FreeRange => "free_range",
            Operation::CreateChunk => "create_chunk",
            Operation::ReleaseChunk => "release_chunk",
            Operation::Map => "map",
            Operation::Unmap => "unmap",
        }
    }

    pub(crate) fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// A counted call, as a predicate sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// 1-based index among the counted calls.
    pub index: u64,
    /// What was called.
    pub operation: Operation,
    /// Bytes involved (0 where none; for `map`, the chunk's size).
    pub bytes: u64,
    /// The pointer involved, if any (the destination for byte movement;
    /// for `map` and `unmap`, the address in the range).
    pub ptr: Option<DevicePtr>,
    /// The stream of the call.
    pub stream: StreamId,
}

/// A predicate choosing calls to fail.
pub type CallPredicate = Arc<dyn Fn(&Call) -> bool + Send + Sync>;

/// Which counted calls fail.
#[derive(Clone, Default)]
pub enum FaultPlan {
    /// None: count only.
    #[default]
    Never,
    /// Only the k-th counted call (1-based).
    Nth(u64),
    /// The k-th counted call and every one after it.
    FromNth(u64),
    /// Every counted call the predicate picks.
    Matching(CallPredicate),
}

impl fmt::Debug for FaultPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultPlan::Never => write!(f, "Never"),
            FaultPlan::Nth(k) => write!(f, "Nth({k})"),
            FaultPlan::FromNth(k) => write!(f, "FromNth({k})"),
            FaultPlan::Matching(_) => write!(f, "Matching(..)"),
        }
    }
}

impl FaultPlan {
    pub(crate) fn fails(&self, call: &Call) -> bool {
        match self {
            FaultPlan::Never => false,
            FaultPlan::Nth(k) => call.index == *k,
            FaultPlan::FromNth(k) => call.index >= *k,
            FaultPlan::Matching(pick) => pick(call),
        }
    }
}
