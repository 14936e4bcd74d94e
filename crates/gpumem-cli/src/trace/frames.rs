//! A stack trace, reduced to the one frame a reader of a memory report
//! wants: the first frame in the program's own code.
//!
//! PyTorch records stacks innermost first, and the innermost frames are the
//! framework's (`torch/nn/modules/linear.py`), the same for every
//! allocation; grouping by them would put everything under "forward". So
//! the origin is the first frame outside the framework and the Python
//! runtime, written `name (dir/file.py:line)`; a stack made only of
//! framework frames falls back to its innermost one.

/// One frame as a source writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frame<'a> {
    pub(crate) file: &'a str,
    pub(crate) line: u64,
    pub(crate) name: &'a str,
}

/// Path fragments of code that allocates on every program's behalf.
const FRAMEWORK: &[&str] = &[
    "/torch/",
    "/site-packages/",
    "/dist-packages/",
    "/lib/python",
    "<frozen",
    "<built-in",
];

fn in_framework(file: &str) -> bool {
    file.is_empty() || file == "??" || FRAMEWORK.iter().any(|f| file.contains(f))
}

/// The last two components of `path` (enough to tell files apart).
fn short(path: &str) -> &str {
    let mut cut = path.len();
    for _ in 0..2 {
        match path[..cut].rfind('/') {
            Some(at) => cut = at,
            None => return path,
        }
    }
    &path[cut + 1..]
}

/// The origin of a stack, innermost frame first (module docs); `None` for
/// an empty stack.
pub(crate) fn origin<'a>(frames: impl IntoIterator<Item = Frame<'a>>) -> Option<String> {
    let mut first = None;
    for frame in frames {
        if !in_framework(frame.file) {
            return Some(describe(frame));
        }
        first.get_or_insert(frame);
    }
    first.map(describe)
}

fn describe(frame: Frame<'_>) -> String {
    format!("{} ({}:{})", frame.name, short(frame.file), frame.line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(file: &str, line: u64, name: &str) -> Frame<'static> {
        let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
        Frame {
            file: leak(file),
            line,
            name: leak(name),
        }
    }

    #[test]
    fn the_first_frame_outside_the_framework_names_the_origin() {
        let stack = [
            f(
                "/usr/lib/python3.11/site-packages/torch/nn/modules/linear.py",
                125,
                "forward",
            ),
            f("/home/me/model/attention.py", 88, "attend"),
            f("/home/me/train.py", 12, "step"),
        ];
        assert_eq!(origin(stack), Some("attend (model/attention.py:88)".into()));
    }

    #[test]
    fn a_stack_of_framework_frames_falls_back_to_the_innermost() {
        let stack = [f("/x/torch/functional.py", 3, "mm"), f("??", 0, "??")];
        assert_eq!(origin(stack), Some("mm (torch/functional.py:3)".into()));
        assert_eq!(origin([]), None);
    }
}
