//! Picking and naming the origin frame of real-shaped stacks.

use super::*;

fn f(file: &'static str, line: u64, name: &'static str) -> Frame<'static> {
    Frame { file, line, name }
}

/// A `stacks='all'` stack as PyTorch records it: the recorder, the caching
/// allocator, the interpreter, the framework's Python, then the user's.
fn cpp_stack() -> Vec<Frame<'static>> {
    let mut stack = recorder_frames().to_vec();
    stack.extend([
        f("", 0, "c10::StorageImpl::~StorageImpl()"),
        f(
            "python_variable.cpp",
            0,
            "THPVariable_subclass_dealloc(_object*)",
        ),
        f("EmptyTensor.cpp", 0, "at::detail::empty_cuda(...)"),
        f("??", 0, "_PyEval_EvalFrameDefault"),
        f("??", 0, "method_vectorcall_VARARGS_KEYWORDS"),
        f(
            "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py",
            125,
            "forward",
        ),
        f(
            "/usr/lib/python3/dist-packages/torch/nn/modules/module.py",
            1747,
            "_call_impl",
        ),
        f("??", 0, "_PyObject_MakeTpCall"),
        f("/home/me/proj/model/transformer.py", 208, "forward"),
        f(
            "/usr/lib/python3/dist-packages/torch/nn/modules/module.py",
            1736,
            "_wrapped_call_impl",
        ),
        f("/home/me/proj/train.py", 88, "train_step"),
        f("??", 0, "Py_BytesMain"),
        f("", 0, "__libc_start_main"),
    ]);
    stack
}

/// The frames every recorded C++ stack starts with: the unwinder, the
/// recorder and the allocator.
fn recorder_frames() -> [Frame<'static>; 4] {
    [
        f("??", 0, "torch::unwind::unwind()"),
        f(
            "??",
            0,
            "torch::CapturedTraceback::gather(bool, bool, bool)",
        ),
        f(
            "memory_snapshot.cpp",
            0,
            "torch::cuda::(anonymous namespace)::gather_with_cpp()",
        ),
        f(
            "CUDACachingAllocator.cpp",
            0,
            "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)",
        ),
    ]
}

#[test]
fn the_users_first_python_frame_is_the_origin_of_a_cpp_stack() {
    let stack = cpp_stack();
    assert_eq!(origin_index(&stack), Some(12));
    assert_eq!(
        origin(stack, GroupBy::Line),
        Some("forward (model/transformer.py:208)".into())
    );
}

#[test]
fn native_frames_are_never_an_origin_while_python_frames_exist() {
    // Only the framework's Python besides native frames: its innermost
    // Python frame, not the recorder's.
    let stack = [
        f("??", 0, "torch::unwind::unwind()"),
        f("memory_snapshot.cpp", 0, "gather_with_cpp()"),
        f("/x/site-packages/torch/optim/adam.py", 3, "step"),
    ];
    assert_eq!(
        origin(stack, GroupBy::Line),
        Some("step (optim/adam.py:3)".into())
    );
    for frame in &cpp_stack()[..9] {
        assert!(!is_python(frame) && is_runtime(frame), "{frame:?}");
    }
    assert!(is_python(&f("/home/me/a.py", 1, "PyLoader")));
    assert!(is_python(&f("<stdin>", 1, "<module>")));
}

#[test]
fn a_native_only_stack_names_its_first_frame_outside_the_runtime() {
    let stack = [
        f("??", 0, "torch::unwind::unwind()"),
        f("CUDACachingAllocator.cpp", 0, "c10::cuda::malloc"),
        f("/src/engine/kv_cache.cpp", 41, "KvCache::grow"),
        f("/src/main.cpp", 9, "main"),
    ];
    assert_eq!(
        origin(stack, GroupBy::Line),
        Some("KvCache::grow (engine/kv_cache.cpp:41)".into())
    );
    let runtime_only = [
        f("??", 0, "torch::unwind::unwind()"),
        f("CUDACachingAllocator.cpp", 0, "c10::cuda::malloc"),
        f("EmptyTensor.cpp", 0, "at::detail::empty_cuda(...)"),
        f("??", 0, "at::_ops::add_Tensor::call(at::Tensor const&)"),
        f("", 0, "_start"),
    ];
    assert_eq!(
        origin(runtime_only, GroupBy::Line),
        Some("at::_ops::add_Tensor::call(at::Tensor const&) (??:0)".into()),
        "nothing better: the innermost frame past the recorder and the allocator"
    );
    assert_eq!(origin([], GroupBy::Line), None);
}

#[test]
fn the_unwinder_the_recorder_and_the_allocator_are_never_an_origin() {
    // A stack of nothing but the machinery every allocation passes
    // through names no origin: any of its frames would name them all.
    let mut machinery = recorder_frames().to_vec();
    machinery.extend([
        f(
            "EmptyTensor.cpp",
            0,
            "at::detail::empty_cuda(c10::ArrayRef<long>, ...)",
        ),
        f("??", 0, "??"),
        f("c++11/thread.cc", 82, "execute_native_thread_routine"),
        f("./nptl/pthread_create.c", 442, "start_thread"),
        f("", 0, "__libc_start_main"),
    ]);
    assert_eq!(origin(machinery.iter().copied(), GroupBy::Line), None);
    for frame in &machinery {
        assert!(is_machinery(frame), "{frame:?}");
    }
    assert!(!is_machinery(&f(
        "??",
        0,
        "at::_ops::mm::call(at::Tensor const&)"
    )));
    assert!(!is_machinery(&f("/src/w.cpp", 3, "clone_weights")));
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
    assert_eq!(
        origin(stack, GroupBy::Line),
        Some("attend (model/attention.py:88)".into())
    );
}

#[test]
fn group_by_names_the_line_the_function_the_file_or_the_module() {
    let frame = f("/home/me/proj/model/attention.py", 88, "attend");
    assert_eq!(
        describe(frame, GroupBy::Line),
        "attend (model/attention.py:88)"
    );
    assert_eq!(
        describe(frame, GroupBy::Function),
        "attend (model/attention.py)"
    );
    assert_eq!(describe(frame, GroupBy::File), "model/attention.py");
    assert_eq!(describe(frame, GroupBy::Module), "proj.model.attention");
    let init = f("/home/me/proj/model/__init__.py", 3, "build");
    assert_eq!(describe(init, GroupBy::Module), "me.proj.model");
    assert_eq!(describe(f("train.py", 1, "main"), GroupBy::Module), "train");
}

#[test]
fn a_profiler_stack_with_relative_framework_paths_is_named_by_the_model_code() {
    // As traces/record.py writes them: torch.profiler names installed
    // files from their sys.path entry.
    let stack = [
        f("torch/nn/functional.py", 2621, "embedding"),
        f("torch/nn/modules/sparse.py", 189, "forward"),
        f("torch/nn/modules/module.py", 1798, "_call_impl"),
        f("traces/record.py", 139, "forward"),
        f("traces/record.py", 289, "gpt2_train"),
    ];
    assert_eq!(
        origin(stack, GroupBy::Line).as_deref(),
        Some("forward (traces/record.py:139)")
    );
}

#[test]
fn a_threads_entry_frames_are_the_runtimes_and_never_an_origin() {
    let stack = [
        f("??", 0, "torch::unwind::unwind()"),
        f("CUDACachingAllocator.cpp", 0, "c10::cuda::malloc"),
        f("/src/comm/ring.cpp", 7, "Ring::exchange"),
        f("c++11/thread.cc", 82, "execute_native_thread_routine"),
        f("./nptl/pthread_create.c", 442, "start_thread"),
        f("clone3.S", 81, "clone3"),
    ];
    assert_eq!(
        origin(stack, GroupBy::Line),
        Some("Ring::exchange (comm/ring.cpp:7)".into())
    );
    for frame in &stack[3..] {
        assert!(is_runtime(frame), "{frame:?}");
    }
    assert!(!is_runtime(&f("/src/w.cpp", 3, "clone_weights")));
}

#[test]
fn a_user_python_frame_still_names_a_stack_that_runs_a_node() {
    // Backward on the calling thread (CPU tensors): `loss.backward()` is
    // the user's line, and it stays the origin.
    let stack = [
        f(
            "??",
            0,
            "at::_ops::mm::call(at::Tensor const&, at::Tensor const&)",
        ),
        f(
            "??",
            0,
            "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)",
        ),
        f("/home/me/train.py", 40, "step"),
    ];
    assert_eq!(
        origin(stack, GroupBy::Line),
        Some("step (me/train.py:40)".into())
    );
    assert_eq!(backward_node(&stack), None);
    let engine_only = &stack[..2];
    assert_eq!(
        origin(engine_only.iter().copied(), GroupBy::Line),
        Some("backward: MmBackward0 (mm)".into())
    );
}
