//! Two CUDA devices in one process: each with its own budget, streams and
//! report; one device's arena memory opened to the other, used, and closed
//! again; copies between them in stream order. Runs on the stand-in driver
//! with two devices (`cargo xtask cuda-standin`), which checks every access
//! against the grants and reports a touch without one as a violation.

mod common;

use common::standin;
use gpumem::device::cudarc::driver::{CudaContext, sys};
use gpumem::prelude::*;
use gpumem::storage::DriverCall;

/// The tests share one driver and its violation count: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

type Serial = std::sync::MutexGuard<'static, ()>;

/// Device 0 and device 1 of the stand-in (with the test's turn), or `None`
/// after saying why the test skips.
fn two_devices() -> Option<(Serial, Device, Device)> {
    let turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !gpumem::storage::cuda_available() {
        println!("skipping: no CUDA driver library (cargo xtask cuda-standin adds the stand-in)");
        return None;
    }
    if !standin::is_standin() {
        println!(
            "skipping: a real driver is loaded; these tests touch memory without access on purpose"
        );
        return None;
    }
    if CudaContext::device_count().unwrap_or(0) < 2 {
        println!("skipping: one device (GPUMEM_STANDIN_DEVICES=2 makes two)");
        return None;
    }
    let open = |ordinal| Device::cuda(ordinal).unwrap().ignore_env().build().unwrap();
    Some((turn, open(0), open(1)))
}

/// Device `reader`'s default stream copies `len` bytes from `src` (any
/// device's address) into `dst` (its own), as a kernel or NCCL on that
/// device would touch them, and waits; whether the driver took the copy
/// (the stand-in refuses a touch without access when it is queued, and
/// records the violation).
fn raw_copy(reader: &Stream, dst: u64, src: u64, len: u64) -> bool {
    let stream = reader.cuda_stream().expect("a CUDA stream");
    stream.context().bind_to_thread().unwrap();
    // SAFETY: both are live device addresses of at least `len` bytes; the
    // stand-in checks (and reports) the access itself.
    let queued = unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, len as usize, stream.cu_stream()) };
    reader.synchronize().unwrap();
    queued == sys::cudaError_enum::CUDA_SUCCESS
}

fn violations() -> u64 {
    standin::violations().expect("the stand-in")
}

#[test]
fn two_cuda_devices_live_side_by_side_with_their_own_budgets_and_reports() {
    let Some((_turn, d0, _)) = two_devices() else {
        return;
    };
    drop(d0);
    let d0 = Device::cuda(0)
        .unwrap()
        .budget(Budget::Bytes(16 * MIB))
        .ignore_env()
        .build()
        .unwrap();
    let d1 = Device::cuda(1).unwrap().ignore_env().build().unwrap();
    assert_eq!((d0.name(), d1.name()), ("cuda:0", "cuda:1"));
    let (s0, s1) = (d0.default_stream(), d1.default_stream());
    let kept = s0.reserve(8 * MIB).unwrap();
    let refused = s0.reserve(16 * MIB).unwrap_err();
    assert!(refused.is_out_of_memory(), "{refused}");
    let big = s1.reserve(64 * MIB).unwrap();
    assert_eq!(d0.stats().allocated_bytes.current, 8 * MIB);
    assert_eq!(d1.stats().allocated_bytes.current, 64 * MIB);
    assert!(matches!(
        s1.read(&kept, &mut [0u8; 4]),
        Err(GpuMemError::ForeignHandle { .. })
    ));
    drop((kept, big));
}

#[test]
fn a_peer_touches_arena_memory_only_while_it_is_granted() {
    let Some((_turn, d0, d1)) = two_devices() else {
        return;
    };
    let (s0, s1) = (d0.default_stream(), d1.default_stream());
    let (len, before) = (4 * MIB, violations());
    let owned = s0.reserve(len).unwrap();
    s0.write(&owned, &vec![0x5a; len as usize]).unwrap();
    let landing = s1.reserve(len).unwrap();
    let (src, dst) = (
        s0.device_ptr(&owned).unwrap().as_raw(),
        s1.device_ptr(&landing).unwrap().as_raw(),
    );

    standin::expect_violation("without access for device 1");
    assert!(!raw_copy(&s1, dst, src, len));
    assert_eq!(violations(), before + 1, "a read without a grant is caught");

    d0.grant_access(&d1).unwrap();
    d0.grant_access(&d1).unwrap(); // twice changes nothing
    assert_eq!(d0.peers(), ["cuda:1"]);
    assert!(raw_copy(&s1, dst, src, len));
    let mut back = vec![0u8; len as usize];
    s1.read(&landing, &mut back).unwrap();
    assert!(
        back.iter().all(|&b| b == 0x5a),
        "the peer read the owner's bytes"
    );
    // A chunk mapped after the grant is opened to the peer as well.
    let later = s0.reserve(64 * MIB).unwrap();
    let later_ptr = s0.device_ptr(&later).unwrap().as_raw();
    assert!(raw_copy(&s1, dst, later_ptr, len));
    assert_eq!(violations(), before + 1, "granted reads are no violations");

    d0.revoke_access(&d1).unwrap();
    assert!(d0.peers().is_empty());
    standin::expect_violation("without access for device 1");
    assert!(!raw_copy(&s1, dst, src, len));
    assert_eq!(
        violations(),
        before + 2,
        "a read after the revoke is caught"
    );
}

#[test]
fn a_device_cannot_be_its_own_peer_and_nothing_changes() {
    let Some((_turn, d0, _d1)) = two_devices() else {
        return;
    };
    let err = d0.grant_access(&d0).unwrap_err();
    assert!(matches!(err, GpuMemError::Peer { .. }), "{err}");
    assert!(err.to_string().contains("same CUDA device"), "{err}");
    assert!(d0.peers().is_empty());
}

#[test]
fn a_peer_touches_persistent_and_paged_memory_while_granted() {
    let Some((_turn, _, d1)) = two_devices() else {
        return;
    };
    let paged = Device::cuda(0)
        .unwrap()
        .pools(PoolLayout::SubSlices)
        .ignore_env()
        .build()
        .unwrap();
    let (s0, s1) = (paged.default_stream(), d1.default_stream());
    let before = violations();
    let kept = {
        let _window = s0.persistent();
        s0.reserve(2 * MIB).unwrap()
    };
    let small = s0.reserve(64 * KIB).unwrap();
    let landing = s1.reserve(2 * MIB).unwrap();
    let dst = s1.device_ptr(&landing).unwrap().as_raw();
    let sources = [
        (s0.device_ptr(&kept).unwrap().as_raw(), 2 * MIB),
        (s0.device_ptr(&small).unwrap().as_raw(), 64 * KIB),
    ];
    for &(src, len) in &sources {
        standin::expect_violation("without peer access");
        assert!(!raw_copy(&s1, dst, src, len));
    }
    assert_eq!(violations(), before + 2, "pages are closed to the peer");
    paged.grant_access(&d1).unwrap();
    for &(src, len) in &sources {
        assert!(raw_copy(&s1, dst, src, len));
    }
    // A page allocated after the grant is open too.
    let later = s0.reserve(40 * MIB).unwrap();
    let later_ptr = s0.device_ptr(&later).unwrap().as_raw();
    assert!(raw_copy(&s1, dst, later_ptr, MIB));
    assert_eq!(violations(), before + 2, "granted pages are no violations");
    paged.revoke_access(&d1).unwrap();
    standin::expect_violation("without peer access");
    assert!(!raw_copy(&s1, dst, sources[1].0, sources[1].1));
    assert_eq!(violations(), before + 3, "closed again after the revoke");
}

/// A paged device on card 0 and one 64 KiB page of it: its address.
fn paged_page(device: &Device) -> (ManagedMemoryHandle, u64) {
    let s = device.default_stream();
    let page = s.reserve(64 * KIB).unwrap();
    let ptr = s.device_ptr(&page).unwrap().as_raw();
    (page, ptr)
}

fn paged_device() -> Device {
    Device::cuda(0)
        .unwrap()
        .pools(PoolLayout::SubSlices)
        .ignore_env()
        .build()
        .unwrap()
}

/// [`paged_device`] on a card without memory pools: pages from
/// `cuMemAlloc`, opened to a peer by `cuCtxEnablePeerAccess`.
fn paged_device_without_pools() -> Device {
    standin::set_memory_pools(false);
    let device = paged_device();
    standin::set_memory_pools(true);
    device
}

/// A 1 MiB landing buffer on `reader`'s default stream: the stream, the
/// buffer and its address.
fn landing(reader: &Device) -> (Stream, ManagedMemoryHandle, u64) {
    let stream = reader.default_stream();
    let buffer = stream.reserve(MIB).unwrap();
    let at = stream.device_ptr(&buffer).unwrap().as_raw();
    (stream, buffer, at)
}

/// `reader`'s copy of the 64 KiB page at `page` into `dst` is refused and
/// counted as one violation: the page is closed to it.
fn assert_closed(reader: &Stream, dst: u64, page: u64, why: &str) {
    let before = violations();
    standin::expect_violation("without peer access");
    assert!(!raw_copy(reader, dst, page, 64 * KIB), "{why}");
    assert_eq!(violations(), before + 1, "{why}");
}

#[test]
fn a_device_dropped_with_a_grant_in_force_closes_its_pages_again() {
    let Some((_turn, d0, d1)) = two_devices() else {
        return;
    };
    drop(d0);
    let (s1, _landing, dst) = landing(&d1);
    // Stream-ordered pages (the pool's door), then cuMemAlloc pages (the
    // context's).
    for open in [paged_device, paged_device_without_pools] {
        let granting = open();
        granting.grant_access(&d1).unwrap();
        let (page, ptr) = paged_page(&granting);
        assert!(raw_copy(&s1, dst, ptr, 64 * KIB));
        drop(page);
        drop(granting);
        let later = open();
        let (_page, ptr) = paged_page(&later);
        assert_closed(
            &s1,
            dst,
            ptr,
            "the dropped device's grant does not outlive it",
        );
    }
}

#[test]
fn two_devices_on_one_card_share_its_page_grant_until_both_revoke() {
    let Some((_turn, d0, d1)) = two_devices() else {
        return;
    };
    drop(d0);
    let (s1, _landing, dst) = landing(&d1);
    let (a, b) = (paged_device(), paged_device());
    a.grant_access(&d1).unwrap();
    b.grant_access(&d1).unwrap();
    let ((_pa, pa), (_pb, pb)) = (paged_page(&a), paged_page(&b));
    a.revoke_access(&d1).unwrap();
    assert!(a.peers().is_empty() && b.peers() == ["cuda:1"]);
    // The driver opens the card as a whole: b's grant keeps it open.
    assert!(raw_copy(&s1, dst, pb, 64 * KIB) && raw_copy(&s1, dst, pa, 64 * KIB));
    a.revoke_access(&d1).unwrap(); // a holds no grant: nothing changes
    assert!(raw_copy(&s1, dst, pb, 64 * KIB));
    b.revoke_access(&d1).unwrap();
    assert_closed(&s1, dst, pb, "the last revoke closes the card");
}

#[test]
fn a_copy_to_a_peer_device_lands_in_stream_order() {
    let Some((_turn, d0, d1)) = two_devices() else {
        return;
    };
    let (s0, s1) = (d0.default_stream(), d1.default_stream());
    let before = violations();
    let src = s0.reserve(3 * MIB).unwrap();
    let pattern: Vec<u8> = (0..3 * MIB).map(|i| (i % 251) as u8).collect();
    s0.write(&src, &pattern).unwrap();
    let dst = s1.reserve(4 * MIB).unwrap();
    s0.copy_to_peer(&src, &s1, &dst).unwrap();
    s1.synchronize().unwrap();
    let mut back = vec![0u8; pattern.len()];
    s1.read(&dst, &mut back).unwrap();
    assert_eq!(back, pattern);
    assert_eq!(violations(), before, "a peer copy needs no grant");
    let err = s1.copy_to_peer(&dst, &s0, &src).unwrap_err();
    assert!(matches!(err, GpuMemError::Peer { .. }), "{err}");
    let err = s0.copy_to_peer(&dst, &s1, &src).unwrap_err();
    assert!(matches!(err, GpuMemError::ForeignHandle { .. }), "{err}");
}

#[test]
fn a_grant_the_driver_refuses_part_way_leaves_the_peer_without_access() {
    let Some((_turn, d0, d1)) = two_devices() else {
        return;
    };
    let (s0, s1) = (d0.default_stream(), d1.default_stream());
    // Three chunks mapped: the grant opens them one by one.
    let held: Vec<_> = (0..3).map(|_| s0.reserve(64 * MIB).unwrap()).collect();
    let landing = s1.reserve(MIB).unwrap();
    let dst = s1.device_ptr(&landing).unwrap().as_raw();
    let first = s0.device_ptr(&held[0]).unwrap().as_raw();
    let before = violations();
    // The second chunk's cuMemSetAccess fails after the first succeeded.
    let invalid = sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE as u32;
    standin::fail_call("cuMemSetAccess", 1, invalid);
    let err = d0.grant_access(&d1).unwrap_err();
    assert!(matches!(err, GpuMemError::Storage(_)), "{err}");
    assert!(d0.peers().is_empty(), "no grant is recorded");
    standin::expect_violation("without access for device 1");
    assert!(
        !raw_copy(&s1, dst, first, MIB),
        "the first chunk's access was taken back"
    );
    standin::expect_violation("without peer access");
    let page = {
        let _window = s0.persistent();
        s0.reserve(MIB).unwrap()
    };
    let page_ptr = s0.device_ptr(&page).unwrap().as_raw();
    assert!(
        !raw_copy(&s1, dst, page_ptr, MIB),
        "the pages' access was taken back"
    );
    assert_eq!(violations(), before + 2);
    // With the driver willing, the same grant goes through.
    d0.grant_access(&d1).unwrap();
    assert!(raw_copy(&s1, dst, first, MIB) && raw_copy(&s1, dst, page_ptr, MIB));
}

#[test]
fn each_peer_is_priced_as_one_more_access_call_per_chunk() {
    let Some((_turn, d0, d1)) = two_devices() else {
        return;
    };
    let s0 = d0.default_stream();
    let access = |d: &Device| d.stats().driver.calls(DriverCall::SetAccess);
    let first = s0.reserve(64 * MIB).unwrap();
    let (maps, alone) = (d0.stats().chunks.maps, access(&d0));
    assert_eq!(alone, maps, "one access call per map for the owner alone");
    d0.grant_access(&d1).unwrap();
    assert_eq!(
        access(&d0),
        alone + maps,
        "the grant opens each mapped chunk"
    );
    let before = (d0.stats().chunks.maps, access(&d0));
    let second = s0.reserve(256 * MIB).unwrap();
    let new_maps = d0.stats().chunks.maps - before.0;
    assert!(new_maps > 0);
    assert_eq!(
        access(&d0) - before.1,
        2 * new_maps,
        "owner and peer per map"
    );
    drop((first, second));
}
