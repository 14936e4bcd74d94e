//! The relocation policies of [`super::RelocatingBackend`] and what a
//! replay's relocations did.

/// When the backend relocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Never.
    Off,
    /// mem-relocate's trigger before each reservation.
    Trigger,
    /// Whenever movable live bytes sit on outdated pages (held room only).
    Eager,
    /// As [`Policy::Eager`], and compaction of current pages when holes
    /// reach [`COMPACT_HOLES_PERCENT`] of live bytes.
    Compact,
}

/// Holes in current pages, in percent of the live bytes there, at which
/// [`Policy::Compact`] compacts: the fragmentation goal with relocation is
/// 1.03, so holes above 3 % are what it must take back.
pub const COMPACT_HOLES_PERCENT: u64 = 3;

impl Policy {
    /// Name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Off => "off",
            Policy::Trigger => "trigger",
            Policy::Eager => "eager",
            Policy::Compact => "eager + compaction",
        }
    }
}

/// What the relocations of one replay did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelocationTally {
    /// Relocations and compactions that moved something or freed a page.
    pub runs: u64,
    /// Slices moved.
    pub moved_slices: u64,
    /// Bytes moved.
    pub moved_bytes: u64,
    /// Pages given back (outdated pages, and current pages a compaction
    /// emptied).
    pub pages_freed: u64,
}
