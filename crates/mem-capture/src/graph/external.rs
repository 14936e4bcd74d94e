//! Memory a graph uses but did not reserve in its window.
//!
//! `capture_end` pins what the window touched; a graph may also read or
//! write buffers that existed before (static inputs, weights). Those are not
//! the graph's — they keep their owner's reuse and in-place semantics — yet
//! the graph bakes their addresses in. So a runtime declares them
//! ([`crate::Capture::uses`]); at the end the capture takes a counted raw
//! pin ([`RawPin`]) on each, which keeps its page from moving while the
//! graph holds the pin, and the graph checks before each replay that each
//! one still lives where it was. The pin is the graph's own: dropping it
//! (with the graph, or when `end` fails) ends exactly that pin — never the
//! owner's `get_resource` flag nor another graph's pin.

use mem_pools::{ManagedMemoryBinding, RawPin};
use mem_storage::StorageHandle;

use crate::error::CaptureError;
use crate::streams::CapturePool;

/// A declared outside buffer, resolved when the graph sealed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct External {
    pub(crate) pool: usize,
    pub(crate) binding: ManagedMemoryBinding,
    pub(crate) view: StorageHandle,
}

impl External {
    /// Resolve `binding` in `pools[pool]` and pin its page with a guard of
    /// its own. The view is read before the pin, and pinning cannot move
    /// the memory, so the recorded view is where the pin holds it. If a
    /// later step of `end` fails, dropping the returned guard undoes the pin.
    pub(crate) fn pin(
        pool: usize,
        binding: ManagedMemoryBinding,
        pools: &mut [&mut dyn CapturePool],
    ) -> Result<(Self, RawPin), CaptureError> {
        let count = pools.len();
        let p = pools
            .get_mut(pool)
            .ok_or(CaptureError::UnknownPool { pool, pools: count })?;
        let view = p.view(binding)?;
        let pin = p.pin_raw(binding)?;
        let external = Self {
            pool,
            binding,
            view,
        };
        Ok((external, pin))
    }

    /// Whether the buffer still lives where the graph recorded it.
    pub(crate) fn verify(&self, pools: &mut [&mut dyn CapturePool]) -> Result<(), CaptureError> {
        let invalid = |why| CaptureError::GraphMemoryInvalidated {
            pool: self.pool,
            page: self.view.id.0,
            offset: self.view.offset(),
            size: self.view.size(),
            why,
        };
        let count = pools.len();
        let p = pools.get_mut(self.pool).ok_or(CaptureError::UnknownPool {
            pool: self.pool,
            pools: count,
        })?;
        match p.view(self.binding) {
            Ok(view) if view.id == self.view.id && view.offset() == self.view.offset() => Ok(()),
            Ok(_) => Err(invalid(
                "(an outside buffer the graph uses) moved or was rebound",
            )),
            Err(_) => Err(invalid("(an outside buffer the graph uses) was freed")),
        }
    }
}
