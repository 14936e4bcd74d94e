//! Virtual memory: granularity, reserved ranges, whole mappings, access,
//! deferred release, and an unmap under a queued copy.

use cudarc::driver::sys::{self, cudaError_enum as E};

use crate::standin::{G, OK, access, mapped, prop, standin, unmapped};

#[test]
fn an_unmap_under_a_queued_copy_is_caught_when_the_copy_runs() {
    let Some(d) = standin() else { return };
    let stream = d.ctx.new_stream().unwrap();
    let (src, h) = mapped(G, true);
    let (dst, h2) = mapped(G, true);
    let before = d.violations();
    // A long kernel first, so the copy behind it is still queued when the
    // host unmaps its source.
    assert_eq!(d.kernel(&stream, dst, 4096, 200, 1), OK);
    assert_eq!(
        // SAFETY: both spans are mapped and accessible now.
        unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, G, stream.cu_stream()) },
        OK
    );
    assert_eq!(
        // SAFETY: the seeded fault: the copy still needs `src`.
        unsafe { sys::cuMemUnmap(src, G) },
        OK,
        "the driver does not wait"
    );
    assert_eq!(d.since(before), Vec::<String>::new(), "nothing ran yet");
    stream.synchronize().unwrap();
    let caught = d.since(before);
    assert_eq!(caught.len(), 1, "{caught:?}");
    assert!(caught[0].contains("freed or unmapped"), "{caught:?}");
    // SAFETY: the rest of the teardown, nothing queued any more.
    unsafe {
        assert_eq!(sys::cuMemRelease(h), OK);
        assert_eq!(sys::cuMemAddressFree(src, G), OK);
    }
    unmapped(dst, h2, G);
}

#[test]
fn a_map_into_an_unreserved_range_is_refused_and_recorded() {
    let Some(d) = standin() else { return };
    let (at, h) = mapped(G, true);
    let mut other = 0;
    // SAFETY: live out-parameter; granular size.
    assert_eq!(unsafe { sys::cuMemCreate(&mut other, G, &prop(), 0) }, OK);
    let before = d.violations();
    // Past the end of the reservation, and far from any.
    // SAFETY: seeded faults: the driver must refuse both.
    unsafe {
        assert_ne!(sys::cuMemMap(at + G as u64, G, 0, other, 0), OK);
        assert_ne!(sys::cuMemMap(1 << 46, G, 0, other, 0), OK);
    }
    // Over a mapped page.
    assert_eq!(
        // SAFETY: as above.
        unsafe { sys::cuMemMap(at, G, 0, other, 0) },
        E::CUDA_ERROR_ALREADY_MAPPED
    );
    let caught = d.since(before);
    assert_eq!(caught.len(), 3, "{caught:?}");
    assert!(
        caught[0].contains("not inside a reserved range"),
        "{caught:?}"
    );
    // SAFETY: `other` was never mapped.
    assert_eq!(unsafe { sys::cuMemRelease(other) }, OK);
    unmapped(at, h, G);
}

#[test]
fn access_without_set_access_is_refused_and_a_kernel_over_it_is_caught() {
    let Some(d) = standin() else { return };
    let stream = d.ctx.new_stream().unwrap();
    let (at, h) = mapped(G, false);
    let before = d.violations();
    // SAFETY: seeded fault: mapped, but no cuMemSetAccess.
    let set = unsafe { sys::cuMemsetD8Async(at, 7, 4096, stream.cu_stream()) };
    assert_eq!(set, E::CUDA_ERROR_INVALID_VALUE);
    assert_eq!(
        d.kernel(&stream, at, 4096, 0, 1),
        E::CUDA_ERROR_INVALID_VALUE
    );
    let caught = d.since(before);
    assert_eq!(caught.len(), 2, "{caught:?}");
    assert!(
        caught.iter().all(|m| m.contains("without access")),
        "{caught:?}"
    );
    // Granted, the same calls are legal and record nothing.
    // SAFETY: the whole mapping, one descriptor.
    assert_eq!(unsafe { sys::cuMemSetAccess(at, G, &access(), 1) }, OK);
    assert_eq!(
        // SAFETY: mapped and accessible.
        unsafe { sys::cuMemsetD8Async(at, 7, 4096, stream.cu_stream()) },
        OK
    );
    stream.synchronize().unwrap();
    assert_eq!(d.since(before).len(), 2);
    unmapped(at, h, G);
}

#[test]
fn sizes_and_offsets_off_the_granularity_and_partial_unmaps_are_refused() {
    let Some(d) = standin() else { return };
    let (mut at, mut h) = (0, 0);
    let before = d.violations();
    // SAFETY: live out-parameters; every call below must be refused.
    unsafe {
        assert_eq!(
            sys::cuMemAddressReserve(&mut at, G / 2, 0, 0, 0),
            E::CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(
            sys::cuMemCreate(&mut h, G + 4096, &prop(), 0),
            E::CUDA_ERROR_INVALID_VALUE
        );
    }
    let (at, h) = mapped(2 * G, true);
    // SAFETY: seeded faults on a live two-granule mapping.
    unsafe {
        assert_ne!(sys::cuMemUnmap(at, G), OK, "half a mapping");
        assert_ne!(sys::cuMemUnmap(at + 4096, G), OK, "off the granularity");
        assert_ne!(sys::cuMemAddressFree(at, 2 * G), OK, "still mapped");
    }
    assert_eq!(d.since(before).len(), 5, "{:?}", d.since(before));
    unmapped(at, h, 2 * G);
}

#[test]
fn a_released_chunk_stays_until_its_last_unmap_as_the_driver_defers_it() {
    let Some(d) = standin() else { return };
    let info = || {
        let (mut free, mut total) = (0, 0);
        // SAFETY: live out-parameters.
        assert_eq!(unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) }, OK);
        free
    };
    let stream = d.ctx.new_stream().unwrap();
    let free0 = info();
    let (at, h) = mapped(G, true);
    // SAFETY: the handle is mapped: its release is deferred, and the
    // mapping stays usable.
    assert_eq!(unsafe { sys::cuMemRelease(h) }, OK);
    assert_eq!(info(), free0 - G, "still held while mapped");
    let mut back = vec![0u8; 16];
    // SAFETY: mapped and accessible; `back` outlives the synchronize.
    unsafe {
        assert_eq!(sys::cuMemsetD8Async(at, 9, 16, stream.cu_stream()), OK);
        assert_eq!(
            sys::cuMemcpyDtoHAsync_v2(back.as_mut_ptr().cast(), at, 16, stream.cu_stream()),
            OK
        );
    }
    stream.synchronize().unwrap();
    assert_eq!(back, [9; 16]);
    // SAFETY: a whole mapping, its work done.
    unsafe {
        assert_eq!(sys::cuMemUnmap(at, G), OK);
        assert_eq!(
            sys::cuMemRelease(h),
            E::CUDA_ERROR_INVALID_VALUE,
            "gone with its last unmap"
        );
        assert_eq!(sys::cuMemAddressFree(at, G), OK);
    }
    assert_eq!(info(), free0);
}
