//! Stream capture and the graph calls mem-capture makes: end capture,
//! instantiate, upload, launch, inspect nodes, destroy.

use std::sync::Arc;

use crate::capture::{CAPTURES, Capture};
use crate::driver::{DRIVER, entry, lock, ready};
use crate::graph::{Graph, GraphMemory, node_handle, node_of, release};
use crate::types::*;
use crate::work::resolve;

entry! { fn cuStreamBeginCapture_v2(stream: u64, mode: u32) {
    ready()?;
    if mode > CAPTURE_RELAXED {
        return Err(INVALID_VALUE);
    }
    if stream <= 2 {
        // The legacy default stream cannot be captured.
        return Err(STREAM_CAPTURE_UNSUPPORTED);
    }
    let s = DRIVER.stream(stream)?;
    let mut st = lock(&s.state);
    if st.capture.is_some() {
        return Err(INVALID_VALUE);
    }
    let capture = Capture::new(mode, DRIVER.handle());
    let flag = capture.invalidated.clone();
    st.capture = Some(capture);
    lock(&CAPTURES).push((stream, std::thread::current().id(), mode, flag));
    Ok(())
}}

entry! { fn cuStreamEndCapture(stream: u64, graph: *mut u64) {
    ready()?;
    let s = DRIVER.stream(stream)?;
    let mut st = lock(&s.state);
    let Some(capture) = st.capture.as_ref() else {
        return Err(INVALID_VALUE);
    };
    if capture.mode != CAPTURE_RELAXED && capture.thread != std::thread::current().id() {
        return Err(STREAM_CAPTURE_WRONG_THREAD);
    }
    let capture = st.capture.take().expect("checked above");
    lock(&CAPTURES).retain(|(h, _, _, _)| *h != stream);
    let invalidated = capture.is_invalidated();
    let memory = Arc::new(GraphMemory { bases: capture.allocs });
    if invalidated {
        release(memory);
        return Err(STREAM_CAPTURE_INVALIDATED);
    }
    let handle = DRIVER.handle();
    lock(&DRIVER.graphs).graphs.insert(handle, Graph { nodes: capture.nodes, memory });
    // SAFETY: the caller's out-parameter (a CUgraph).
    unsafe { put(graph, handle) }
}}

fn status(stream: u64) -> Result<(u32, u64), CuResult> {
    let s = DRIVER.stream(stream)?;
    let st = lock(&s.state);
    Ok(match &st.capture {
        None => (0, 0),
        Some(c) if c.is_invalidated() => (2, c.id),
        Some(c) => (1, c.id),
    })
}

entry! { fn cuStreamIsCapturing(stream: u64, out: *mut u32) {
    ready()?;
    let (status, _) = status(stream)?;
    // SAFETY: the caller's out-parameter (a CUstreamCaptureStatus).
    unsafe { put(out, status) }
}}

entry! { fn cuStreamGetCaptureInfo_v2(
    stream: u64,
    status_out: *mut u32,
    id_out: *mut u64,
    graph_out: *mut u64,
    deps_out: *mut *const u64,
    count_out: *mut usize,
) {
    ready()?;
    let (status, id) = status(stream)?;
    // SAFETY: the caller's out-parameters; all but the status may be null.
    unsafe {
        put(status_out, status)?;
        if !id_out.is_null() {
            put(id_out, id)?;
        }
        if !graph_out.is_null() {
            // The capture's graph is built at the end; not handed out early.
            put(graph_out, 0)?;
        }
        if !deps_out.is_null() {
            put(deps_out, std::ptr::null())?;
        }
        if !count_out.is_null() {
            put(count_out, 0)?;
        }
    }
    Ok(())
}}

entry! { fn cuGraphInstantiateWithFlags(exec: *mut u64, graph: u64, flags: u64) {
    ready()?;
    if flags != 0 {
        return Err(NOT_SUPPORTED);
    }
    let mut graphs = lock(&DRIVER.graphs);
    let g = graphs.graphs.get(&graph).ok_or(INVALID_HANDLE)?;
    let instance = Graph { nodes: g.nodes.clone(), memory: g.memory.clone() };
    let handle = DRIVER.handle();
    graphs.execs.insert(handle, instance);
    // SAFETY: the caller's out-parameter (a CUgraphExec).
    unsafe { put(exec, handle) }
}}

entry! { fn cuGraphUpload(exec: u64, stream: u64) {
    ready()?;
    DRIVER.stream(stream)?;
    lock(&DRIVER.graphs).execs.get(&exec).map(drop).ok_or(INVALID_HANDLE)
}}

entry! { fn cuGraphLaunch(exec: u64, stream: u64) {
    ready()?;
    let nodes = lock(&DRIVER.graphs).execs.get(&exec).ok_or(INVALID_HANDLE)?.nodes.clone();
    let s = DRIVER.stream(stream)?;
    let mut st = lock(&s.state);
    if st.capture.is_some() {
        // Launching a graph into a capture (a child graph) is not modelled.
        return Err(NOT_SUPPORTED);
    }
    let mut works = Vec::with_capacity(nodes.len());
    for (i, raw) in nodes.iter().enumerate() {
        let what = format!("node {i} of graph {exec:#x} launched on stream {stream:#x}");
        // A node over memory gone since the capture (recorded by
        // `resolve`): on a GPU the launch would fault.
        let work = resolve(raw, &what, s.device).map_err(|_| ILLEGAL_ADDRESS)?;
        works.push((work, what));
    }
    for (work, what) in works {
        s.push(&mut st, work, what);
    }
    Ok(())
}}

entry! { fn cuGraphExecDestroy(exec: u64) {
    ready()?;
    let g = lock(&DRIVER.graphs).execs.remove(&exec).ok_or(INVALID_HANDLE)?;
    release(g.memory);
    Ok(())
}}

entry! { fn cuGraphDestroy(graph: u64) {
    ready()?;
    let g = lock(&DRIVER.graphs).graphs.remove(&graph).ok_or(INVALID_HANDLE)?;
    release(g.memory);
    Ok(())
}}

entry! { fn cuGraphGetNodes(graph: u64, nodes: *mut u64, count: *mut usize) {
    ready()?;
    let n = lock(&DRIVER.graphs).graphs.get(&graph).ok_or(INVALID_HANDLE)?.nodes.len();
    if nodes.is_null() {
        // SAFETY: the caller's out-parameter.
        return unsafe { put(count, n) };
    }
    // SAFETY: the caller's in/out count.
    let room = unsafe { get(count.cast_const()) }?;
    for i in 0..n.min(room) {
        // SAFETY: `nodes` has room for `room` handles (the contract).
        unsafe { nodes.add(i).write(node_handle(graph, i)) };
    }
    // SAFETY: as above.
    unsafe { put(count, n.min(room)) }
}}

entry! { fn cuGraphNodeGetType(node: u64, kind: *mut u32) {
    ready()?;
    let (graph, index) = node_of(node);
    let graphs = lock(&DRIVER.graphs);
    let raw = graphs.graphs.get(&graph).and_then(|g| g.nodes.get(index)).ok_or(INVALID_HANDLE)?;
    let t = raw.node_type();
    // SAFETY: the caller's out-parameter (a CUgraphNodeType).
    unsafe { put(kind, t) }
}}
