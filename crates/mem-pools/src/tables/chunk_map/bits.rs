//! Bit-per-slot sets of an arena page's chunk slots (the mapped bits):
//! ranges set, cleared and searched a 64-slot word at a time, so mapping a
//! chunk or finding a span's unmapped runs costs a step per word, not one
//! per slot. A slot past the set's end reads as clear.

/// Set the bits of slots `first..=last` (all within the set).
#[inline]
pub(crate) fn set(bits: &mut [u64], first: u32, last: u32) {
    set_in([bits], first, last);
}

/// Clear the bits of slots `first..=last` (all within the set).
#[inline]
pub(crate) fn clear(bits: &mut [u64], first: u32, last: u32) {
    clear_in([bits], first, last);
}

/// The words of slots `first..=last` (first and last index) and the bits
/// the first and the last hold of them; the words between hold them all
/// (no mask computed per word: a span of 4,096 slots is 64 words).
#[inline]
fn masks(first: u32, last: u32) -> (usize, usize, u64, u64) {
    let head = u64::MAX << (first % 64);
    let tail = u64::MAX >> (63 - last % 64);
    (first as usize / 64, last as usize / 64, head, tail)
}

/// Set the bits of slots `first..=last` in each of `sets` (all hold
/// them): the word range and end masks computed once for all (a run
/// queued idle sets its idle, chain and stamp bits).
#[inline]
pub(crate) fn set_in<const N: usize>(mut sets: [&mut [u64]; N], first: u32, last: u32) {
    let (lo, hi, head, tail) = masks(first, last);
    if lo == hi {
        for bits in sets {
            bits[lo] |= head & tail;
        }
        return;
    }
    for bits in sets.iter_mut() {
        let span = &mut bits[lo..=hi];
        let n = span.len();
        span[0] |= head;
        span[n - 1] |= tail;
    }
    if hi - lo <= 1 {
        return;
    }
    if hi - lo > FILL_APART {
        for bits in sets {
            bits[lo + 1..hi].fill(u64::MAX);
        }
        return;
    }
    // As in `clear_in`: a few words in one pass over the columns.
    let mut inner = sets.map(|bits| &mut bits[lo + 1..hi]);
    for i in 0..hi - lo - 1 {
        for words in inner.iter_mut() {
            words[i] = u64::MAX;
        }
    }
}

/// Clear the bits of slots `first..=last` in each of `sets` (all hold
/// them): the word range and end masks computed once for all (an idle
/// run leaving the list clears its idle, chain and stamp bits).
#[inline]
pub(crate) fn clear_in<const N: usize>(mut sets: [&mut [u64]; N], first: u32, last: u32) {
    let (lo, hi, head, tail) = masks(first, last);
    if lo == hi {
        for bits in sets {
            bits[lo] &= !(head & tail);
        }
        return;
    }
    for bits in sets.iter_mut() {
        let span = &mut bits[lo..=hi];
        let n = span.len();
        span[0] &= !head;
        span[n - 1] &= !tail;
    }
    if hi - lo <= 1 {
        return;
    }
    if hi - lo > FILL_APART {
        for bits in sets {
            bits[lo + 1..hi].fill(0);
        }
        return;
    }
    // A few words between the ends: cleared in one pass over the columns
    // together, not a `memset` call per column (a call's fixed cost is
    // more than a few stores).
    let mut inner = sets.map(|bits| &mut bits[lo + 1..hi]);
    for i in 0..hi - lo - 1 {
        for words in inner.iter_mut() {
            words[i] = 0;
        }
    }
}

/// Spans of more words than this between their ends clear each column
/// apart: past a few words a `memset` per column pays for its call, under
/// it one pass over the columns together is cheaper. The cost is flat
/// near the threshold; the values tried are in CHANGELOG.md.
const FILL_APART: usize = 8;

/// The index of the first of `words` that is not `flip`: blocks of eight
/// words passed over with one compare each (a run of 4,096 chained slots
/// is 64 words), the rest word by word.
#[inline]
fn first_not(words: &[u64], flip: u64) -> Option<usize> {
    let mut skipped = 0;
    for block in words.chunks_exact(8) {
        if block.iter().fold(0, |any, &word| any | (word ^ flip)) != 0 {
            break;
        }
        skipped += 8;
    }
    let rest = words[skipped..].iter().position(|&word| word != flip);
    rest.map(|i| skipped + i)
}

/// The first slot of `from..=last` whose bit is `value`, or `last + 1`
/// when none is: the words after the first compared whole (a run of
/// 4,096 slots is 64 compares).
#[inline]
pub(crate) fn next(bits: &[u64], value: bool, from: u32, last: u32) -> u32 {
    // Bits equal to `value` become ones.
    let flip = if value { 0 } else { u64::MAX };
    let w = from as usize / 64;
    let Some(&word) = bits.get(w) else {
        // Past the set's end every bit reads clear.
        return if value { last + 1 } else { from.min(last + 1) };
    };
    let hits = (word ^ flip) >> (from % 64);
    if hits != 0 {
        return (from + hits.trailing_zeros()).min(last + 1);
    }
    let end = (last as usize / 64 + 1).min(bits.len());
    // The next word (a span of two words, most of those over several, or
    // a run ending just past a word's edge): no block search set up.
    if w + 1 < end {
        let hits = bits[w + 1] ^ flip;
        if hits != 0 {
            return ((w as u32 + 1) * 64 + hits.trailing_zeros()).min(last + 1);
        }
    }
    if w + 2 < end
        && let Some(i) = first_not(&bits[w + 2..end], flip)
    {
        let k = w + 2 + i;
        return (k as u32 * 64 + (bits[k] ^ flip).trailing_zeros()).min(last + 1);
    }
    match value {
        true => last + 1,
        false => (end as u32 * 64).min(last + 1),
    }
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
