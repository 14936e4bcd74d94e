//! Shareable chunks on the host: a memfd of their own, exported as a
//! duplicate descriptor, imported by a second backend (another process's,
//! in gpumem's cross-process tests) that sees the same bytes; bad
//! descriptors are refused with nothing changed.

use std::os::fd::OwnedFd;

use mem_storage::units::KIB;
use mem_storage::{ShareHandles, StorageError, VirtualMemory};

use crate::small_host;

const G: u64 = 64 * KIB;

#[test]
#[cfg_attr(miri, ignore)]
fn an_imported_chunk_shows_the_exporters_bytes_and_outlives_its_release() {
    let (a, b) = (small_host(), small_host());
    let (chunk, granted) = a
        .create_shareable_chunk(2 * G, ShareHandles::POSIX_FD)
        .unwrap();
    assert_eq!(granted, ShareHandles::POSIX_FD);
    let ra = a.reserve_range(2 * G).unwrap();
    let at = a.map(ra.id, 0, chunk).unwrap();
    a.fill_mapped(at, 0x5A, 2 * G).unwrap();

    let free_before = b.physical_info().unwrap().free;
    let imported = b
        .import_chunk(a.export_chunk(chunk).unwrap(), 2 * G)
        .unwrap();
    // The importer is not charged: the exporter's memory holds the bytes.
    assert_eq!(b.physical_info().unwrap().free, free_before);
    let rb = b.reserve_range(2 * G).unwrap();
    let bt = b.map(rb.id, 0, imported).unwrap();
    let mut back = vec![0u8; (2 * G) as usize];
    b.read_mapped(bt, &mut back).unwrap();
    assert!(back.iter().all(|&x| x == 0x5A));
    b.write_mapped(bt, &[7; 16]).unwrap();
    let mut seen = [0u8; 16];
    a.read_mapped(at, &mut seen).unwrap();
    assert_eq!(seen, [7; 16]);

    // The exporter lets go of its side; the importer's bytes stay.
    a.unmap(ra.id, 0, 2 * G).unwrap();
    a.release_chunk(chunk).unwrap();
    let after = a.vm_stats();
    assert_eq!(after.chunks_created, after.chunks_released);
    b.read_mapped(bt, &mut back).unwrap();
    assert_eq!(&back[..16], &[7; 16]);
    assert!(back[16..].iter().all(|&x| x == 0x5A));

    // An imported chunk is released as imported only.
    b.unmap(rb.id, 0, 2 * G).unwrap();
    assert!(matches!(
        b.release_chunk(imported),
        Err(StorageError::NotShareable { .. })
    ));
    b.release_imported(imported).unwrap();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_pooled_chunk_is_never_exported() {
    let a = small_host();
    let chunk = a.create_chunk(G).unwrap();
    assert!(matches!(
        a.export_chunk(chunk),
        Err(StorageError::NotShareable { .. })
    ));
    a.release_chunk(chunk).unwrap();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_descriptor_of_another_file_or_size_is_refused_and_nothing_is_imported() {
    let (a, b) = (small_host(), small_host());
    let (chunk, _) = a.create_shareable_chunk(G, ShareHandles::POSIX_FD).unwrap();
    let wrong_size = b.import_chunk(a.export_chunk(chunk).unwrap(), 2 * G);
    assert!(matches!(
        wrong_size,
        Err(StorageError::BadShareHandle { expected, found, .. }) if expected == 2 * G && found == G
    ));
    let (pipe, _w) = std::io::pipe().unwrap();
    let pipe: OwnedFd = pipe.into();
    assert!(matches!(
        b.import_chunk(pipe, G),
        Err(StorageError::BadShareHandle { found: 0, .. })
    ));
    let stats = b.vm_stats();
    assert_eq!(stats.chunks_created, 0);
    assert_eq!(stats.refused_calls, 2);
}

#[test]
#[cfg_attr(miri, ignore)]
fn an_unsealed_file_of_the_right_size_is_refused() {
    let b = small_host();
    let path = std::env::temp_dir().join(format!("gpumem-share-test-{}", std::process::id()));
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(G).unwrap();
    let _ = std::fs::remove_file(&path);
    // The right size, but its owner could shrink it under the mapping.
    assert!(matches!(
        b.import_chunk(OwnedFd::from(file), G),
        Err(StorageError::BadShareHandle { found, .. }) if found == G
    ));
    assert_eq!(b.vm_stats().chunks_created, 0);
}
