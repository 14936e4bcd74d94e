//! `install_pools`: replacing the dynamic pools' layout, refused while
//! anything lives in them or a capture is open.

use mem_pools::InstallMemoryPoolsError;

use crate::error::Violation;
use crate::ops::Ctx;
use crate::world::model::{CapturePhase, PoolClass};
use crate::world::{World, props};

impl World {
    pub(crate) fn install(&mut self, ctx: Ctx, s: usize, index: u8) -> Result<(), Violation> {
        self.drain(s);
        let index = usize::from(index);
        let model = self.model.streams[s];
        let alive = self
            .model
            .entries
            .iter()
            .filter(|e| e.stream == s && e.alive());
        let (mut dynamic, mut dynamic_bytes, mut unknown) = (0usize, 0u64, 0usize);
        for e in alive {
            match e.pool {
                PoolClass::Dynamic => {
                    dynamic += 1;
                    dynamic_bytes += e.size;
                }
                PoolClass::Unknown => unknown += 1,
                PoolClass::Persistent => {}
            }
        }
        let capturing = model.capture != CapturePhase::Off;
        // An idle chunk whose work runs stays mapped through the cleanup,
        // so its range stays and the install is refused with nothing live.
        let waiting = self.chunks_waiting(s);
        let config = self.layout_of(index).0;
        match self.managers[s].install_pools(config, &props()) {
            Ok(()) => {
                if capturing {
                    return Err(ctx.succeeded("CaptureActive"));
                }
                if dynamic > 0 || model.quarantined {
                    return Err(ctx.succeeded(format!("PoolsInUse ({dynamic} live)")));
                }
                self.model.streams[s].layout = index;
                Ok(())
            }
            Err(e) => {
                self.summary.refusals += 1;
                let allowed = match &e {
                    InstallMemoryPoolsError::CaptureActive => capturing,
                    // An arena range whose idle chunk could not be unmapped
                    // (a fault during install's cleanup) stays: nothing is
                    // live, the old layout is kept.
                    InstallMemoryPoolsError::PagesHeld { pages, .. }
                        if self.arenas && (self.hit(ctx) || waiting) =>
                    {
                        !capturing && *pages > 0
                    }
                    // A failed relocation wait quarantined memory in these
                    // pools: never given back, so the layout stays for good.
                    InstallMemoryPoolsError::PagesQuarantined {
                        pages,
                        leaked_bytes,
                        ..
                    } => {
                        !capturing
                            && model.quarantined
                            && dynamic == 0
                            && *pages > 0
                            && *leaked_bytes > 0
                    }
                    InstallMemoryPoolsError::PoolsInUse {
                        live_slices,
                        live_bytes,
                    } => {
                        !capturing
                            && *live_slices > 0
                            && (unknown > 0
                                || (*live_slices == dynamic && *live_bytes == dynamic_bytes))
                    }
                    // A refusal this harness does not know is a finding.
                    _ => false,
                };
                if allowed {
                    Ok(())
                } else {
                    Err(ctx.unexpected(e))
                }
            }
        }
    }
}
