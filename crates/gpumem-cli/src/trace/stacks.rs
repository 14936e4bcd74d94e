//! Whole stacks of allocations, kept beside their origins: what the HTML
//! page shows for a clicked allocation, and what `--group-by` re-reads to
//! name origins by function, file or module.
//!
//! A training step allocates from a few hundred stacks of a few hundred
//! distinct frames, millions of times, so both are interned: a stack is a
//! list of frame indices, and an event keeps the index of its stack.

use std::collections::HashMap;

use serde::Serialize;

use super::frames::{self, Frame, GroupBy};

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

    /// Every interned frame, by index.
    pub fn frames(&self) -> &[StackFrame] {
        &self.frames
    }

    /// The frame indices of stack `stack`, innermost first (empty for an
    /// unknown index).
    pub fn stack(&self, stack: u32) -> &[u32] {
        self.stacks.get(stack as usize).map_or(&[], |s| &s[..])
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
        let frames: Vec<Frame<'_>> = self
            .stack(stack)
            .iter()
            .filter_map(|&f| self.frames.get(f as usize))
            .map(StackFrame::as_frame)
            .collect();
        frames::origin(frames, by)
    }
}
