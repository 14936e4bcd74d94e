//! The backward pass's share of a moment's live set, and how a report
//! writes it.

use std::fmt;

use serde::Serialize;

use super::backward::Role;
use gpumem::storage::units::format_bytes;

/// How many producing nodes a report names before "and N more".
const NODES_NAMED: usize = 4;

/// Live memory the backward pass allocated (stacks named by an autograd
/// node), split by lifetime (`backward.rs`): gradients, temporaries, and
/// what a recording that ends inside the pass cannot tell.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BackwardShare {
    /// Bytes of all three.
    pub bytes: u64,
    /// Allocations of all three.
    pub count: u64,
    /// Gradients: live after their pass ended, or `AccumulateGrad`'s.
    pub gradients: Share,
    /// The gradients by the node that produced them, most bytes first
    /// (ties: by name).
    pub gradient_nodes: Vec<NodeShare>,
    /// Temporaries: freed before their pass ended.
    pub temporaries: Share,
    /// Live when the recording ends inside their pass: either.
    pub undetermined: Share,
}

/// Bytes and allocations of one part of the live set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Share {
    /// Requested bytes.
    pub bytes: u64,
    /// Allocations.
    pub count: u64,
}

/// The gradients one autograd node produced.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NodeShare {
    /// The node: `BmmBackward0`, `AccumulateGrad`.
    pub node: String,
    /// Requested bytes.
    pub bytes: u64,
    /// Allocations.
    pub count: u64,
}

impl Share {
    fn add(&mut self, bytes: u64) {
        self.bytes += bytes;
        self.count += 1;
    }
}

impl BackwardShare {
    /// Count one live allocation of `bytes` that node `node` made.
    pub(crate) fn add(&mut self, role: Role, node: &str, bytes: u64) {
        self.bytes += bytes;
        self.count += 1;
        match role {
            Role::Gradient => {
                self.gradients.add(bytes);
                match self.gradient_nodes.iter_mut().find(|n| n.node == node) {
                    Some(n) => {
                        n.bytes += bytes;
                        n.count += 1;
                    }
                    None => self.gradient_nodes.push(NodeShare {
                        node: node.to_string(),
                        bytes,
                        count: 1,
                    }),
                }
            }
            Role::Temporary => self.temporaries.add(bytes),
            Role::Undetermined => self.undetermined.add(bytes),
        }
    }

    /// The share with its nodes in report order.
    pub(crate) fn sorted(mut self) -> Self {
        self.gradient_nodes
            .sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.node.cmp(&b.node)));
        self
    }
}

/// The report's lines, each indented by four spaces and ended.
impl fmt::Display for BackwardShare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let part = |s: &Share| format!("{} in {}", format_bytes(s.bytes), s.count);
        writeln!(
            f,
            "    of which the backward pass {}:",
            part(&Share {
                bytes: self.bytes,
                count: self.count
            })
        )?;
        write!(f, "      gradients      {}", part(&self.gradients))?;
        let named: Vec<String> = self
            .gradient_nodes
            .iter()
            .take(NODES_NAMED)
            .map(|n| format!("{} ({})", n.node, n.count))
            .collect();
        if !named.is_empty() {
            write!(f, ", produced by {}", named.join(", "))?;
        }
        let more = self.gradient_nodes.len().saturating_sub(NODES_NAMED);
        if more > 0 {
            write!(f, " and {more} more nodes")?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "      temporaries    {}, freed before the pass ended",
            part(&self.temporaries)
        )?;
        if self.undetermined.count > 0 {
            writeln!(
                f,
                "      undetermined   {}: the recording ends inside the backward pass, before these were freed or the pass ended",
                part(&self.undetermined)
            )?;
        }
        Ok(())
    }
}
