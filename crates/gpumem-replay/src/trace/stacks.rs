//! Whole stacks of allocations, kept beside their origins: what the HTML
//! page shows for a clicked allocation, and what `--group-by` re-reads to
//! name origins by function, file or module.
//!
//! A training step allocates from a few hundred stacks of a few hundred
//! distinct frames, millions of times, so both are interned: a stack is a
//! list of frame indices, and an event keeps the index of its stack.
//!
//! A backward allocation's stack may come with the forward stack of its
//! autograd node (PyTorch's `forward_frames`): it is kept in the same
//! interned list after a separator, so the pair is one stack.
//!
//! Where a stack stands to the backward pass ([`PassSide`]) is read here
//! too, for `attribution` to find where each pass ends.

use std::collections::HashMap;

use serde::Serialize;

use super::autograd::{self, Backward};
use super::frames::{self, Frame, GroupBy};

/// Where an allocation made from a stack stands to a backward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassSide {
    /// A frame runs an autograd node or is the autograd engine's: the
    /// allocation is the pass's.
    Inside,
    /// No node, on the thread that ran the pass (a Python frame, or no
    /// thread's entry frame: the main thread): it ends a pass.
    After,
    /// No node, on a thread a library started (native frames through a
    /// thread's entry, a communication library's): it neither starts nor
    /// ends a pass.
    Beside,
}

/// Separates a stack's frames from its forward stack's in an interned list.
const FORWARD: u32 = u32::MAX;

/// One frame of a kept stack.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct StackFrame {
    /// The source file (`??` or empty for native code without symbols).
    pub file: String,
    /// Line in the file (0 when unknown).
    pub line: u64,
    /// Function name.
    pub name: String,
}

impl StackFrame {
    fn as_frame(&self) -> Frame<'_> {
        Frame {
            file: &self.file,
            line: self.line,
            name: &self.name,
        }
    }

    /// Whether this is a frame of Python code (the rest is native).
    pub fn is_python(&self) -> bool {
        frames::is_python(&self.as_frame())
    }
}

/// Interned frames and stacks (module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stacks {
    frames: Vec<StackFrame>,
    frame_index: HashMap<StackFrame, u32>,
    stacks: Vec<Box<[u32]>>,
    stack_index: HashMap<Box<[u32]>, u32>,
}

impl Stacks {
    /// The index of a frame, interning it.
    pub(crate) fn intern_frame(&mut self, file: &str, line: u64, name: &str) -> u32 {
        let key = StackFrame {
            file: file.to_string(),
            line,
            name: name.to_string(),
        };
        if let Some(&id) = self.frame_index.get(&key) {
            return id;
        }
        let id = self.frames.len() as u32;
        self.frames.push(key.clone());
        self.frame_index.insert(key, id);
        id
    }

    /// The index of a stack of frame indices (innermost first), interning it.
    pub(crate) fn intern_stack(&mut self, frames: &[u32]) -> u32 {
        if let Some(&id) = self.stack_index.get(frames) {
            return id;
        }
        let id = self.stacks.len() as u32;
        let boxed: Box<[u32]> = frames.into();
        self.stacks.push(boxed.clone());
        self.stack_index.insert(boxed, id);
        id
    }

    /// The index of a stack (innermost first) with the forward stack of
    /// its autograd node (innermost first), interning it.
    pub(crate) fn intern_with_forward(&mut self, frames: &[u32], forward: &[u32]) -> u32 {
        if forward.is_empty() {
            return self.intern_stack(frames);
        }
        let mut key = frames.to_vec();
        key.push(FORWARD);
        key.extend_from_slice(forward);
        self.intern_stack(&key)
    }

    /// Every interned frame, by index.
    pub fn frames(&self) -> &[StackFrame] {
        &self.frames
    }

    /// The frame indices of stack `stack`, innermost first (empty for an
    /// unknown index).
    pub fn stack(&self, stack: u32) -> &[u32] {
        let all = self.stacks.get(stack as usize).map_or(&[][..], |s| &s[..]);
        all.split(|&f| f == FORWARD).next().unwrap_or(&[])
    }

    /// The frame indices of the forward stack kept with stack `stack`
    /// (the Python stack that created its autograd node), innermost
    /// first; empty when none was recorded.
    pub fn forward(&self, stack: u32) -> &[u32] {
        let all = self.stacks.get(stack as usize).map_or(&[][..], |s| &s[..]);
        all.iter()
            .position(|&f| f == FORWARD)
            .map_or(&[], |at| &all[at + 1..])
    }

    fn frames_of<'a>(&'a self, ids: &[u32]) -> Vec<Frame<'a>> {
        ids.iter()
            .filter_map(|&f| self.frames.get(f as usize))
            .map(StackFrame::as_frame)
            .collect()
    }

    /// The autograd node of stack `stack` when it is the backward pass's
    /// (no user Python frame, a node frame).
    pub(crate) fn backward(&self, stack: u32) -> Option<Backward<'_>> {
        frames::backward_node(&self.frames_of(self.stack(stack)))
    }

    /// The autograd node that allocated from stack `stack` when it is the
    /// backward pass's (`MmBackward0`, `AccumulateGrad`), else `None`.
    pub fn backward_node(&self, stack: u32) -> Option<&str> {
        self.backward(stack).map(|b| b.node)
    }

    /// Whether stack `stack` is `AccumulateGrad`'s, the node that writes a
    /// parameter's `.grad`: its memory is gradients whatever its lifetime.
    pub fn accumulates_grad(&self, stack: u32) -> bool {
        self.backward(stack).is_some_and(|b| b.is_gradient())
    }

    /// Where an allocation from stack `stack` stands to a backward pass.
    pub fn pass_side(&self, stack: u32) -> PassSide {
        let frames = self.frames_of(self.stack(stack));
        let engine = frames.iter().any(|f| autograd::is_engine(f.name));
        if engine || autograd::backward(frames.iter().map(|f| f.name)).is_some() {
            PassSide::Inside
        } else if frames.iter().any(frames::is_python)
            || !frames.iter().any(|f| frames::is_thread_entry(f.name))
        {
            PassSide::After
        } else {
            PassSide::Beside
        }
    }

    /// Distinct stacks kept.
    pub fn len(&self) -> usize {
        self.stacks.len()
    }

    /// Whether no stack is kept.
    pub fn is_empty(&self) -> bool {
        self.stacks.is_empty()
    }

    /// The origin of stack `stack`, named as `by` says.
    pub(crate) fn origin(&self, stack: u32, by: GroupBy) -> Option<String> {
        let frames = self.frames_of(self.stack(stack));
        let forward = self.frames_of(self.forward(stack));
        frames::origin_with_forward(&frames, &forward, by)
    }
}
