//! What a stream executes, and the check it makes when it does.
//!
//! Work is described by [`Raw`] (addresses, as the host gave them: what a
//! captured graph keeps, to resolve again at each launch) and resolved to
//! [`Work`] (segments of live memory) when it is queued. When it executes,
//! every segment's owner must still be live; if one was freed, unmapped or
//! lost its access meanwhile, that is a contract violation: the work is
//! skipped (a GPU would fault) and the violation recorded. The check runs
//! again after the work, so memory taken away while it ran is caught too.

use std::time::Duration;

use crate::buffer::Segment;
use crate::memory::MEM;
use crate::sync::{lock, violation};
use crate::types::{CuResult, DevPtr, INVALID_VALUE, node};

/// Host callback of `cuLaunchHostFunc`.
pub type HostFn = unsafe extern "C" fn(*mut std::ffi::c_void);

/// One end of a copy, before resolution.
#[derive(Debug, Clone, Copy)]
pub enum RawPlace {
    /// A device address, touched by the device of the stream the work runs on.
    Device(DevPtr),
    /// A device address touched by the device named (a peer copy's end,
    /// which names each end's context).
    On(DevPtr, usize),
    /// A host address, as an integer (the program keeps it valid).
    Host(usize),
}

/// Work as the host described it.
#[derive(Debug, Clone, Copy)]
pub enum Raw {
    Copy {
        dst: RawPlace,
        src: RawPlace,
        len: u64,
    },
    Fill {
        dst: DevPtr,
        len: u64,
        value: u8,
    },
    /// The stand-in kernel: sleeps, then writes `value` over the range.
    Kernel {
        dst: DevPtr,
        len: u64,
        sleep_us: u64,
        value: u8,
    },
    /// `y = a * x + b` over `n` f32s (the stand-in of a compiled kernel).
    Axpb {
        x: DevPtr,
        y: DevPtr,
        a: f32,
        b: f32,
        n: u64,
    },
    Host {
        f: HostFn,
        data: usize,
    },
    /// A node with nothing to run at launch (a memory node, an event).
    Marker(u32),
}

impl Raw {
    /// The graph node type this work is captured as.
    pub fn node_type(&self) -> u32 {
        match self {
            Raw::Copy { .. } => node::MEMCPY,
            Raw::Fill { .. } => node::MEMSET,
            Raw::Kernel { .. } | Raw::Axpb { .. } => node::KERNEL,
            Raw::Host { .. } => node::HOST,
            Raw::Marker(kind) => *kind,
        }
    }
}

#[derive(Debug)]
pub enum Place {
    Device(Vec<Segment>),
    Host(usize),
}

/// Resolved work, ready to run.
pub enum Work {
    Copy {
        dst: Place,
        src: Place,
        len: usize,
    },
    Fill {
        dst: Vec<Segment>,
        value: u8,
    },
    Kernel {
        dst: Vec<Segment>,
        sleep: Duration,
        value: u8,
    },
    Axpb {
        x: Vec<Segment>,
        y: Vec<Segment>,
        a: f32,
        b: f32,
    },
    Host {
        f: HostFn,
        data: usize,
    },
    /// Block until another stream reached a point (an event's).
    Wait(Box<dyn FnOnce() + Send>),
    /// A stream-ordered free: the allocation `owner` at `base` goes now.
    Free {
        base: DevPtr,
        owner: u64,
    },
    Marker,
}

/// Resolve `raw` for work on device `dev`; an address that is not live
/// memory that device may touch is refused (and is a violation: gpumem
/// checks its ranges before calling).
pub fn resolve(raw: &Raw, what: &str, dev: usize) -> Result<Work, CuResult> {
    let mem = lock(&MEM);
    let on = |addr: DevPtr, len: u64, dev: usize| {
        mem.resolve(addr, len, dev).map_err(|why| {
            violation(format!("{what}: {why}"));
            INVALID_VALUE
        })
    };
    let device = |addr: DevPtr, len: u64| on(addr, len, dev);
    let place = |p: RawPlace, len: u64| match p {
        RawPlace::Device(addr) => device(addr, len).map(Place::Device),
        RawPlace::On(addr, dev) => on(addr, len, dev).map(Place::Device),
        RawPlace::Host(ptr) => Ok(Place::Host(ptr)),
    };
    Ok(match *raw {
        Raw::Copy { dst, src, len } => Work::Copy {
            dst: place(dst, len)?,
            src: place(src, len)?,
            len: len as usize,
        },
        Raw::Fill { dst, len, value } => Work::Fill {
            dst: device(dst, len)?,
            value,
        },
        Raw::Kernel {
            dst,
            len,
            sleep_us,
            value,
        } => Work::Kernel {
            dst: device(dst, len)?,
            sleep: Duration::from_micros(sleep_us),
            value,
        },
        Raw::Axpb { x, y, a, b, n } => Work::Axpb {
            x: device(x, n * 4)?,
            y: device(y, n * 4)?,
            a,
            b,
        },
        Raw::Host { f, data } => Work::Host { f, data },
        Raw::Marker(_) => Work::Marker,
    })
}
