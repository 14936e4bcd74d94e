//! Bad input to export and import gets a typed error, and nothing stays
//! mapped, charged or leaked on either side.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;

use gpumem::prelude::*;
use gpumem::storage::StorageError;

use crate::sharing_device;

/// Nothing mapped, reserved or imported is left on `device`.
fn nothing_left(device: &Device) {
    let vm = device.memory_report().virtual_memory.unwrap();
    assert_eq!(
        vm.ranges_reserved, vm.ranges_freed,
        "a range stayed reserved"
    );
    assert_eq!(vm.chunks_created, vm.chunks_released, "a chunk stayed");
    let sharing = device.stats().sharing;
    assert_eq!(sharing, Default::default(), "a refused buffer is counted");
}

#[test]
fn an_export_on_a_device_not_configured_to_share_is_refused() {
    let device = Device::host().ignore_env().build().unwrap();
    let refused = device.default_stream().reserve_shareable(MIB);
    assert!(matches!(
        refused,
        Err(GpuMemError::SharingUnavailable { .. })
    ));
    assert_eq!(device.stats().reserved_bytes.current, 0);
}

#[test]
fn a_pooled_slice_which_shares_its_chunks_is_never_exported() {
    let device = sharing_device();
    let stream = device.default_stream();
    let slice = stream.reserve(MIB).unwrap();
    assert!(matches!(
        stream.export(&slice),
        Err(GpuMemError::NotExportable { bytes, .. }) if bytes == MIB
    ));
}

#[test]
fn a_buffer_is_exported_only_through_a_stream_of_its_own_device() {
    let (a, b) = (sharing_device(), sharing_device());
    let buffer = a.default_stream().reserve_shareable(MIB).unwrap();
    assert!(matches!(
        b.default_stream().export(&buffer),
        Err(GpuMemError::NotExportable { .. })
    ));
}

#[test]
fn a_descriptor_whose_sizes_do_not_match_its_chunks_is_refused_and_nothing_is_mapped() {
    let exporter = sharing_device();
    let stream = exporter.default_stream();
    let buffer = stream.reserve_shareable(3 * MIB).unwrap();
    let importer = Device::host().ignore_env().build().unwrap();

    let mut longer = stream.export(&buffer).unwrap();
    longer.len = 5 * MIB;
    assert!(matches!(
        importer.import(longer),
        Err(GpuMemError::BadSharedBuffer { .. })
    ));
    let mut gap = stream.export(&buffer).unwrap();
    gap.chunks[1].offset += 2 * MIB;
    assert!(matches!(
        importer.import(gap),
        Err(GpuMemError::BadSharedBuffer { .. })
    ));
    // A chunk that claims more bytes than its file holds: the storage
    // refuses it after the first chunk was mapped, and that is undone.
    let mut bigger = stream.export(&buffer).unwrap();
    bigger.len = 5 * MIB;
    bigger.chunks[1].bytes = 4 * MIB;
    bigger.chunks[1].used = 3 * MIB;
    assert!(matches!(
        importer.import(bigger),
        Err(GpuMemError::Storage(StorageError::BadShareHandle { expected, found, .. }))
            if expected == 4 * MIB && found == 2 * MIB
    ));
    nothing_left(&importer);
}

#[test]
fn a_descriptor_of_another_file_is_refused_and_nothing_is_mapped() {
    let exporter = sharing_device();
    let stream = exporter.default_stream();
    let buffer = stream.reserve_shareable(4 * MIB).unwrap();
    let importer = Device::host().ignore_env().build().unwrap();
    let mut shared = stream.export(&buffer).unwrap();
    let (pipe, _writer) = std::io::pipe().unwrap();
    shared.chunks[1].fd = OwnedFd::from(pipe);
    assert!(matches!(
        importer.import(shared),
        Err(GpuMemError::Storage(StorageError::BadShareHandle {
            found: 0,
            ..
        }))
    ));
    nothing_left(&importer);
}

#[test]
fn a_message_whose_descriptors_did_not_arrive_is_refused() {
    let exporter = sharing_device();
    let stream = exporter.default_stream();
    let buffer = stream.reserve_shareable(4 * MIB).unwrap();
    let mut shared = stream.export(&buffer).unwrap();
    // The message says two chunks; one descriptor is closed before it
    // is sent, so one arrives.
    drop(shared.chunks.pop());
    let (a, b) = UnixStream::pair().unwrap();
    gpumem::sharing::send_shared(&a, &shared).unwrap();
    let got = gpumem::sharing::receive_shared(&b).unwrap();
    assert_eq!(got.chunks.len(), 1);
    let importer = Device::host().ignore_env().build().unwrap();
    assert!(matches!(
        importer.import(got),
        Err(GpuMemError::BadSharedBuffer { .. })
    ));
    // Garbage is not a descriptor at all.
    std::io::Write::write_all(&mut &a, b"not a shared buffer").unwrap();
    assert!(matches!(
        gpumem::sharing::receive_shared(&b),
        Err(GpuMemError::BadSharedBuffer { .. })
    ));
    nothing_left(&importer);
}

/// A header as `send_shared` writes one, with `version` and `body` (the
/// payload length) as given.
fn header(version: u16, body: u32) -> Vec<u8> {
    let mut msg = b"GPMS".to_vec();
    msg.extend_from_slice(&version.to_le_bytes());
    msg.extend_from_slice(&[0, 0]);
    msg.extend_from_slice(&body.to_le_bytes());
    msg
}

#[test]
fn a_message_of_another_format_version_is_refused_with_both_versions_named() {
    let (a, b) = UnixStream::pair().unwrap();
    let other = gpumem::sharing::WIRE_VERSION + 1;
    std::io::Write::write_all(&mut &a, &header(other, 4)).unwrap();
    std::io::Write::write_all(&mut &a, &[0; 4]).unwrap();
    match gpumem::sharing::receive_shared(&b) {
        Err(GpuMemError::BadSharedBuffer { reason }) => {
            assert!(reason.contains(&format!("version {other}")), "{reason}");
            let ours = gpumem::sharing::WIRE_VERSION;
            assert!(reason.contains(&format!("version {ours}")), "{reason}");
        }
        other => panic!("expected BadSharedBuffer, got {other:?}"),
    }
}

#[test]
fn a_message_claiming_a_payload_no_sender_writes_is_refused_before_reading_it() {
    let (a, b) = UnixStream::pair().unwrap();
    let version = gpumem::sharing::WIRE_VERSION;
    std::io::Write::write_all(&mut &a, &header(version, u32::MAX)).unwrap();
    // Nothing follows the header: reading the claimed 4 GiB would block
    // (or allocate it); the receiver refuses from the header alone.
    match gpumem::sharing::receive_shared(&b) {
        Err(GpuMemError::BadSharedBuffer { reason }) => {
            assert!(reason.contains("payload"), "{reason}");
        }
        other => panic!("expected BadSharedBuffer, got {other:?}"),
    }
}

#[test]
fn share_rdma_without_share_is_refused_by_the_conf_parser() {
    assert!(matches!(
        GpumemConfig::from_conf("share_rdma:true"),
        Err(GpuMemError::BadConfValue {
            key: "share_rdma",
            ..
        })
    ));
    let config = GpumemConfig::from_conf("share:fabric,share_rdma:true").unwrap();
    let share = config.share.unwrap();
    assert!(share.fabric && share.rdma);
    assert_eq!(GpumemConfig::from_conf("share:off").unwrap().share, None);
}
