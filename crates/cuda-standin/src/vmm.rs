//! Virtual memory management on the tables: reserve, create, map, set
//! access, unmap, release, as the CUDA driver API reference states them.
//!
//! - sizes, addresses and offsets are multiples of the granularity;
//! - a map lies inside one reservation, over nothing mapped, and within
//!   its chunk (`offset + size <= chunk size`);
//! - `cuMemSetAccess` covers whole mappings and sets access for the
//!   devices it names (the others keep theirs); until it names a device, a
//!   mapping is not accessible to it, the chunk's own device included;
//! - an unmap covers exactly whole mappings;
//! - a released chunk that is still mapped is freed at its last unmap;
//! - an address range is freed whole, with nothing mapped in it.

use std::collections::BTreeMap;

use crate::buffer::Buffer;
use crate::memfd::ChunkFile;
use crate::memory::{Access, GRANULARITY, Handle, Mapping, MemState, Refusal, Reservation};
use crate::types::HANDLE_POSIX_FD;
use crate::types::{
    ALREADY_MAPPED, DevPtr, INVALID_DEVICE, INVALID_HANDLE, INVALID_VALUE, NOT_MAPPED,
    OUT_OF_MEMORY,
};

fn granular(what: &str, value: u64) -> Result<(), Refusal> {
    if !value.is_multiple_of(GRANULARITY) {
        return Err((
            INVALID_VALUE,
            format!("{what} {value:#x} is not a multiple of the granularity {GRANULARITY:#x}"),
        ));
    }
    Ok(())
}

fn positive(what: &str, value: u64) -> Result<(), Refusal> {
    granular(what, value)?;
    if value == 0 {
        return Err((INVALID_VALUE, format!("{what} is 0")));
    }
    Ok(())
}

impl MemState {
    pub fn reserve(&mut self, size: u64, align: u64) -> Result<DevPtr, Refusal> {
        positive("reserve size", size)?;
        if align != 0 && !align.is_power_of_two() {
            return Err((
                INVALID_VALUE,
                format!("alignment {align} is not a power of two"),
            ));
        }
        let base = self
            .va
            .take(size, align.max(GRANULARITY))
            .ok_or((OUT_OF_MEMORY, format!("no {size} B of addresses left")))?;
        self.reservations.insert(
            base,
            Reservation {
                len: size,
                maps: BTreeMap::new(),
            },
        );
        Ok(base)
    }

    pub fn address_free(&mut self, ptr: DevPtr, size: u64) -> Result<(), Refusal> {
        let Some(r) = self.reservations.get(&ptr) else {
            return Err((
                INVALID_VALUE,
                format!("{ptr:#x} is not the base of a reservation"),
            ));
        };
        if r.len != size {
            return Err((
                INVALID_VALUE,
                format!("freeing {size} B of a {} B reservation", r.len),
            ));
        }
        if let Some(at) = r.maps.keys().next() {
            return Err((
                INVALID_VALUE,
                format!("the reservation is still mapped at {at:#x}"),
            ));
        }
        self.reservations.remove(&ptr);
        self.va.give(ptr, size);
        Ok(())
    }

    /// A chunk of `size` on `dev`; one asked shareable as a POSIX file
    /// descriptor is a memfd (`memfd.rs`), so its export is the file.
    pub fn create(
        &mut self,
        size: u64,
        dev: usize,
        types: u32,
        rdma: bool,
    ) -> Result<u64, Refusal> {
        positive("chunk size", size)?;
        self.devices[dev].room(size)?;
        let no_host = || (OUT_OF_MEMORY, format!("the host has no {size} B"));
        let len = usize::try_from(size).map_err(|_| no_host())?;
        let buf = if types & HANDLE_POSIX_FD != 0 {
            Buffer::file(ChunkFile::create(len, dev, types, rdma).map_err(|_| no_host())?)
        } else {
            Buffer::zeroed(len).ok_or_else(no_host)?
        };
        self.devices[dev].handle_bytes += size;
        Ok(self.add_handle(Handle {
            size,
            buf,
            mappings: 0,
            refs: 1,
            device: dev,
            types,
            rdma,
            imported: false,
        }))
    }

    pub(crate) fn add_handle(&mut self, handle: Handle) -> u64 {
        let id = self.id();
        self.handles.insert(id, handle);
        id
    }

    pub fn release(&mut self, handle: u64) -> Result<(), Refusal> {
        let Some(h) = self.handles.get_mut(&handle) else {
            return Err((
                INVALID_VALUE,
                format!("{handle:#x} is no live allocation handle"),
            ));
        };
        if h.refs == 0 {
            return Err((
                INVALID_VALUE,
                format!("handle {handle:#x} was already released"),
            ));
        }
        h.refs -= 1;
        if h.refs == 0 && h.mappings == 0 {
            self.drop_handle(handle);
        }
        Ok(())
    }

    fn drop_handle(&mut self, handle: u64) {
        if let Some(h) = self.handles.remove(&handle)
            && !h.imported
        {
            self.devices[h.device].handle_bytes -= h.size;
        }
    }

    pub fn map(&mut self, ptr: DevPtr, size: u64, offset: u64, handle: u64) -> Result<(), Refusal> {
        positive("map size", size)?;
        granular("map address", ptr)?;
        granular("map offset", offset)?;
        let h = match self.handles.get(&handle) {
            Some(h) if h.refs > 0 => h,
            _ => {
                return Err((
                    INVALID_HANDLE,
                    format!("{handle:#x} is no live allocation handle"),
                ));
            }
        };
        if offset.checked_add(size).is_none_or(|end| end > h.size) {
            return Err((
                INVALID_VALUE,
                format!(
                    "offset {offset:#x} + {size:#x} passes the {:#x} B chunk",
                    h.size
                ),
            ));
        }
        let device = h.device;
        let end = ptr
            .checked_add(size)
            .ok_or((INVALID_VALUE, "address overflow".to_string()))?;
        let owner = self.id();
        let Some((_, r)) = self
            .reservations
            .range_mut(..=ptr)
            .next_back()
            .filter(|(b, r)| end <= **b + r.len)
        else {
            return Err((
                INVALID_VALUE,
                format!("{ptr:#x}..+{size:#x} is not inside a reserved range"),
            ));
        };
        let before = r.maps.range(..end).next_back();
        if let Some((&at, m)) = before
            && at + m.len > ptr
        {
            return Err((
                ALREADY_MAPPED,
                format!("{ptr:#x}..+{size:#x} overlaps the mapping at {at:#x}"),
            ));
        }
        r.maps.insert(
            ptr,
            Mapping {
                owner,
                len: size,
                handle,
                handle_offset: offset,
            },
        );
        self.live.insert(owner, Access::Map { device, mask: 0 });
        if let Some(h) = self.handles.get_mut(&handle) {
            h.mappings += 1;
        }
        Ok(())
    }

    /// The mappings exactly covering `ptr..+size`, in address order.
    fn covering(&self, ptr: DevPtr, size: u64) -> Result<(u64, Vec<u64>), Refusal> {
        let Some((&base, r)) = self.reservations.range(..=ptr).next_back() else {
            return Err((INVALID_VALUE, format!("{ptr:#x} is not reserved")));
        };
        let end = ptr.saturating_add(size);
        let mut at = ptr;
        let mut found = Vec::new();
        while at < end {
            let Some(m) = r.maps.get(&at) else {
                return Err((
                    NOT_MAPPED,
                    format!("{at:#x} does not start a mapping (a span must be whole mappings)"),
                ));
            };
            at += m.len;
            found.push(at - m.len);
        }
        if at != end || size == 0 {
            return Err((
                INVALID_VALUE,
                format!("{ptr:#x}..+{size:#x} ends inside a mapping"),
            ));
        }
        Ok((base, found))
    }

    /// The owners of the whole mappings covering `ptr..+size`, each of
    /// which device `dev` can be given access to.
    pub fn check_access(&self, ptr: DevPtr, size: u64, dev: usize) -> Result<Vec<u64>, Refusal> {
        positive("access size", size)?;
        let (base, maps) = self.covering(ptr, size)?;
        let owners: Vec<u64> = maps
            .iter()
            .map(|at| self.reservations[&base].maps[at].owner)
            .collect();
        for owner in &owners {
            if let Some(Access::Map { device, .. }) = self.live.get(owner)
                && !crate::device::can_reach(dev, *device)
            {
                return Err((
                    INVALID_DEVICE,
                    format!("device {dev} cannot reach device {device}'s memory (no peer link)"),
                ));
            }
        }
        Ok(owners)
    }

    /// Grant (or revoke) device `dev`'s access to whole mappings; the
    /// other devices keep theirs.
    pub fn set_access(
        &mut self,
        ptr: DevPtr,
        size: u64,
        dev: usize,
        grant: bool,
    ) -> Result<(), Refusal> {
        for owner in self.check_access(ptr, size, dev)? {
            if let Some(Access::Map { mask, .. }) = self.live.get_mut(&owner) {
                if grant {
                    *mask |= 1 << dev;
                } else {
                    *mask &= !(1 << dev);
                }
            }
        }
        Ok(())
    }

    pub fn unmap(&mut self, ptr: DevPtr, size: u64) -> Result<(), Refusal> {
        positive("unmap size", size)?;
        granular("unmap address", ptr)?;
        let (base, maps) = self.covering(ptr, size)?;
        for at in maps {
            let Some(r) = self.reservations.get_mut(&base) else {
                break;
            };
            let Some(m) = r.maps.remove(&at) else {
                continue;
            };
            self.live.remove(&m.owner);
            let last = self.handles.get_mut(&m.handle).map(|h| {
                h.mappings -= 1;
                h.mappings == 0 && h.refs == 0
            });
            if last == Some(true) {
                self.drop_handle(m.handle);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "vmm_tests.rs"]
mod tests;
