//! The cross-process share on CUDA (the stand-in driver in CI, whose
//! shareable chunks are memfds two processes really share): the importer
//! maps the exporter's chunks with `cuMemImportFromShareableHandle`,
//! reads its bytes and replies; the exporter sees the reply and, after
//! the importer exits, has released every chunk it made.

use gpumem::prelude::*;
use gpumem::storage::ShareHandles;

use crate::{ROLE, expect, inherited_socket, passed, pattern, spawn_importer, step};

/// A CUDA device 0 that makes shareable buffers, or why there is none.
fn cuda_device(share: bool) -> Option<Device> {
    if !gpumem::storage::cuda_available() {
        println!("skipping: the CUDA driver library (libcuda) cannot be loaded");
        return None;
    }
    let mut config = GpumemConfig::default();
    config.pools = PoolLayout::Arenas;
    config.arena_max_chunk = Some(2 * MIB);
    // FABRIC asked: a driver without it (the stand-in) refuses it with
    // NOT_SUPPORTED and the chunk is made with the fd alone.
    config.share = share.then_some(ShareHandles {
        fabric: true,
        rdma: false,
    });
    match Device::cuda(0).and_then(|b| b.config(config).ignore_env().build()) {
        Ok(device) => Some(device),
        Err(err) => {
            println!("skipping: no CUDA device with virtual memory ({err})");
            None
        }
    }
}

fn importer() {
    let mut sock = inherited_socket();
    let shared = gpumem::sharing::receive_shared(&sock).unwrap();
    let device = cuda_device(false).expect("the exporter found a CUDA device");
    let view = device.import(shared).unwrap();
    let mut all = vec![0u8; view.mapped_len() as usize];
    view.read(0, &mut all).unwrap();
    let len = view.len() as usize;
    assert!(all[..len].iter().enumerate().all(|(i, &b)| b == pattern(i)));
    assert!(all[len..].iter().all(|&b| b == 0));
    view.write(0, &[0x42; 4096]).unwrap();
    step(&mut sock, b'w');
    expect(&mut sock, b'k');
}

#[test]
fn a_second_process_imports_a_cuda_shareable_buffer_and_the_exporter_sees_its_reply() {
    const NAME: &str =
        "cuda::a_second_process_imports_a_cuda_shareable_buffer_and_the_exporter_sees_its_reply";
    if std::env::var(ROLE).is_ok() {
        return importer();
    }
    let Some(device) = cuda_device(true) else {
        return;
    };
    let stream = device.default_stream();
    let len = 5 * MIB + 123;
    let buffer = stream.reserve_shareable(len).unwrap();
    if std::env::var("GPUMEM_STANDIN_ABORT").is_ok() {
        assert!(
            !buffer.granted().fabric,
            "the stand-in has no FABRIC handles"
        );
    }
    let data: Vec<u8> = (0..len as usize).map(pattern).collect();
    buffer.write(0, &data).unwrap();
    let (child, mut sock) = spawn_importer(NAME, "cuda_importer");
    gpumem::sharing::send_shared(&sock, &stream.export(&buffer).unwrap()).unwrap();
    expect(&mut sock, b'w');
    let mut back = vec![0u8; 8192];
    buffer.read(0, &mut back).unwrap();
    assert!(back[..4096].iter().all(|&b| b == 0x42));
    assert_eq!(back[4096..], data[4096..8192]);
    step(&mut sock, b'k');
    passed(child);
    drop(buffer);
    let vm = device.memory_report().virtual_memory.unwrap();
    assert_eq!(vm.chunks_created, vm.chunks_released);
}

/// Tell the stand-in driver that the next violation whose message holds
/// `text` is on purpose (it aborts the run otherwise, under
/// `GPUMEM_STANDIN_ABORT=1`); `false` on a real driver, which has no such
/// entry point and checks nothing of the kind.
fn announce_violation(text: &str) -> bool {
    type F = unsafe extern "C" fn(*const std::ffi::c_char);
    // SAFETY: the driver library is loaded (checked by the caller); the
    // stand-in exports this symbol with this type.
    let f = unsafe { cudarc::driver::sys::culib().get::<F>(b"gpumem_standin_expect_violation\0") };
    let Ok(f) = f.map(|symbol| *symbol) else {
        return false;
    };
    let text = std::ffi::CString::new(text).unwrap();
    // SAFETY: a NUL-terminated string, read during the call.
    unsafe { f(text.as_ptr()) };
    true
}

#[test]
fn a_cuda_import_of_a_descriptor_never_exported_is_a_typed_error_and_nothing_is_mapped() {
    let Some(device) = cuda_device(false) else {
        return;
    };
    if !announce_violation("not a stand-in chunk") {
        println!("skipping: a real driver; the refusal is the stand-in's contract check");
        return;
    }
    let fd = rustix::fs::memfd_create("not-a-chunk", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&fd, 2 * MIB).unwrap();
    let shared = gpumem::sharing::SharedBuffer {
        device: device.name().to_string(),
        len: 2 * MIB,
        chunks: vec![gpumem::sharing::SharedChunk {
            fd,
            offset: 0,
            bytes: 2 * MIB,
            used: 2 * MIB,
        }],
    };
    assert!(matches!(
        device.import(shared),
        Err(GpuMemError::Storage(
            gpumem::storage::StorageError::BadShareHandle { .. }
        ))
    ));
    let vm = device.memory_report().virtual_memory.unwrap();
    assert_eq!(vm.ranges_reserved, vm.ranges_freed);
    assert_eq!(vm.chunks_created, vm.chunks_released);
}
