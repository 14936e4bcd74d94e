//! What a hooked adaptor has announced, by key: (range, offset) for a
//! chunk, (0, address) for a page. Its lock is held only inside these
//! methods: never while a hook or the memory inside runs.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use super::MappedChunk;

type Key = (u64, u64);

#[derive(Default)]
pub(super) struct Mapped(Mutex<BTreeMap<Key, MappedChunk>>);

impl Mapped {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<Key, MappedChunk>> {
        // One insert or remove at a time: a panic leaves the map whole.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn insert(&self, key: Key, chunk: MappedChunk) {
        self.lock().insert(key, chunk);
    }

    pub(super) fn remove(&self, key: Key) -> Option<MappedChunk> {
        self.lock().remove(&key)
    }

    /// The announced pieces of `group` that start in `offset..+bytes`, by
    /// offset.
    pub(super) fn within(&self, group: u64, offset: u64, bytes: u64) -> Vec<(u64, MappedChunk)> {
        let end = offset.saturating_add(bytes);
        self.lock()
            .range((group, offset)..(group, end))
            .map(|(&(_, at), &m)| (at, m))
            .collect()
    }

    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    pub(super) fn take_all(&self) -> Vec<MappedChunk> {
        std::mem::take(&mut *self.lock()).into_values().collect()
    }
}
