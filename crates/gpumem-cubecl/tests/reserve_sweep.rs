//! The reserve path looks at a bounded number of entries (the newest ones
//! and a clock hand's next ones), and sweeps every entry only before the
//! pools would add a page: memory a dropped handle left is reused before
//! any new buffer, however many allocations are live.

mod common;

use common::*;
use cubecl_server::memory_management::{ManagedMemoryHandle, PageUpdate};

fn reserve_many(
    memory: &mut gpumem_cubecl::MemoryManagement<HostStorage>,
    count: usize,
    size: u64,
) -> Vec<ManagedMemoryHandle> {
    (0..count)
        .map(|_| {
            memory
                .reserve(size, PageUpdate::Allow, &mut graph())
                .unwrap()
        })
        .collect()
}

#[test]
fn an_old_allocation_dropped_among_many_live_ones_is_reused_before_a_new_buffer() {
    let mut memory = adaptive();
    let mut live = reserve_many(&mut memory, 200, 1024);
    // Fill what the pages hold, so the next reserve needs the dropped room.
    let reserved = memory.memory_report().usage().bytes_reserved;
    let mut filler = Vec::new();
    while memory.memory_report().usage().bytes_reserved == reserved {
        filler.push(
            memory
                .reserve(1024, PageUpdate::Allow, &mut graph())
                .unwrap(),
        );
    }
    // The last one took a new page: give it back, and so the room it took.
    drop(filler.pop());
    memory.cleanup(
        cubecl_server::memory_management::Cleanup::Explicit,
        &mut graph(),
    );
    let buffers = memory.storage().allocs;
    // An allocation far from the clock hand (the cleanup's full sweep set
    // it back to the first entry) and not among the newest: only the
    // sweep before growth can find it.
    drop(live.remove(100));
    let again = memory
        .reserve(1024, PageUpdate::Allow, &mut graph())
        .unwrap();
    assert_eq!(
        memory.storage().allocs,
        buffers,
        "no new buffer: the dropped room served it"
    );
    live.push(again);
}

#[test]
fn a_temporary_dropped_right_after_it_was_made_is_reused_by_the_next_reserve() {
    let mut memory = adaptive();
    let _live = reserve_many(&mut memory, 500, 256);
    let temporary = memory
        .reserve(4096, PageUpdate::Allow, &mut graph())
        .unwrap();
    let location = memory.get_storage(temporary.clone().binding()).unwrap();
    drop(temporary);
    let next = memory
        .reserve(4096, PageUpdate::Allow, &mut graph())
        .unwrap();
    let again = memory.get_storage(next.binding()).unwrap();
    assert_eq!(
        (again.id, again.offset()),
        (location.id, location.offset()),
        "the newest entries are looked at on every reserve"
    );
}

#[test]
fn under_page_update_forbidden_a_dropped_allocation_still_serves_before_the_refusal() {
    let mut memory = adaptive();
    let mut live = reserve_many(&mut memory, 100, 2048);
    let reserved = memory.memory_report().usage().bytes_reserved;
    let mut filler = Vec::new();
    while let Ok(handle) = memory.reserve(2048, PageUpdate::Forbidden, &mut graph()) {
        filler.push(handle);
    }
    assert_eq!(memory.memory_report().usage().bytes_reserved, reserved);
    drop(live.remove(0));
    let again = memory.reserve(2048, PageUpdate::Forbidden, &mut graph());
    assert!(again.is_ok(), "{again:?}");
}
