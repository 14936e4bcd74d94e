//! The importer's side of each cross-process test (run in the child).

use gpumem::prelude::*;

use crate::{OTHER, expect, inherited_socket, pattern, step};

fn import() -> (
    Device,
    gpumem::sharing::ImportedBuffer,
    std::os::unix::net::UnixStream,
) {
    let sock = inherited_socket();
    let shared = gpumem::sharing::receive_shared(&sock).unwrap();
    let device = Device::host().ignore_env().build().unwrap();
    let view = device.import(shared).unwrap();
    (device, view, sock)
}

pub fn reads_then_replies() {
    let (_device, view, mut sock) = import();
    let len = view.len() as usize;
    let mut all = vec![0u8; view.mapped_len() as usize];
    view.read(0, &mut all).unwrap();
    // The exporter's bytes, then zeros to the end of the last granule:
    // nothing of any other buffer.
    assert!(all[..len].iter().enumerate().all(|(i, &b)| b == pattern(i)));
    assert!(all[len..].iter().all(|&b| b == 0));
    assert!(!all.contains(&OTHER));
    view.write(0, &[0x42; 4096]).unwrap();
    step(&mut sock, b'w');
    expect(&mut sock, b'k');
}

pub fn outlives_the_exporter() {
    let (_device, view, mut sock) = import();
    step(&mut sock, b'i');
    expect(&mut sock, b'd');
    let mut all = vec![0u8; view.len() as usize];
    view.read(0, &mut all).unwrap();
    assert!(all.iter().enumerate().all(|(i, &b)| b == pattern(i)));
}

pub fn imports_and_waits_to_be_killed() {
    let (_device, view, mut sock) = import();
    let mut first = [0u8; 64];
    view.read(0, &mut first).unwrap();
    assert_eq!(first, [9; 64]);
    step(&mut sock, b'i');
    // Killed here; a hang past the parent's kill is impossible, but do not
    // outlive a parent that died instead.
    let _ = std::io::Read::read(&mut sock, &mut [0u8]);
}
