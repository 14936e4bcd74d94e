//! The model: what must be true of the world, and the holders the user owns.
//!
//! An [`Entry`] is one slot of a manager (one allocation's name). It is
//! alive while anyone holds it: the user's handle, graph handles returned by
//! `capture_end`, or the engine's priming clone. The engine's live slice
//! count on a stream must equal the alive entries there, its in-use bytes
//! their sizes, and every entry's written bytes must read back unchanged.
//!
//! Budget state is modelled as the reservations and allocations held, so
//! the local ledger must equal their sum plus frees still pending.

use mem_budget::{GpuMemoryReservation, RuntimeAllocBlock};
use mem_pools::{ManagedMemoryBinding, ManagedMemoryHandle};

/// The capture window of one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CapturePhase {
    /// No capture.
    #[default]
    Off,
    /// Between `capture_begin` and `capture_priming_end`.
    Priming,
    /// After priming, until `capture_end`.
    Recording,
}

/// Which pools an allocation lives in (install_pools cares).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolClass {
    /// A dynamic pool (Auto mode).
    Dynamic,
    /// The persistent pool.
    Persistent,
    /// Not known (an extent reclaimed by `capture_end`).
    Unknown,
}

/// Bytes written at the head and at the tail of an allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    /// Written at offset 0.
    pub head: Vec<u8>,
    /// Written so that it ends at the allocation's last byte.
    pub tail: Vec<u8>,
}

impl Contents {
    /// The head and tail pattern for an allocation of `size` bytes: up to
    /// 32 bytes at the start, up to 16 at the end, never overlapping.
    pub fn for_size(seed: u64, size: u64) -> Self {
        let head = size.min(32);
        let tail = (size - head).min(16);
        Self {
            head: pattern(seed, head as usize),
            tail: pattern(seed ^ 0xa5, tail as usize),
        }
    }
}

/// A deterministic byte pattern (never all zeros for a non-zero length).
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| (seed.wrapping_mul(31).wrapping_add(i * 7) % 251) as u8 + 1)
        .collect()
}

/// One allocation name of a pool manager.
#[derive(Debug)]
pub struct Entry {
    /// Model id (unique in a world, never reused).
    pub id: u64,
    /// Stream (manager) index.
    pub stream: usize,
    /// Requested bytes.
    pub size: u64,
    /// Its current binding.
    pub binding: ManagedMemoryBinding,
    /// The user's handle, if the user still holds it.
    pub user: Option<ManagedMemoryHandle>,
    /// Handles returned by `capture_end` naming this slot.
    pub graph: Vec<ManagedMemoryHandle>,
    /// The engine retains a clone while its capture is priming.
    pub primed: bool,
    /// Where it lives.
    pub pool: PoolClass,
    /// What was written, when known.
    pub contents: Option<Contents>,
    /// The raw address handed out by `get_resource`, while it is out.
    pub raw: Option<u64>,
    /// Pinned by a captured graph (`capture_end` returned a pin handle for
    /// it): the pin lasts while the graph's pin handles do, the memory
    /// never moves meanwhile, and `bind` may not free it as the assigned side.
    pub pinned: bool,
    /// The address it had when pinned (unknown if a lazy page could not be
    /// mapped then).
    pub pinned_at: Option<u64>,
}

impl Entry {
    /// Whether anyone still holds this allocation.
    pub fn alive(&self) -> bool {
        self.user.is_some() || !self.graph.is_empty() || self.primed
    }
}

/// One stream's manager, as the model sees it.
#[derive(Debug, Clone, Copy, Default)]
pub struct StreamModel {
    /// Open Persistent windows.
    pub persistent_depth: u64,
    /// The capture window.
    pub capture: CapturePhase,
    /// Index of the installed layout.
    pub layout: usize,
    /// A relocation wait failed: quarantined bytes stay in the pools.
    pub quarantined: bool,
    /// Pages get memory only when first dereferenced (`lazy_pages`).
    pub lazy: bool,
}

impl StreamModel {
    /// Whether new reservations go to the persistent pool.
    pub fn persistent(&self) -> bool {
        self.persistent_depth > 0 || self.capture != CapturePhase::Off
    }
}

/// A budget allocation held by the user, with what was written into it.
#[derive(Debug)]
pub struct Block {
    /// The allocation.
    pub block: RuntimeAllocBlock,
    /// Bytes written at its start.
    pub written: Vec<u8>,
}

/// Everything the model knows.
#[derive(Debug, Default)]
pub struct Model {
    /// Allocation names, alive or not yet swept.
    pub entries: Vec<Entry>,
    /// Per-stream state.
    pub streams: Vec<StreamModel>,
    /// Budget reservations held.
    pub reservations: Vec<GpuMemoryReservation>,
    /// Budget allocations held.
    pub blocks: Vec<Block>,
    /// Bindings of freed allocations (stream, binding), newest last.
    pub stale: Vec<(usize, ManagedMemoryBinding)>,
    next_id: u64,
}

/// How many freed bindings the model keeps checking.
pub const STALE_KEPT: usize = 32;

impl Model {
    /// A model of `streams` fresh managers.
    pub fn new(streams: usize) -> Self {
        Self {
            streams: vec![StreamModel::default(); streams],
            ..Self::default()
        }
    }

    /// A fresh entry id.
    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Forget entries nobody holds (their slices are free in the engine),
    /// remembering the last few of their bindings, which must stay stale.
    pub fn sweep(&mut self) {
        for e in self.entries.iter().filter(|e| !e.alive()) {
            if self.stale.len() == STALE_KEPT {
                self.stale.remove(0);
            }
            self.stale.push((e.stream, e.binding));
        }
        self.entries.retain(Entry::alive);
    }

    /// Alive entries of `stream`: (count, Σ requested bytes).
    pub fn usage(&self, stream: usize) -> (u64, u64) {
        self.entries
            .iter()
            .filter(|e| e.stream == stream && e.alive())
            .fold((0, 0), |(n, b), e| (n + 1, b + e.size))
    }

    /// Index of the `pick`-th alive entry (modulo their number).
    pub fn pick_alive(&self, pick: u8) -> Option<usize> {
        pick_where(&self.entries, pick, Entry::alive)
    }

    /// Index of the `pick`-th entry the user still holds.
    pub fn pick_user(&self, pick: u8) -> Option<usize> {
        pick_where(&self.entries, pick, |e| e.user.is_some())
    }

    /// Σ bytes of budget reservations and allocations held.
    pub fn budget_held(&self) -> u64 {
        self.reservations.iter().map(|r| r.bytes()).sum::<u64>()
            + self.blocks.iter().map(|b| b.block.bytes()).sum::<u64>()
    }

    /// Σ bytes of budget reservations held.
    pub fn reserved_bytes(&self) -> u64 {
        self.reservations.iter().map(|r| r.bytes()).sum()
    }
}

fn pick_where(entries: &[Entry], pick: u8, keep: impl Fn(&Entry) -> bool) -> Option<usize> {
    let candidates: Vec<usize> = (0..entries.len()).filter(|&i| keep(&entries[i])).collect();
    if candidates.is_empty() {
        return None;
    }
    Some(candidates[usize::from(pick) % candidates.len()])
}
