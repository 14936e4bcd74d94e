//! The relocation policies of [`super::RelocatingBackend`] (what a
//! replay's relocations did is gpumem-replay's `report::Relocations`).

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
