//! Compaction: relocation that also empties sparse *current* pages.
//!
//! Relocation alone only empties outdated pages, but the waste of a serving
//! or random workload is holes between live buffers in current pages.
//! `plan_compaction` picks, per sliced pool, the least-occupied movable
//! current pages and reserves a target for each live slice in the free room
//! of the pool's *other* pages — never a new page, so reserved memory never
//! grows. A page whose slices cannot all be placed is left out (all or
//! nothing). While planning, a candidate's free slices (and every chosen
//! page's) are taken out of the free index so no target lands on a page
//! being emptied; they go back before the plan is returned, so the engine
//! serves reservations as before. The plan then goes through the same
//! `copy_relocation` → `commit_relocation`; the commit gives back each chosen
//! page that it emptied (a page that gained a raw address, a pin or a new
//! allocation since the plan is kept).

use std::collections::HashSet;

use mem_storage::ComputeStorage;

use crate::engine::state::MemoryManagement;
use crate::pools::paged::carve::Allowance;
use crate::relocation::{CompactionState, Move, RelocationPlan};
use crate::tables::slots::NIL;

impl<S: ComputeStorage> MemoryManagement<S> {
    /// `plan_compaction`'s body: per sliced pool, least-occupied page first.
    /// Pages with a raw address out, a graph pin or a quarantined slice
    /// never move. Allocates no page: targets use held room only. Empty
    /// during a capture. Dropping the plan loses nothing.
    ///
    /// Cost: one reservation attempt per live slice of each candidate page
    /// (at most every live slice of the sliced pools' current pages).
    pub(crate) fn compaction_plan(&mut self) -> RelocationPlan {
        self.drain();
        let mut plan = RelocationPlan::empty(self.id);
        if self.capture.is_some() {
            return plan;
        }
        for pool in 0..self.core.pools.len() as u32 {
            if self.core.pools[pool as usize].is_sliced() {
                self.plan_pool_compaction(pool, &mut plan);
            }
        }
        plan
    }

    fn plan_pool_compaction(&mut self, pool: u32, plan: &mut RelocationPlan) {
        let mut pages: Vec<u32> = self.core.pools[pool as usize]
            .current
            .iter()
            .copied()
            .filter(|&pg| self.core.tables.pages[pg].live > 0 && self.page_movable(pg))
            .collect();
        pages.sort_by_key(|&pg| self.core.tables.pages[pg].live_bytes);
        let allow = Allowance {
            allocate: false,
            release: false,
        };
        // Free slices taken out of the index while planning.
        let mut hidden = Vec::new();
        // Pages holding targets of chosen pages: never emptied themselves
        // (a target would then be a source).
        let mut receivers = HashSet::new();
        for page in pages {
            if receivers.contains(&page) {
                continue;
            }
            let mark = hidden.len();
            self.hide_free_slices(page, &mut hidden);
            let mut moves = Vec::new();
            let mut complete = true;
            let mut node = self.core.tables.pages[page].head;
            while node != NIL {
                let n = &self.core.tables.slices[node];
                let next = n.next;
                if !n.is_free() {
                    let (owner, requested, bytes) = (n.owner, n.requested, n.size);
                    let placed = self.core.tables.slots.key_of(owner).and_then(|source| {
                        let (target, slice) = self.reserve_into(pool, requested, allow).ok()?;
                        let target_page = self.core.tables.slices[slice].page;
                        let m = Move {
                            source,
                            source_slice: node,
                            page,
                            target,
                            bytes,
                        };
                        Some((m, target_page))
                    });
                    match placed {
                        Some(placed) => moves.push(placed),
                        None => {
                            complete = false;
                            break;
                        }
                    }
                }
                node = next;
            }
            if complete {
                receivers.extend(moves.iter().map(|&(_, target_page)| target_page));
                plan.pages += 1;
                plan.compacted
                    .push((page, self.core.tables.pages[page].uid));
                plan.moves.extend(moves.into_iter().map(|(m, _)| m));
            } else {
                // Free the targets now (not through the drop queue, whose
                // other entries could free slices on hidden pages), then
                // let this page serve as room for the next candidates.
                for (m, _) in moves {
                    if let Some(slice) = self.core.tables.slots.release(m.target.key()) {
                        self.core.free_slice(&mut self.storage, slice, false);
                    }
                }
                self.show_free_slices(pool, hidden.drain(mark..));
            }
        }
        self.show_free_slices(pool, hidden.drain(..));
    }

    /// Take every indexed free slice of `page` out of the free index.
    fn hide_free_slices(&mut self, page: u32, hidden: &mut Vec<u32>) {
        let pool = self.core.tables.pages[page].pool;
        let mut node = self.core.tables.pages[page].head;
        while node != NIL {
            let next = self.core.tables.slices[node].next;
            if self.core.tables.slices[node].indexed {
                self.core.index_remove(pool, node);
                hidden.push(node);
            }
            node = next;
        }
    }

    /// Put hidden free slices back into the free index.
    fn show_free_slices(&mut self, pool: u32, slices: impl Iterator<Item = u32>) {
        let slices: Vec<u32> = slices.collect();
        for slice in slices {
            self.core.index_insert(pool, slice);
        }
    }

    /// `compaction_state`'s body, O(pools + outdated pages).
    pub(crate) fn measure_compaction(&self) -> CompactionState {
        let mut state = CompactionState::default();
        for pool in &self.core.pools {
            if !pool.is_sliced() {
                continue;
            }
            let (mut outdated_live, mut outdated_live_pages) = (0, 0u64);
            for &page in &pool.outdated {
                let p = &self.core.tables.pages[page];
                outdated_live += p.live_bytes;
                outdated_live_pages += u64::from(p.live > 0);
            }
            let live = pool.usage.bytes_in_use + pool.usage.bytes_padding - outdated_live;
            let live_pages = pool.usage.live_pages - outdated_live_pages;
            let holes = (live_pages * pool.page_size).saturating_sub(live);
            state.current_live_bytes += live;
            state.current_free_bytes += holes;
            state.current_pages_with_live_data += live_pages as usize;
            state.compactable_pages += (holes / pool.page_size.max(1)) as usize;
        }
        state
    }
}
