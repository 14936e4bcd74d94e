//! Bit-per-slot sets of an arena page's chunk slots (the mapped bits):
//! ranges set, cleared and searched a 64-slot word at a time, so mapping a
//! chunk or finding a span's unmapped runs costs a step per word, not one
//! per slot. A slot past the set's end reads as clear.

/// The words of slots `first..=last` with the bits each holds of them:
/// the first and last words in part, the words between whole (no mask
/// computed per word: a span of 4,096 slots is 64 words).
#[inline]
fn words(bits: &mut [u64], first: u32, last: u32) -> (&mut [u64], u64, u64) {
    let (lo, hi) = (first as usize / 64, last as usize / 64);
    let head = u64::MAX << (first % 64);
    let tail = u64::MAX >> (63 - last % 64);
    match lo == hi {
        true => (&mut bits[lo..=hi], head & tail, head & tail),
        false => (&mut bits[lo..=hi], head, tail),
    }
}

/// Set the bits of slots `first..=last` (all within the set).
pub(crate) fn set(bits: &mut [u64], first: u32, last: u32) {
    let (span, head, tail) = words(bits, first, last);
    let n = span.len();
    span[0] |= head;
    span[n - 1] |= tail;
    if n > 2 {
        span[1..n - 1].fill(u64::MAX);
    }
}

/// Clear the bits of slots `first..=last` (all within the set).
pub(crate) fn clear(bits: &mut [u64], first: u32, last: u32) {
    let (span, head, tail) = words(bits, first, last);
    let n = span.len();
    span[0] &= !head;
    span[n - 1] &= !tail;
    if n > 2 {
        span[1..n - 1].fill(0);
    }
}

/// Whether the bits of slots `first..=last` (all within the set) are all
/// set: the first and last words masked, the words between compared whole.
pub(crate) fn all(bits: &[u64], first: u32, last: u32) -> bool {
    let (lo, hi) = (first as usize / 64, last as usize / 64);
    let head = u64::MAX << (first % 64);
    let tail = u64::MAX >> (63 - last % 64);
    if lo == hi {
        return bits[lo] & head & tail == head & tail;
    }
    let span = &bits[lo..=hi];
    let n = span.len();
    span[0] & head == head
        && span[n - 1] & tail == tail
        && span[1..n - 1].iter().all(|&w| w == u64::MAX)
}

/// The first slot of `from..=last` whose bit is `value`, or `last + 1`
/// when none is.
#[inline]
pub(crate) fn next(bits: &[u64], value: bool, from: u32, last: u32) -> u32 {
    let mut s = from;
    while s <= last {
        let w = s as usize / 64;
        let word = bits.get(w).copied().unwrap_or(0);
        // Bits equal to `value` become ones; those below `s` are dropped.
        let hits = (if value { word } else { !word }) >> (s % 64);
        if hits != 0 {
            return (s + hits.trailing_zeros()).min(last + 1);
        }
        s = (w as u32 + 1) * 64;
    }
    last + 1
}

/// Whether slot `s`'s bit is set (past the set's end: clear).
#[inline]
pub(crate) fn get(bits: &[u64], s: u32) -> bool {
    bits.get(s as usize / 64)
        .is_some_and(|word| word >> (s % 64) & 1 == 1)
}

/// Set (`value`) or clear slot `s`'s bit (within the set).
#[inline]
pub(crate) fn put(bits: &mut [u64], s: u32, value: bool) {
    let (word, at) = (&mut bits[s as usize / 64], s % 64);
    *word = *word & !(1 << at) | u64::from(value) << at;
}
