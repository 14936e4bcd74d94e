//! Page-size growth: how a sliced pool moves to bigger pages and leaves
//! its older pages *outdated*.
//!
//! Empty current pages go back to the storage first (they would be
//! released right after the growth anyway, and holding them across it only
//! raises the peak) — but only once the storage says the grown page fits
//! after the give-back (`mem_info`). When it says no, or cannot answer, the
//! page is asked for while they are still held, so that refusal changes
//! nothing (bug #4: a refused reserve had already given them back). The
//! one refusal that still finds them given back is a storage that said the
//! page fits and then refused it (a fault, or another stream taking the
//! room in between); docs/reliability.md (bug 4) says why that is
//! harmless and what the fault sweep checks instead. The new page is allocated before anything else
//! changes, so a refused allocation leaves the page size as it was. Every current
//! page then turns outdated: its free slices leave the free index (it serves no new
//! reservation) and an empty one is released at once unless releasing is
//! held (during a capture). A pool keeps at most
//! [`crate::MAX_PAGE_SIZES`] page sizes alive; past that, growth is
//! [`IoError::PageSizesExhausted`] until relocation empties old pages.

use mem_storage::ComputeStorage;

use crate::error::IoError;
use crate::pools::paged::carve::Allowance;
use crate::pools::paged::pool::Pool;
use crate::tables::floor::Tables;
use crate::tables::slots::NIL;

impl Pool {
    /// Make this pool's page size big enough for `needed` bytes: give back
    /// empty current pages (unless releasing is held, or the storage says
    /// the grown page would not fit even then), allocate a page of
    /// the grown size (a refusal changes nothing else), then turn every
    /// current page outdated. `pool_id` is its routing position.
    pub(crate) fn grow<S: ComputeStorage>(
        &mut self,
        t: &mut Tables,
        storage: &mut S,
        pool_id: u32,
        needed: u64,
        requested: u64,
        allow: Allowance,
    ) -> Result<(), IoError> {
        let size = self.grown_page_size(needed, t.max_page, t.alignment);
        if size < needed {
            return Err(IoError::BufferTooBig {
                size: requested,
                max: t.max_page,
            });
        }
        if !self.current.is_empty() && self.out_of_page_sizes() {
            return Err(IoError::PageSizesExhausted {
                pool: pool_id as usize,
                wanted: size,
                generations: self.page_sizes_alive(),
            });
        }
        if allow.release && self.room_after_give_back(t, storage, size) {
            self.release_empty_current(t, storage);
        }
        let old = std::mem::take(&mut self.current);
        let made = self.new_page(t, storage, (pool_id, size), (requested, allow.allocate));
        if let Err(err) = made {
            self.current = old;
            return Err(err);
        }
        self.page_size = size;
        for page in old {
            self.outdate(t, storage, page, allow.release);
        }
        Ok(())
    }

    /// Whether giving back this pool's empty current pages is both useful
    /// and safe before asking for a `size`-byte page: there are some, and the
    /// storage says the page fits once they are back (a lazy manager asks
    /// the device nothing for a new page, so it always fits). When the
    /// storage says it would not fit — or cannot say — the growth asks for
    /// the page while still holding them, so its refusal changes nothing.
    fn room_after_give_back<S: ComputeStorage>(&self, t: &Tables, storage: &S, size: u64) -> bool {
        let empty: u64 = self
            .current
            .iter()
            .map(|&pg| &t.pages[pg])
            .filter(|p| p.live == 0 && p.quarantined == 0)
            .map(|p| p.size)
            .sum();
        if empty == 0 {
            return false;
        }
        t.lazy
            || storage
                .mem_info()
                .is_ok_and(|info| info.free.saturating_add(empty) >= size)
    }

    /// Give back every empty current page of this pool and flush, so the
    /// storage has that memory again before the grown page is asked for.
    /// Those pages would turn outdated and go back right after the growth
    /// anyway; holding them across it only raises the peak (PyTorch's devlog
    /// case: 8 × 16 MiB freed, then 32 MiB pages, held 160 MiB for 128 MiB
    /// live) and, on a full device, makes the growth fail.
    fn release_empty_current<S: ComputeStorage>(&mut self, t: &mut Tables, storage: &mut S) {
        let empty: Vec<u32> = self
            .current
            .iter()
            .copied()
            .filter(|&pg| t.pages[pg].live == 0 && t.pages[pg].quarantined == 0)
            .collect();
        if empty.is_empty() {
            return;
        }
        for page in empty {
            self.release_page(t, storage, page);
        }
        if let Err(err) = storage.flush() {
            tracing::warn!(%err, "storage flush before a page-size growth failed");
        }
    }

    /// Move a current page to the outdated list: its free slices leave the
    /// index; an empty page is released at once (unless releasing is held).
    fn outdate<S: ComputeStorage>(
        &mut self,
        t: &mut Tables,
        storage: &mut S,
        page: u32,
        may_release: bool,
    ) {
        let (size, head) = {
            let p = &t.pages[page];
            (p.size, p.head)
        };
        let mut cursor = head;
        while cursor != NIL {
            let next = t.slices[cursor].next;
            self.index.remove(&mut t.slices, cursor);
            cursor = next;
        }
        let pos = self.outdated.len() as u32;
        self.outdated.push(page);
        *self.outdated_sizes.entry(size).or_insert(0) += 1;
        let info = &mut t.pages[page];
        info.outdated = true;
        info.pos = pos;
        if may_release && info.live == 0 && info.quarantined == 0 {
            self.release_page(t, storage, page);
        }
    }
}
