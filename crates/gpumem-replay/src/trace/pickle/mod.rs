//! A small reader for pickles of plain data (protocols 2 to 5), which is
//! what a PyTorch memory snapshot is: dicts, lists, strings and integers.
//!
//! Why not a general pickle crate: a snapshot shares objects — every
//! allocation's stack points at the same frame dicts — and the serde-pickle
//! decoder loses the keys of a dict referenced a second time (they come
//! back as `None`), so every stack after the first was unreadable. Here the
//! pickle machine builds an arena in which a memo reference is the same
//! node, and the finished tree shares it through `Rc`: a frame seen a
//! million times costs one dict.
//!
//! Objects (`GLOBAL`, `REDUCE`, `BUILD`, ...) are read as [`Py::Object`]:
//! a snapshot holds none where it matters, and nothing is ever called.

use std::rc::Rc;

use machine::Machine;

mod machine;

/// A decoded value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Py {
    None,
    Bool(bool),
    /// Integers up to 128 bits (pickle `LONG` values are two's complement).
    Int(i128),
    /// An integer wider than 128 bits: its byte length.
    HugeInt(usize),
    Float(f64),
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    List(Rc<[Py]>),
    Tuple(Rc<[Py]>),
    Dict(Rc<[(Py, Py)]>),
    Set(Rc<[Py]>),
    /// An object the pickle would have built by calling code.
    Object,
}

impl Py {
    /// `self[key]` for a dict with string keys.
    pub(crate) fn get(&self, key: &str) -> Option<&Py> {
        let Py::Dict(entries) = self else { return None };
        entries
            .iter()
            .find(|(k, _)| matches!(k, Py::Str(s) if &**s == key))
            .map(|(_, v)| v)
    }

    /// What the value is, for messages ("a dict").
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Py::None => "None",
            Py::Bool(_) => "a bool",
            Py::Int(_) | Py::HugeInt(_) => "an integer",
            Py::Float(_) => "a float",
            Py::Str(_) => "a string",
            Py::Bytes(_) => "bytes",
            Py::List(_) => "a list",
            Py::Tuple(_) => "a tuple",
            Py::Dict(_) => "a dict",
            Py::Set(_) => "a set",
            Py::Object => "an object",
        }
    }
}

/// Why a pickle could not be read, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PickleError {
    /// Byte offset of the opcode that failed.
    pub(crate) offset: usize,
    /// What was wrong, naming no byte of the input beyond opcodes.
    pub(crate) reason: String,
}

/// Deepest nesting the tree may have (a deeper one is refused, not a
/// stack overflow).
const MAX_DEPTH: usize = 256;

pub(super) enum Node {
    Leaf(Py),
    List(Vec<usize>),
    Tuple(Vec<usize>),
    Dict(Vec<(usize, usize)>),
    Set(Vec<usize>),
}

/// Decode a whole pickle.
pub(crate) fn decode(bytes: &[u8]) -> Result<Py, PickleError> {
    let mut m = Machine::new(bytes);
    let root = m.run()?;
    let mut frozen = vec![None; m.nodes.len()];
    let mut visiting = vec![false; m.nodes.len()];
    freeze(&m.nodes, root, &mut frozen, &mut visiting, 0).map_err(|reason| PickleError {
        offset: m.pos,
        reason,
    })
}

/// Turn node `id` into a value, once per node (shared nodes stay shared);
/// a node met again inside itself becomes `None`.
fn freeze(
    nodes: &[Node],
    id: usize,
    frozen: &mut [Option<Py>],
    visiting: &mut [bool],
    depth: usize,
) -> Result<Py, String> {
    if let Some(done) = &frozen[id] {
        return Ok(done.clone());
    }
    if visiting[id] {
        return Ok(Py::None);
    }
    if depth > MAX_DEPTH {
        return Err(format!("nested more than {MAX_DEPTH} deep"));
    }
    visiting[id] = true;
    let all = |ids: &[usize], frozen: &mut [Option<Py>], visiting: &mut [bool]| {
        ids.iter()
            .map(|&i| freeze(nodes, i, frozen, visiting, depth + 1))
            .collect::<Result<Vec<_>, _>>()
    };
    let value = match &nodes[id] {
        Node::Leaf(v) => v.clone(),
        Node::List(items) => Py::List(all(items, frozen, visiting)?.into()),
        Node::Tuple(items) => Py::Tuple(all(items, frozen, visiting)?.into()),
        Node::Set(items) => Py::Set(all(items, frozen, visiting)?.into()),
        Node::Dict(entries) => {
            let mut out = Vec::with_capacity(entries.len());
            for &(k, v) in entries {
                out.push((
                    freeze(nodes, k, frozen, visiting, depth + 1)?,
                    freeze(nodes, v, frozen, visiting, depth + 1)?,
                ));
            }
            Py::Dict(out.into())
        }
    };
    visiting[id] = false;
    frozen[id] = Some(value.clone());
    Ok(value)
}

#[cfg(test)]
mod tests;
