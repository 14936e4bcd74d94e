//! The one table of pool kinds' names: the `kind:` word of the layout
//! grammar, the `pool …` lines of the command's report and the kinds
//! `gpumem plan` suggests all come from [`PoolKind::name`].
//!
//! mem-pools' own report (`PoolReportKind`'s text) and gpumem-cubecl's
//! keep names of their own; this table is the facade's and everything
//! above it.

use mem_pools::{PoolReportKind, PoolType};

/// A kind of pool, as the facade and the tools above it name it.
///
/// ```
/// use gpumem::config::PoolKind;
/// use gpumem::pools::PoolType;
///
/// let pool = PoolType::ExclusivePages { max_alloc_size: 1 << 20 };
/// assert_eq!(PoolKind::of_type(&pool).name(), "exclusive");
/// assert_eq!(PoolKind::from_word("Arena"), Some(PoolKind::Arena));
/// assert_eq!(PoolKind::from_word("persistent"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// Sliced pages (`PoolType::SlicedPages`).
    Sliced,
    /// One allocation per page (`PoolType::ExclusivePages`).
    Exclusive,
    /// A virtual-memory arena (`PoolType::VirtualArena`).
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

    /// The kind of a configured pool.
    pub fn of_type(pool: &PoolType) -> PoolKind {
        match pool {
            PoolType::SlicedPages { .. } => PoolKind::Sliced,
            PoolType::ExclusivePages { .. } => PoolKind::Exclusive,
            PoolType::VirtualArena { .. } => PoolKind::Arena,
        }
    }

    /// The kind of a reported pool.
    pub fn of_report(pool: &PoolReportKind) -> PoolKind {
        match pool {
            PoolReportKind::Sliced { .. } => PoolKind::Sliced,
            PoolReportKind::Exclusive { .. } => PoolKind::Exclusive,
            PoolReportKind::Arena { .. } => PoolKind::Arena,
            PoolReportKind::Persistent => PoolKind::Persistent,
        }
    }
}
