//! `LayoutError`: a pool layout text that is not a layout (the parser is
//! `config/layout.rs`). It lives with the crate's error so that
//! [`crate::GpuMemError`] can carry it without reaching up into `config/`.

/// What a layout may be, for error messages.
pub const LAYOUT_SYNTAX: &str = "`auto`, `arenas`, `sub_slices`, `exclusive`, `sliced`, \
     or pools in routing order separated by commas: `sliced:PAGE/MAX`, \
     `exclusive:MAX[@PERIOD]` and `arena:MAX[@THRESHOLD]`, sizes like 4096, 64KiB, \
     8MiB, 20GiB (e.g. `sliced:8MiB/64KiB,sliced:512MiB/5GiB,exclusive:20GiB`)";

/// A layout text that is not a layout: what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid pool layout `{text}`: {reason}; expected {LAYOUT_SYNTAX}")]
pub struct LayoutError {
    /// The text given.
    pub text: String,
    /// What is wrong with it (names the pool or size at fault).
    pub reason: String,
}
