//! The one table of pool kinds' names: the `kind:` word of the facade's
//! layout grammar, the `pool …` lines of every report (this crate's
//! [`MemoryReport`](crate::MemoryReport) text, the `gpumem` command's) and
//! the kinds `gpumem plan` suggests all come from [`PoolKind::name`].
//! [`PoolType::kind`](crate::PoolType::kind) and
//! [`PoolReportKind::kind`](crate::PoolReportKind::kind) say which a
//! configured or reported pool is.

/// A kind of pool, by name.
///
/// ```
/// use mem_pools::{PoolKind, PoolType};
///
/// let pool = PoolType::ExclusivePages { max_alloc_size: 1 << 20 };
/// assert_eq!(pool.kind().name(), "exclusive");
/// assert_eq!(PoolKind::from_word("Arena"), Some(PoolKind::Arena));
/// assert_eq!(PoolKind::from_word("persistent"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// Sliced pages ([`PoolType::SlicedPages`](crate::PoolType::SlicedPages)).
    Sliced,
    /// One allocation per page ([`PoolType::ExclusivePages`](crate::PoolType::ExclusivePages)).
    Exclusive,
    /// A virtual-memory arena ([`PoolType::VirtualArena`](crate::PoolType::VirtualArena)).
    Arena,
    /// The exact-fit persistent pool every layout has (never written in a
    /// layout).
    Persistent,
}

impl PoolKind {
    /// The kinds a layout lists (`kind:…`), in the grammar's order.
    pub const IN_LAYOUTS: [PoolKind; 3] = [PoolKind::Sliced, PoolKind::Exclusive, PoolKind::Arena];

    /// Its name: `sliced`, `exclusive`, `arena`, `persistent`.
    pub const fn name(self) -> &'static str {
        match self {
            PoolKind::Sliced => "sliced",
            PoolKind::Exclusive => "exclusive",
            PoolKind::Arena => "arena",
            PoolKind::Persistent => "persistent",
        }
    }

    /// The kind a layout's `kind:` word names (any case), if any.
    pub fn from_word(word: &str) -> Option<PoolKind> {
        Self::IN_LAYOUTS
            .into_iter()
            .find(|kind| kind.name().eq_ignore_ascii_case(word.trim()))
    }
}
