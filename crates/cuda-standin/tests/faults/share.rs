//! Sharing chunks: a second process imports an exported chunk and both see
//! each other's bytes, the exporter's release leaves the importer's bytes
//! alone; an export or import against the contract is refused and recorded.

use std::ffi::c_void;
use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};

use cudarc::driver::sys::{self, CUmemAllocationHandleType as T, cudaError_enum as E};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, recvmsg, sendmsg,
};

use crate::standin::{G, OK, access, expect_violation, prop, rerun, shareable, standin};

const FD: T = T::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
/// Set in the second process: the socket it connects to.
const IMPORTER: &str = "GPUMEM_STANDIN_TEST_IMPORTER";

/// Reserve `len`, map `handle` there and give device 0 access.
fn map(handle: u64, len: usize) -> u64 {
    let mut at = 0;
    // SAFETY: a live out-parameter; a live chunk of `len` bytes.
    unsafe {
        assert_eq!(sys::cuMemAddressReserve(&mut at, len, 0, 0, 0), OK);
        assert_eq!(sys::cuMemMap(at, len, 0, handle, 0), OK);
        assert_eq!(sys::cuMemSetAccess(at, len, &access(), 1), OK);
    }
    at
}

/// Unmap, release and free what [`map`] made.
fn unmap(at: u64, handle: u64, len: usize) {
    // SAFETY: a whole mapping made by `map`, its work done.
    unsafe {
        assert_eq!(sys::cuMemUnmap(at, len), OK);
        assert_eq!(sys::cuMemRelease(handle), OK);
        assert_eq!(sys::cuMemAddressFree(at, len), OK);
    }
}

fn read(at: u64, len: usize) -> Vec<u8> {
    let mut back = vec![0u8; len];
    assert_eq!(
        // SAFETY: `back` holds `len` bytes; the copy is synchronous.
        unsafe { sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), at, len) },
        OK
    );
    back
}

fn fill(at: u64, value: u8, len: usize) {
    // SAFETY: mapped and accessible; synchronous.
    assert_eq!(unsafe { sys::cuMemsetD8_v2(at, value, len) }, OK);
}

/// Pass `fd` and a length over `sock` (`SCM_RIGHTS`: the kernel installs
/// a descriptor of the same file in the receiver).
fn send_fd(sock: &UnixStream, fd: BorrowedFd<'_>, len: u64) {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = [fd];
    assert!(control.push(SendAncillaryMessage::ScmRights(&fds)));
    let bytes = len.to_le_bytes();
    let sent = sendmsg(
        sock,
        &[IoSlice::new(&bytes)],
        &mut control,
        SendFlags::empty(),
    );
    assert_eq!(sent, Ok(8));
}

fn recv_fd(sock: &UnixStream) -> (OwnedFd, u64) {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut bytes = [0u8; 8];
    let got = recvmsg(
        sock,
        &mut [IoSliceMut::new(&mut bytes)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .expect("a message");
    assert_eq!(got.bytes, 8);
    let fd = control
        .drain()
        .find_map(|m| match m {
            RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
            _ => None,
        })
        .expect("a descriptor");
    (fd, u64::from_le_bytes(bytes))
}

/// The importer's connection; a panic, not a hang, if it exits first.
fn accept(listener: &UnixListener, child: &mut std::process::Child) -> UnixStream {
    listener.set_nonblocking(true).unwrap();
    loop {
        match listener.accept() {
            Ok((sock, _)) => {
                sock.set_nonblocking(false).unwrap();
                return sock;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if let Some(status) = child.try_wait().unwrap() {
                    panic!("the importer exited before it connected: {status}");
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}

fn expect(sock: &mut UnixStream, step: u8) {
    let mut got = [0u8];
    sock.read_exact(&mut got).expect("the other process's step");
    assert_eq!(got[0], step);
}

#[test]
fn a_second_process_imports_an_exported_chunk_and_outlives_the_exporters_release() {
    if let Ok(path) = std::env::var(IMPORTER) {
        return importer(&path);
    }
    let Some(d) = standin() else { return };
    let free = || {
        let (mut free, mut total) = (0, 0);
        // SAFETY: live out-parameters.
        assert_eq!(unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) }, OK);
        free
    };
    let (free0, before) = (free(), d.violations());
    let mut h = 0;
    assert_eq!(
        // SAFETY: a live out-parameter; granular size.
        unsafe { sys::cuMemCreate(&mut h, 2 * G, &shareable(), 0) },
        OK
    );
    let at = map(h, 2 * G);
    fill(at, 0x5A, 2 * G);
    let mut raw = -1i32;
    // SAFETY: for a POSIX descriptor the out-parameter is an int.
    let exported = unsafe { sys::cuMemExportToShareableHandle((&raw mut raw).cast(), h, FD, 0) };
    assert_eq!(exported, OK);
    // SAFETY: the driver handed this new descriptor to the caller.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };

    let path = std::env::temp_dir().join(format!("gpumem-standin-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    let name = "a_second_process_imports_an_exported_chunk_and_outlives_the_exporters_release";
    let path_text = path.to_str().unwrap();
    let mut child = rerun(module_path!(), name, &[(IMPORTER, path_text)]);
    let mut sock = accept(&listener, &mut child);
    send_fd(&sock, fd.as_fd(), 2 * G as u64);
    drop(fd);

    expect(&mut sock, 1);
    let back = read(at, 2 * G);
    assert!(
        back[..G].iter().all(|&b| b == 0xA5),
        "the importer's writes"
    );
    assert!(back[G..].iter().all(|&b| b == 0x5A), "the exporter's bytes");
    unmap(at, h, 2 * G);
    assert_eq!(free(), free0, "the exporter's side is released");
    sock.write_all(&[2]).unwrap();
    expect(&mut sock, 3);
    assert!(
        child.wait().unwrap().success(),
        "the importer's checks passed"
    );
    let _ = std::fs::remove_file(&path);
    assert_eq!(d.since(before), Vec::<String>::new());
}

/// The second process: import, check the exporter's pattern, write its
/// own; after the exporter released its side, find its bytes intact.
fn importer(path: &str) {
    let d = standin().expect("the importer runs on the stand-in");
    let before = d.violations();
    let mut sock = UnixStream::connect(path).unwrap();
    let (fd, len) = recv_fd(&sock);
    let len = len as usize;
    let mut h = 0;
    let os_handle = fd.as_raw_fd() as usize as *mut c_void;
    assert_eq!(
        // SAFETY: a live out-parameter and a descriptor this process holds.
        unsafe { sys::cuMemImportFromShareableHandle(&mut h, os_handle, FD) },
        OK
    );
    drop(fd);
    let at = map(h, len);
    assert!(
        read(at, len).iter().all(|&b| b == 0x5A),
        "the exporter's pattern"
    );
    fill(at, 0xA5, len / 2);
    sock.write_all(&[1]).unwrap();
    expect(&mut sock, 2);
    let back = read(at, len);
    assert!(back[..len / 2].iter().all(|&b| b == 0xA5));
    assert!(back[len / 2..].iter().all(|&b| b == 0x5A));
    unmap(at, h, len);
    assert_eq!(d.since(before), Vec::<String>::new());
    sock.write_all(&[3]).unwrap();
}

#[test]
fn a_chunk_exports_only_as_a_handle_type_it_was_created_with_and_fabric_is_not_supported() {
    let Some(d) = standin() else { return };
    let before = d.violations();
    let (mut plain, mut h, mut g) = (0, 0, 0);
    let mut fabric = prop();
    fabric.requestedHandleTypes = T::CU_MEM_HANDLE_TYPE_FABRIC;
    let mut fd = -1i32;
    // SAFETY: live out-parameters; granular sizes.
    unsafe {
        assert_eq!(
            sys::cuMemCreate(&mut h, G, &fabric, 0),
            E::CUDA_ERROR_NOT_SUPPORTED
        );
        let option = sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED;
        let granularity = sys::cuMemGetAllocationGranularity(&mut g, &fabric, option);
        assert_eq!(
            granularity,
            E::CUDA_ERROR_NOT_SUPPORTED,
            "no fabric: callers fall back"
        );
        assert_eq!(
            sys::cuMemGetAllocationGranularity(&mut g, &shareable(), option),
            OK
        );
        assert_eq!(g, G);
        assert_eq!(sys::cuMemCreate(&mut plain, G, &prop(), 0), OK);
        let refused = sys::cuMemExportToShareableHandle((&raw mut fd).cast(), plain, FD, 0);
        assert_eq!(refused, E::CUDA_ERROR_INVALID_VALUE);
        assert_eq!(sys::cuMemRelease(plain), OK);
    }
    let caught = d.since(before);
    assert_eq!(caught.len(), 1, "{caught:?}");
    assert!(caught[0].contains("created without"), "{caught:?}");
}

#[test]
fn an_import_of_a_closed_descriptor_or_of_another_file_is_refused_and_recorded() {
    let Some(d) = standin() else { return };
    let before = d.violations();
    let import = |fd: i32| {
        let mut h = 0;
        // SAFETY: a live out-parameter; the descriptor is the seeded fault.
        unsafe { sys::cuMemImportFromShareableHandle(&mut h, fd as usize as *mut c_void, FD) }
    };
    let file = std::env::temp_dir().join(format!("gpumem-standin-{}.bin", std::process::id()));
    std::fs::write(&file, vec![0u8; 3 * 4096]).unwrap();
    let other = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&file)
        .unwrap();
    assert_eq!(
        import(other.as_raw_fd()),
        E::CUDA_ERROR_INVALID_VALUE,
        "another file"
    );
    let closed = other.into_raw_fd();
    // SAFETY: the descriptor is ours; closing it makes the seeded fault.
    drop(unsafe { OwnedFd::from_raw_fd(closed) });
    assert_eq!(
        import(closed),
        E::CUDA_ERROR_INVALID_VALUE,
        "a closed descriptor"
    );
    let _ = std::fs::remove_file(&file);
    let caught = d.since(before);
    assert_eq!(caught.len(), 2, "{caught:?}");
    assert!(caught[0].contains("not a stand-in chunk"), "{caught:?}");
    assert!(caught[1].contains("descriptor"), "{caught:?}");
}

#[test]
fn retain_properties_and_address_range_describe_a_mapped_chunk() {
    let Some(d) = standin() else { return };
    let before = d.violations();
    let mut p = shareable();
    p.allocFlags.gpuDirectRDMACapable = 1;
    let (mut h, mut again, mut base, mut size) = (0, 0, 0, 0);
    // SAFETY: a live out-parameter; granular size.
    assert_eq!(unsafe { sys::cuMemCreate(&mut h, 2 * G, &p, 0) }, OK);
    let at = map(h, 2 * G);
    // SAFETY: an all-zero CUmemAllocationProp is a valid value; the other
    // calls take live out-parameters and a mapped address.
    unsafe {
        let mut got: sys::CUmemAllocationProp = std::mem::zeroed();
        assert_eq!(sys::cuMemGetAllocationPropertiesFromHandle(&mut got, h), OK);
        assert_eq!(got.requestedHandleTypes, FD);
        assert_eq!(
            (got.location.id, got.allocFlags.gpuDirectRDMACapable),
            (0, 1)
        );
        let inside = (at + G as u64 + 10) as usize as *mut c_void;
        assert_eq!(sys::cuMemRetainAllocationHandle(&mut again, inside), OK);
        assert_eq!(again, h);
        assert_eq!(sys::cuMemRelease(again), OK, "the retained reference");
        assert_eq!(
            sys::cuMemGetAddressRange_v2(&mut base, &mut size, at + 10),
            OK
        );
    }
    assert_eq!((base, size), (at, 2 * G));
    unmap(at, h, 2 * G);
    assert_eq!(d.since(before), Vec::<String>::new());
}

/// Set in the second process of the next test: whether it announces the
/// bad import it makes (`1`) or not (`0`), under `GPUMEM_STANDIN_ABORT=1`.
const ANNOUNCE: &str = "GPUMEM_STANDIN_TEST_ANNOUNCE";

#[test]
fn an_announced_bad_import_is_recorded_without_aborting_and_an_unannounced_one_aborts() {
    if let Ok(announce) = std::env::var(ANNOUNCE) {
        let d = standin().expect("the second process runs on the stand-in");
        if announce == "1" {
            expect_violation("not a stand-in chunk");
        }
        let fd = rustix::fs::memfd_create("not-a-chunk", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&fd, 3 * 4096).unwrap();
        let (before, mut h) = (d.violations(), 0);
        let os_handle = fd.as_raw_fd() as usize as *mut c_void;
        assert_eq!(
            // SAFETY: a live out-parameter; the descriptor is the fault.
            unsafe { sys::cuMemImportFromShareableHandle(&mut h, os_handle, FD) },
            E::CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(d.violations(), before + 1, "recorded all the same");
        return;
    }
    let Some(_d) = standin() else { return };
    let name = "an_announced_bad_import_is_recorded_without_aborting_and_an_unannounced_one_aborts";
    let run = |announce| {
        let env = [(ANNOUNCE, announce), ("GPUMEM_STANDIN_ABORT", "1")];
        rerun(module_path!(), name, &env).wait().unwrap()
    };
    assert!(run("1").success(), "announced: recorded, no abort");
    assert!(!run("0").success(), "not announced: the abort");
}
