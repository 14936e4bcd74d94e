//! A PyTorch `frames` list (dicts of `filename`, `line`, `name`, innermost
//! first) as an interned stack.
//!
//! A snapshot pickles each distinct frame once and refers to it from every
//! stack that holds it, so the decoded tree shares one dict per frame
//! (`Rc`). Frames are interned by that dict's identity first: a 60-frame
//! stack of 20,000 events costs one hash lookup per frame, not two string
//! copies.

use std::collections::HashMap;

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

/// `dict[key]` when it is a string.
pub(super) fn text<'a>(dict: &'a Py, key: &str) -> Option<&'a str> {
    match dict.get(key) {
        Some(Py::Str(s)) => Some(s),
        _ => None,
    }
}
