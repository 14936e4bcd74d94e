//! The replay's calls on [`PoolBackend`]: reserve, free, mode, cleanup.
//!
//! A reservation on a backend with several memories resets its memory's
//! statistics peaks before the call and reads them after, so the device
//! peak counts what the engine held *inside* the call (a page taken before
//! outdated ones go back) on top of what the other memories held. With one
//! memory nothing is reset: its own high-water mark is read at the end.

use mem_relocate::RelocationError;
use mem_storage::DeviceResource;

use super::backend::AllocBackend;
use super::pools::{PoolBackend, PoolToken, engine_mode};
use crate::error::{CliError, Result};
use crate::report::{ArenaSummary, PoolLine, RelocationSummary, StreamLine};
use crate::trace::Mode;

impl<R: DeviceResource> PoolBackend<R> {
    fn backend_error(&self, message: String) -> CliError {
        CliError::Backend {
            backend: self.name,
            message,
        }
    }
}

impl<R: DeviceResource> AllocBackend for PoolBackend<R> {
    type Token = PoolToken;

    fn name(&self) -> &'static str {
        self.name
    }

    fn reserve(&mut self, size: u64, stream: u64) -> Result<PoolToken> {
        let index = self.route(stream)?;
        let tracked = self.set.stream_count() > 1;
        let others = self.reserved - self.states[index].reserved;
        if tracked {
            self.memory_at(index)?.reset_peaks();
        }
        let reserved = if self.relocate {
            self.set.reserve(index, size).map_err(|e| match e {
                // The engine refused the reservation itself (after any relocation).
                RelocationError::Engine(refusal) => refusal.to_string(),
                other => other.to_string(),
            })
        } else {
            self.memory_at(index)?
                .reserve(size)
                .map_err(|e| e.to_string())
        };
        self.observe(index, tracked.then_some(others));
        let handle = reserved.map_err(|e| self.backend_error(format!("reserve: {e}")))?;
        self.states[index].allocs += 1;
        let token = PoolToken {
            handle,
            tag: self.next_tag,
            memory: index,
        };
        self.next_tag += 1;
        if self.check_patterns {
            let name = self.name;
            let memory = self.set.memory(index).map_err(|e| CliError::Backend {
                backend: name,
                message: e.to_string(),
            })?;
            let written = memory
                .get_storage(token.handle.binding())
                .map_err(|e| format!("resolving an allocation after its reservation: {e}"))
                .and_then(|view| self.patterns.write(memory.storage(), &view, token.tag));
            written.map_err(|message| CliError::Backend {
                backend: name,
                message,
            })?;
        }
        Ok(token)
    }

    fn free(&mut self, token: PoolToken) -> Result<()> {
        if self.check_patterns {
            let name = self.name;
            let memory = self
                .set
                .memory(token.memory)
                .map_err(|e| CliError::Backend {
                    backend: name,
                    message: e.to_string(),
                })?;
            let checked = memory
                .get_storage(token.handle.binding())
                .map_err(|e| format!("resolving an allocation before its free: {e}"))
                .and_then(|view| self.patterns.check(memory.storage(), &view, token.tag));
            checked.map_err(|message| CliError::Backend {
                backend: name,
                message,
            })?;
        }
        drop(token.handle);
        Ok(())
    }

    fn mode(&mut self, mode: Mode) {
        self.persistent_depth = match mode {
            Mode::Persistent => self.persistent_depth.saturating_add(1),
            Mode::Auto => self.persistent_depth.saturating_sub(1),
        };
        for index in 0..self.set.stream_count() {
            if let Ok(memory) = self.set.memory(index) {
                memory.mode(engine_mode(mode));
            }
        }
    }

    /// A reclaim of every memory with relocation on, else an explicit
    /// cleanup of every memory.
    fn cleanup(&mut self) {
        self.give_back();
    }

    fn live_bytes(&self) -> u64 {
        self.states.iter().map(|s| s.live).sum()
    }

    fn reserved_bytes(&self) -> u64 {
        self.reserved
    }

    fn peak_reserved_bytes(&self) -> Option<u64> {
        Some(self.peak)
    }

    /// Counted at [`AllocBackend::settle`] (reading them needs the engine).
    fn storage_allocs(&self) -> u64 {
        self.states.iter().map(|s| s.storage_allocs).sum()
    }

    /// Drains every memory's drop queue (the engine frees dropped handles at
    /// its next call), reclaims with relocation on, and reads the final
    /// numbers: no page is allocated or mapped by settling.
    fn settle(&mut self) {
        self.settle_all();
    }

    fn pool_lines(&self) -> Vec<PoolLine> {
        self.pools.clone()
    }

    fn relocation(&self) -> Option<RelocationSummary> {
        self.relocation_summary()
    }

    fn stream_lines(&self) -> Vec<StreamLine> {
        self.stream_summary()
    }

    fn arenas(&self, ops: u64) -> Option<ArenaSummary> {
        self.vm.as_ref()?;
        let c = self.chunks;
        Some(ArenaSummary {
            virtual_bytes: c.virtual_bytes,
            cached_bytes: c.cached_bytes,
            chunk_creates: c.creates,
            chunk_maps: c.maps,
            chunk_unmaps: c.unmaps,
            chunk_releases: c.releases,
            driver_calls_per_100_ops: c.driver_calls() as f64 * 100.0 / ops.max(1) as f64,
        })
    }
}
