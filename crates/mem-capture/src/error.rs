//! The one error of this crate.
//!
//! Two kinds of failure share it. A *wrong call* ([`CaptureError::WrongStage`],
//! a capture prepared while another records — [`CaptureError::Streams`]
//! carrying mem-relocate's [`RelocationError::Recording`] —, ...) is refused
//! before anything changes. A *failure inside the sequence* (the driver refused, the window
//! would have allocated, the graph holds memory nodes) aborts the capture —
//! every pool leaves capture mode, no stream stays in capture — and then
//! reports; [`crate::Capture`] documents which is which.

use mem_pools::IoError;
use mem_relocate::RelocationError;
use mem_storage::StorageError;

use crate::stage::CaptureStage;

/// What went wrong while capturing or replaying a graph.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// A step called in the wrong stage; nothing changed.
    #[error(
        "capture step `{call}` needs stage {expected} but the capture is {found}: \
         call prepare → begin → end in that order (abort resets from any stage)"
    )]
    WrongStage {
        /// The step that was called.
        call: &'static str,
        /// The stage the step needs.
        expected: CaptureStage,
        /// The stage the capture is in.
        found: CaptureStage,
    },
    /// The streams refused: another capture records on this device while
    /// some memory is outdated, so the relocation before the warmup cannot
    /// run ([`RelocationError::Recording`], with the number of recording
    /// streams), or a runtime's streams name a stream the device does not
    /// hold ([`RelocationError::UnknownStream`]). Nothing changed.
    #[error(transparent)]
    Streams(#[from] RelocationError),
    /// A pool the recording would touch is already inside a capture window
    /// opened by someone else; nothing changed.
    #[error(
        "pool #{pool} is already capturing ({touched} slices touched): \
         end that capture (capture_end) before preparing another"
    )]
    PoolAlreadyCapturing {
        /// Index of the pool in [`crate::CaptureStreams::capture_pools`].
        pool: usize,
        /// Slices that other window has touched.
        touched: usize,
    },
    /// The streams offered no pool to capture.
    #[error(
        "the streams offered no pool to capture: capture_pools must list every pool the recording touches"
    )]
    NoPools,
    /// The streams offered a different number of pools than the capture (or
    /// the shared graph pool) was made with.
    #[error(
        "the streams offer {found} pools but this capture or graph was made over {expected}: \
         use the same streams for every step and for replay"
    )]
    PoolCountChanged {
        /// Pools the capture or graph was made over.
        expected: usize,
        /// Pools offered now.
        found: usize,
    },
    /// The pool engine refused. Inside the window, a reservation the primed
    /// pool cannot serve is the engine's [`IoError::CaptureWouldAllocate`]
    /// (it names the size and the page, and says to lengthen the warmup).
    #[error("pool engine: {0}")]
    Engine(#[from] IoError),
    /// The graph backend (driver) refused a step.
    #[error("graph backend failed to {op}: {message}")]
    Backend {
        /// The step (`"begin capture"`, `"end capture"`, `"launch"`, ...).
        op: &'static str,
        /// The backend's own message.
        message: String,
    },
    /// The recording asked the backend for something while it was not capturing.
    #[error("the graph backend is not capturing: record work only between begin and end")]
    NotCapturing,
    /// The backend is capturing, so it cannot start another capture or replay.
    #[error("the graph backend is capturing: end or abort that capture first")]
    BackendBusy,
    /// The captured graph allocates or frees memory itself.
    #[error(
        "the captured graph holds {alloc_nodes} memory-alloc and {free_nodes} memory-free nodes: \
         such a graph launches once and fails every relaunch; allocate through gpumem \
         (outside the window) instead of the driver inside it"
    )]
    MemoryNodes {
        /// `CU_GRAPH_NODE_TYPE_MEM_ALLOC` nodes.
        alloc_nodes: usize,
        /// `CU_GRAPH_NODE_TYPE_MEM_FREE` nodes.
        free_nodes: usize,
    },
    /// The capture recorded no work at all.
    #[error("the capture recorded no work: the recorded pass must issue at least one operation")]
    EmptyGraph,
    /// Memory the graph replays against no longer is where it was recorded.
    #[error(
        "graph memory invalidated: {size} bytes at offset {offset} of page {page} in pool #{pool} \
         {why}; the graph refuses to replay — capture it again"
    )]
    GraphMemoryInvalidated {
        /// Pool index.
        pool: usize,
        /// Storage page id.
        page: u64,
        /// Offset in the page.
        offset: u64,
        /// Bytes.
        size: u64,
        /// What happened to it.
        why: &'static str,
    },
    /// Replaying one recorded operation failed in the storage.
    #[error("replaying operation #{op} ({what}) failed: {source}")]
    Replay {
        /// Index of the operation in the graph.
        op: usize,
        /// What the operation was.
        what: &'static str,
        /// The storage's error.
        source: StorageError,
    },
    /// A recorded operation names a pool the streams do not offer.
    #[error(
        "operation names pool #{pool} but the streams offer {pools}: record with the indices of capture_pools"
    )]
    UnknownPool {
        /// Pool index named.
        pool: usize,
        /// Pools offered.
        pools: usize,
    },
    /// Two views of a copy differ in size.
    #[error("copy from {src} bytes into {dst} bytes: narrow both views to the same size")]
    CopySizeMismatch {
        /// Source bytes.
        src: u64,
        /// Destination bytes.
        dst: u64,
    },
    /// A recorded write longer than the view it writes into.
    #[error(
        "recorded write of {len} bytes into a {size}-byte view: narrow the data or widen the view"
    )]
    WriteTooLong {
        /// Bytes of data.
        len: u64,
        /// Bytes of the view.
        size: u64,
    },
}

impl CaptureError {
    /// A capture refused because `streams` streams already record.
    pub(crate) fn already_recording(streams: usize) -> Self {
        Self::Streams(RelocationError::Recording { recording: streams })
    }

    /// Whether this is an out-of-memory refusal carried from a layer below
    /// (the pool engine's, the streams', or a replayed operation's storage).
    /// A capture window that would allocate ([`IoError::CaptureWouldAllocate`])
    /// is not: it needs a longer warmup, not freed memory.
    pub fn is_out_of_memory(&self) -> bool {
        match self {
            Self::Engine(err) => err.is_out_of_memory(),
            Self::Streams(err) => err.is_out_of_memory(),
            Self::Replay { source, .. } => source.is_out_of_memory(),
            _ => false,
        }
    }
}
