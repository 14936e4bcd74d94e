//! The persistent pool: exact fit by aligned size, one page per slice of
//! exactly that size, up to the device's largest page (above it
//! `BufferTooBig`); never replaced by `install_pools`. Routed to by the
//! [`PERSISTENT`] sentinel (`Core::pool`), it holds its pages in a
//! [`Pool`]'s page lists with an exact-fit free index.

use std::ops::{Deref, DerefMut};

use crate::config::PoolType;
use crate::pools::paged::free_index::FreeIndex;
use crate::pools::paged::pool::Pool;

/// Routing position of the persistent pool (a sentinel past any dynamic pool).
pub(crate) const PERSISTENT: u32 = u32::MAX - 1;

/// The persistent pool: exclusive pages with no size limit whose free
/// pages are reused only by an exact fit. Derefs to its page state (a
/// field access, no indirection per operation).
#[derive(Debug)]
pub(crate) struct PersistentPool {
    pages: Pool,
}

impl PersistentPool {
    pub(crate) fn new() -> Self {
        let kind = PoolType::ExclusivePages {
            max_alloc_size: u64::MAX,
        };
        Self {
            pages: Pool::new(kind, 0, None, FreeIndex::exact()),
        }
    }
}

impl Deref for PersistentPool {
    type Target = Pool;
    #[inline(always)]
    fn deref(&self) -> &Pool {
        &self.pages
    }
}

impl DerefMut for PersistentPool {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Pool {
        &mut self.pages
    }
}
