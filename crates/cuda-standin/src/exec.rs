//! Running resolved work on a stream's worker thread, with the check
//! before and after: every segment's owner must still be live (see
//! `work.rs`); work whose memory is gone is skipped and recorded.

use crate::buffer::Segment;
use crate::memory::MEM;
use crate::sync::{lock, violation};
use crate::work::{Place, Work};

/// The raw pieces of one end: `(pointer, length)` in order.
fn pieces(place: &Place, len: usize) -> Vec<(*mut u8, usize)> {
    match place {
        Place::Host(ptr) => vec![(*ptr as *mut u8, len)],
        Place::Device(segs) => segs.iter().map(|s| (s.buf.at(s.offset), s.len)).collect(),
    }
}

fn of(p: &Place) -> Vec<&Segment> {
    match p {
        Place::Device(s) => s.iter().collect(),
        Place::Host(_) => Vec::new(),
    }
}

fn segments(work: &Work) -> Vec<&Segment> {
    match work {
        Work::Copy { dst, src, .. } => of(dst).into_iter().chain(of(src)).collect(),
        Work::Fill { dst, .. } | Work::Kernel { dst, .. } => dst.iter().collect(),
        Work::Axpb { x, y, .. } => x.iter().chain(y).collect(),
        _ => Vec::new(),
    }
}

fn check(work: &Work, what: &str, when: &str) -> bool {
    let segs: Vec<Segment> = segments(work).into_iter().cloned().collect();
    match lock(&MEM).check_live(&segs) {
        Ok(()) => true,
        Err(why) => {
            violation(format!("{what}: {when}, {why}"));
            false
        }
    }
}

/// Run `work` on the calling (stream worker) thread.
pub fn execute(work: Work, what: &str) {
    match work {
        Work::Wait(wait) => wait(),
        Work::Free { base, owner } => {
            let mut mem = lock(&MEM);
            match mem.allocation(base) {
                Some(a) if a.owner == owner => drop(mem.free(base)),
                _ => violation(format!("{what}: when it ran, the memory was already freed")),
            }
        }
        Work::Host { f, data } => {
            // SAFETY: `cuLaunchHostFunc`'s contract: the program gave a
            // callback and its data, valid until the callback runs.
            unsafe { f(data as *mut std::ffi::c_void) }
        }
        Work::Marker => {}
        Work::Kernel {
            ref dst,
            sleep,
            value,
        } => {
            std::thread::sleep(sleep);
            if check(&work, what, "when it ran") {
                for s in dst {
                    // SAFETY: the segment lies inside its buffer (resolved
                    // against the tables), which its `Arc` keeps alive.
                    unsafe { s.buf.at(s.offset).write_bytes(value, s.len) };
                }
                check(&work, what, "while it ran");
            }
        }
        _ => {
            if check(&work, what, "when it ran") {
                run_bytes(&work);
                check(&work, what, "while it ran");
            }
        }
    }
}

fn run_bytes(work: &Work) {
    match work {
        Work::Copy { dst, src, len } => {
            let (mut d, mut s) = (pieces(dst, *len).into_iter(), pieces(src, *len).into_iter());
            let (mut dp, mut sp) = (d.next(), s.next());
            while let (Some((dptr, dlen)), Some((sptr, slen))) = (dp, sp) {
                let n = dlen.min(slen);
                // SAFETY: device pieces lie in live buffers; host pieces are
                // the program's buffers of `len` bytes (the copy's
                // contract); `copy` allows overlap.
                unsafe { std::ptr::copy(sptr, dptr, n) };
                dp = if n < dlen {
                    // SAFETY: `n` is less than the piece's remaining length.
                    Some((unsafe { dptr.add(n) }, dlen - n))
                } else {
                    d.next()
                };
                sp = if n < slen {
                    // SAFETY: as above.
                    Some((unsafe { sptr.add(n) }, slen - n))
                } else {
                    s.next()
                };
            }
        }
        Work::Fill { dst, value } => {
            for s in dst {
                // SAFETY: the segment lies inside its live buffer.
                unsafe { s.buf.at(s.offset).write_bytes(*value, s.len) };
            }
        }
        Work::Axpb { x, y, a, b } => {
            let read = |segs: &[Segment]| -> Vec<u8> {
                let mut out = Vec::new();
                for s in segs {
                    // SAFETY: the segment lies inside its live buffer.
                    out.extend_from_slice(unsafe {
                        std::slice::from_raw_parts(s.buf.at(s.offset), s.len)
                    });
                }
                out
            };
            let xs = read(x);
            let ys: Vec<u8> = xs
                .chunks_exact(4)
                .flat_map(|c| (a * f32::from_le_bytes([c[0], c[1], c[2], c[3]]) + b).to_le_bytes())
                .collect();
            let mut at = 0;
            for s in y {
                // SAFETY: the segment lies inside its live buffer; `ys` has
                // as many bytes as `y`'s segments together.
                unsafe {
                    std::ptr::copy_nonoverlapping(ys[at..].as_ptr(), s.buf.at(s.offset), s.len)
                };
                at += s.len;
            }
        }
        _ => {}
    }
}
