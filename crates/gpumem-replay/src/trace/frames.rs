//! A stack trace, reduced to the one frame a reader of a memory report
//! wants: the first frame in the program's own code.
//!
//! PyTorch records stacks innermost first. With `stacks='all'` a stack
//! starts with native frames — the recorder itself (`torch::unwind`,
//! `gather_with_cpp` in `memory_snapshot.cpp`), the caching allocator
//! (`c10::cuda::CUDACachingAllocator`), the interpreter (`_PyEval_…`,
//! file `??`) — then the framework's Python (`torch/nn/modules/module.py`),
//! and only then the user's `forward`. These are the same for every
//! allocation, so grouping by them puts everything under one name.
//!
//! The origin is therefore:
//! 1. in a stack with any Python frame, the first Python frame outside the
//!    framework (native frames are never an origin there);
//! 2. in a stack without a user Python frame that runs an autograd node
//!    (the backward pass, on the engine's C++ thread), the node and the
//!    ATen op inside it, `backward: MeanBackward0 (div_Scalar)`, with the
//!    forward line that created the node when the snapshot kept it
//!    (`autograd.rs`);
//! 3. in a stack of native frames only (a C++ program's JSONL, a
//!    communication thread), the first frame that is neither the runtime's
//!    (`??`, empty files, `torch::`, `c10::`, `at::`, `THP`, `_Py`, `std::`
//!    names, PyTorch's C++ sources, a thread's entry: `pthread_*`,
//!    `start_thread`, `execute_native_thread_routine`, `clone`) nor the
//!    framework's;
//! 4. failing all, the innermost Python frame, else the innermost frame
//!    that is not the runtime's, else the innermost frame that is not the
//!    machinery every allocation passes through (the stack unwinder and
//!    the recorder around it, `torch::unwind::unwind()`, `gather_with_cpp`;
//!    the caching allocator and `at::detail::empty_*`; a thread's or the
//!    process's entry; a frame without a symbol), else none: such a frame
//!    names every allocation alike, so it is never an origin.
//!
//! `autograd.rs` reads the node from function names; this file calls it,
//! and it imports nothing from here.
//!
//! [`GroupBy`] decides how the chosen frame is named: its line (the
//! default), its function, its file or its module.

use super::autograd::{self, Backward};

/// One frame as a source writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frame<'a> {
    pub(crate) file: &'a str,
    pub(crate) line: u64,
    pub(crate) name: &'a str,
}

/// How an origin frame is named, and so how allocations are grouped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum GroupBy {
    /// The call site: `forward (model/attention.py:88)`.
    #[default]
    Line,
    /// The function, all its lines together: `forward (model/attention.py)`.
    Function,
    /// The file: `model/attention.py`.
    File,
    /// The Python module the file is: `model.attention` (`__init__.py`
    /// names its package).
    Module,
}

/// Path fragments of Python code that allocates on every program's behalf.
const FRAMEWORK: &[&str] = &[
    "/torch/",
    "/site-packages/",
    "/dist-packages/",
    "/lib/python",
    "<frozen",
    "<built-in",
];

/// Function-name prefixes of native runtime frames: PyTorch's C++, the
/// CPython interpreter, the C++ and C runtimes.
const RUNTIME_NAMES: &[&str] = &[
    "torch::",
    "c10::",
    "at::",
    "caffe2::",
    "pybind11::",
    "std::",
    "THP",
    "_Py",
    "Py",
    "method_vectorcall",
    "cfunction_",
    "slot_tp_",
    "__libc_",
    "_start",
    "??",
];

/// Functions that start a thread and say nothing of what it runs (whole
/// names, arguments aside), and prefixes of the thread library's own.
const THREAD_ENTRIES: &[&str] = &[
    "execute_native_thread_routine",
    "start_thread",
    "thread_start",
    "clone",
    "clone3",
    "__clone",
    "__clone3",
];
const THREAD_PREFIXES: &[&str] = &["pthread_", "__pthread_", "std::thread"];

/// The process's entry, skipped as a thread's is.
const PROCESS_ENTRIES: &[&str] = &["_start", "__libc_start_main", "__libc_start_call_main"];

/// Function-name prefixes of the recorder, its stack unwinder and the
/// caching allocator: the frames on top of every recorded stack.
const MACHINERY_NAMES: &[&str] = &[
    "torch::unwind::",
    "torch::CapturedTraceback",
    "torch::cuda::(anonymous namespace)::gather",
    "gather_with_cpp",
    "c10::cuda::CUDACachingAllocator::",
    "c10::CachingDeviceAllocator",
    "c10::cuda::CUDAAllocator",
    "c10::StorageImpl",
    "at::detail::empty_",
    "??",
];

/// Their source files, for frames whose name is mangled or cut.
const MACHINERY_FILES: &[&str] = &[
    "unwind.cpp",
    "combined_traceback.cpp",
    "memory_snapshot.cpp",
    "CUDACachingAllocator.cpp",
];

/// Whether `frame` is the machinery every allocation passes through
/// (module docs, rule 4): never an origin, even of a stack with nothing
/// else.
fn is_machinery(frame: &Frame<'_>) -> bool {
    let bare = frame.name.split('(').next().unwrap_or(frame.name).trim();
    bare.is_empty()
        || is_thread_entry(frame.name)
        || PROCESS_ENTRIES.contains(&bare)
        || MACHINERY_NAMES.iter().any(|p| frame.name.starts_with(p))
        || MACHINERY_FILES.iter().any(|f| frame.file.ends_with(f))
}

pub(crate) fn is_thread_entry(name: &str) -> bool {
    let bare = name.split('(').next().unwrap_or(name).trim();
    THREAD_ENTRIES.contains(&bare) || THREAD_PREFIXES.iter().any(|p| bare.starts_with(p))
}

/// File-path fragments of PyTorch's and CPython's native sources.
const RUNTIME_FILES: &[&str] = &[
    "/torch/csrc/",
    "/aten/",
    "/c10/",
    "memory_snapshot.cpp",
    "CUDACachingAllocator.cpp",
    "python_variable.cpp",
    "combined_traceback.cpp",
    "unwind.cpp",
    "Python/ceval.c",
    "Objects/",
];

/// Whether `frame` is Python code: a `.py` file, or a pseudo-file the
/// interpreter names in angle brackets (`<stdin>`, `<ipython-input-3-…>`).
pub(crate) fn is_python(frame: &Frame<'_>) -> bool {
    let file = frame.file;
    file.ends_with(".py") || (file.starts_with('<') && file.ends_with('>'))
}

/// Folders that name an installed framework at the start of a relative
/// path: `torch.profiler` names files from their `sys.path` entry
/// (`torch/nn/modules/module.py`), as in the repository's own traces.
const FRAMEWORK_ROOTS: &[&str] = &["torch/", "torchvision/", "transformers/"];

fn in_framework(file: &str) -> bool {
    FRAMEWORK.iter().any(|f| file.contains(f))
        || FRAMEWORK_ROOTS.iter().any(|f| file.starts_with(f))
}

/// Whether `frame` is the native runtime's (never an origin).
fn is_runtime(frame: &Frame<'_>) -> bool {
    let file = frame.file;
    file.is_empty()
        || file == "??"
        || RUNTIME_NAMES.iter().any(|p| frame.name.starts_with(p))
        || is_thread_entry(frame.name)
        || RUNTIME_FILES.iter().any(|f| file.contains(f))
        || (file.contains("/torch/") && !is_python(frame))
}

/// What names a stack: one of its frames, or the autograd node it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick<'a> {
    Frame(usize),
    Node(Backward<'a>),
}

/// The origin of a stack, innermost first (module docs).
fn pick<'a>(frames: &[Frame<'a>]) -> Option<Pick<'a>> {
    let python = frames.iter().any(is_python);
    let user_python = |f: &Frame<'_>| is_python(f) && !in_framework(f.file);
    let user_native = |f: &Frame<'_>| !is_runtime(f) && !in_framework(f.file);
    if let Some(i) = frames.iter().position(user_python) {
        return Some(Pick::Frame(i));
    }
    if let Some(node) = autograd::backward(frames.iter().map(|f| f.name)) {
        return Some(Pick::Node(node));
    }
    let native = (!python).then(|| frames.iter().position(user_native));
    native
        .flatten()
        .or_else(|| frames.iter().position(is_python))
        .or_else(|| frames.iter().position(|f| !is_runtime(f)))
        .or_else(|| frames.iter().position(|f| !is_machinery(f)))
        .map(Pick::Frame)
}

/// The index of the origin frame of a stack, innermost first; `None` for
/// an empty stack or one named by its autograd node.
pub(crate) fn origin_index(frames: &[Frame<'_>]) -> Option<usize> {
    match pick(frames)? {
        Pick::Frame(i) => Some(i),
        Pick::Node(_) => None,
    }
}

/// The origin of a stack, innermost frame first, named as `by` says.
#[cfg(test)]
pub(crate) fn origin<'a>(
    frames: impl IntoIterator<Item = Frame<'a>>,
    by: GroupBy,
) -> Option<String> {
    let frames: Vec<Frame<'a>> = frames.into_iter().collect();
    origin_with_forward(&frames, &[], by)
}

/// The origin of a stack whose autograd node (if any) was created by the
/// forward stack `forward` (innermost first; empty when not recorded).
pub(crate) fn origin_with_forward(
    frames: &[Frame<'_>],
    forward: &[Frame<'_>],
    by: GroupBy,
) -> Option<String> {
    match pick(frames)? {
        Pick::Frame(i) => Some(describe(frames[i], by)),
        Pick::Node(node) => {
            let line = origin_index(forward).map(|i| describe(forward[i], by));
            Some(describe_backward(node, line, by))
        }
    }
}

/// The backward pass's origin: `backward: MmBackward0 (mm)`, and `for`
/// the forward line when known (by function: no op; by file or module:
/// the forward's file or module, else the node).
fn describe_backward(node: Backward<'_>, forward: Option<String>, by: GroupBy) -> String {
    let head = match (by, node.op) {
        (GroupBy::Line, Some(op)) => format!("backward: {} ({op})", node.node),
        _ => format!("backward: {}", node.node),
    };
    match (by, forward) {
        (GroupBy::Line | GroupBy::Function, Some(line)) => format!("{head} for {line}"),
        (_, Some(file)) => format!("backward: {file}"),
        (_, None) => head,
    }
}

/// The autograd node of a stack (innermost first) that has no user Python
/// frame: the backward pass's memory; `None` for any other stack.
pub(crate) fn backward_node<'a>(frames: &[Frame<'a>]) -> Option<Backward<'a>> {
    match pick(frames)? {
        Pick::Node(node) => Some(node),
        Pick::Frame(_) => None,
    }
}

/// The last `n` components of `path` (enough to tell files apart).
fn last_components(path: &str, n: usize) -> &str {
    let mut cut = path.len();
    for _ in 0..n {
        match path[..cut].rfind('/') {
            Some(at) => cut = at,
            None => return path,
        }
    }
    &path[cut + 1..]
}

/// The dotted module of a Python file: its last three components, without
/// `.py`; `pkg/__init__.py` is `pkg`. Other files keep their name.
fn module(file: &str) -> String {
    let Some(stem) = file.strip_suffix(".py") else {
        return last_components(file, 2).to_string();
    };
    let stem = stem.strip_suffix("/__init__").unwrap_or(stem);
    last_components(stem, 3).replace('/', ".")
}

/// `frame` named as `by` says.
pub(crate) fn describe(frame: Frame<'_>, by: GroupBy) -> String {
    let file = last_components(frame.file, 2);
    match by {
        GroupBy::Line => format!("{} ({file}:{})", frame.name, frame.line),
        GroupBy::Function => format!("{} ({file})", frame.name),
        GroupBy::File => file.to_string(),
        GroupBy::Module => module(frame.file),
    }
}

#[cfg(test)]
#[path = "frames_tests.rs"]
mod tests;
