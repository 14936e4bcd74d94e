//! Reserving, writing and raw addresses: the ops that hand out memory and
//! reach into it, each judged against the layout's limits and the model.

use mem_pools::IoError;
use mem_storage::{ComputeStorage, StorageError};

use crate::error::Violation;
use crate::ops::Ctx;
use crate::world::model::{CapturePhase, Contents, Entry, PoolClass};
use crate::world::{World, props};

impl World {
    pub(crate) fn reserve(&mut self, ctx: Ctx, s: usize, size: u64) -> Result<(), Violation> {
        self.drain(s);
        let model = self.model.streams[s];
        let persistent = model.persistent();
        let route_max = self.layout_of(model.layout).1;
        let alignment = props().alignment;
        let overflow = size.max(1).checked_next_multiple_of(alignment).is_none();
        let too_big = !persistent && size > route_max;
        let before = self.managers[s].memory_usage();
        let cached_before = self.managers[s].stats().chunks.cached_bytes;
        match self.managers[s].reserve(size) {
            Ok(handle) => {
                if too_big {
                    return Err(ctx.succeeded(format!("BufferTooBig (max {route_max})")));
                }
                if overflow {
                    return Err(ctx.succeeded("InvalidSize"));
                }
                let max_page = props().effective_max_page();
                if persistent && size > max_page {
                    return Err(ctx.succeeded(format!(
                        "BufferTooBig (a persistent page is at most {max_page} bytes)"
                    )));
                }
                if handle.size() != size {
                    return Err(Violation::mismatch(
                        ctx.step,
                        "handle size",
                        size,
                        handle.size(),
                    ));
                }
                let id = self.model.next_id();
                self.model.entries.push(Entry {
                    id,
                    stream: s,
                    size,
                    binding: handle.binding(),
                    user: Some(handle),
                    graph: Vec::new(),
                    primed: model.capture == CapturePhase::Priming,
                    pool: if persistent {
                        PoolClass::Persistent
                    } else {
                        PoolClass::Dynamic
                    },
                    contents: None,
                    raw: None,
                    pinned: false,
                    pinned_at: None,
                });
                let i = self.model.entries.len() - 1;
                self.write_entry(ctx, i, id)
            }
            Err(error) => {
                self.summary.refusals += 1;
                let allowed = match &error {
                    IoError::BufferTooBig { size: s2, max } if too_big => {
                        *s2 == size && *max == route_max
                    }
                    // A persistent page above the device's largest page.
                    IoError::BufferTooBig { size: s2, max } => {
                        let max_page = props().effective_max_page();
                        persistent
                            && !overflow
                            && *s2 == size
                            && size > max_page
                            && *max == max_page
                    }
                    _ if too_big => false,
                    IoError::InvalidSize {
                        size: s2,
                        alignment: a,
                    } => overflow && *s2 == size && *a == alignment,
                    _ if overflow => false,
                    IoError::CaptureWouldAllocate { size: s2, .. } => {
                        model.capture == CapturePhase::Recording && *s2 == size
                    }
                    IoError::PageSizesExhausted { .. } => true,
                    IoError::Storage(StorageError::OutOfMemory { .. })
                    | IoError::Storage(StorageError::TooBig { .. }) => true,
                    IoError::Storage(StorageError::Injected { .. }) => self.hit(ctx),
                    _ => false,
                };
                if !allowed {
                    return Err(ctx.unexpected(&error));
                }
                let after = self.managers[s].memory_usage();
                let cached_after = self.managers[s].stats().chunks.cached_bytes;
                let faults = self.device.injected() - ctx.injected;
                if self.arenas
                    && after.bytes_reserved < before.bytes_reserved
                    && cached_after < cached_before
                    && only_the_cache_changed(before, after, cached_before, cached_after)
                {
                    // Idle chunks past their share were shed before the
                    // refused create or map (mem-pools sheds before
                    // physical memory grows): reserved bytes fell by
                    // exactly the cache shed, never rose.
                    self.summary.shed_on_refusal += 1;
                    return Ok(());
                }
                if self.arenas
                    && faults > 1
                    && only_the_cache_changed(before, after, cached_before, cached_after)
                {
                    // An arena refusal whose undo the device refused too
                    // (unmapping a chunk it had created: it stays mapped,
                    // idle; mapping a moved chunk back: it is released).
                    // Only possible when a second call failed after the
                    // first (a device gone away).
                    self.summary.idle_on_refusal += 1;
                    return Ok(());
                }
                // (An arena world injects no resource fault: the give-back cannot
                // happen there, and an arena refusal must change nothing.)
                if !self.strict && !self.arenas && gave_back_empty_pages(before, after) {
                    // mem-pools' documented give-back (once bug 4, fixed
                    // for the common case; docs/reliability.md says why the
                    // rest is harmless): growth gives empty pages back
                    // first when the storage says the bigger page fits; if
                    // that exact allocation then fails (a fault injected on
                    // it), the pages are already gone. Only empty pages may
                    // go (nothing live changed, checked here and by the
                    // invariant pass after the step). Tolerated and counted;
                    // the strict-world test pins the common case.
                    self.summary.released_on_refusal += 1;
                    return Ok(());
                }
                self.unchanged(ctx, &error, before, after)
            }
        }
    }

    /// Write a fresh head and tail pattern into entry `i`.
    pub(crate) fn write_entry(&mut self, ctx: Ctx, i: usize, seed: u64) -> Result<(), Violation> {
        let (s, size, binding) = {
            let e = &self.model.entries[i];
            (e.stream, e.size, e.binding)
        };
        let contents = Contents::for_size(seed, size);
        // The write is an operation on the stream (lazy streams: it may
        // still run after the host moves on).
        self.record_use(i);
        let manager = &mut self.managers[s];
        let head = manager.write(binding, &contents.head);
        let tail = manager.get_storage(binding).and_then(|view| {
            let tail = view
                .narrow(Some(size - contents.tail.len() as u64), None)
                .ok_or(IoError::OutOfBounds {
                    start: size - contents.tail.len() as u64,
                    end: size,
                    size: view.size(),
                })?;
            manager.storage().write(&tail, &contents.tail)?;
            Ok(())
        });
        match head.and(tail) {
            Ok(()) => self.model.entries[i].contents = Some(contents),
            Err(e) if self.deref_refusal_allowed(ctx, s, &e) => {
                // Part of the pattern may have landed: the bytes are unknown now.
                self.summary.refusals += 1;
                self.model.entries[i].contents = None;
            }
            Err(e) => return Err(ctx.unexpected(e)),
        }
        Ok(())
    }

    pub(crate) fn raw(
        &mut self,
        ctx: Ctx,
        alloc: u8,
        start: Option<u64>,
        end: Option<u64>,
    ) -> Result<(), Violation> {
        let Some(i) = self.model.pick_alive(alloc) else {
            return Ok(());
        };
        let (s, size, binding) = {
            let e = &self.model.entries[i];
            (e.stream, e.size, e.binding)
        };
        let (lo, hi) = (start.unwrap_or(0), end.unwrap_or(size));
        let valid = lo <= hi && hi <= size;
        match self.managers[s].get_resource(binding, start, end) {
            Ok(view) => {
                if !valid {
                    return Err(ctx.succeeded(format!("OutOfBounds {lo}..{hi} of {size}")));
                }
                if view.size != hi - lo {
                    return Err(Violation::mismatch(
                        ctx.step,
                        "raw view size",
                        hi - lo,
                        view.size,
                    ));
                }
                let base = view.ptr.0 - lo;
                let e = &mut self.model.entries[i];
                if let Some(previous) = e.raw
                    && previous != base
                {
                    return Err(Violation::mismatch(
                        ctx.step,
                        "raw address of a raw-out allocation",
                        previous,
                        base,
                    ));
                }
                e.raw = Some(base);
                Ok(())
            }
            Err(IoError::OutOfBounds {
                start: s0,
                end: e0,
                size: z,
            }) if !valid => {
                self.summary.refusals += 1;
                if (s0, e0, z) != (lo, hi, size) {
                    return Err(ctx.unexpected(format!(
                        "OutOfBounds names {s0}..{e0} of {z}, asked {lo}..{hi} of {size}"
                    )));
                }
                Ok(())
            }
            Err(e) if self.deref_refusal_allowed(ctx, s, &e) => {
                self.summary.refusals += 1;
                Ok(())
            }
            Err(e) => Err(ctx.unexpected(e)),
        }
    }
}

/// A refusal that changed nothing live, only idle arena chunks: reserved
/// bytes moved by exactly what the cache moved.
fn only_the_cache_changed(
    before: mem_pools::MemoryUsage,
    after: mem_pools::MemoryUsage,
    cached_before: u64,
    cached_after: u64,
) -> bool {
    let delta = |a: u64, b: u64| i128::from(b) - i128::from(a);
    after.number_allocs == before.number_allocs
        && after.bytes_in_use == before.bytes_in_use
        && after.bytes_padding == before.bytes_padding
        && after.pages_with_live_data == before.pages_with_live_data
        && after.bytes_reserved != before.bytes_reserved
        && delta(before.bytes_reserved, after.bytes_reserved) == delta(cached_before, cached_after)
}

/// A refusal that changed nothing but return empty pages: nothing live
/// moved, only reserved bytes and pages without live data went down.
fn gave_back_empty_pages(before: mem_pools::MemoryUsage, after: mem_pools::MemoryUsage) -> bool {
    after.number_allocs == before.number_allocs
        && after.bytes_in_use == before.bytes_in_use
        && after.bytes_padding == before.bytes_padding
        && after.pages_with_live_data == before.pages_with_live_data
        && after.bytes_reserved < before.bytes_reserved
}
