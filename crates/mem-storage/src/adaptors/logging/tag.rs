//! Tags: a caller's name for the memory it is about to allocate, carried
//! into [`LoggingResource`](crate::LoggingResource)'s events and the traces
//! written from them, so a memory report can say *who* holds memory.
//!
//! PyTorch attributes memory to stack frames; a Rust runtime knows better
//! names ("kv-cache", "layer 3 attention"). A tag is set for a scope on the
//! calling thread — `let _t = tag_scope("kv-cache");` — and every
//! allocation logged on that thread while the guard lives carries it;
//! scopes nest, the innermost wins.
//!
//! Tags are interned for the life of the process (one copy per distinct
//! name, so events stay `Copy` and cheap). Use a bounded set of names, not
//! a fresh string per call.

use std::cell::RefCell;
use std::collections::HashSet;
use std::marker::PhantomData;
use std::sync::{Mutex, OnceLock};

thread_local! {
    static STACK: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

fn intern(tag: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(&known) = names.get(tag) {
        return known;
    }
    let leaked: &'static str = Box::leak(tag.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// A tag set on this thread until the guard drops (see the module docs).
/// Not `Send`: a tag belongs to the thread that set it.
#[derive(Debug)]
#[must_use = "the tag is cleared when the guard drops"]
pub struct TagScope {
    depth: usize,
    _thread_bound: PhantomData<*const ()>,
}

/// Tag every allocation this thread logs until the returned guard drops.
pub fn tag_scope(tag: &str) -> TagScope {
    let tag = intern(tag);
    let depth = STACK.with(|s| {
        let mut s = s.borrow_mut();
        s.push(tag);
        s.len()
    });
    TagScope {
        depth,
        _thread_bound: PhantomData,
    }
}

impl Drop for TagScope {
    fn drop(&mut self) {
        // Guards dropped out of order (one moved into a longer scope) end
        // every scope opened after them too.
        STACK.with(|s| s.borrow_mut().truncate(self.depth - 1));
    }
}

/// The innermost tag set on this thread, if any.
pub fn current_tag() -> Option<&'static str> {
    STACK.with(|s| s.borrow().last().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_the_innermost_wins() {
        assert_eq!(current_tag(), None);
        let outer = tag_scope("model");
        {
            let _inner = tag_scope("attention");
            assert_eq!(current_tag(), Some("attention"));
        }
        assert_eq!(current_tag(), Some("model"));
        drop(outer);
        assert_eq!(current_tag(), None);
    }

    #[test]
    fn a_tag_is_per_thread_and_interned_once() {
        let _t = tag_scope("kv-cache");
        let other = std::thread::spawn(current_tag).join().unwrap();
        assert_eq!(other, None);
        let (a, b) = (intern("kv-cache"), intern("kv-cache"));
        assert!(std::ptr::eq(a, b));
    }
}
