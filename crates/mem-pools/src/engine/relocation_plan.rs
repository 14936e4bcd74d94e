//! Plan → copy → commit on the engine: the plan (see `mod.rs` for the
//! types, `relocation_copy.rs` for copy and commit).
//!
//! Nothing moves during a capture (plans are empty, commits move nothing).
//! Pages with a raw address out or a slice pinned by a graph never move.
//! A commit rewrites each moved allocation's slot to its target, so every
//! handle and binding follows; emptied outdated pages are freed and the
//! storage flushed.

use mem_storage::ComputeStorage;

use crate::engine::state::MemoryManagement;
use crate::pools::paged::carve::Allowance;
use crate::relocation::{Move, RelocationPlan, RelocationShape, RelocationState, TargetRoom};
use crate::tables::slots::NIL;

impl<S: ComputeStorage> MemoryManagement<S> {
    pub(crate) fn page_movable(&self, page: u32) -> bool {
        let p = &self.core.tables.pages[page];
        p.raw_out == 0 && p.pinned == 0 && p.quarantined == 0
    }

    /// `relocation_state`'s body (O(pools + outdated pages)).
    pub(crate) fn measure_relocation(&self) -> RelocationState {
        let mut shape = RelocationShape::default();
        let mut state = RelocationState::default();
        for pool in &self.core.pools {
            shape.current_pages += pool.current.len();
            shape.outdated_pages += pool.outdated.len();
            for &page in &pool.outdated {
                shape.outdated_pinned += usize::from(!self.page_movable(page));
                shape.outdated_live_bytes += self.core.tables.pages[page].live_bytes;
            }
            if pool.is_sliced() {
                state.next_page_size = state.next_page_size.max(pool.page_size);
            }
            state.out_of_page_sizes |= pool.out_of_page_sizes();
        }
        state.has_outdated = shape.outdated_pages > 0;
        state.shape = shape;
        state
    }

    /// `plan_relocation`'s body: a target for every live slice of each
    /// movable outdated page, cheapest page first; a page whose slices cannot
    /// all get a target is left out. Empty during a capture. Dropping the
    /// plan loses nothing.
    pub(crate) fn outdated_plan(&mut self, room: TargetRoom) -> RelocationPlan {
        self.drain();
        let mut plan = RelocationPlan::empty(self.id);
        if self.capture.is_some() {
            return plan;
        }
        let allow = Allowance {
            allocate: room == TargetRoom::MayAllocate,
            release: true,
        };
        for pool in 0..self.core.pools.len() as u32 {
            let mut pages: Vec<u32> = self.core.pools[pool as usize]
                .outdated
                .iter()
                .copied()
                .filter(|&pg| self.core.tables.pages[pg].live > 0 && self.page_movable(pg))
                .collect();
            pages.sort_by_key(|&pg| self.core.tables.pages[pg].live_bytes);
            for page in pages {
                let mut moves = Vec::new();
                let mut node = self.core.tables.pages[page].head;
                let mut complete = true;
                while node != NIL {
                    let n = &self.core.tables.slices[node];
                    let next = n.next;
                    if !n.is_free() {
                        let (owner, requested, bytes) = (n.owner, n.requested, n.size);
                        let Some(source) = self.core.tables.slots.key_of(owner) else {
                            complete = false;
                            break;
                        };
                        match self.reserve_into(pool, requested, allow) {
                            Ok((target, _)) => moves.push(Move {
                                source,
                                source_slice: node,
                                page,
                                target,
                                bytes,
                            }),
                            Err(_) => {
                                complete = false;
                                break;
                            }
                        }
                    }
                    node = next;
                }
                if complete {
                    plan.pages += 1;
                    plan.moves.extend(moves);
                } else {
                    drop(moves);
                    self.drain();
                }
            }
        }
        plan
    }
}
