//! The handle cells on real threads: the shapes of the loom models
//! (`handle_cell_loom.rs`), run under miri too (`cargo +nightly miri test
//! -p mem-pools --lib handle`), which reports a cell used after its reuse,
//! freed twice, or leaked.

use super::*;

fn key(slot: u32) -> SlotKey {
    SlotKey {
        slot,
        generation: 0,
    }
}

fn drain(pool: &mut CellPool) -> Vec<Dropped> {
    let mut out = Vec::new();
    while pool.has_pending() {
        pool.take(&mut out);
    }
    out
}

#[test]
fn clones_dropped_on_many_threads_queue_one_free_and_the_cell_is_reused() {
    let mut pool = CellPool::new(1);
    let handle = ManagedMemoryHandle::new(&mut pool, key(7), 100);
    let first = handle.allocation_cell();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let clone = handle.clone();
            std::thread::spawn(move || (0..10).for_each(|_| drop(clone.clone())))
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert!(handle.can_mut(), "every clone is gone");
    assert!(!pool.has_pending());
    drop(handle);
    let out = drain(&mut pool);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].key, out[0].kind), (key(7), DropKind::Free));
    let next = ManagedMemoryHandle::new(&mut pool, key(8), 5);
    assert_eq!(next.allocation_cell(), first, "the cell is reused");
    assert_eq!((next.key(), next.size()), (key(8), 5));
    assert!(next.can_mut());
}

#[test]
fn a_pin_queues_its_unpin_first_and_the_allocation_is_freed_in_the_next_round() {
    let mut pool = CellPool::new(1);
    let handle = ManagedMemoryHandle::new(&mut pool, key(1), 64);
    let pin = ManagedMemoryHandle::pin(&mut pool, &handle);
    assert!(pin.is_pin() && !handle.can_mut() && !pin.can_mut());
    drop(handle);
    assert!(pin.can_mut(), "the pin is the last holder");
    drop(pin);
    let mut out = Vec::new();
    pool.take(&mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].kind, DropKind::Unpin);
    assert!(
        pool.has_pending(),
        "reusing the pin cell released the allocation"
    );
    pool.take(&mut out);
    assert_eq!(out[1].kind, DropKind::Free);
}

#[test]
fn the_engine_dropped_before_its_handles_leaves_them_to_free_their_own_cells() {
    let mut pool = CellPool::new(1);
    let handles: Vec<_> = (0..8)
        .map(|i| ManagedMemoryHandle::new(&mut pool, key(i), 64))
        .collect();
    let pins: Vec<_> = handles
        .iter()
        .map(|h| ManagedMemoryHandle::pin(&mut pool, h))
        .collect();
    drop(ManagedMemoryHandle::new(&mut pool, key(99), 1));
    let threads: Vec<_> = handles
        .into_iter()
        .zip(pins)
        .map(|(h, p)| {
            std::thread::spawn(move || {
                drop(p);
                drop(h);
            })
        })
        .collect();
    drop(pool);
    threads.into_iter().for_each(|t| t.join().unwrap());
}

#[test]
fn a_slot_upgrade_after_the_last_drop_gets_nothing() {
    let mut pool = CellPool::new(1);
    let handle = ManagedMemoryHandle::new(&mut pool, key(1), 64);
    let cell = handle.allocation_cell();
    // SAFETY: the cell is live (its holder is).
    let again = unsafe { ManagedMemoryHandle::upgrade(cell) }.unwrap();
    assert!(!handle.can_mut());
    drop((handle, again));
    // SAFETY: not taken yet, so not reused: live, with no holder.
    assert!(unsafe { ManagedMemoryHandle::upgrade(cell) }.is_none());
    assert_eq!(drain(&mut pool).len(), 1);
}
