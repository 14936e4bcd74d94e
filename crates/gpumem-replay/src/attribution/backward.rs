//! The backward pass's memory told apart by what it does: a gradient
//! outlives the pass, a temporary is freed inside it.
//!
//! The allocating node does not say which: when a leaf's gradient is first
//! produced, PyTorch's `AccumulateGrad` steals the incoming tensor instead
//! of copying it, so most gradients are allocated by the node that produced
//! them (`MmBackward0`, `BmmBackward0`, `ConvolutionBackward0`), and
//! `AccumulateGrad` allocates only to add into an existing `.grad`.
//! Lifetimes do say:
//!
//! - a **pass** is a run of allocations whose stack runs an autograd node
//!   or the autograd engine ([`PassSide::Inside`]: a Python hook on the
//!   engine's thread stays inside), with the frees among them. It ends at the next
//!   allocation made outside it on the thread that ran it
//!   ([`PassSide::After`]: the optimizer step, the next forward). An
//!   allocation on a library's own thread (a communication thread's) or
//!   one without a stack neither starts nor ends a pass. A recording of
//!   several steps holds several passes, each told apart on its own;
//! - a **temporary** is an allocation of the pass freed before its end;
//! - a **gradient** is one still live at its end, or any allocation of
//!   `AccumulateGrad` (a sum written to `.grad`);
//! - an allocation of a pass the recording ends inside, never freed, is
//!   **undetermined**: it may be either, and the report says so.

use std::collections::HashMap;

use crate::trace::{Event, PassSide, Trace};

/// What one backward allocation is (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Live after its pass ended, or allocated by `AccumulateGrad`.
    Gradient,
    /// Freed before its pass ended.
    Temporary,
    /// Live when the recording ends, inside its pass.
    Undetermined,
}

/// The role of every backward allocation of a trace, by event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackwardRoles {
    roles: Vec<Option<Role>>,
}

impl BackwardRoles {
    /// Find the passes of `trace` and the role of each allocation whose
    /// stack is the backward pass's (named by its autograd node).
    pub fn of(trace: &Trace) -> Self {
        let origins = &trace.origins;
        let stacks = origins.stacks();
        let mut side_of: HashMap<u32, (PassSide, Option<bool>)> = HashMap::new();
        // The end of each pass: the event that ended it, `None` while open.
        let mut ends: Vec<Option<usize>> = Vec::new();
        let mut current: Option<usize> = None;
        // Live backward allocations: id -> their index in `allocs`.
        let mut open: HashMap<u64, usize> = HashMap::new();
        // (event, pass, allocated by AccumulateGrad, freed at).
        let mut allocs: Vec<(usize, usize, bool, Option<usize>)> = Vec::new();
        for (index, event) in trace.events.iter().enumerate() {
            match *event {
                Event::Alloc { id, .. } => {
                    if let Some(at) = open.remove(&id) {
                        allocs[at].3 = Some(index); // the id was reused
                    }
                    let Some(stack) = origins.stack_of(index) else {
                        continue;
                    };
                    let (side, gradient) = *side_of.entry(stack).or_insert_with(|| {
                        let node = stacks.backward_node(stack).is_some();
                        let gradient = node.then(|| stacks.accumulates_grad(stack));
                        (stacks.pass_side(stack), gradient)
                    });
                    match side {
                        PassSide::Inside => {
                            let pass = *current.get_or_insert_with(|| {
                                ends.push(None);
                                ends.len() - 1
                            });
                            if let Some(gradient) = gradient {
                                open.insert(id, allocs.len());
                                allocs.push((index, pass, gradient, None));
                            }
                        }
                        PassSide::After => {
                            if let Some(pass) = current.take() {
                                ends[pass] = Some(index);
                            }
                        }
                        PassSide::Beside => {}
                    }
                }
                Event::Free { id } => {
                    if let Some(at) = open.remove(&id) {
                        allocs[at].3 = Some(index);
                    }
                }
                Event::Mode(_) | Event::Cleanup => {}
            }
        }
        if allocs.is_empty() {
            return Self::default();
        }
        let mut roles = vec![None; trace.events.len()];
        for (event, pass, gradient, freed) in allocs {
            let end = ends[pass];
            roles[event] = Some(match (gradient, freed, end) {
                (true, _, _) => Role::Gradient,
                (_, Some(freed), Some(end)) if freed < end => Role::Temporary,
                (_, Some(_), None) => Role::Temporary,
                (_, _, Some(_)) => Role::Gradient,
                (_, None, None) => Role::Undetermined,
            });
        }
        Self { roles }
    }

    /// The role of the allocation at `event`, when it is the backward
    /// pass's.
    pub fn role_of(&self, event: usize) -> Option<Role> {
        self.roles.get(event).copied().flatten()
    }

    /// Whether the trace has any backward allocation.
    pub fn is_empty(&self) -> bool {
        self.roles.is_empty()
    }
}
