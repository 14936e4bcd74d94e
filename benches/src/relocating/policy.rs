//! The relocation policies of [`super::RelocatingBackend`] and what a
//! replay's relocations did.

/// When the backend relocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Never (what `gpumem replay` measures without `--relocate`).
    Off,
    /// The stream's trigger before each reservation (`relocate:auto`,
    /// what `gpumem replay --relocate` runs).
    Trigger,
    /// After every op, whenever an outdated page holds movable bytes or
    /// compaction is worthwhile: the facade's explicit relocation, which
    /// moves off outdated pages and compacts sparse current pages into
    /// room already held (never raising reserved bytes). The upper bound
    /// of what relocation gives back.
    Eager,
}

impl Policy {
    /// Name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Off => "off",
            Policy::Trigger => "trigger",
            Policy::Eager => "eager (with compaction)",
        }
    }
}

/// What the relocations of one replay did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelocationTally {
    /// Relocation calls that moved something or freed a page.
    pub runs: u64,
    /// Slices moved.
    pub moved_slices: u64,
    /// Bytes moved.
    pub moved_bytes: u64,
    /// Pages given back (outdated pages, current pages a compaction
    /// emptied, and a final reclaim's empty pages).
    pub pages_freed: u64,
}

impl RelocationTally {
    /// Counts one facade relocation call's outcome.
    pub fn record(&mut self, done: gpumem::relocate::RelocationSummary) {
        if done.moved_slices > 0 || done.pages_freed > 0 {
            self.runs += 1;
        }
        self.moved_slices += done.moved_slices as u64;
        self.moved_bytes += done.moved_bytes;
        self.pages_freed += done.pages_freed;
    }
}
