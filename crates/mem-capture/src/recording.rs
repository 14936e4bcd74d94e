//! The recording flag a device shares.
//!
//! [`RecordingFlag`] is a ready-made device-wide "a stream records" count
//! for runtimes that implement [`crate::CaptureStreams`] themselves: the
//! `RelocatingStreams` protocol's `recording` reads it, and while it is up
//! relocation and cleanup free nothing, because the pages a recording
//! touches must keep their addresses until it seals.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::CaptureError;

/// The device-wide count of streams inside a capture (cheap to clone).
///
/// A runtime keeps one per device, answers `RelocatingStreams::recording`
/// and [`crate::CaptureStreams::recording_streams`] from it, and starts /
/// stops it in [`crate::CaptureStreams::set_recording`], which
/// [`crate::Capture`] calls from `prepare` (after the pre-warmup relocation)
/// until it seals or aborts.
#[derive(Debug, Clone, Default)]
pub struct RecordingFlag {
    streams: Arc<AtomicUsize>,
}

impl RecordingFlag {
    /// A flag with no stream recording.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether any stream of the device records a graph now.
    pub fn is_recording(&self) -> bool {
        self.recording_streams() > 0
    }

    /// How many streams record now.
    pub fn recording_streams(&self) -> usize {
        self.streams.load(Ordering::Acquire)
    }

    /// Refuse while any stream records: the caller is about to free or move
    /// memory, which a recording forbids.
    ///
    /// # Errors
    /// [`CaptureError::Streams`] carrying
    /// [`mem_relocate::RelocationError::Recording`] with the number of
    /// recording streams.
    pub fn refuse_while_recording(&self) -> Result<(), CaptureError> {
        match self.recording_streams() {
            0 => Ok(()),
            streams => Err(CaptureError::already_recording(streams)),
        }
    }

    /// Run `work` (a cleanup, a relocation) only while no stream records.
    ///
    /// # Errors
    /// [`CaptureError::Streams`] (a recording refusal), and `work` does not run.
    pub fn unless_recording<T>(&self, work: impl FnOnce() -> T) -> Result<T, CaptureError> {
        self.refuse_while_recording()?;
        Ok(work())
    }

    /// One more stream starts recording.
    pub fn start(&self) {
        self.streams.fetch_add(1, Ordering::AcqRel);
    }

    /// One recording stream stops (never below zero).
    pub fn stop(&self) {
        let _ = self
            .streams
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }
}
