//! The driver's memory tables: allocations, reservations, physical chunks,
//! mappings, and the one physical capacity they all draw on.
//!
//! Every allocation and every mapping gets an owner id, never reused. Work
//! resolves its device ranges to segments at enqueue and checks, when it
//! executes, that each segment's owner is still live (and, for a mapping,
//! still accessible): that is how an unmap, a release or a free under
//! queued work is caught, even when the addresses were handed out again.
//!
//! Access is per device: a segment is resolved for the device whose work
//! touches it, and that device must be able to reach the owner (see
//! `device.rs`) both when the work is queued and when it runs.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock, Mutex};

use crate::buffer::{AddressSpace, Buffer, Segment};
use crate::device::{MAX_DEVICES, pair};
use crate::types::{CuResult, DevPtr, INVALID_VALUE, OUT_OF_MEMORY};

/// A refused call: the driver's code and what was wrong.
pub type Refusal = (CuResult, String);

/// The alignment of `cuMemAlloc` addresses (the driver gives at least 256).
pub const ALLOC_ALIGN: u64 = 512;
/// The VMM granularity (minimum and recommended), as on current GPUs.
pub const GRANULARITY: u64 = 2 << 20;

/// Each device's memory unless `GPUMEM_STANDIN_MEMORY_MIB` says otherwise.
const DEFAULT_MEMORY: u64 = 8 << 30;

/// The devices' memory tables (one address space, a capacity each).
pub static MEM: LazyLock<Mutex<MemState>> = LazyLock::new(|| {
    let total = std::env::var("GPUMEM_STANDIN_MEMORY_MIB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(DEFAULT_MEMORY, |mib| mib << 20);
    Mutex::new(MemState::new(total))
});

/// How an allocation was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocKind {
    /// `cuMemAlloc`.
    Sync,
    /// `cuMemAllocAsync`, from the default pool.
    Pool,
    /// A memory node of a captured graph (freed with the graph).
    Graph,
}

#[derive(Debug)]
pub struct Alloc {
    pub owner: u64,
    pub len: u64,
    pub span: u64,
    pub buf: Arc<Buffer>,
    pub kind: AllocKind,
    pub device: usize,
    /// `cuMemFreeAsync` was called on it (the stream that frees it): no
    /// work may be queued on it any more, on any stream.
    pub freeing: Option<u64>,
}

#[derive(Debug)]
pub struct Mapping {
    pub owner: u64,
    pub len: u64,
    pub handle: u64,
    pub handle_offset: u64,
}

#[derive(Debug)]
pub struct Reservation {
    pub len: u64,
    /// Mappings by address.
    pub maps: BTreeMap<u64, Mapping>,
}

#[derive(Debug)]
pub struct Handle {
    pub size: u64,
    pub buf: Arc<Buffer>,
    pub mappings: u32,
    /// The program's references: 1 from `cuMemCreate` or the import, one
    /// more per `cuMemRetainAllocationHandle`, one less per `cuMemRelease`.
    /// At 0 the chunk is released, and freed at its last unmap.
    pub refs: u32,
    pub device: usize,
    /// `requestedHandleTypes` it was made with (or imported as).
    pub types: u32,
    pub rdma: bool,
    /// Made by an import: the exporter's memory, not charged here.
    pub imported: bool,
}

/// Who may reach a live owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// An allocation of this device: it, and its peers that enabled access.
    Alloc(usize),
    /// A mapping of a chunk on `device`: the devices in `mask` (bit per
    /// device, as `cuMemSetAccess` set them).
    Map { device: usize, mask: u32 },
}

/// One device's physical memory.
#[derive(Debug, Clone)]
pub struct Capacity {
    pub total: u64,
    pub sync_bytes: u64,
    pub handle_bytes: u64,
    pub pool: Pool,
}

/// The default memory pool's counters (`cuMemPoolGetAttribute`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Pool {
    pub used: u64,
    pub reserved: u64,
    pub used_high: u64,
    pub reserved_high: u64,
    pub threshold: u64,
}

#[derive(Debug)]
pub struct MemState {
    pub va: AddressSpace,
    pub allocs: BTreeMap<u64, Alloc>,
    pub reservations: BTreeMap<u64, Reservation>,
    pub handles: HashMap<u64, Handle>,
    /// Live owners (allocations and mappings) and who may reach them.
    pub live: HashMap<u64, Access>,
    /// Peer access enabled, a bit per (accessing, owning) device pair.
    pub peers: u64,
    pub next_id: u64,
    /// Every device's capacity, by ordinal (the same size each).
    pub devices: Vec<Capacity>,
}

impl MemState {
    pub fn new(total: u64) -> Self {
        let capacity = Capacity {
            total,
            sync_bytes: 0,
            handle_bytes: 0,
            pool: Pool::default(),
        };
        MemState {
            va: AddressSpace::default(),
            allocs: BTreeMap::new(),
            reservations: BTreeMap::new(),
            handles: HashMap::new(),
            live: HashMap::new(),
            peers: 0,
            next_id: 1,
            devices: vec![capacity; MAX_DEVICES],
        }
    }

    /// Whether device `dev` may reach the live owner `owner` now
    /// (`None`: it is not live any more).
    pub fn reaches(&self, owner: u64, dev: usize) -> Option<bool> {
        Some(match *self.live.get(&owner)? {
            Access::Alloc(home) => home == dev || self.peers & pair(dev, home) != 0,
            Access::Map { mask, .. } => mask & (1 << dev) != 0,
        })
    }

    pub fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// A new allocation of `bytes` (at least 1) on device `dev`.
    pub fn alloc(&mut self, bytes: u64, kind: AllocKind, dev: usize) -> Result<DevPtr, Refusal> {
        let span = bytes.max(1).div_ceil(ALLOC_ALIGN) * ALLOC_ALIGN;
        let total = self.devices[dev].total;
        if span > total {
            return Err((
                OUT_OF_MEMORY,
                format!("{bytes} B is more than the device's {total} B"),
            ));
        }
        self.claim(span, kind, dev)?;
        let Some(buf) = usize::try_from(span).ok().and_then(Buffer::zeroed) else {
            self.unclaim(span, kind, dev);
            return Err((OUT_OF_MEMORY, format!("the host has no {span} B")));
        };
        let Some(base) = self.va.take(span, ALLOC_ALIGN) else {
            self.unclaim(span, kind, dev);
            return Err((OUT_OF_MEMORY, "no device addresses left".into()));
        };
        let owner = self.id();
        self.live.insert(owner, Access::Alloc(dev));
        self.allocs.insert(
            base,
            Alloc {
                owner,
                len: bytes,
                span,
                buf,
                kind,
                device: dev,
                freeing: None,
            },
        );
        Ok(base)
    }

    /// Free the allocation at `base` (its addresses may be handed out again).
    pub fn free(&mut self, base: DevPtr) -> Result<Alloc, Refusal> {
        let Some(a) = self.allocs.remove(&base) else {
            return Err((
                INVALID_VALUE,
                format!("{base:#x} is not the base of a live allocation"),
            ));
        };
        self.live.remove(&a.owner);
        self.unclaim(a.span, a.kind, a.device);
        self.va.give(base, a.span);
        Ok(a)
    }

    /// Whether `cuMemFreeAsync` queued the free of an allocation on
    /// `stream` that has not run yet.
    pub fn frees_queued_on(&self, stream: u64) -> bool {
        self.allocs.values().any(|a| a.freeing == Some(stream))
    }

    /// The live allocation whose base is `base`.
    pub fn allocation(&self, base: DevPtr) -> Option<&Alloc> {
        self.allocs.get(&base)
    }

    /// The segments of `addr..addr+len` as device `dev` touches them: they
    /// must lie in one allocation that `dev` reaches and no
    /// `cuMemFreeAsync` freed, or in mappings of one reservation that
    /// `cuMemSetAccess` opened to `dev`.
    pub fn resolve(&self, addr: DevPtr, len: u64, dev: usize) -> Result<Vec<Segment>, String> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let end = addr
            .checked_add(len)
            .ok_or_else(|| format!("{addr:#x} + {len} overflows"))?;
        if let Some((&base, a)) = self.allocs.range(..=addr).next_back()
            && addr < base + a.span
        {
            if end > base + a.len.max(1) {
                return Err(format!(
                    "{addr:#x}..+{len} runs past its allocation {base:#x}..+{}",
                    a.len
                ));
            }
            if let Some(stream) = a.freeing {
                return Err(format!(
                    "{addr:#x} was freed by cuMemFreeAsync on stream {stream:#x}: no work may use it after the free"
                ));
            }
            if self.reaches(a.owner, dev) != Some(true) {
                return Err(format!(
                    "device {dev} touches {addr:#x}, memory of device {} without peer access",
                    a.device
                ));
            }
            let offset = (addr - base) as usize;
            let seg = Segment {
                owner: a.owner,
                device: dev,
                buf: a.buf.clone(),
                offset,
                len: len as usize,
            };
            return Ok(vec![seg]);
        }
        let Some((&base, r)) = self.reservations.range(..=addr).next_back() else {
            return Err(format!(
                "{addr:#x} is no device address (never allocated or freed)"
            ));
        };
        if addr >= base + r.len || end > base + r.len {
            return Err(format!(
                "{addr:#x}..+{len} is not inside an allocation or a reservation"
            ));
        }
        let mut segs = Vec::new();
        let mut at = addr;
        while at < end {
            let found = r
                .maps
                .range(..=at)
                .next_back()
                .filter(|(m, map)| at < **m + map.len);
            let Some((&m_at, m)) = found else {
                return Err(format!("{at:#x} is reserved but not mapped"));
            };
            if self.reaches(m.owner, dev) != Some(true) {
                return Err(format!(
                    "{at:#x} is mapped without access for device {dev} (no cuMemSetAccess for it)"
                ));
            }
            let h = &self.handles[&m.handle];
            let upto = end.min(m_at + m.len);
            segs.push(Segment {
                owner: m.owner,
                device: dev,
                buf: h.buf.clone(),
                offset: (m.handle_offset + at - m_at) as usize,
                len: (upto - at) as usize,
            });
            at = upto;
        }
        Ok(segs)
    }

    /// `Err(why)` when any segment's owner was freed, unmapped or lost its
    /// access (for the device touching it) since it was resolved.
    pub fn check_live(&self, segs: &[Segment]) -> Result<(), &'static str> {
        for s in segs {
            match self.reaches(s.owner, s.device) {
                Some(true) => {}
                Some(false) => return Err("its mapping lost its access"),
                None => return Err("its memory was freed or unmapped"),
            }
        }
        Ok(())
    }
}
