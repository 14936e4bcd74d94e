//! The capture window's record and the plain data it shows
//! ([`record::CaptureState`]); the engine's side of the window is
//! `engine/capture.rs`.

pub(crate) mod record;
