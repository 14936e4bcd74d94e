//! The stacks a page embeds: for each embedded allocation that has one,
//! its whole stack, so a click on a group of live allocations shows where
//! they were allocated — Python frames first, then the native ones, as
//! PyTorch's `memory_viz` lists them.
//!
//! Only stacks of embedded allocations travel, and only their frames, each
//! once: `frames` is a table of `[file, line, name, python]` and a stack a
//! list of indices into it, innermost first.

use std::collections::HashMap;

use gpumem_replay::trace::Origins;

/// `[file, line, name, is Python]`.
pub(super) type PageFrame = (String, u64, String, bool);

/// Stacks and frames for the page, renumbered densely.
#[derive(Debug, Default)]
pub(super) struct PageStacks {
    pub(super) frames: Vec<PageFrame>,
    pub(super) stacks: Vec<Vec<u32>>,
    pub(super) forward: Vec<Vec<u32>>,
    frame_ids: HashMap<u32, u32>,
    stack_ids: HashMap<u32, i64>,
}

impl PageStacks {
    /// The page's index of the stack of the allocation at `event`, or -1
    /// when it has none.
    pub(super) fn of_event(&mut self, origins: &Origins, event: usize) -> i64 {
        let Some(stack) = origins.stack_of(event) else {
            return -1;
        };
        if let Some(&id) = self.stack_ids.get(&stack) {
            return id;
        }
        let table = origins.stacks();
        let frames = self.renumber(origins, table.stack(stack));
        let forward = self.renumber(origins, table.forward(stack));
        self.forward.push(forward);
        let id = self.stacks.len() as i64;
        self.stacks.push(frames);
        self.stack_ids.insert(stack, id);
        id
    }

    /// The page's indices of frames `ids` of the trace, each added once.
    fn renumber(&mut self, origins: &Origins, ids: &[u32]) -> Vec<u32> {
        let table = origins.stacks();
        ids.iter()
            .filter_map(|&f| {
                let frame = table.frames().get(f as usize)?;
                let next = self.frames.len() as u32;
                let id = *self.frame_ids.entry(f).or_insert(next);
                if id == next {
                    self.frames.push((
                        frame.file.clone(),
                        frame.line,
                        frame.name.clone(),
                        frame.is_python(),
                    ));
                }
                Some(id)
            })
            .collect()
    }
}
