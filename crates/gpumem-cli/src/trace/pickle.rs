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

enum Node {
    Leaf(Py),
    List(Vec<usize>),
    Tuple(Vec<usize>),
    Dict(Vec<(usize, usize)>),
    Set(Vec<usize>),
}

/// Decode a whole pickle.
pub(crate) fn decode(bytes: &[u8]) -> Result<Py, PickleError> {
    let mut m = Machine {
        bytes,
        pos: 0,
        nodes: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: std::collections::HashMap::new(),
    };
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

struct Machine<'a> {
    bytes: &'a [u8],
    pos: usize,
    nodes: Vec<Node>,
    stack: Vec<usize>,
    marks: Vec<usize>,
    memo: std::collections::HashMap<u64, usize>,
}

impl Machine<'_> {
    fn fail<T>(&self, at: usize, reason: impl Into<String>) -> Result<T, PickleError> {
        Err(PickleError {
            offset: at,
            reason: reason.into(),
        })
    }

    fn take(&mut self, n: usize, at: usize) -> Result<&[u8], PickleError> {
        if self.bytes.len() - self.pos < n {
            return self.fail(at, "the input ends inside an opcode's argument");
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn uint(&mut self, n: usize, at: usize) -> Result<u64, PickleError> {
        let raw = self.take(n, at)?;
        Ok(raw
            .iter()
            .rev()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    fn push(&mut self, node: Node) {
        self.nodes.push(node);
        self.stack.push(self.nodes.len() - 1);
    }

    fn pop(&mut self, at: usize) -> Result<usize, PickleError> {
        match self.stack.pop() {
            Some(id) => Ok(id),
            None => self.fail(at, "the stack is empty"),
        }
    }

    /// Everything pushed since the last mark, which is removed.
    fn pop_mark(&mut self, at: usize) -> Result<Vec<usize>, PickleError> {
        let Some(mark) = self.marks.pop() else {
            return self.fail(at, "no mark to pop to");
        };
        if mark > self.stack.len() {
            return self.fail(at, "the stack fell below its mark");
        }
        Ok(self.stack.split_off(mark))
    }

    fn text(&mut self, n: usize, at: usize) -> Result<Py, PickleError> {
        let raw = self.take(n, at)?.to_vec();
        match String::from_utf8(raw) {
            Ok(s) => Ok(Py::Str(s.into())),
            Err(_) => self.fail(at, "a string is not valid UTF-8"),
        }
    }

    fn long(&mut self, n: usize, at: usize) -> Result<Py, PickleError> {
        let raw = self.take(n, at)?;
        if raw.len() > 16 {
            return Ok(Py::HugeInt(raw.len()));
        }
        let negative = raw.last().is_some_and(|b| b & 0x80 != 0);
        let mut buf = [if negative { 0xff } else { 0 }; 16];
        buf[..raw.len()].copy_from_slice(raw);
        Ok(Py::Int(i128::from_le_bytes(buf)))
    }

    fn top_node(&mut self, at: usize) -> Result<usize, PickleError> {
        match self.stack.last() {
            Some(&id) => Ok(id),
            None => self.fail(at, "the stack is empty"),
        }
    }

    fn run(&mut self) -> Result<usize, PickleError> {
        if self.bytes.first() != Some(&0x80) {
            return self.fail(0, "no protocol opcode first (protocol 2 or later)");
        }
        loop {
            let at = self.pos;
            let op = self.take(1, at)?[0];
            match op {
                0x80 => drop(self.take(1, at)?), // PROTO
                0x95 => drop(self.take(8, at)?), // FRAME
                b'.' => return self.pop(at),     // STOP
                b'(' => self.marks.push(self.stack.len()),
                b'0' => drop(self.pop(at)?),
                b'1' => drop(self.pop_mark(at)?),
                b'2' => {
                    let top = self.top_node(at)?;
                    self.stack.push(top);
                }
                b'N' => self.push(Node::Leaf(Py::None)),
                0x88 => self.push(Node::Leaf(Py::Bool(true))),
                0x89 => self.push(Node::Leaf(Py::Bool(false))),
                b'J' => {
                    let v = self.uint(4, at)? as u32 as i32;
                    self.push(Node::Leaf(Py::Int(v.into())));
                }
                b'K' => {
                    let v = self.uint(1, at)?;
                    self.push(Node::Leaf(Py::Int(v.into())));
                }
                b'M' => {
                    let v = self.uint(2, at)?;
                    self.push(Node::Leaf(Py::Int(v.into())));
                }
                0x8a | 0x8b => {
                    let n = if op == 0x8a {
                        self.uint(1, at)?
                    } else {
                        self.uint(4, at)?
                    };
                    let v = self.long(n as usize, at)?;
                    self.push(Node::Leaf(v));
                }
                b'G' => {
                    let raw: [u8; 8] = self.take(8, at)?.try_into().unwrap_or_default();
                    self.push(Node::Leaf(Py::Float(f64::from_be_bytes(raw))));
                }
                0x8c | b'X' | 0x8d => {
                    let width = match op {
                        0x8c => 1,
                        b'X' => 4,
                        _ => 8,
                    };
                    let n = self.uint(width, at)? as usize;
                    let v = self.text(n, at)?;
                    self.push(Node::Leaf(v));
                }
                b'C' | b'B' | 0x8e | 0x96 => {
                    let width = match op {
                        b'C' => 1,
                        b'B' => 4,
                        _ => 8,
                    };
                    let n = self.uint(width, at)? as usize;
                    let raw: Rc<[u8]> = self.take(n, at)?.into();
                    self.push(Node::Leaf(Py::Bytes(raw)));
                }
                b']' => self.push(Node::List(Vec::new())),
                b'}' => self.push(Node::Dict(Vec::new())),
                b')' => self.push(Node::Tuple(Vec::new())),
                0x8f => self.push(Node::Set(Vec::new())),
                b'l' => {
                    let items = self.pop_mark(at)?;
                    self.push(Node::List(items));
                }
                b't' | 0x91 => {
                    let items = self.pop_mark(at)?;
                    self.push(if op == b't' {
                        Node::Tuple(items)
                    } else {
                        Node::Set(items)
                    });
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    if self.stack.len() < n {
                        return self.fail(at, "the stack is shorter than the tuple");
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    self.push(Node::Tuple(items));
                }
                b'd' => {
                    let items = self.pop_mark(at)?;
                    if items.len() % 2 != 0 {
                        return self.fail(at, "a dict has a key without a value");
                    }
                    let entries = items.chunks(2).map(|p| (p[0], p[1])).collect();
                    self.push(Node::Dict(entries));
                }
                b'a' | b'e' | 0x90 => {
                    let items = if op == b'a' {
                        vec![self.pop(at)?]
                    } else {
                        self.pop_mark(at)?
                    };
                    let target = self.top_node(at)?;
                    match &mut self.nodes[target] {
                        Node::List(list) | Node::Set(list) => list.extend(items),
                        _ => return self.fail(at, "appending to something that is not a list"),
                    }
                }
                b's' | b'u' => {
                    let items = if op == b's' {
                        let v = self.pop(at)?;
                        vec![self.pop(at)?, v]
                    } else {
                        self.pop_mark(at)?
                    };
                    if items.len() % 2 != 0 {
                        return self.fail(at, "a dict has a key without a value");
                    }
                    let target = self.top_node(at)?;
                    let Node::Dict(entries) = &mut self.nodes[target] else {
                        return self.fail(at, "setting an item of something that is not a dict");
                    };
                    entries.extend(items.chunks(2).map(|p| (p[0], p[1])));
                }
                0x94 => {
                    let top = self.top_node(at)?;
                    let id = self.memo.len() as u64;
                    self.memo.insert(id, top);
                }
                b'q' | b'r' => {
                    let id = self.uint(if op == b'q' { 1 } else { 4 }, at)?;
                    let top = self.top_node(at)?;
                    self.memo.insert(id, top);
                }
                b'h' | b'j' => {
                    let id = self.uint(if op == b'h' { 1 } else { 4 }, at)?;
                    let Some(&node) = self.memo.get(&id) else {
                        return self.fail(at, format!("memo entry {id} is missing"));
                    };
                    self.stack.push(node);
                }
                // Objects: a global names a class or function; what
                // building one would give is not data, so it reads as Object.
                b'c' => {
                    for _ in 0..2 {
                        let end = self.bytes[self.pos..].iter().position(|b| *b == b'\n');
                        let Some(end) = end else {
                            return self.fail(at, "the input ends inside a global's name");
                        };
                        self.pos += end + 1;
                    }
                    self.push(Node::Leaf(Py::Object));
                }
                0x93 | b'R' | 0x81 | b'b' => {
                    let args = if op == b'b' { 1 } else { 2 };
                    for _ in 0..args {
                        self.pop(at)?;
                    }
                    if op != b'b' {
                        self.push(Node::Leaf(Py::Object));
                    }
                }
                0x92 => {
                    for _ in 0..3 {
                        self.pop(at)?;
                    }
                    self.push(Node::Leaf(Py::Object));
                }
                other => return self.fail(at, format!("unknown opcode 0x{other:02x}")),
            }
        }
    }
}

#[cfg(test)]
#[path = "pickle_tests.rs"]
mod tests;
