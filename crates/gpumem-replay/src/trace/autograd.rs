//! The backward pass in a native stack: which autograd node allocated, by
//! which ATen op, and the forward line that created the node.
//!
//! PyTorch runs `loss.backward()` on its autograd engine's own C++ thread,
//! so a backward allocation's stack holds no Python frame. Innermost first
//! it reads: the recorder, the caching allocator, `at::detail::empty_cuda`,
//! an ATen op (`at::_ops::div_Scalar::call`), the autograd node that ran it
//! (`torch::autograd::generated::MeanBackward0::apply`,
//! `torch::autograd::AccumulateGrad::apply`), then the engine
//! (`Engine::evaluate_function`, `thread_main`) and the thread's entry
//! (`execute_native_thread_routine`, `start_thread`, `clone`). The node is
//! the frame that names the code: it is the origin, with the op inside it.
//!
//! A snapshot may also keep, per event, the forward stack of the node
//! (`forward_frames`: the Python traceback, as text, of the forward call
//! that created it — PyTorch's memory viewer shows it as "where this
//! tensor was created"). Its innermost user line names the origin too.
//!
//! This file reads function names only and imports nothing from its
//! siblings: `frames.rs` and `stacks.rs` call into it, never the reverse.

/// The node that updates a parameter's `.grad`: what it allocates is a
/// gradient. It allocates only to add into an existing `.grad`: a leaf's
/// first gradient is the producing node's output, which it steals, so
/// another node's allocation is a gradient too when it outlives the pass
/// (`attribution` tells them apart by lifetime).
pub(crate) const GRADIENT_NODE: &str = "AccumulateGrad";

/// What the backward part of a stack says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Backward<'a> {
    /// The autograd node: `MeanBackward0`, `AccumulateGrad`.
    pub(crate) node: &'a str,
    /// The ATen op the node called: `div_Scalar` (the outermost
    /// `at::_ops::…::call` inside the node).
    pub(crate) op: Option<&'a str>,
}

impl Backward<'_> {
    /// Whether the node is the one that writes a parameter's `.grad`.
    pub(crate) fn is_gradient(&self) -> bool {
        self.node == GRADIENT_NODE
    }
}

/// The autograd node a frame runs, from its function name:
/// `torch::autograd::generated::MeanBackward0::apply(…)` is
/// `MeanBackward0`. The engine's and the base class's own frames are not.
fn node_of(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("torch::autograd::")?;
    let at = rest.find("::apply")?;
    let path = &rest[..at];
    if path.replace("(anonymous namespace)", "").contains('(') {
        return None; // `::apply` inside another function's arguments
    }
    let node = path.rsplit("::").next()?;
    let is_engine = path.starts_with("Engine") || node == "Node" || node.is_empty();
    (!is_engine).then_some(node)
}

/// Whether a frame is the autograd engine's own (`Engine::thread_main`,
/// `Engine::evaluate_function`, `PythonEngine::thread_init`): a stack
/// through it runs inside a backward pass even without a node frame (a
/// hook, the engine summing two incoming gradients).
pub(crate) fn is_engine(name: &str) -> bool {
    name.strip_prefix("torch::autograd::").is_some_and(|rest| {
        rest.starts_with("Engine::") || rest.starts_with("python::PythonEngine::")
    })
}

/// The op of an `at::_ops::NAME::call(…)` frame: `NAME`.
fn op_of(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("at::_ops::")?;
    let at = rest.find("::call")?;
    Some(&rest[..at])
}

/// The backward node and op of a stack given by its function names,
/// innermost first; `None` when no frame runs an autograd node.
pub(crate) fn backward<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<Backward<'a>> {
    // Ops sit inside (before) the node: the last one seen is the outermost.
    let mut op = None;
    for name in names {
        if let Some(node) = node_of(name) {
            return Some(Backward { node, op });
        }
        op = op_of(name).or(op);
    }
    None
}

/// The frames of a `forward_frames` traceback (lines as Python's
/// `traceback.format_stack` writes them: `  File "x.py", line 12, in f`
/// then the source line), outermost first as written; each is
/// `(file, line, function)`. Lines of another shape are skipped.
pub(crate) fn forward_frames(text: &str) -> Vec<(&str, u64, &str)> {
    text.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix("File \"")?;
            let (file, rest) = rest.split_once("\", line ")?;
            let (number, name) = rest.split_once(", in ")?;
            Some((file, number.trim().parse().ok()?, name.trim()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &'static str) -> &'static str {
        name
    }

    #[test]
    fn a_generated_node_and_the_op_it_called_are_found_inside_the_engine() {
        let stack = [
            f("torch::unwind::unwind()"),
            f("at::detail::empty_cuda(c10::ArrayRef<long>, ...)"),
            f(
                "at::(anonymous namespace)::wrapper_CUDA_div_Scalar(at::Tensor const&, c10::Scalar const&)",
            ),
            f("at::_ops::div_Tensor::call(at::Tensor const&, at::Tensor const&)"),
            f("at::_ops::div_Scalar::call(at::Tensor const&, c10::Scalar const&)"),
            f(
                "torch::autograd::generated::MeanBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
            ),
            f(
                "torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
            ),
            f(
                "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)",
            ),
            f(
                "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
            ),
            f("execute_native_thread_routine"),
        ];
        let b = backward(stack).unwrap();
        assert_eq!(b.node, "MeanBackward0");
        assert_eq!(b.op, Some("div_Scalar"), "the op the node called");
        assert!(!b.is_gradient());
        let grad = [
            f("at::_ops::clone::call(at::Tensor const&, std::optional<c10::MemoryFormat>)"),
            f(
                "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
            ),
        ];
        let b = backward(grad).unwrap();
        assert_eq!((b.node, b.op), ("AccumulateGrad", Some("clone")));
        assert!(b.is_gradient());
    }

    #[test]
    fn the_engines_own_frames_are_no_node() {
        let stack = [
            f("torch::autograd::Engine::apply_something()"),
            f("torch::autograd::Node::apply()"),
            f(
                "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)",
            ),
            f("start_thread"),
        ];
        assert_eq!(backward(stack), None);
    }

    #[test]
    fn the_engines_frames_are_told_from_a_node_and_from_other_torch_code() {
        assert!(is_engine(
            "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&)"
        ));
        assert!(is_engine(
            "torch::autograd::python::PythonEngine::thread_init(int, bool)"
        ));
        assert!(!is_engine(
            "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)"
        ));
        assert!(!is_engine(
            "torch::autograd::InputBuffer::add(unsigned long)"
        ));
    }

    #[test]
    fn a_forward_traceback_reads_as_frames() {
        let text = "  File \"/home/me/train.py\", line 30, in <module>\n    loss = model(x).mean()\n  File \"/home/me/model.py\", line 12, in forward\n    return self.fc(x)\nnot a frame\n";
        assert_eq!(
            forward_frames(text),
            [
                ("/home/me/train.py", 30, "<module>"),
                ("/home/me/model.py", 12, "forward")
            ]
        );
    }
}
