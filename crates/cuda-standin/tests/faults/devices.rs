//! Two devices (`GPUMEM_STANDIN_DEVICES=2`): a mapping is open to the
//! devices `cuMemSetAccess` named, an allocation to its device and the
//! peers that enabled access, and a device touching memory it may not is
//! caught, when the work is queued and when it runs.

use cudarc::driver::sys::{self, cudaError_enum as E};

use crate::standin::{G, OK, access_for, mapped, standin, unmapped};

/// `cuMemGetAccess` of `at` for device `dev`.
fn access_of(at: u64, dev: i32) -> u64 {
    let location = access_for(dev, true).location;
    let mut flags = 9;
    // SAFETY: live in- and out-parameters.
    let got = unsafe { sys::cuMemGetAccess(&mut flags, &location, at) };
    assert_eq!(got, OK);
    flags
}

/// Copy `len` bytes from `src` to the host on `stream`, and wait.
fn read(stream: &cudarc::driver::CudaStream, src: u64, len: usize) -> Result<Vec<u8>, E> {
    let mut back = vec![0u8; len];
    // SAFETY: `back` holds `len` bytes and outlives the synchronize.
    let queued = unsafe {
        sys::cuMemcpyDtoHAsync_v2(back.as_mut_ptr().cast(), src, len, stream.cu_stream())
    };
    if queued != OK {
        return Err(queued);
    }
    stream.synchronize().unwrap();
    Ok(back)
}

#[test]
fn device_1_reads_a_device_0_mapping_only_while_cu_mem_set_access_grants_it() {
    let Some(d) = standin() else { return };
    let Some(ctx1) = d.second() else { return };
    let s0 = d.ctx.new_stream().unwrap();
    let s1 = ctx1.new_stream().unwrap();
    d.ctx.bind_to_thread().unwrap();
    let (at, h) = mapped(G, true);
    assert_eq!(
        // SAFETY: mapped, accessible to device 0.
        unsafe { sys::cuMemsetD8Async(at, 0x5A, G, s0.cu_stream()) },
        OK
    );
    s0.synchronize().unwrap();
    let before = d.violations();

    assert_eq!(
        read(&s1, at, 64),
        Err(E::CUDA_ERROR_INVALID_VALUE),
        "no grant"
    );
    assert_eq!(
        // SAFETY: the whole mapping, one descriptor for device 1.
        unsafe { sys::cuMemSetAccess(at, G, &access_for(1, true), 1) },
        OK
    );
    assert_eq!(read(&s1, at, 64), Ok(vec![0x5A; 64]), "granted");
    assert_eq!(
        (access_of(at, 0), access_of(at + 4096, 1)),
        (3, 3),
        "both read-write"
    );
    // A kernel of device 1 queued while granted, revoked before it runs.
    assert_eq!(d.kernel(&s1, at, 4096, 200, 1), OK);
    assert_eq!(
        // SAFETY: as above; PROT_NONE revokes device 1's access.
        unsafe { sys::cuMemSetAccess(at, G, &access_for(1, false), 1) },
        OK
    );
    s1.synchronize().unwrap();
    assert_eq!(
        (access_of(at, 0), access_of(at, 1)),
        (3, 0),
        "device 1 revoked"
    );
    assert_eq!(
        read(&s1, at, 64),
        Err(E::CUDA_ERROR_INVALID_VALUE),
        "revoked"
    );
    assert_eq!(
        read(&s0, at, 64),
        Ok(vec![0x5A; 64]),
        "device 0 keeps its access"
    );

    let caught = d.since(before);
    assert_eq!(caught.len(), 3, "{caught:?}");
    assert!(
        caught[0].contains("without access for device 1"),
        "{caught:?}"
    );
    assert!(caught[1].contains("lost its access"), "{caught:?}");
    assert!(
        caught[2].contains("without access for device 1"),
        "{caught:?}"
    );
    unmapped(at, h, G);
}

#[test]
fn a_device_1_allocation_needs_peer_access_and_a_peer_copy_needs_neither() {
    let Some(d) = standin() else { return };
    let Some(ctx1) = d.second() else { return };
    let s1 = ctx1.new_stream().unwrap();
    d.ctx.bind_to_thread().unwrap();
    let (mut can, mut p0, mut p1) = (0, 0, 0);
    // SAFETY: live out-parameters; device 0's context is current.
    unsafe {
        assert_eq!(sys::cuDeviceCanAccessPeer(&mut can, 1, 0), OK);
        assert_eq!(can, 1);
        assert_eq!(sys::cuDeviceCanAccessPeer(&mut can, 0, 0), OK);
        assert_eq!(can, 0, "a device is not its own peer");
        assert_eq!(sys::cuMemAlloc_v2(&mut p0, 4096), OK);
        assert_eq!(sys::cuMemsetD8_v2(p0, 7, 4096), OK);
    }
    ctx1.bind_to_thread().unwrap();
    // SAFETY: live out-parameter; device 1's context is current.
    assert_eq!(unsafe { sys::cuMemAlloc_v2(&mut p1, 4096) }, OK);
    let before = d.violations();
    let copy = || {
        // SAFETY: both live allocations; the copy runs as device 1.
        let r = unsafe { sys::cuMemcpyDtoDAsync_v2(p1, p0, 4096, s1.cu_stream()) };
        s1.synchronize().unwrap();
        r
    };
    assert_eq!(
        copy(),
        E::CUDA_ERROR_INVALID_VALUE,
        "device 1 reads device 0"
    );
    let peer = || {
        // SAFETY: as above; each end named with its own device's context.
        unsafe {
            sys::cuMemcpyPeerAsync(p1, ctx1.cu_ctx(), p0, d.ctx.cu_ctx(), 4096, s1.cu_stream())
        }
    };
    assert_eq!(peer(), OK, "a peer copy touches each end as its own device");
    assert_eq!(read(&s1, p1, 4096), Ok(vec![7; 4096]));
    // SAFETY: device 1's context is current; device 0's is live.
    unsafe {
        assert_eq!(sys::cuCtxEnablePeerAccess(d.ctx.cu_ctx(), 0), OK);
        assert_eq!(
            sys::cuCtxEnablePeerAccess(d.ctx.cu_ctx(), 0),
            E::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
        );
    }
    assert_eq!(copy(), OK, "peer access enabled");
    // SAFETY: as above.
    unsafe {
        assert_eq!(sys::cuCtxDisablePeerAccess(d.ctx.cu_ctx()), OK);
        assert_eq!(
            sys::cuCtxDisablePeerAccess(d.ctx.cu_ctx()),
            E::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
        );
    }
    assert_eq!(copy(), E::CUDA_ERROR_INVALID_VALUE, "disabled again");
    let caught = d.since(before);
    assert_eq!(caught.len(), 2, "{caught:?}");
    assert!(
        caught.iter().all(|m| m.contains("without peer access")),
        "{caught:?}"
    );
    // SAFETY: idle allocations, each freed in its own device's context.
    unsafe {
        assert_eq!(sys::cuMemFree_v2(p1), OK);
        d.ctx.bind_to_thread().unwrap();
        assert_eq!(sys::cuMemFree_v2(p0), OK);
    }
}

#[test]
fn each_device_has_its_own_capacity_and_a_chunk_on_device_1_counts_there() {
    let Some(d) = standin() else { return };
    let Some(ctx1) = d.second() else { return };
    let free = || {
        let (mut free, mut total) = (0, 0);
        // SAFETY: live out-parameters.
        assert_eq!(unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) }, OK);
        free
    };
    let (free0, free1) = (free(), {
        ctx1.bind_to_thread().unwrap();
        free()
    });
    let mut prop = crate::standin::prop();
    prop.location.id = 1;
    let mut h = 0;
    // SAFETY: a live out-parameter; granular size.
    assert_eq!(unsafe { sys::cuMemCreate(&mut h, G, &prop, 0) }, OK);
    assert_eq!(free(), free1 - G, "device 1 holds it");
    d.ctx.bind_to_thread().unwrap();
    assert_eq!(free(), free0, "device 0 does not");
    // SAFETY: never mapped.
    assert_eq!(unsafe { sys::cuMemRelease(h) }, OK);
}
