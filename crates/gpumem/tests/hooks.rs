//! Chunk hooks through a device: a registration that blocks delays only
//! the reservation that mapped the chunk, never another stream's; a
//! refused chunk fails the reservation with the hook's words and leaves
//! nothing mapped or charged; sleep withdraws what it unmaps and wake
//! announces it again.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use gpumem::pools::IoError;
use gpumem::prelude::*;
use gpumem::storage::{ChunkHooks, MappedChunk, StorageError};

/// Blocks for a second in the one thread it is told to, counts the rest.
#[derive(Default)]
struct Slow {
    sleeper: Mutex<Option<ThreadId>>,
    asleep: AtomicBool,
    announced: AtomicU64,
    withdrawn: AtomicU64,
}

impl ChunkHooks for Slow {
    fn mapped(&self, _: MappedChunk) -> Result<(), String> {
        self.announced.fetch_add(1, Ordering::SeqCst);
        if *self.sleeper.lock().unwrap() == Some(thread::current().id()) {
            self.asleep.store(true, Ordering::SeqCst);
            thread::sleep(Duration::from_secs(1)); // a collective registration
            self.asleep.store(false, Ordering::SeqCst);
        }
        Ok(())
    }
    fn unmapping(&self, _: MappedChunk) {
        self.withdrawn.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_hook_that_blocks_for_a_second_does_not_stall_another_streams_reservations() {
    let hooks = Arc::new(Slow::default());
    let device = Device::host()
        .streams(2)
        .chunk_hooks(hooks.clone())
        .ignore_env()
        .build()
        .unwrap();
    let (s0, s1) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let blocked = {
        let hooks = hooks.clone();
        thread::spawn(move || {
            *hooks.sleeper.lock().unwrap() = Some(thread::current().id());
            s0.reserve(64 * MIB).map(|b| b.size())
        })
    };
    let start = Instant::now();
    while !hooks.asleep.load(Ordering::SeqCst) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the hook never ran"
        );
        thread::yield_now();
    }
    // While the other stream's registration blocks: reserve and free here.
    let mut during = 0u64;
    while hooks.asleep.load(Ordering::SeqCst) {
        let buffer = s1.reserve(MIB + during % 7 * KIB).unwrap();
        drop(buffer);
        during += 1;
    }
    assert_eq!(blocked.join().unwrap().unwrap(), 64 * MIB);
    println!("reservations on stream 1 during stream 0's one-second hook: {during}");
    assert!(
        during > 0,
        "stream 1 made no reservation while the hook blocked"
    );
}

/// Refuses every chunk once `open` is false.
struct Gate(AtomicBool);

impl ChunkHooks for Gate {
    fn mapped(&self, _: MappedChunk) -> Result<(), String> {
        match self.0.load(Ordering::SeqCst) {
            true => Ok(()),
            false => Err("the communicator's registration table is full".into()),
        }
    }
    fn unmapping(&self, _: MappedChunk) {}
}

#[test]
fn a_refused_chunk_fails_the_reservation_and_nothing_stays_mapped_or_charged() {
    let gate = Arc::new(Gate(AtomicBool::new(true)));
    let device = Device::host()
        .budget(Budget::Bytes(GIB))
        .chunk_hooks(gate.clone())
        .ignore_env()
        .build()
        .unwrap();
    let stream = device.default_stream();
    let kept = stream.reserve(3 * MIB).unwrap();
    let before = device.stats();
    gate.0.store(false, Ordering::SeqCst);
    let err = stream.reserve(256 * MIB).unwrap_err();
    assert!(
        err.to_string().contains("registration table is full"),
        "the hook's words reach the caller: {err}"
    );
    assert!(
        matches!(
            &err,
            GpuMemError::Pool(IoError::Storage(StorageError::HookRefused {
                what: "chunk",
                ..
            }))
        ),
        "{err:?}"
    );
    let after = device.stats();
    assert_eq!(after.reserved_bytes.current, before.reserved_bytes.current);
    assert_eq!(device.budget().charged(), before.reserved_bytes.current);
    gate.0.store(true, Ordering::SeqCst);
    let again = stream.reserve(256 * MIB).unwrap();
    drop((kept, again));
}

#[test]
fn sleep_withdraws_every_chunk_it_unmaps_and_wake_announces_them_again() {
    let hooks = Arc::new(Slow::default());
    let device = Device::host()
        .chunk_hooks(hooks.clone())
        .ignore_env()
        .build()
        .unwrap();
    let stream = device.default_stream();
    let buffer = stream.reserve(10 * MIB).unwrap();
    let mapped = hooks.announced.load(Ordering::SeqCst);
    assert!(mapped > 0);
    device.sleep(SleepContents::Preserve).unwrap();
    assert_eq!(hooks.withdrawn.load(Ordering::SeqCst), mapped);
    device.wake().unwrap();
    assert_eq!(hooks.announced.load(Ordering::SeqCst), 2 * mapped);
    drop((buffer, stream));
    drop(device);
    assert_eq!(
        hooks.withdrawn.load(Ordering::SeqCst),
        hooks.announced.load(Ordering::SeqCst),
        "everything announced is withdrawn by the time the device is gone"
    );
}
