//! A sealed chunk: a run of one series' older points, compressed (`codec.rs`),
//! with the span of times it holds and the bounds of each numeric field's
//! values. Sealed from the front of the series' open tail once that reaches
//! `Table::chunk` points and a slack; decoded, as far as the read's range
//! reaches, for a read that reaches into it (unless its bounds say no point
//! can pass the read's condition), or to merge a late point or a rewrite
//! into it (rare: re-encoded then).

use std::sync::Arc;

use super::codec;
use super::column::{Column, Plain, Values};

/// One field's values in a chunk, as `codec.rs` packs them (validity first).
#[derive(Debug)]
enum Packed {
    /// With its marks (`codec::Mark`), as the numbers below.
    Float(Box<[u64]>, Box<[codec::Mark]>),
    /// With its marks (`codec::Mark`): a read starting inside the chunk
    /// decodes from the one before its first point.
    Integer(Box<[u64]>, Box<[codec::Mark]>),
    Unsigned(Box<[u64]>, Box<[codec::Mark]>),
    Boolean(Box<[u64]>),
    String(Box<[u64]>, Box<[Arc<str>]>),
}

impl Packed {
    fn of(c: &Column, n: usize) -> Packed {
        let valid = &c.valid[..n];
        match &c.values {
            Values::Float(v) => {
                let (words, marks) = codec::pack_floats_marked(&v[..n], valid);
                Packed::Float(words, marks)
            }
            Values::Integer(v) => {
                let (words, marks) = codec::pack_ints_marked(v[..n].iter().copied(), valid);
                Packed::Integer(words, marks)
            }
            Values::Unsigned(v) => {
                let (words, marks) =
                    codec::pack_ints_marked(v[..n].iter().map(|&x| x as i64), valid);
                Packed::Unsigned(words, marks)
            }
            Values::Boolean(v) => Packed::Boolean(codec::pack_bools(&v[..n], valid)),
            Values::String(v) => {
                let (words, dict) = codec::pack_strings(&v[..n], valid);
                Packed::String(words, dict)
            }
        }
    }

    /// Appends points `skip..take` of its `n` points to `c` (nulls where `c`
    /// is of another type, which a field never is: its type is fixed at the
    /// door).
    fn unpack_into(&self, c: &mut Column, n: usize, (skip, take): (usize, usize)) {
        let at = c.valid.len();
        let valid = &mut c.valid;
        match (self, &mut c.values) {
            (Packed::Integer(w, marks), Values::Integer(v)) => {
                return codec::unpack_ints_from(w, marks, n, (skip, take), valid, v, |x| x);
            }
            (Packed::Unsigned(w, marks), Values::Unsigned(v)) => {
                return codec::unpack_ints_from(w, marks, n, (skip, take), valid, v, |x| x as u64);
            }
            (Packed::Float(w, marks), Values::Float(v)) => {
                return codec::unpack_floats_from(w, marks, n, (skip, take), v, valid);
            }
            (Packed::Boolean(w), Values::Boolean(v)) => codec::unpack_bools(w, n, take, v, valid),
            (Packed::String(w, dict), Values::String(v)) => {
                codec::unpack_strings(w, dict, (n, take), v, valid)
            }
            _ => return c.extend_nulls(take - skip),
        }
        // Decoded from the first point (no marks): those before `skip` dropped.
        c.drain_at(at, skip);
    }

    /// Whether a read can decode a few of its points from a mark before
    /// them (`codec::Mark`), not from the chunk's first point.
    fn marked(&self) -> bool {
        matches!(self, Packed::Integer(_, m) | Packed::Unsigned(_, m) | Packed::Float(_, m) if !m.is_empty())
    }

    fn bytes(&self) -> usize {
        let words = |w: &[u64]| w.len() * 8;
        match self {
            Packed::Boolean(w) => words(w),
            Packed::Integer(w, marks) | Packed::Unsigned(w, marks) | Packed::Float(w, marks) => {
                words(w) + std::mem::size_of_val::<[codec::Mark]>(marks)
            }
            Packed::String(w, dict) => {
                words(w)
                    + dict
                        .iter()
                        .map(|s| s.len() + std::mem::size_of::<Arc<str>>())
                        .sum::<usize>()
            }
        }
    }
}

/// The smallest and largest value of one field in a chunk, so that a read
/// whose field condition none of them can pass (TSBS `high-cpu-1`:
/// `usage_user > 90.0`) skips the chunk without decoding it. NaN is left out:
/// it passes no comparison (`cond.rs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Bounds {
    /// No point of the chunk has a (non-NaN) value: no comparison passes.
    Empty,
    Float(f64, f64),
    Integer(i64, i64),
    /// Not kept (strings, booleans, unsigned: no condition the store reads
    /// compares them by bounds).
    Unknown,
}

impl Bounds {
    fn of(c: &Column, n: usize) -> Bounds {
        let valid = &c.valid[..n];
        match &c.values {
            Values::Float(v) => v[..n]
                .iter()
                .zip(valid)
                .filter(|(x, ok)| **ok && !x.is_nan())
                .fold(Bounds::Empty, |b, (&x, _)| match b {
                    Bounds::Float(lo, hi) => Bounds::Float(lo.min(x), hi.max(x)),
                    _ => Bounds::Float(x, x),
                }),
            Values::Integer(v) => {
                v[..n]
                    .iter()
                    .zip(valid)
                    .filter(|(_, ok)| **ok)
                    .fold(Bounds::Empty, |b, (&x, _)| match b {
                        Bounds::Integer(lo, hi) => Bounds::Integer(lo.min(x), hi.max(x)),
                        _ => Bounds::Integer(x, x),
                    })
            }
            _ => Bounds::Unknown,
        }
    }
}

/// A run of a series' points, compressed.
#[derive(Debug)]
pub(crate) struct Chunk {
    /// Its oldest and newest times.
    pub(crate) min: i64,
    pub(crate) max: i64,
    /// Points held.
    pub(crate) len: usize,
    times: Box<[u64]>,
    /// By the table's field index, as the series' columns were when sealed;
    /// a field the series gained later (past the end, or `None`) is null here.
    columns: Box<[Option<Packed>]>,
    /// The bounds of each column's values, by the same index.
    bounds: Box<[Bounds]>,
}

impl Chunk {
    /// The first `n` (> 0) points of `p`, compressed.
    pub(crate) fn seal(p: &Plain, n: usize) -> Chunk {
        Chunk {
            min: p.times[0],
            max: p.times[n - 1],
            len: n,
            times: codec::pack_times(&p.times[..n]),
            columns: p
                .columns
                .iter()
                .map(|c| c.as_ref().map(|c| Packed::of(c, n)))
                .collect(),
            bounds: p
                .columns
                .iter()
                .map(|c| c.as_ref().map_or(Bounds::Empty, |c| Bounds::of(c, n)))
                .collect(),
        }
    }

    /// The bounds of field `i`'s values (the table's index; `Empty` for a
    /// field the chunk does not have).
    pub(crate) fn bounds(&self, i: usize) -> Bounds {
        self.bounds.get(i).copied().unwrap_or(Bounds::Empty)
    }

    /// Appends its points to `out`, whose columns say which fields to decode
    /// (and of which type): a read decodes only what it needs.
    pub(crate) fn unpack_into(&self, out: &mut Plain) {
        self.unpack_until(i64::MAX, out);
    }

    /// [`Chunk::unpack_into`] of its points up to `max` only: a read whose
    /// range ends inside the chunk decodes no further (a point's value is
    /// the delta from the one before, so the points before its range are
    /// decoded all the same).
    pub(crate) fn unpack_until(&self, max: i64, out: &mut Plain) {
        let take = self.unpack_times_until(max, &mut out.times);
        self.unpack_columns(take, &mut out.columns, |_| true);
    }

    /// Appends its times up to `max` to `out`: how many ([`Chunk::unpack_until`]).
    pub(crate) fn unpack_times_until(&self, max: i64, out: &mut Vec<i64>) -> usize {
        codec::unpack_times_until(&self.times, self.len, max, out)
    }

    /// Appends the first `take` points of each column of `out` whose index
    /// `want` takes (columns appended to in two passes, the condition's first:
    /// `Series::points_sifted`).
    pub(crate) fn unpack_columns(
        &self,
        take: usize,
        out: &mut [Option<Column>],
        want: impl Fn(usize) -> bool,
    ) {
        self.unpack_columns_from((0, take), out, want);
    }

    /// [`Chunk::unpack_columns`] of points `skip..take`: those before a
    /// read's range (`skip`) not kept, and decoded from the mark before it
    /// where the column has marks (`codec::Mark`).
    pub(crate) fn unpack_columns_from(
        &self,
        (skip, take): (usize, usize),
        out: &mut [Option<Column>],
        want: impl Fn(usize) -> bool,
    ) {
        // One span, the whole range: every column decoded over it.
        self.unpack_columns_spans((skip, take), &[(skip, take)], out, want);
    }

    /// [`Chunk::unpack_columns_from`] of points `skip..take`, but a column
    /// with marks (`codec::Mark`) decoded over `spans` only (sorted, disjoint,
    /// inside `skip..take`), each from the mark before it, and null between
    /// them: a sifted read's other fields, where points pass
    /// (`Series::points_sifted`). A column without marks is decoded whole.
    pub(crate) fn unpack_columns_spans(
        &self,
        (skip, take): (usize, usize),
        spans: &[(usize, usize)],
        out: &mut [Option<Column>],
        want: impl Fn(usize) -> bool,
    ) {
        for (i, c) in out.iter_mut().enumerate() {
            let Some(c) = c else { continue };
            if !want(i) {
                continue;
            }
            match self.columns.get(i).and_then(Option::as_ref) {
                Some(p) if p.marked() => {
                    let mut at = skip;
                    for &(a, b) in spans {
                        c.extend_nulls(a - at);
                        p.unpack_into(c, self.len, (a, b));
                        at = b;
                    }
                    c.extend_nulls(take - at);
                }
                Some(p) => p.unpack_into(c, self.len, (skip, take)),
                None => c.extend_nulls(take - skip),
            }
        }
    }

    /// What it takes in memory, bytes.
    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of::<Chunk>()
            + self.times.len() * 8
            + self.columns.len() * std::mem::size_of::<Option<Packed>>()
            + self.bounds.len() * std::mem::size_of::<Bounds>()
            + self
                .columns
                .iter()
                .flatten()
                .map(Packed::bytes)
                .sum::<usize>()
    }
}

#[cfg(test)]
#[path = "chunk_tests.rs"]
mod tests;
