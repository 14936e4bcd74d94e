//! Events: the point a stream's work had reached when it was recorded.

use std::sync::{Arc, Mutex};

use crate::stream::Stream;
use crate::sync::lock;

#[derive(Default)]
pub struct Event {
    /// The stream and its submitted count at the last record (none: never
    /// recorded, which is complete).
    pub at: Mutex<Option<(Arc<Stream>, u64)>>,
    /// Recorded inside a capture: a node of a graph, not a point of a
    /// stream's work.
    pub captured: Mutex<bool>,
}

impl Event {
    pub fn point(&self) -> Option<(Arc<Stream>, u64)> {
        lock(&self.at).clone()
    }

    pub fn is_complete(&self) -> bool {
        match self.point() {
            None => true,
            Some((stream, upto)) => lock(&stream.state).completed >= upto,
        }
    }

    pub fn synchronize(&self) {
        if let Some((stream, upto)) = self.point() {
            stream.wait_for(upto);
        }
    }
}
