//! `bind`: handing one allocation's memory to another handle.

use mem_pools::IoError;

use crate::error::Violation;
use crate::ops::Ctx;
use crate::world::World;
use crate::world::model::CapturePhase;

impl World {
    /// `bind` passes the reserved handle by value (the user gives it up
    /// whatever the outcome) and a clone of the assigned one.
    pub(crate) fn bind(
        &mut self,
        ctx: Ctx,
        reserved: u8,
        assigned: u8,
        cursor: u64,
    ) -> Result<(), Violation> {
        let (Some(ri), Some(ai)) = (
            self.model.pick_user(reserved),
            self.model.pick_user(assigned),
        ) else {
            return Ok(());
        };
        let (rs, as_) = (self.model.entries[ri].stream, self.model.entries[ai].stream);
        let a = self.model.entries[ai].user.clone();
        let r = if ri == ai {
            a.clone()
        } else {
            self.model.entries[ri].user.take()
        };
        let (Some(r), Some(a)) = (r, a) else {
            return Ok(());
        };
        let holders = 1 + self.model.entries[ri].graph.len();
        let expected = if rs != as_ {
            Some(IoError::ForeignBinding {
                expected: self.managers[rs].id(),
                found: self.managers[as_].id(),
            })
        } else if ri == ai {
            None
        } else if holders > 1 {
            Some(IoError::SharedReserved { holders })
        } else if self.model.entries[ai].pinned {
            Some(IoError::AssignedPinned {
                size: self.model.entries[ai].size,
            })
        } else {
            None
        };
        let result = self.managers[rs].bind(r, a, cursor);
        match (result, expected) {
            (Ok(()), Some(e)) => return Err(ctx.succeeded(e.to_string())),
            (Err(e), Some(x)) if e == x => {
                self.summary.refusals += 1;
                return Ok(());
            }
            (Err(e), _) => return Err(ctx.unexpected(e)),
            (Ok(()), None) => {}
        }
        self.summary.binds += 1;
        if ri != ai {
            let (size, contents, pool, raw, pinned, pinned_at) = {
                let r = &mut self.model.entries[ri];
                r.primed = false;
                (
                    r.size,
                    r.contents.take(),
                    r.pool,
                    r.raw.take(),
                    r.pinned,
                    r.pinned_at,
                )
            };
            let priming = self.model.streams[rs].capture == CapturePhase::Priming;
            let a = &mut self.model.entries[ai];
            a.size = size;
            a.contents = contents;
            a.pool = pool;
            a.raw = raw;
            a.pinned = pinned;
            a.pinned_at = pinned_at;
            a.primed |= priming;
            if let Some(h) = &a.user {
                a.binding = h.binding();
            }
        }
        let binding = self.model.entries[ai].binding;
        let found = self.managers[rs]
            .get_cursor(binding)
            .map_err(|e| ctx.unexpected(e))?;
        if found != cursor {
            return Err(Violation::mismatch(
                ctx.step,
                "cursor after bind",
                cursor,
                found,
            ));
        }
        Ok(())
    }
}
