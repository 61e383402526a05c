//! Integers (unsigned as their bits) by their delta, with a mark every
//! [`MARK_EVERY`] values that a read starting inside a chunk decodes from.

use super::bits::{put_signed, BitReader, BitWriter, Cursor};
use super::{get_valid, put_valid};

/// Values between two [`Mark`]s of a column.
pub(crate) const MARK_EVERY: usize = 256;

/// Where value `k * MARK_EVERY` (k ≥ 1) of a column of integers with every
/// point valid starts, and the value before it: a read whose range starts
/// inside a chunk decodes from the mark before its first point, not from
/// the chunk's first point (a value is the delta from the one before).
/// TSBS `single-groupby-5-8-1` reads 360 points of 8 hosts' 1,024-point
/// chunks, and decoded 512 more of each on average before them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark {
    /// The bit at which the value's code starts.
    pub(super) pos: u32,
    /// A float column's XOR window there (`floats.rs`): the leading and
    /// trailing zeros of the meaningful bits last sent; 0 elsewhere. In
    /// what was the padding after `pos`: a mark stays 16 bytes.
    pub(super) window: (u8, u8),
    /// The value before it (a float's bits, or its integer at its scale).
    pub(super) prev: i64,
}

/// Pushes to `marks` the mark of value `k` of a column's valid values
/// where one is due: every [`MARK_EVERY`] values of a column with every
/// point valid (`all`; none else: a value's index is then not its
/// point's), its code at bit `pos`, after `prev`.
pub(super) fn mark_at(
    marks: &mut Vec<Mark>,
    all: bool,
    k: usize,
    pos: usize,
    prev: i64,
    window: (u8, u8),
) {
    if all && k > 0 && k.is_multiple_of(MARK_EVERY) {
        // Marks stop where a position no longer fits (never at a
        // chunk's size): mark `j` stays value `(j + 1) * MARK_EVERY`'s.
        if let Ok(pos) = u32::try_from(pos) {
            if marks.len() + 1 == k / MARK_EVERY {
                marks.push(Mark { pos, window, prev });
            }
        }
    }
}

/// Integers (unsigned as their bits) by the delta from the previous valid value.
#[cfg(test)]
pub(crate) fn pack_ints(values: impl Iterator<Item = i64>, valid: &[bool]) -> Box<[u64]> {
    pack_ints_marked(values, valid).0
}

/// [`pack_ints`], with a [`Mark`] every [`MARK_EVERY`] values where every
/// point is valid (none else: a value's index is then not its point's).
pub(crate) fn pack_ints_marked(
    values: impl Iterator<Item = i64>,
    valid: &[bool],
) -> (Box<[u64]>, Box<[Mark]>) {
    let mut w = BitWriter::default();
    put_valid(&mut w, valid);
    let all = valid.iter().all(|&ok| ok);
    let mut marks = Vec::new();
    let mut prev = 0i64;
    for (k, (v, _)) in values.zip(valid).filter(|(_, ok)| **ok).enumerate() {
        mark_at(&mut marks, all, k, w.bits, prev, (0, 0));
        put_signed(&mut w, v.wrapping_sub(prev));
        prev = v;
    }
    (w.finish(), marks.into_boxed_slice())
}

/// The first `take` of the `n` points [`pack_ints`] packed, appended to
/// `out` as `to` makes them (0 where not valid).
#[cfg(test)]
pub(crate) fn unpack_ints<T>(
    words: &[u64],
    n: usize,
    take: usize,
    valid: &mut Vec<bool>,
    out: &mut Vec<T>,
    to: impl Fn(i64) -> T,
) {
    unpack_ints_from(words, &[], n, (0, take), valid, out, to);
}

/// Points `skip..take` of the `n` points [`pack_ints_marked`] packed
/// (with `marks`, or none), appended to `out` as `to` makes them (0 where
/// not valid): those before `skip` decoded from the last mark before it,
/// and not kept.
pub(crate) fn unpack_ints_from<T>(
    words: &[u64],
    marks: &[Mark],
    n: usize,
    (skip, take): (usize, usize),
    valid: &mut Vec<bool>,
    out: &mut Vec<T>,
    to: impl Fn(i64) -> T,
) {
    let mut r = BitReader::new(words);
    let from = valid.len();
    if r.bit() {
        // Every point valid: value `k` is point `k`.
        valid.extend(std::iter::repeat_n(true, take - skip));
        out.reserve(take - skip);
        let (start, mut prev) = match (skip / MARK_EVERY).min(marks.len()) {
            0 => (0, 0i64),
            j => {
                let m = marks[j - 1];
                r.pos = m.pos as usize;
                (j * MARK_EVERY, m.prev)
            }
        };
        let mut c = Cursor::new(r);
        prev = c.sums(prev, skip - start, |_, _| {});
        // No validity to test per point: the loop is the bits' alone, two
        // codes at a time, into the values' slots.
        let at = out.len();
        out.resize_with(at + (take - skip), || to(0));
        let slots = &mut out[at..];
        c.sums(prev, take - skip, |k, v| slots[k] = to(v));
        return;
    }
    r.pos = 0;
    let all = get_valid(&mut r, n, take, valid);
    debug_assert!(!all);
    out.reserve(take);
    let mut prev = 0i64;
    let mut c = Cursor::new(r);
    for &ok in &valid[from..] {
        if ok {
            prev = prev.wrapping_add(c.signed());
            out.push(to(prev));
        } else {
            out.push(to(0));
        }
    }
    // The points before `skip` decoded, then dropped (a column with nulls
    // has no marks).
    valid.drain(from..from + skip);
    out.drain(out.len() - take..out.len() - take + skip);
}

#[cfg(test)]
#[path = "ints_tests.rs"]
mod tests;
