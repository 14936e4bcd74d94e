//! The pickle machine: opcodes of protocols 2 to 5 run over an arena of
//! nodes, where a memo reference pushes the very node it names (so a
//! shared object stays one node), and containers are filled in place.

use std::rc::Rc;

use super::{Node, PickleError, Py};

pub(super) struct Machine<'a> {
    bytes: &'a [u8],
    pub(super) pos: usize,
    pub(super) nodes: Vec<Node>,
    stack: Vec<usize>,
    marks: Vec<usize>,
    memo: std::collections::HashMap<u64, usize>,
}

impl<'a> Machine<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Machine {
            bytes,
            pos: 0,
            nodes: Vec::new(),
            stack: Vec::new(),
            marks: Vec::new(),
            memo: std::collections::HashMap::new(),
        }
    }

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

    /// Run the opcodes to `STOP`; returns the root node.
    pub(super) fn run(&mut self) -> Result<usize, PickleError> {
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
