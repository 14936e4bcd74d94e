//! The names a handle carries and the records its end leaves: the slot
//! key, the [`ManagedMemoryBinding`] (a `Copy`, non-owning name), the drop
//! records the engine drains, and the managers' ids.

use std::sync::atomic::AtomicU64;

use crate::handles::sync::Ordering;

/// A slot index with the generation it was issued for (ordered by slot,
/// then generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct SlotKey {
    pub(crate) slot: u32,
    pub(crate) generation: u32,
}

/// What a dropped handle state (or raw pin) asks of the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dropped {
    pub(crate) key: SlotKey,
    pub(crate) kind: DropKind,
}

/// Which holder of a slot ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DropKind {
    /// The allocation's last holder dropped: free the slot.
    Free,
    /// A graph's pin handle ended (the slice stays live).
    Unpin,
    /// A [`crate::RawPin`] ended (the slice stays live).
    Unraw,
}

static NEXT_MANAGER: AtomicU64 = AtomicU64::new(1);

/// A fresh, process-unique manager id (never 0, never reused).
pub(crate) fn next_manager_id() -> u64 {
    NEXT_MANAGER.fetch_add(1, Ordering::Relaxed)
}

/// A non-owning, `Copy` name of an allocation, used to reach its storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ManagedMemoryBinding {
    pub(crate) manager: u64,
    pub(crate) key: SlotKey,
    pub(crate) size: u64,
}

impl ManagedMemoryBinding {
    /// Requested bytes of the allocation when the binding was issued.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The id of the manager that issued this binding.
    pub fn manager_id(&self) -> u64 {
        self.manager
    }
}
