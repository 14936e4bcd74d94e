//! Handles and bindings: the indirection every allocation is reached through.
//!
//! A [`ManagedMemoryHandle`] owns an allocation; it names a *slot* of the
//! engine's slot table (index + generation), and the slot names the slice's
//! current location. Relocation and `bind` rewrite the slot only, so every
//! holder follows a move with no fix-up. Dropping the last holder (on any
//! thread) pushes the slot's key onto a lock-free drop queue that the engine
//! drains at its next call: freeing costs O(1), never a scan over slices.
//!
//! A [`ManagedMemoryBinding`] is a `Copy`, non-owning name of the same slot.
//! It resolves while the allocation lives; once the slot is freed its
//! generation moves on and the binding is a [`crate::IoError::StaleBinding`],
//! never another allocation's memory.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_queue::SegQueue;

/// A slot index with the generation it was issued for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct SlotKey {
    pub(crate) slot: u32,
    pub(crate) generation: u32,
}

/// Slots whose last handle dropped, waiting for the engine to free them.
pub(crate) type DropQueue = SegQueue<SlotKey>;

static NEXT_MANAGER: AtomicU64 = AtomicU64::new(1);

/// A fresh, process-unique manager id (never 0, never reused).
pub(crate) fn next_manager_id() -> u64 {
    NEXT_MANAGER.fetch_add(1, Ordering::Relaxed)
}

pub(crate) struct HandleInner {
    pub(crate) manager: u64,
    pub(crate) key: SlotKey,
    /// Requested bytes; `bind` rewrites it when the handle takes over
    /// another allocation's memory.
    pub(crate) size: AtomicU64,
    queue: Arc<DropQueue>,
}

impl Drop for HandleInner {
    fn drop(&mut self) {
        // O(1): the engine frees the slot at its next call. A key whose
        // generation moved on meanwhile (bind, relocation) is ignored there.
        self.queue.push(self.key);
    }
}

/// An owning handle to one allocation of a [`crate::MemoryManagement`].
///
/// `Clone` adds a holder; the allocation is freed when the last holder drops,
/// on any thread. `Send + Sync`.
#[derive(Clone)]
pub struct ManagedMemoryHandle {
    pub(crate) inner: Arc<HandleInner>,
}

impl ManagedMemoryHandle {
    pub(crate) fn new(manager: u64, key: SlotKey, size: u64, queue: Arc<DropQueue>) -> Self {
        Self {
            inner: Arc::new(HandleInner {
                manager,
                key,
                size: AtomicU64::new(size),
                queue,
            }),
        }
    }

    /// The non-owning name of this allocation, to resolve its storage.
    pub fn binding(&self) -> ManagedMemoryBinding {
        ManagedMemoryBinding {
            manager: self.inner.manager,
            key: self.inner.key,
            size: self.size(),
        }
    }

    /// Whether this is the only holder, so writing in place is safe.
    ///
    /// False while anyone else holds a clone — including the engine while a
    /// capture's priming retains the slice, or a graph pinning it.
    pub fn can_mut(&self) -> bool {
        Arc::strong_count(&self.inner) == 1
    }

    /// Requested bytes (before alignment padding).
    pub fn size(&self) -> u64 {
        self.inner.size.load(Ordering::Relaxed)
    }

    /// The id of the manager that issued this handle.
    pub fn manager_id(&self) -> u64 {
        self.inner.manager
    }
}

impl fmt::Debug for ManagedMemoryHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagedMemoryHandle")
            .field("manager", &self.inner.manager)
            .field("slot", &self.inner.key.slot)
            .field("generation", &self.inner.key.generation)
            .field("size", &self.size())
            .field("holders", &Arc::strong_count(&self.inner))
            .finish()
    }
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
