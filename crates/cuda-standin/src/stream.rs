//! Streams: a queue and a worker thread each, so queued work really is
//! pending while the host goes on, and runs in order.
//!
//! `submitted` counts what was queued, `completed` what ran; an event is a
//! (stream, count) pair, complete once `completed` reaches it. A capturing
//! stream records work into its capture instead of queuing it.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};

use crate::capture::Capture;
use crate::exec::execute;
use crate::sync::lock;
use crate::types::Outcome;
use crate::work::{Raw, Work, resolve};

pub struct Op {
    pub work: Work,
    pub what: String,
}

#[derive(Default)]
pub struct StreamState {
    pub queue: VecDeque<Op>,
    pub submitted: u64,
    pub completed: u64,
    pub capture: Option<Capture>,
    pub destroyed: bool,
}

pub struct Stream {
    pub handle: u64,
    /// The device whose context made it: its work touches memory as
    /// that device.
    pub device: usize,
    pub state: Mutex<StreamState>,
    pub cv: Condvar,
}

impl Stream {
    /// A stream of device `device` and its worker.
    pub fn spawn(handle: u64, device: usize) -> Arc<Stream> {
        let stream = Arc::new(Stream {
            handle,
            device,
            state: Mutex::new(StreamState::default()),
            cv: Condvar::new(),
        });
        let worker = stream.clone();
        std::thread::Builder::new()
            .name(format!("standin-stream-{handle:#x}"))
            .spawn(move || worker.run())
            .expect("a stream worker thread");
        stream
    }

    fn run(&self) {
        loop {
            let op = {
                let mut st = lock(&self.state);
                loop {
                    if let Some(op) = st.queue.pop_front() {
                        break op;
                    }
                    if st.destroyed {
                        return;
                    }
                    st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
                }
            };
            execute(op.work, &op.what);
            let mut st = lock(&self.state);
            st.completed += 1;
            self.cv.notify_all();
        }
    }

    /// Queue resolved work (the caller holds the state lock).
    pub fn push(&self, st: &mut StreamState, work: Work, what: String) -> u64 {
        st.queue.push_back(Op { work, what });
        st.submitted += 1;
        self.cv.notify_all();
        st.submitted
    }

    /// Queue `raw`, or record it when the stream is capturing.
    pub fn submit(&self, raw: Raw, what: String) -> Outcome {
        let mut st = lock(&self.state);
        if let Some(capture) = st.capture.as_mut() {
            return capture.record(raw, &what, self.device);
        }
        let work = resolve(&raw, &what, self.device)?;
        self.push(&mut st, work, what);
        Ok(())
    }

    /// Block until `upto` operations have completed.
    pub fn wait_for(&self, upto: u64) {
        let mut st = lock(&self.state);
        while st.completed < upto {
            st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Block until everything queued so far has run.
    pub fn drain(&self) {
        let upto = lock(&self.state).submitted;
        self.wait_for(upto);
    }

    /// Whether everything queued so far has run.
    pub fn idle(&self) -> bool {
        let st = lock(&self.state);
        st.completed == st.submitted
    }
}
