//! One recorded host operation and how it replays.
//!
//! Every operation names its pool by index and its memory by storage view,
//! so replay needs only the pools' storages — never an allocation.

use std::fmt;
use std::sync::Arc;

use mem_storage::{StorageError, StorageHandle};

use crate::streams::CapturePool;

/// A kernel-like body: gets each argument's bytes, may change them.
pub type KernelBody = Arc<dyn Fn(&mut [Vec<u8>]) + Send + Sync>;

/// One recorded operation; `pool` is an index into the capture pools.
#[derive(Clone)]
pub enum HostOp {
    /// Copy bytes captured at record time into `dst` (a host-to-device copy).
    Write {
        /// Pool index.
        pool: usize,
        /// Destination view.
        dst: StorageHandle,
        /// The bytes.
        data: Arc<[u8]>,
    },
    /// Set every byte of `dst` (a memset node).
    Fill {
        /// Pool index.
        pool: usize,
        /// Destination view.
        dst: StorageHandle,
        /// The byte.
        value: u8,
    },
    /// Copy `src` into `dst`, same size, same pool (a device-to-device copy).
    Copy {
        /// Pool index.
        pool: usize,
        /// Source view.
        src: StorageHandle,
        /// Destination view.
        dst: StorageHandle,
    },
    /// Read every argument, run `body`, write every argument back.
    Kernel {
        /// For messages.
        name: &'static str,
        /// (pool index, view) per argument.
        args: Vec<(usize, StorageHandle)>,
        /// What the kernel computes.
        body: KernelBody,
    },
}

impl fmt::Debug for HostOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Write { pool, dst, data } => {
                write!(f, "write {} B → #{pool} {dst:?}", data.len())
            }
            Self::Fill { pool, dst, value } => write!(f, "fill {value:#x} → #{pool} {dst:?}"),
            Self::Copy { pool, src, dst } => write!(f, "copy #{pool} {src:?} → {dst:?}"),
            Self::Kernel { name, args, .. } => write!(f, "kernel {name} over {args:?}"),
        }
    }
}

impl HostOp {
    /// The pools this operation touches.
    pub(crate) fn pools(&self) -> impl Iterator<Item = usize> + '_ {
        let (first, rest): (Option<usize>, &[(usize, StorageHandle)]) = match self {
            Self::Write { pool, .. } | Self::Fill { pool, .. } | Self::Copy { pool, .. } => {
                (Some(*pool), &[])
            }
            Self::Kernel { args, .. } => (None, args),
        };
        first.into_iter().chain(rest.iter().map(|(p, _)| *p))
    }

    pub(crate) fn what(&self) -> &'static str {
        match self {
            Self::Write { .. } => "write",
            Self::Fill { .. } => "fill",
            Self::Copy { .. } => "copy",
            Self::Kernel { name, .. } => name,
        }
    }

    pub(crate) fn run(&self, pools: &mut [&mut dyn CapturePool]) -> Result<(), RunError> {
        match self {
            Self::Write { pool: p, dst, data } => pool(pools, *p)?.write_view(dst, data)?,
            Self::Fill {
                pool: p,
                dst,
                value,
            } => pool(pools, *p)?.fill_view(dst, *value)?,
            Self::Copy { pool: p, src, dst } => pool(pools, *p)?.copy_view(src, dst)?,
            Self::Kernel { args, body, .. } => {
                let mut bufs = Vec::with_capacity(args.len());
                for (p, view) in args {
                    let mut buf = vec![0u8; view.size() as usize];
                    pool(pools, *p)?.read_view(view, &mut buf)?;
                    bufs.push(buf);
                }
                body(&mut bufs);
                for ((p, view), buf) in args.iter().zip(&bufs) {
                    let len = buf.len().min(view.size() as usize);
                    pool(pools, *p)?.write_view(view, &buf[..len])?;
                }
            }
        }
        Ok(())
    }
}

fn pool<'a>(
    pools: &'a mut [&mut dyn CapturePool],
    index: usize,
) -> Result<&'a mut dyn CapturePool, RunError> {
    let count = pools.len();
    match pools.get_mut(index) {
        Some(p) => Ok(&mut **p),
        None => Err(RunError::Pool(index, count)),
    }
}

pub(crate) enum RunError {
    Pool(usize, usize),
    Storage(StorageError),
}

impl From<StorageError> for RunError {
    fn from(err: StorageError) -> Self {
        Self::Storage(err)
    }
}
