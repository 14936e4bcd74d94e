//! # mem-capture — CUDA graph capture over gpumem memory
//!
//! The graph side of the CubeCL-compatible capture protocol: a runtime records a pass
//! of work into a graph and replays it, over memory from mem-pools, without
//! ever allocating inside the capture window.
//!
//! ## Contract
//! - **The sequence lives once**, in [`Capture`] (steps `prepare` → `begin`
//!   → `end`, or [`Capture::run`]): refuse if any stream records; relocate
//!   every stream's outdated memory; `capture_begin` on every pool the
//!   recording touches; warmup (priming keeps every slice it touches);
//!   drain deferred frees; `capture_priming_end`; begin stream capture; the
//!   recorded pass; end stream capture; `capture_end`; seal.
//! - **Stages are checked.** `Idle → WarmingUp → Recording → Sealed`; a step
//!   out of order is [`CaptureError::WrongStage`] and changes nothing;
//!   [`Capture::abort`] from any stage restores the pools (mode, priming,
//!   touched set) and leaves no stream in capture. **Dropping a `Capture`
//!   mid-way does not abort** (it holds no borrow of the streams to abort
//!   with): call `abort` on every way out, or use [`Capture::run`] (aborts
//!   on an error or a panicking pass) or gpumem's capture type-state.
//! - **No allocation inside the window.** A reservation the primed pool
//!   cannot serve is [`CaptureError::Engine`] carrying the engine's
//!   [`mem_pools::IoError::CaptureWouldAllocate`], naming the size and
//!   telling to lengthen the warmup; a CUDA graph with memory nodes is
//!   [`CaptureError::MemoryNodes`].
//! - **Graph memory is pinned for the graph's life.** [`CapturedGraph`] owns
//!   the handles `capture_end` returned; dropping it (after its backend graph)
//!   releases them; it refuses to replay once that memory was freed,
//!   rebound or given away ([`CaptureError::GraphMemoryInvalidated`]).
//! - **Nothing is freed or moved while a stream records**: the pools refuse
//!   by themselves inside a window, and the recording mark
//!   ([`CaptureStreams::set_recording`], e.g. a [`RecordingFlag`]) tells every
//!   other path (relocation, cleanup) to wait.
//! - **Outside buffers** a graph uses without reserving them in the window
//!   are declared ([`Capture::uses`]): their pages never move while they
//!   live, and the graph refuses to replay once they are gone. The graph
//!   holds its own counted pin on each (`mem_pools::RawPin`): dropping the
//!   graph ends exactly those pins, never the owner's raw address or
//!   another graph's pin (see [`Capture::uses`]).
//! - **Graphs may share a pool** ([`GraphPool`], [`Capture::sharing`]) if they
//!   never run concurrently; see `docs/capture.md`.
//!
//! ## Example (host-simulated, on a one-stream runtime)
//!
//! A runtime implements [`CaptureStreams`]; gpumem's `Stream::capture` is
//! the one users get. Here the smallest one: one stream, nothing to relocate.
//! ```
//! use std::sync::Arc;
//! use mem_capture::{
//!     Capture, CaptureError, CapturePool, CaptureStreams, HostGraphBackend, RecordingFlag,
//! };
//! use mem_pools::{
//!     MemoryConfiguration, MemoryDeviceProperties, MemoryManagement,
//!     MemoryManagementOptions, ServerLogger,
//! };
//! use mem_storage::HostStorage;
//!
//! struct OneStream {
//!     flag: RecordingFlag,
//!     memory: MemoryManagement<HostStorage>,
//! }
//!
//! impl CaptureStreams for OneStream {
//!     fn recording_streams(&mut self) -> usize {
//!         self.flag.recording_streams()
//!     }
//!     fn set_recording(&mut self, recording: bool) {
//!         if recording { self.flag.start() } else { self.flag.stop() }
//!     }
//!     fn relocate_device(&mut self) {} // nothing outdated in this example
//!     fn capture_pools(&mut self) -> Vec<&mut dyn CapturePool> {
//!         vec![&mut self.memory]
//!     }
//! }
//!
//! # fn main() -> Result<(), CaptureError> {
//! let memory = MemoryManagement::from_configuration(
//!     HostStorage::host(),
//!     &MemoryDeviceProperties { max_page_size: 1 << 26, alignment: 256 },
//!     MemoryConfiguration::SubSlices,
//!     Arc::new(ServerLogger::default()),
//!     MemoryManagementOptions::default(),
//! );
//! let mut streams = OneStream { flag: RecordingFlag::new(), memory };
//! let mut backend = HostGraphBackend::new();
//! let mut out = None;
//! let graph = Capture::new().run(
//!     &mut streams,
//!     &mut backend,
//!     // Warmup: the pass for real; priming keeps what it reserves.
//!     |s| Ok(drop(s.memory.reserve(4096)?)),
//!     // Recorded pass: the same reservations, work issued to the recorder.
//!     |s, rec| {
//!         let buffer = s.memory.reserve(4096)?;
//!         rec.fill(0, s.memory.get_storage(buffer.binding())?, 7)?;
//!         out = Some(buffer);
//!         Ok(())
//!     },
//! )?;
//! graph.replay(&mut backend, &mut streams)?;
//! let mut bytes = [0u8; 4];
//! let buffer = out.expect("recorded");
//! streams.memory.read(buffer.binding(), &mut bytes)?;
//! assert_eq!(bytes, [7; 4]);
//! # Ok(())
//! # }
//! ```
//!
//! ## Non-goals
//! - Allocating, relocating, cleaning up: mem-pools and mem-relocate; this
//!   crate only calls them in order.
//! - Kernels: the recorded pass is the runtime's; the host backend offers
//!   write / fill / copy / kernel-like closures to stand in for one.
//! - Thread safety of a capture: one capture per stream, `&mut` throughout.

mod backend;
mod capture;
mod error;
mod graph;
mod recording;
mod stage;
mod streams;

pub use backend::host::{HostGraph, HostGraphBackend, HostRecorder};
pub use backend::host_op::{HostOp, KernelBody};
pub use backend::{GraphBackend, cuda};
pub use capture::Capture;
pub use error::CaptureError;
pub use graph::CapturedGraph;
pub use graph::pins::GraphPool;
pub use recording::RecordingFlag;
pub use stage::CaptureStage;
pub use streams::{CapturePool, CaptureStreams};
