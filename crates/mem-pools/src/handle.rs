//! Handles and bindings: the indirection every allocation is reached through.
//!
//! A [`ManagedMemoryHandle`] owns an allocation; it names a *slot* of the
//! engine's slot table (index + generation), and the slot names the slice's
//! current location. Relocation and `bind` rewrite the slot only, so every
//! holder follows a move with no fix-up. Dropping the last holder (on any
//! thread) pushes the slot's key onto the drop queue (`drop_queue.rs`) that the engine
//! drains at its next call: freeing costs O(1), never a scan over slices.
//!
//! **Graph pins are holders of their own.** `capture_end` does not hand a
//! graph clones of the user's handle: it hands out *pin handles*, each with
//! its own shared state that holds the allocation's (so the allocation lives
//! while any pin does) and counts one pin on its slice. Dropping a pin
//! handle's last clone queues an *unpin*: the pin ends with the graph, not
//! with the memory, so a buffer the user keeps after dropping the graph
//! becomes movable again. The allocation is freed when its last holder of
//! any kind drops (its own state drops last, after every pin released it),
//! exactly once.
//!
//! A [`ManagedMemoryBinding`] is a `Copy`, non-owning name of the same slot.
//! It resolves while the allocation lives; once the slot is freed its
//! generation moves on and the binding is a [`crate::IoError::StaleBinding`],
//! never another allocation's memory.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::drop_queue::DropQueue;

/// A slot index with the generation it was issued for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

pub(crate) struct HandleInner {
    pub(crate) manager: u64,
    pub(crate) key: SlotKey,
    /// Requested bytes; `bind` rewrites it when the handle takes over
    /// another allocation's memory.
    pub(crate) size: AtomicU64,
    pub(crate) queue: Arc<DropQueue>,
    /// Set on a graph's pin handle: the allocation's own state, held so the
    /// allocation outlives every pin. `None` on the allocation's own state.
    pub(crate) pinning: Option<Arc<HandleInner>>,
}

impl Drop for HandleInner {
    fn drop(&mut self) {
        // O(1): the engine frees (or unpins) the slot at its next call. A key
        // whose generation moved on meanwhile (bind, relocation) is ignored
        // there. A pin's unpin is queued here, before its field `pinning`
        // drops — so before the free that dropping may queue.
        let kind = match self.pinning {
            Some(_) => DropKind::Unpin,
            None => DropKind::Free,
        };
        self.queue.push(Dropped {
            key: self.key,
            kind,
        });
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
                pinning: None,
            }),
        }
    }

    /// A new pin handle on `allocation` (the allocation's own state). The
    /// caller counts the pin on the slice; dropping the pin handle's last
    /// clone queues the matching unpin.
    pub(crate) fn pin(allocation: &Arc<HandleInner>) -> Self {
        Self {
            inner: Arc::new(HandleInner {
                manager: allocation.manager,
                key: allocation.key,
                size: AtomicU64::new(allocation.size.load(Ordering::Relaxed)),
                queue: allocation.queue.clone(),
                pinning: Some(allocation.clone()),
            }),
        }
    }

    /// The allocation's own shared state (for a pin handle, the one it holds).
    pub(crate) fn allocation(&self) -> &Arc<HandleInner> {
        self.inner.pinning.as_ref().unwrap_or(&self.inner)
    }

    /// Holders of the allocation, counting this one.
    ///
    /// The allocation's own state is held by every clone of the user's
    /// handle and by every pin handle (one each), so its strong count covers
    /// those; a pin handle adds its own clones. For the allocation's handle
    /// that is its strong count; for a pin handle its own count plus the
    /// allocation's, less the one reference the pin itself holds. Either way
    /// the result is 1 exactly when no one but this holder remains.
    pub(crate) fn holders(&self) -> usize {
        Arc::strong_count(&self.inner)
            + self
                .inner
                .pinning
                .as_ref()
                .map_or(0, |a| Arc::strong_count(a) - 1)
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
    /// "Holder" counts every clone of the allocation's handle, every pin
    /// handle a graph got from `capture_end` (and each clone of one), and the
    /// engine while a capture's priming retains the slice. So the user's
    /// handle is false while a graph pins the memory, and a graph's pin
    /// handle is true once the user and every other graph have let go.
    pub fn can_mut(&self) -> bool {
        self.holders() == 1
    }

    /// Whether this is a graph's pin handle (returned by `capture_end`):
    /// while any clone of it lives the memory does not move.
    pub fn is_pin(&self) -> bool {
        self.inner.pinning.is_some()
    }

    /// Requested bytes (before alignment padding).
    pub fn size(&self) -> u64 {
        self.allocation().size.load(Ordering::Relaxed)
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
            .field("holders", &self.holders())
            .field("pin", &self.is_pin())
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
