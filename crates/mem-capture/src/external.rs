//! Memory a graph uses but did not reserve in its window.
//!
//! `capture_end` pins what the window touched; a graph may also read or
//! write buffers that existed before (static inputs, weights). Those are not
//! the graph's — they keep their owner's reuse and in-place semantics — yet
//! the graph bakes their addresses in. So a runtime declares them
//! ([`crate::Capture::uses`]); at the end the capture takes their raw
//! address, which keeps their page from ever moving while they live, and the
//! graph checks before each replay that each one still lives where it was.

use mem_pools::ManagedMemoryBinding;
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
    /// Resolve `binding` in `pools[pool]`, without pinning yet: a capture
    /// resolves every declared buffer first and pins only once nothing
    /// failed, since a pin cannot be undone safely (see [`External::pin`]).
    pub(crate) fn resolve(
        pool: usize,
        binding: ManagedMemoryBinding,
        pools: &mut [&mut dyn CapturePool],
    ) -> Result<Self, CaptureError> {
        let count = pools.len();
        let p = pools
            .get_mut(pool)
            .ok_or(CaptureError::UnknownPool { pool, pools: count })?;
        let view = p.view(binding)?;
        Ok(Self {
            pool,
            binding,
            view,
        })
    }

    /// Pin the buffer's page by taking its raw address. It is never released
    /// here: mem-pools keeps one raw-out flag per slice, so releasing could
    /// also drop a raw address the owner took.
    pub(crate) fn pin(&self, pools: &mut [&mut dyn CapturePool]) -> Result<(), CaptureError> {
        let count = pools.len();
        let p = pools.get_mut(self.pool).ok_or(CaptureError::UnknownPool {
            pool: self.pool,
            pools: count,
        })?;
        Ok(p.pin_raw(self.binding)?)
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
