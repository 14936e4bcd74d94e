//! loom models of the handle cells and the drop queue's lock-free stack:
//! every interleaving of the holders' drops, the engine's drain and the
//! engine's drop, explored. Run with `cargo xtask loom`. loom reports a
//! leaked `Arc` (a cell never freed keeps the queue's `Arc`), and a cell
//! freed twice or used after reuse shows up as a wrong record or a count
//! that is not 1 on reuse; miri runs the same shapes on real threads
//! (`handle_cell_tests.rs`).

use loom::thread;

use crate::handles::handle_cell::ManagedMemoryHandle;

use crate::handles::cell_pool::CellPool;
use crate::handles::keys::{DropKind, Dropped, SlotKey};

fn key(slot: u32) -> SlotKey {
    SlotKey {
        slot,
        generation: 0,
    }
}

/// Drain everything pending (as the engine does: until nothing is left).
fn drain(pool: &mut CellPool) -> Vec<Dropped> {
    let mut out = Vec::new();
    while pool.has_pending() {
        pool.take(&mut out);
    }
    out
}

#[test]
fn loom_two_threads_dropping_clones_queue_exactly_one_free_and_the_cell_is_reused() {
    loom::model(|| {
        let mut pool = CellPool::new(1);
        let handle = ManagedMemoryHandle::new(&mut pool, key(3), 64);
        let clone = handle.clone();
        let other = thread::spawn(move || drop(clone));
        drop(handle);
        other.join().unwrap();
        let out = drain(&mut pool);
        assert_eq!(
            out,
            vec![Dropped {
                key: key(3),
                kind: DropKind::Free
            }]
        );
        // The recycled cell starts over with one holder.
        let next = ManagedMemoryHandle::new(&mut pool, key(4), 8);
        assert!(next.can_mut());
        assert_eq!(next.size(), 8);
    });
}

#[test]
fn loom_a_drop_racing_the_engine_drain_is_taken_once_now_or_by_the_next_drain() {
    loom::model(|| {
        let mut pool = CellPool::new(1);
        let a = ManagedMemoryHandle::new(&mut pool, key(1), 64);
        let b = ManagedMemoryHandle::new(&mut pool, key(2), 64);
        let other = thread::spawn(move || drop(b));
        drop(a);
        let mut out = Vec::new();
        pool.take(&mut out);
        other.join().unwrap();
        out.extend(drain(&mut pool));
        let mut slots: Vec<u32> = out.iter().map(|d| d.key.slot).collect();
        slots.sort_unstable();
        assert_eq!(slots, vec![1, 2]);
    });
}

#[test]
fn loom_the_last_holder_dropping_while_the_engine_is_dropped_frees_its_cell_once() {
    loom::model(|| {
        let mut pool = CellPool::new(1);
        let handle = ManagedMemoryHandle::new(&mut pool, key(1), 64);
        let pin = ManagedMemoryHandle::pin(&mut pool, &handle);
        let spare = ManagedMemoryHandle::new(&mut pool, key(2), 64);
        drop(spare);
        let other = thread::spawn(move || {
            drop(pin);
            drop(handle);
        });
        // The engine goes away meanwhile: whatever was pushed before the
        // close is freed by it, whatever after by its pusher. loom fails the
        // model if the queue's `Arc` (held by every cell) leaks.
        drop(pool);
        other.join().unwrap();
    });
}

#[test]
fn loom_a_slot_upgrade_racing_the_last_drop_never_revives_a_released_cell() {
    loom::model(|| {
        let mut pool = CellPool::new(1);
        let handle = ManagedMemoryHandle::new(&mut pool, key(1), 64);
        let cell = handle.allocation_cell();
        let other = thread::spawn(move || drop(handle));
        // The engine follows the slot to its cell before draining (the cell
        // is not reused before the drain, so it is live here).
        // SAFETY: the cell is reused only by `take` below.
        let revived = unsafe { ManagedMemoryHandle::upgrade(cell) };
        let got = revived.is_some();
        drop(revived);
        other.join().unwrap();
        let out = drain(&mut pool);
        assert_eq!(
            out.len(),
            1,
            "one free whether or not the upgrade won: {got}"
        );
    });
}
