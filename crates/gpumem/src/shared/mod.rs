//! What the handles share, below both public APIs: the `Device` and
//! `Stream` handle types (their methods are in `device/` and `stream/`),
//! the device's shared state with `run`, its one door to a stream's engine,
//! and each stream's state (engine, counters, held allocations).
//!
//! Defining the two handles here, under both APIs, is what lets a
//! `Device` hand out `Stream`s and a `Stream` name its `Device` without an
//! import circle.

pub(crate) mod device_shared;
mod handles;
mod held;
pub(crate) mod moving;
pub(crate) mod stream_state;

pub(crate) use device_shared::{CopyQueueSlot, DeviceShared};
pub use handles::{Device, Stream};
pub(crate) use stream_state::{Held, StreamShared, StreamState, Use};
