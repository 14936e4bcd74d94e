//! The one error type of the facade.
//!
//! The layers' own errors pass through unchanged inside a variant (so a
//! caller can still match on, say, [`IoError::CaptureWouldAllocate`]); what
//! the facade adds is configuration errors that list what would have been
//! accepted, the out-of-memory report, and the cross-stream and capture
//! rules that only a whole device can check.

use mem_budget::BudgetError;
use mem_capture::CaptureError;
use mem_pools::{InstallMemoryPoolsError, IoError, RelocationCopyError};
use mem_relocate::RelocationError;
use mem_storage::StorageError;

mod layout_error;
mod oom;

pub use layout_error::{LAYOUT_SYNTAX, LayoutError};
pub use oom::{OutOfMemoryReport, Refuser};

/// What went wrong in a gpumem call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuMemError {
    /// The device ran out of memory (or its budget refused) even after the
    /// cached memory of every stream was given back and outdated pages were
    /// relocated. The report carries every number needed to act.
    #[error("{0}")]
    OutOfMemory(Box<OutOfMemoryReport>),
    /// The storage or device resource refused.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The pool engine refused (stale binding, size no pool accepts, ...).
    #[error(transparent)]
    Pool(#[from] IoError),
    /// The budget layer refused or could not be built.
    #[error(transparent)]
    Budget(#[from] BudgetError),
    /// A new pool layout could not be installed; the old one is kept.
    #[error(transparent)]
    InstallPools(#[from] InstallMemoryPoolsError),
    /// A relocation step failed (mem-relocate's `ServerError`): moving
    /// memory off outdated pages ([`RelocationError::Copy`] carries the pool
    /// engine's [`RelocationCopyError`], which says whether anything
    /// leaked; a `RelocationCopyError` converts into this variant), a
    /// recording refusal, or a stream index past the device's streams
    /// ([`RelocationError::UnknownStream`]).
    #[error(transparent)]
    Relocation(#[from] RelocationError),
    /// A capture step failed or was called out of order (mem-capture).
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// A shareable buffer was asked of a device not configured to make them.
    #[error(
        "{device} cannot make shareable buffers: {reason}; set GpumemConfig::share \
         (GPUMEM_CONF=share:posix_fd) on a device with virtual memory (pools:auto or pools:arenas)"
    )]
    SharingUnavailable {
        /// The device's name.
        device: String,
        /// Why not.
        reason: &'static str,
    },
    /// An export of memory that other slices share chunks with: an importer
    /// would see their bytes.
    #[error(
        "a slice of {bytes} bytes cannot be exported: {reason}; reserve it with \
         Stream::reserve_shareable, which gives it chunks of its own"
    )]
    NotExportable {
        /// The slice's size.
        bytes: u64,
        /// Why.
        reason: &'static str,
    },
    /// A shared-buffer descriptor that does not describe whole chunks laid
    /// end to end over its length, or that did not arrive whole; nothing was
    /// imported.
    #[error(
        "bad shared-buffer descriptor: {reason}; send the descriptor Stream::export made, unchanged"
    )]
    BadSharedBuffer {
        /// What is wrong with it, with the numbers.
        reason: String,
    },
    /// Sending or receiving a shared-buffer descriptor over a socket failed.
    #[error("{operation} failed: {}", std::io::Error::from_raw_os_error(*errno))]
    ShareIo {
        /// What was being done.
        operation: &'static str,
        /// The OS error number.
        errno: i32,
    },
    /// `Device::cuda` on a machine where the CUDA driver cannot be used.
    #[error(
        "CUDA device {ordinal} is not available: {reason}; use Device::host() (real host memory) \
         or Device::simulated(bytes) instead"
    )]
    CudaUnavailable {
        /// The ordinal asked for.
        ordinal: usize,
        /// Why it cannot be used.
        reason: String,
    },
    /// A `GPUMEM_CONF` key that does not exist.
    #[error("unknown GPUMEM_CONF key `{key}`; valid keys: {valid}")]
    UnknownConfKey {
        /// The key given.
        key: String,
        /// Every valid key, comma separated.
        valid: String,
    },
    /// A `GPUMEM_CONF` value that the key does not accept.
    #[error("bad value `{value}` for GPUMEM_CONF key `{key}`: expected {expected}")]
    BadConfValue {
        /// The key.
        key: &'static str,
        /// The value given.
        value: String,
        /// What the key accepts.
        expected: &'static str,
    },
    /// A `GPUMEM_CONF` `pools:` value that is not a layout: the layout
    /// parser's own reason (which pool or size is at fault).
    #[error("bad value for GPUMEM_CONF key `pools`: {source}")]
    BadConfLayout {
        /// What the layout parser found wrong.
        #[source]
        source: LayoutError,
    },
    /// A `GPUMEM_CONF` item that is not `key:value`.
    #[error(
        "malformed GPUMEM_CONF item `{item}`: write items as key:value separated by commas, \
         e.g. `budget:8GiB,pools:sub_slices`"
    )]
    MalformedConf {
        /// The item as written.
        item: String,
    },
    /// The same `GPUMEM_CONF` key given twice (which one wins would be a guess).
    #[error("GPUMEM_CONF key `{key}` is given twice; keep one")]
    DuplicateConfKey {
        /// The key.
        key: &'static str,
    },
    /// A key that only applies to another pool layout.
    #[error("GPUMEM_CONF key `{key}` only applies to pools:sliced, but the layout is {layout}")]
    ConfNotApplicable {
        /// The key.
        key: &'static str,
        /// The layout in effect.
        layout: &'static str,
    },
    /// `GPUMEM_CONF` is set but is not valid Unicode.
    #[error("GPUMEM_CONF is not valid Unicode; write it as ASCII key:value items")]
    ConfNotUnicode,
    /// A configuration value set from code that is out of range.
    #[error("invalid configuration {parameter} = {value}: expected {expected}")]
    InvalidConfig {
        /// Which setting.
        parameter: &'static str,
        /// The value given.
        value: String,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// A handle or binding that no stream of this device issued.
    #[error(
        "handle of manager #{manager} belongs to no stream of this device: use it on the device that reserved it"
    )]
    ForeignHandle {
        /// The manager id the handle carries.
        manager: u64,
    },
    /// A stream records a graph, so memory may not move or be given back.
    ///
    /// The refusal itself is mem-relocate's [`RelocationError::Recording`]
    /// (how many streams record), carried as `source`; the facade adds
    /// which stream records and what it refused. (A stream index past the
    /// device's streams is [`GpuMemError::Relocation`] carrying
    /// [`RelocationError::UnknownStream`].)
    #[error(
        "stream {stream} is recording a graph: {operation} must wait until its capture ends or is aborted"
    )]
    Recording {
        /// The first recording stream.
        stream: usize,
        /// What was refused.
        operation: &'static str,
        /// The refusal, with the number of recording streams.
        #[source]
        source: RelocationError,
    },
    /// A call that moves memory (or opens a second launch) on a thread that
    /// holds a [`crate::stream::LaunchGuard`] of the same device: it would
    /// wait for the launch, which waits for it. Submit or drop the launch
    /// first.
    #[error(
        "{operation} on a thread that holds a launch of the same device: submit or drop the LaunchGuard first"
    )]
    LaunchOpen {
        /// What was refused.
        operation: &'static str,
    },
    /// A peer-access call or a copy between devices that these two devices
    /// cannot make: not CUDA, the same device, or no peer link. `reason`
    /// says which and what to do.
    #[error("{operation} from {device} to {peer}: {reason}")]
    Peer {
        /// What was refused (`grant_access`, `copy_to_peer`, ...).
        operation: &'static str,
        /// The device whose memory is reached (its name, e.g. `cuda:0`).
        device: String,
        /// The device that reaches it.
        peer: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// A completion claimed for an operation that was never submitted.
    #[error(
        "stream {stream} cannot complete operation {op}: only {submitted} operations were submitted"
    )]
    CompletionAhead {
        /// The stream.
        stream: usize,
        /// The operation claimed complete.
        op: u64,
        /// Operations submitted so far.
        submitted: u64,
    },
}

impl From<RelocationCopyError> for GpuMemError {
    /// A failed relocation copy is a relocation error: one variant, one
    /// definition ([`RelocationError::Copy`]).
    fn from(err: RelocationCopyError) -> Self {
        Self::Relocation(RelocationError::Copy(err))
    }
}

impl GpuMemError {
    /// Whether this is an out-of-memory refusal: the facade's report
    /// ([`GpuMemError::OutOfMemory`]) or a layer's out-of-memory carried
    /// unchanged (the storage's, the pool engine's, a budget's, a copy's).
    pub fn is_out_of_memory(&self) -> bool {
        match self {
            Self::OutOfMemory(_) => true,
            Self::Storage(err) => err.is_out_of_memory(),
            Self::Pool(err) => err.is_out_of_memory(),
            Self::Budget(err) => err.is_out_of_memory(),
            Self::InstallPools(err) => err.is_out_of_memory(),
            Self::Relocation(err) => err.is_out_of_memory(),
            Self::Capture(err) => err.is_out_of_memory(),
            _ => false,
        }
    }

    /// The refusal of `operation` because `stream` (one of `recording`
    /// streams) records a graph.
    pub(crate) fn recording(stream: usize, operation: &'static str, recording: usize) -> Self {
        Self::Recording {
            stream,
            operation,
            source: RelocationError::Recording { recording },
        }
    }

    /// A stream index past the device's `streams` streams.
    pub(crate) fn unknown_stream(stream: usize, streams: usize) -> Self {
        Self::Relocation(RelocationError::UnknownStream { stream, streams })
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = GpuMemError> = std::result::Result<T, E>;
