//! Shareable buffers between real processes on the host backend: the test
//! binary re-runs itself (`--exact` the test's own name) as the importer,
//! with its end of a socket pair inherited, and the two sides talk over it
//! (descriptors by `SCM_RIGHTS`, then one byte a step). In-process tests
//! cover the typed refusals and the passes that must leave a shared buffer
//! alone.

mod child;
mod cuda;
mod refusals;
mod stats;
mod untouched;

use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};

use gpumem::prelude::*;
use gpumem::storage::ShareHandles;

/// Set in the importer: its role.
pub const ROLE: &str = "GPUMEM_SHARE_TEST_ROLE";
/// Set in the importer: the number of its socket.
pub const SOCKET_FD: &str = "GPUMEM_SHARE_TEST_FD";

/// A host device that makes shareable buffers, chunks of at most 2 MiB
/// (so a few MiB already make a descriptor of several chunks).
pub fn sharing_device() -> Device {
    let mut config = GpumemConfig::default();
    config.share = Some(ShareHandles::POSIX_FD);
    config.arena_max_chunk = Some(2 * MIB);
    Device::host().config(config).ignore_env().build().unwrap()
}

/// The exporter's pattern at byte `i`.
pub fn pattern(i: usize) -> u8 {
    (i % 251) as u8 | 1
}

/// Start this test binary as the importer of `test` in `role`, with one
/// end of a fresh socket pair; returns the child and the other end.
pub fn spawn_importer(test: &str, role: &str) -> (Child, UnixStream) {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let theirs: OwnedFd = theirs.into();
    // The child inherits its end: clear close-on-exec on it (our copy
    // closes when `theirs` drops after the spawn).
    rustix::io::fcntl_setfd(&theirs, rustix::io::FdFlags::empty()).unwrap();
    // The child's output goes to stderr: its own `test result:` line is
    // not this run's, and `cargo xtask cuda-standin` counts those on stdout.
    let stderr = std::io::stderr().as_fd().try_clone_to_owned().unwrap();
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(SOCKET_FD, theirs.as_raw_fd().to_string())
        .stdout(stderr)
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    drop(theirs);
    (child, ours)
}

/// The importer's socket, from the number its parent passed.
pub fn inherited_socket() -> UnixStream {
    let fd: i32 = std::env::var(SOCKET_FD).unwrap().parse().unwrap();
    // SAFETY: the parent passed this descriptor to this process for it
    // alone, open and not close-on-exec; nothing else here owns it.
    UnixStream::from(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Tell the other process a step is done.
pub fn step(sock: &mut UnixStream, byte: u8) {
    sock.write_all(&[byte]).unwrap();
}

/// Wait for the other process's step `byte`.
pub fn expect(sock: &mut UnixStream, byte: u8) {
    let mut got = [0u8];
    sock.read_exact(&mut got).expect("the other process's step");
    assert_eq!(got[0], byte);
}

/// Wait for the importer and fail the test with its status unless it passed.
pub fn passed(mut child: Child) {
    let status = child.wait().unwrap();
    assert!(status.success(), "the importer failed: {status}");
}

/// What the exporter writes beside the shared buffer, to be found nowhere in
/// the importer's view.
pub const OTHER: u8 = 0xEE;

#[test]
fn a_second_process_reads_the_exporters_bytes_and_the_exporter_sees_its_reply() {
    const NAME: &str = "a_second_process_reads_the_exporters_bytes_and_the_exporter_sees_its_reply";
    if std::env::var(ROLE).is_ok() {
        return child::reads_then_replies();
    }
    let device = sharing_device();
    let stream = device.default_stream();
    // Other buffers, before and after, full of a byte the importer must
    // never see.
    let before = stream.reserve(3 * MIB).unwrap();
    stream
        .write(&before, &vec![OTHER; (3 * MIB) as usize])
        .unwrap();
    let len = 5 * MIB + 123;
    let buffer = stream.reserve_shareable(len).unwrap();
    let after = stream.reserve(3 * MIB).unwrap();
    stream
        .write(&after, &vec![OTHER; (3 * MIB) as usize])
        .unwrap();
    let data: Vec<u8> = (0..len as usize).map(pattern).collect();
    buffer.write(0, &data).unwrap();
    let shared = stream.export(&buffer).unwrap();
    assert_eq!(shared.chunks.len(), 3);

    let (child, mut sock) = spawn_importer(NAME, "reads_then_replies");
    gpumem::sharing::send_shared(&sock, &shared).unwrap();
    drop(shared);
    expect(&mut sock, b'w');
    let mut back = vec![0u8; 4096];
    buffer.read(0, &mut back).unwrap();
    assert!(
        back.iter().all(|&b| b == 0x42),
        "the importer's reply is not there"
    );
    let mut rest = vec![0u8; 4096];
    buffer.read(4096, &mut rest).unwrap();
    assert_eq!(rest, data[4096..8192]);
    step(&mut sock, b'k');
    passed(child);
}

#[test]
fn the_importers_bytes_outlive_the_exporters_drop_and_no_later_reservation_aliases_them() {
    const NAME: &str =
        "the_importers_bytes_outlive_the_exporters_drop_and_no_later_reservation_aliases_them";
    if std::env::var(ROLE).is_ok() {
        return child::outlives_the_exporter();
    }
    let device = sharing_device();
    let stream = device.default_stream();
    let len = 4 * MIB;
    let buffer = stream.reserve_shareable(len).unwrap();
    let data: Vec<u8> = (0..len as usize).map(pattern).collect();
    buffer.write(0, &data).unwrap();
    let (child, mut sock) = spawn_importer(NAME, "outlives_the_exporter");
    gpumem::sharing::send_shared(&sock, &stream.export(&buffer).unwrap()).unwrap();
    expect(&mut sock, b'i');
    drop(buffer);
    // Everything the exporter can make next, written through with another
    // byte: none of it may land on the importer's memory.
    let mut held = Vec::new();
    for _ in 0..4 {
        let pooled = stream.reserve(len).unwrap();
        stream.write(&pooled, &vec![OTHER; len as usize]).unwrap();
        let shareable = stream.reserve_shareable(len).unwrap();
        shareable.write(0, &vec![OTHER; len as usize]).unwrap();
        held.push((pooled, shareable));
    }
    step(&mut sock, b'd');
    passed(child);
}

#[test]
fn a_killed_importer_leaves_the_exporter_nothing_leaked() {
    const NAME: &str = "a_killed_importer_leaves_the_exporter_nothing_leaked";
    if std::env::var(ROLE).is_ok() {
        return child::imports_and_waits_to_be_killed();
    }
    let device = sharing_device();
    let free_before = device.mem_info().unwrap().free;
    let stream = device.default_stream();
    let buffer = stream.reserve_shareable(6 * MIB).unwrap();
    buffer.write(0, &[9; 64]).unwrap();
    let (mut child, mut sock) = spawn_importer(NAME, "imports_and_waits_to_be_killed");
    gpumem::sharing::send_shared(&sock, &stream.export(&buffer).unwrap()).unwrap();
    expect(&mut sock, b'i');
    child.kill().unwrap();
    child.wait().unwrap();
    drop(buffer);
    let vm = device.memory_report().virtual_memory.unwrap();
    assert_eq!(vm.chunks_created, 3);
    assert_eq!(vm.chunks_created, vm.chunks_released);
    assert_eq!(vm.ranges_reserved, vm.ranges_freed);
    assert_eq!(device.mem_info().unwrap().free, free_before);
}
