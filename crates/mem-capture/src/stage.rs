//! The stages of one capture.
//!
//! [`CaptureStage`] is the state of [`crate::Capture`]: `Idle → WarmingUp →
//! Recording → Sealed`, with `abort` back to `Idle` from any of them. It is a
//! runtime state rather than a type-state because a runtime keeps its capture
//! in a field across calls it does not control (CubeCL's `StreamCaptureState`
//! does the same), and a wrong call must be an answer, not a compile error.

use std::fmt;

/// Where a [`crate::Capture`] is in its sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CaptureStage {
    /// Nothing open; `prepare` may start a capture.
    #[default]
    Idle,
    /// The pools capture and are priming; the warmup runs now.
    WarmingUp,
    /// The stream records; the recorded pass runs now.
    Recording,
    /// The graph was handed out; `abort` makes the capture reusable.
    Sealed,
}

impl fmt::Display for CaptureStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Idle => "idle",
            Self::WarmingUp => "warming up",
            Self::Recording => "recording",
            Self::Sealed => "sealed",
        })
    }
}
