//! A reservation's cost against its size: one reserve plus its free
//! through `gpumem::Device` with its defaults (arenas on the simulated
//! 80 GiB device, `GPUMEM_CONF` ignored), for slices of 2 MiB to 64 GiB.
//!
//! The shape is the `span` workload's, at every size: two live 3 MiB
//! neighbours reserved around the slice share its end chunk slots, so a
//! free leaves those slots live and the slots between them idle but
//! mapped. The first reservation maps the chunks ([`SizeSweep::new`]);
//! every pair after it ([`SizeSweep::pairs`]) calls no driver, so what a
//! pair costs is the host's bookkeeping alone, and any growth with the
//! size is per-slot work (a 64 GiB slice spans 32,768 slots of 2 MiB).
//! The criterion group `size_sweep` times it in ns, the `size-sweep` binary
//! runs it under callgrind for instructions (docs/benchmarks.md, "A
//! reservation's cost against its size").

use gpumem::pools::ManagedMemoryHandle;
use gpumem::{Device, Stream};

use crate::{DEVICE_BYTES, MIB, Result};

/// The smallest slice of the sweep: one chunk slot.
pub const SMALLEST: u64 = 2 * MIB;
/// The largest: 32,768 slots, the largest power of two below the device.
pub const LARGEST: u64 = 64 << 30;
/// Each neighbour: more than a slot, so it shares the slice's end slot.
pub const NEIGHBOUR: u64 = 3 * MIB;

/// Every size of the sweep, 2 MiB to 64 GiB in powers of two.
pub fn sweep_sizes() -> impl Iterator<Item = u64> {
    (0..)
        .map(|shift| SMALLEST << shift)
        .take_while(|&size| size <= LARGEST)
}

/// Driver-side counts of a device: chunk and page calls of every kind.
/// Equal before and after a run of pairs when the pairs call no driver.
pub fn storage_calls(device: &Device) -> u64 {
    let stats = device.stats();
    let chunks = stats.chunks;
    stats.storage_allocs
        + stats.storage_frees
        + chunks.creates
        + chunks.maps
        + chunks.unmaps
        + chunks.releases
}

/// A default device holding the two neighbours, its slice's chunks
/// mapped and the slice freed: ready for pairs.
pub struct SizeSweep {
    device: Device,
    stream: Stream,
    size: u64,
    _neighbours: [ManagedMemoryHandle; 2],
}

impl SizeSweep {
    /// Builds the device, reserves neighbour, slice, neighbour (mapping
    /// the slice's chunks) and frees the slice.
    ///
    /// # Errors
    /// The facade's refusal to build the device or to reserve.
    pub fn new(size: u64) -> Result<Self> {
        let device = Device::simulated(DEVICE_BYTES).ignore_env().build()?;
        let stream = device.default_stream();
        let first = stream.reserve(NEIGHBOUR)?;
        let slice = stream.reserve(size)?;
        let last = stream.reserve(NEIGHBOUR)?;
        drop(slice);
        Ok(Self {
            device,
            stream,
            size,
            _neighbours: [first, last],
        })
    }

    /// The device, for its statistics.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The slice's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// `pairs` reservations of the slice, each freed (its handle dropped)
    /// before the next. Not inlined, so callgrind's inclusive count of
    /// this function is the pairs' cost alone.
    ///
    /// # Errors
    /// The facade's refusal to reserve (none is expected: the slice's
    /// place is free and mapped).
    #[inline(never)]
    pub fn pairs(&self, pairs: u64) -> Result<()> {
        for _ in 0..pairs {
            drop(self.stream.reserve(self.size)?);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "size_sweep_tests.rs"]
mod tests;
