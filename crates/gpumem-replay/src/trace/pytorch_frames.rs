//! A PyTorch `frames` list (dicts of `filename`, `line`, `name`, innermost
//! first) as an interned stack.
//!
//! A snapshot pickles each distinct frame once and refers to it from every
//! stack that holds it, so the decoded tree shares one dict per frame
//! (`Rc`). Frames are interned by that dict's identity first: a 60-frame
//! stack of 20,000 events costs one hash lookup per frame, not two string
//! copies.
//!
//! An event may also carry `forward_frames`: the Python traceback, as
//! text, of the forward call that created the autograd node allocating in
//! the backward pass. It is kept with the stack (`autograd.rs` reads it).

use std::collections::HashMap;

use super::autograd;
use super::pickle::Py;
use super::stacks::Stacks;

/// Frame indices by the identity of their decoded dict.
#[derive(Debug, Default)]
pub(super) struct FrameCache {
    by_dict: HashMap<*const (Py, Py), u32>,
    scratch: Vec<u32>,
}

impl FrameCache {
    /// The stack of a `frames` value, interned in `stacks`; `None` when it
    /// is not a list or holds no frame with a file name. Valid only while
    /// the decoded tree the frames belong to is alive (the cache keys on
    /// its dicts' addresses).
    pub(super) fn stack(&mut self, frames: &Py, stacks: &mut Stacks) -> Option<u32> {
        let Py::List(list) = frames else {
            return None;
        };
        self.scratch.clear();
        for frame in list.iter() {
            let Py::Dict(dict) = frame else { continue };
            let key = std::rc::Rc::as_ptr(dict) as *const (Py, Py);
            let id = match self.by_dict.get(&key) {
                Some(&id) => id,
                None => {
                    let Some(file) = text(frame, "filename") else {
                        continue;
                    };
                    let line = match frame.get("line") {
                        Some(Py::Int(l)) => u64::try_from(*l).unwrap_or(0),
                        _ => 0,
                    };
                    let id = stacks.intern_frame(file, line, text(frame, "name").unwrap_or("?"));
                    self.by_dict.insert(key, id);
                    id
                }
            };
            self.scratch.push(id);
        }
        (!self.scratch.is_empty()).then(|| stacks.intern_stack(&self.scratch))
    }
}

impl FrameCache {
    /// The stack of a trace entry: its `frames`, with the forward stack
    /// of its `forward_frames` when it has one.
    pub(super) fn stack_of_entry(&mut self, entry: &Py, stacks: &mut Stacks) -> Option<u32> {
        let stack = self.stack(entry.get("frames")?, stacks)?;
        let Some(Py::List(lines)) = entry.get("forward_frames") else {
            return Some(stack);
        };
        let text: String = lines
            .iter()
            .filter_map(|l| match l {
                Py::Str(s) => Some(&**s),
                _ => None,
            })
            .collect();
        // Written outermost first, as Python formats a traceback.
        let forward: Vec<u32> = autograd::forward_frames(&text)
            .into_iter()
            .rev()
            .map(|(file, line, name)| stacks.intern_frame(file, line, name))
            .collect();
        let frames = stacks.stack(stack).to_vec();
        Some(stacks.intern_with_forward(&frames, &forward))
    }
}

/// `dict[key]` when it is a string.
pub(super) fn text<'a>(dict: &'a Py, key: &str) -> Option<&'a str> {
    match dict.get(key) {
        Some(Py::Str(s)) => Some(s),
        _ => None,
    }
}
