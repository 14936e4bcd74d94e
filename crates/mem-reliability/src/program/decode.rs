//! Bytes → [`Program`]: the decoder shared by the fuzz target and the corpus test.
//!
//! Total: every byte string decodes (a truncated op ends the program), so
//! the fuzzer never wastes inputs on a parse error. An op is one code byte
//! (taken modulo 32; reserve has the largest share because growth is where
//! the engine does most) followed by its argument bytes. Sizes come from a
//! table of edges (0, 1, alignment ± 1, page sizes ± 1, pool limits ± 1,
//! `u64::MAX`, `u64::MAX − alignment`) or from one byte scaled by 131.

use crate::program::{Op, Program};

/// The most ops one program holds, so one input runs in milliseconds.
pub const MAX_OPS: usize = 200;

/// Pool sizes worth hitting: alignment, page and pool-limit edges, overflow.
const SIZES: [u64; 24] = [
    0,
    1,
    8,
    255,
    256,
    257,
    1000,
    4095,
    4096,
    4097,
    5000,
    12_000,
    40_000,
    65_536,
    70_000,
    131_072,
    131_073,
    262_144,
    262_145,
    600_000,
    1 << 20,
    (1 << 20) + 1,
    u64::MAX,
    u64::MAX - 256,
];

/// Budget sizes: nothing, a byte, a page, around the local limit, everything.
const BUDGET_SIZES: [u64; 8] = [0, 1, 4096, 100_000, 300_000, 600_000, 2 << 20, u64::MAX];

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn flag(&mut self) -> Option<bool> {
        Some(self.byte()? & 1 == 1)
    }

    fn size(&mut self) -> Option<u64> {
        let b = self.byte()?;
        Some(if b & 0x80 != 0 {
            SIZES[usize::from(b & 0x7f) % SIZES.len()]
        } else {
            u64::from(b) * 131
        })
    }

    fn offset(&mut self) -> Option<Option<u64>> {
        Some(match self.byte()? {
            0 => None,
            1 => Some(u64::MAX),
            2 => Some(u64::MAX - 255),
            b => Some(u64::from(b - 3) * 64),
        })
    }
}

/// Decode `bytes` into a program of at most [`MAX_OPS`] ops.
pub fn decode(bytes: &[u8]) -> Program {
    Program::new(decode_ops(bytes, false))
}

/// Decode `bytes` into a program for an arena world with lazy streams
/// ([`Program::on_lazy_streams`]): as [`decode`], except that a code byte
/// of 224 or more is [`Op::Complete`] of `code − 223` operations on the
/// stream its next byte names (so one op in eight of random bytes lets a
/// stream's work complete).
pub fn decode_lazy(bytes: &[u8]) -> Program {
    Program::on_lazy_streams(decode_ops(bytes, true))
}

fn decode_ops(bytes: &[u8], lazy: bool) -> Vec<Op> {
    let mut reader = Reader { bytes, at: 0 };
    let mut ops = Vec::new();
    while ops.len() < MAX_OPS {
        let Some(code) = reader.byte() else { break };
        let op = match code {
            224.. if lazy => reader.byte().map(|stream| Op::Complete {
                stream,
                ops: code - 223,
            }),
            _ => decode_op(code % 32, &mut reader),
        };
        let Some(op) = op else { break };
        ops.push(op);
    }
    ops
}

fn decode_op(code: u8, r: &mut Reader<'_>) -> Option<Op> {
    Some(match code {
        0..=7 => Op::Reserve {
            stream: r.byte()?,
            size: r.size()?,
        },
        8 | 9 => Op::Write {
            alloc: r.byte()?,
            seed: r.byte()?,
        },
        10..=12 => Op::Drop { alloc: r.byte()? },
        13 => Op::DropOnThread { alloc: r.byte()? },
        14 | 15 => Op::Bind {
            reserved: r.byte()?,
            assigned: r.byte()?,
            cursor: u64::from(r.byte()?),
        },
        16 => Op::Mode {
            stream: r.byte()?,
            persistent: r.flag()?,
        },
        17 => Op::Cleanup {
            stream: r.byte()?,
            explicit: r.flag()?,
        },
        18 => Op::Install {
            stream: r.byte()?,
            layout: r.byte()?,
        },
        19 => Op::Relocate {
            stream: r.byte()?,
            may_allocate: r.flag()?,
        },
        20 => Op::RelocateFor {
            stream: r.byte()?,
            reason: r.byte()?,
        },
        21 => Op::Raw {
            alloc: r.byte()?,
            start: r.offset()?,
            end: r.offset()?,
        },
        22 => Op::ReleaseRaw { alloc: r.byte()? },
        23 => Op::CaptureBegin { stream: r.byte()? },
        24 => Op::CapturePrimingEnd { stream: r.byte()? },
        25 => Op::CaptureEnd { stream: r.byte()? },
        26 => Op::DropGraphs { stream: r.byte()? },
        27 => Op::BudgetReserve {
            overlay: r.flag()?,
            bytes: BUDGET_SIZES[usize::from(r.byte()?) % BUDGET_SIZES.len()],
        },
        28 => Op::BudgetAlloc {
            overlay: r.flag()?,
            bytes: BUDGET_SIZES[usize::from(r.byte()?) % BUDGET_SIZES.len()],
        },
        29 => Op::BudgetDrop { index: r.byte()? },
        30 => Op::BudgetReap,
        _ => Op::FailNext,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_string_decodes_and_a_truncated_op_ends_the_program() {
        assert!(decode(&[]).is_empty());
        // A reserve code with its stream byte but no size byte is dropped.
        assert!(decode(&[0, 1]).is_empty());
        let p = decode(&[0, 1, 0x80 | 4, 30]);
        assert_eq!(
            p.ops,
            vec![
                Op::Reserve {
                    stream: 1,
                    size: 256
                },
                Op::BudgetReap
            ]
        );
    }

    #[test]
    fn lazy_programs_read_high_codes_as_completions_and_the_rest_alike() {
        let bytes = [0, 1, 0x80 | 4, 230, 2, 30];
        assert_eq!(
            decode_lazy(&bytes).ops,
            vec![
                Op::Reserve {
                    stream: 1,
                    size: 256
                },
                Op::Complete { stream: 2, ops: 7 },
                Op::BudgetReap
            ]
        );
        assert!(decode_lazy(&bytes).lazy_streams);
        // The plain decoder reads 230 as code 6, a reservation.
        assert!(matches!(
            decode(&bytes).ops[1],
            Op::Reserve { stream: 2, .. }
        ));
    }

    #[test]
    fn programs_stop_at_the_op_limit() {
        let bytes = vec![30u8; MAX_OPS * 2];
        assert_eq!(decode(&bytes).len(), MAX_OPS);
    }
}
