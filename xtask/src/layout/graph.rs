//! Strongly connected components of a small directed graph (Tarjan).

use std::collections::BTreeMap;

/// The strongly connected components of the graph with `nodes` and `edges`
/// (pairs of node names; names not in `nodes` are ignored), each a list of
/// node names, in the order Tarjan's algorithm closes them.
pub fn strongly_connected(nodes: &[String], edges: &[(String, String)]) -> Vec<Vec<String>> {
    let index_of: BTreeMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut next = vec![Vec::new(); nodes.len()];
    for (a, b) in edges {
        if let (Some(&a), Some(&b)) = (index_of.get(a.as_str()), index_of.get(b.as_str())) {
            next[a].push(b);
        }
    }
    let mut tarjan = Tarjan {
        next,
        index: vec![None; nodes.len()],
        low: vec![0; nodes.len()],
        on_stack: vec![false; nodes.len()],
        stack: Vec::new(),
        counter: 0,
        components: Vec::new(),
    };
    for v in 0..nodes.len() {
        if tarjan.index[v].is_none() {
            tarjan.visit(v);
        }
    }
    tarjan
        .components
        .into_iter()
        .map(|c| c.into_iter().map(|v| nodes[v].clone()).collect())
        .collect()
}

/// Tarjan's state (recursive: a crate has tens of modules, not thousands).
struct Tarjan {
    next: Vec<Vec<usize>>,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    counter: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.counter);
        self.low[v] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for i in 0..self.next[v].len() {
            let w = self.next[v][i];
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(index) if self.on_stack[w] => self.low[v] = self.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}
