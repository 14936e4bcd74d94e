//! Relocation copy bandwidth against a plain device-to-device copy of the
//! same bytes, on a stream of the same device: once as one copy, once as
//! the same number of slice-sized copies (the relocation copies slice by
//! slice).

use std::time::Instant;

use mem_storage::{DevicePtr, DeviceResource, StreamId};

use super::Scale;
use super::relocation::{Scenario, manager, relocate_outdated};
use crate::table::human;
use crate::table::{Table, divide, ratio};
use crate::{BenchError, MIB, Result};

/// Copies `bytes` from `src` to `dst` on `stream` as `pieces` equal
/// copies (the last one takes the remainder) and waits for them.
pub fn copy_pieces<R: DeviceResource>(
    resource: &R,
    (src, dst): (DevicePtr, DevicePtr),
    bytes: u64,
    pieces: u64,
    stream: StreamId,
) -> Result<()> {
    let pieces = pieces.clamp(1, bytes.max(1));
    let piece = bytes / pieces;
    let at = |ptr: DevicePtr, offset: u64| {
        ptr.checked_add(offset).ok_or(BenchError::Check(format!(
            "address {ptr:?} + {offset} overflows"
        )))
    };
    for i in 0..pieces {
        let offset = i * piece;
        let len = if i + 1 == pieces {
            bytes - offset
        } else {
            piece
        };
        resource.copy(at(src, offset)?, at(dst, offset)?, len, stream)?;
    }
    resource.synchronize(stream)?;
    Ok(())
}

/// Nanoseconds to copy `bytes` between two plain allocations on `stream`
/// as `pieces` copies (one warm-up run first, untimed).
pub fn plain_copy<R: DeviceResource>(
    resource: &R,
    bytes: u64,
    pieces: u64,
    stream: StreamId,
) -> Result<u64> {
    let src = resource.allocate(bytes, stream)?;
    let dst = resource.allocate(bytes, stream)?;
    let run = || -> Result<u64> {
        let start = Instant::now();
        copy_pieces(resource, (src, dst), bytes, pieces, stream)?;
        Ok(start.elapsed().as_nanos() as u64)
    };
    let timed = run().and_then(|_| run());
    resource.deallocate(src, bytes, stream)?;
    resource.deallocate(dst, bytes, stream)?;
    timed
}

/// GB/s for `bytes` in `ns`.
pub fn gbps(bytes: u64, ns: u64) -> Option<f64> {
    (ns > 0).then(|| bytes as f64 / ns as f64)
}

/// On device 0: the scenario with 64 MiB slices (1 GiB, or 256 MiB at
/// [`Scale::Quick`]; eight 2 MiB slices on 8 MiB pages at
/// [`Scale::Smoke`]),
/// then the plain copies of the same bytes.
pub fn cuda_table(scale: Scale) -> Result<String> {
    use mem_relocate::CudaCopyQueue;
    let cuda = super::device(mem_storage::CudaAllocMode::StreamOrdered)?;
    let scenario = match scale {
        Scale::Full | Scale::Quick => Scenario {
            page: 256 * MIB,
            slice: 64 * MIB,
            slices: if scale == Scale::Full { 16 } else { 4 },
        },
        Scale::Smoke => Scenario {
            page: 8 * MIB,
            slice: 2 * MIB,
            slices: 8,
        },
    };
    let mut memory = manager(cuda.clone(), &scenario);
    let mut queue = CudaCopyQueue::new(cuda.clone())?;
    let moved = relocate_outdated(&mut memory, &mut queue, &scenario)?;
    let stream = cuda.create_stream()?;
    let one = plain_copy(&*cuda, moved.bytes, 1, stream)?;
    let sliced = plain_copy(&*cuda, moved.bytes, moved.moves as u64, stream)?;
    let mut t = Table::new(&["copy", "bytes", "copies", "ms", "GB/s", "÷ relocation"]);
    let relocation = gbps(moved.bytes, moved.copy_ns);
    for (name, copies, ns) in [
        (
            "relocation (CudaCopyQueue)",
            moved.moves as u64,
            moved.copy_ns,
        ),
        ("plain cuMemcpyDtoDAsync, one copy", 1, one),
        (
            "plain cuMemcpyDtoDAsync, slice-sized copies",
            moved.moves as u64,
            sliced,
        ),
    ] {
        let rate = gbps(moved.bytes, ns);
        t.row(vec![
            name.into(),
            human(moved.bytes),
            copies.to_string(),
            format!("{:.3}", ns as f64 / 1e6),
            rate.map(|r| format!("{r:.1}")).unwrap_or_default(),
            ratio(divide(rate, relocation)),
        ]);
    }
    Ok(t.render())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mem_storage::HostResource;

    #[test]
    fn a_copy_in_uneven_pieces_copies_every_byte_on_host_memory() {
        let host = HostResource::with_capacity(MIB);
        let s = StreamId::DEFAULT;
        let bytes = 10_007;
        let (src, dst) = (
            host.allocate(bytes, s).unwrap(),
            host.allocate(bytes, s).unwrap(),
        );
        let data: Vec<u8> = (0..bytes).map(|i| (i * 7 % 251) as u8).collect();
        host.write(src, &data, s).unwrap();
        copy_pieces(&host, (src, dst), bytes, 16, s).unwrap();
        let mut out = vec![0u8; bytes as usize];
        host.read(dst, &mut out, s).unwrap();
        assert_eq!(out, data);
        assert!(plain_copy(&host, 64 * 1024, 16, s).unwrap() > 0);
        assert!(gbps(1, 0).is_none());
    }
}
