//! The capture window's end: priming clones dropped, graph handles matched
//! to the allocations they name (or recorded as reclaimed extents), pinned.

use crate::error::Violation;
use crate::ops::Ctx;
use crate::world::World;
use crate::world::model::{CapturePhase, Entry, PoolClass};

impl World {
    /// Priming ended on `s`: the engine dropped its clones.
    pub(crate) fn unprime(&mut self, s: usize) {
        for e in self.model.entries.iter_mut().filter(|e| e.stream == s) {
            e.primed = false;
        }
        self.model.sweep();
    }

    pub(crate) fn capture_end(&mut self, ctx: Ctx, s: usize) -> Result<(), Violation> {
        let handles = self.managers[s].capture_end();
        if self.model.streams[s].capture == CapturePhase::Off {
            if !handles.is_empty() {
                return Err(Violation::mismatch(
                    ctx.step,
                    "handles from capture_end without a capture",
                    0,
                    handles.len() as u64,
                ));
            }
            return Ok(());
        }
        self.model.streams[s].capture = CapturePhase::Off;
        self.unprime(s);
        let mut matched = Vec::new();
        self.summary.graph_handles += handles.len() as u64;
        for handle in handles {
            let binding = handle.binding();
            let found = self
                .model
                .entries
                .iter()
                .position(|e| e.stream == s && e.alive() && e.binding == binding);
            match found {
                Some(i) if matched.contains(&i) => {
                    return Err(Violation::mismatch(
                        ctx.step,
                        format!(
                            "graph handles naming allocation #{}",
                            self.model.entries[i].id
                        ),
                        1,
                        2,
                    ));
                }
                Some(i) => {
                    matched.push(i);
                    let at = self.pinned_address(ctx, s, binding)?;
                    let e = &mut self.model.entries[i];
                    e.graph.push(handle);
                    if !e.pinned {
                        e.pinned = true;
                        e.pinned_at = at;
                    }
                }
                None => {
                    let at = self.pinned_address(ctx, s, binding)?;
                    let id = self.model.next_id();
                    self.model.entries.push(Entry {
                        id,
                        stream: s,
                        size: handle.size(),
                        binding,
                        user: None,
                        graph: vec![handle],
                        primed: false,
                        pool: PoolClass::Unknown,
                        contents: None,
                        raw: None,
                        pinned: true,
                        pinned_at: at,
                    });
                    matched.push(self.model.entries.len() - 1);
                }
            }
        }
        Ok(())
    }

    /// Where a just-pinned allocation lives; `None` when its lazy page
    /// could not be mapped to find out (a refusal the model allows).
    fn pinned_address(
        &mut self,
        ctx: Ctx,
        s: usize,
        binding: mem_pools::ManagedMemoryBinding,
    ) -> Result<Option<u64>, Violation> {
        match self.address_of(s, binding) {
            Ok(at) => Ok(Some(at)),
            Err(e) if self.deref_refusal_allowed(ctx, s, &e) => Ok(None),
            Err(e) => Err(ctx.unexpected(e)),
        }
    }
}
