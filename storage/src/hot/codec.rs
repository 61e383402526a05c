//! The hot store's compression of a sealed chunk's columns (`chunk.rs`), as
//! Gorilla (Pelkonen et al., VLDB 2015) and InfluxDB's TSM do it: times by
//! delta-of-delta, floats by XOR with the value before, integers and unsigned by
//! their delta, booleans and validity as bits, strings as codes into a per-chunk
//! dictionary. Exact: every value decodes to the same bits (NaN payloads, -0.0).
//!
//! Hand-written rather than a crate: the Rust Gorilla crates found (nodedb-codec,
//! betas; tsz, unmaintained) code `(time, f64)` pairs only, not integer, unsigned,
//! boolean or string columns with nulls, and the whole codec is a page.
//!
//! A value is written only where the point has the field: a chunk's column is
//! its validity (one bit "all valid", else a bit per point), then its valid values.

mod bits;
mod floats;
mod ints;
mod pairs;

use std::collections::HashMap;
use std::sync::Arc;

use bits::{put_signed, BitReader, BitWriter, Cursor};
#[cfg(test)]
pub(crate) use floats::{pack_floats, unpack_floats};
pub(crate) use floats::{pack_floats_marked, unpack_floats_from};
#[cfg(test)]
pub(crate) use ints::{pack_ints, unpack_ints};
pub(crate) use ints::{pack_ints_marked, unpack_ints_from, Mark, MARK_EVERY};

/// Ascending (or any) times: the first as is, then each delta-of-delta.
pub(crate) fn pack_times(times: &[i64]) -> Box<[u64]> {
    let mut w = BitWriter::default();
    let (mut prev, mut delta) = (0i64, 0i64);
    for (k, &t) in times.iter().enumerate() {
        if k == 0 {
            w.put(t as u64, 64);
        } else {
            let d = t.wrapping_sub(prev);
            put_signed(&mut w, d.wrapping_sub(delta));
            delta = d;
        }
        prev = t;
    }
    w.finish()
}

/// Of the `n` times [`pack_times`] packed, those up to the first after
/// `max` (ascending times: those at or before `max`), appended to `out`; how
/// many. A read decodes a chunk's points only as far as its range reaches.
pub(crate) fn unpack_times_until(words: &[u64], n: usize, max: i64, out: &mut Vec<i64>) -> usize {
    if n == 0 {
        return 0;
    }
    let mut r = BitReader::new(words);
    out.reserve(n);
    let mut t = r.get(64) as i64;
    if t > max {
        return 0;
    }
    out.push(t);
    let mut c = Cursor::new(r);
    let (mut delta, mut k) = (0i64, 1);
    while k < n {
        // A run of zeros (the interval kept: 1,023 of TSBS's 1,024 times)
        // from one look at the held bits, not a code at a time.
        let run = c.zeros((n - k).min(63));
        if run == 0 {
            delta = delta.wrapping_add(c.signed());
            t = t.wrapping_add(delta);
            if t > max {
                return k;
            }
            out.push(t);
            k += 1;
            continue;
        }
        for _ in 0..run {
            t = t.wrapping_add(delta);
            if t > max {
                return k;
            }
            out.push(t);
            k += 1;
        }
    }
    n
}

/// The `n` times [`pack_times`] packed, appended to `out`.
#[cfg(test)]
pub(crate) fn unpack_times(words: &[u64], n: usize, out: &mut Vec<i64>) {
    unpack_times_until(words, n, i64::MAX, out);
}

/// Validity: one bit "all valid", else a bit per point.
fn put_valid(w: &mut BitWriter, valid: &[bool]) {
    let all = valid.iter().all(|&v| v);
    w.bit(all);
    if !all {
        for &v in valid {
            w.bit(v);
        }
    }
}

/// The validity of the first `take` of `n` points, appended to `out` (the
/// reader then at the values); whether every point is valid.
fn get_valid(r: &mut BitReader<'_>, n: usize, take: usize, out: &mut Vec<bool>) -> bool {
    if r.bit() {
        out.extend(std::iter::repeat_n(true, take));
        return true;
    }
    out.extend((0..take).map(|_| r.bit()));
    r.skip(n - take);
    false
}

/// Booleans, a bit each.
pub(crate) fn pack_bools(values: &[bool], valid: &[bool]) -> Box<[u64]> {
    let mut w = BitWriter::default();
    put_valid(&mut w, valid);
    for (&v, _) in values.iter().zip(valid).filter(|(_, ok)| **ok) {
        w.bit(v);
    }
    w.finish()
}

/// The first `take` of the `n` points [`pack_bools`] packed.
pub(crate) fn unpack_bools(
    words: &[u64],
    n: usize,
    take: usize,
    out: &mut Vec<bool>,
    valid: &mut Vec<bool>,
) {
    let mut r = BitReader::new(words);
    let from = valid.len();
    get_valid(&mut r, n, take, valid);
    out.extend((from..from + take).map(|k| valid[k] && r.bit()));
}

/// Strings as codes into the chunk's dictionary (its distinct values, in first
/// use order, shared with the column they came from), each as wide as the
/// dictionary needs.
pub(crate) fn pack_strings(values: &[Arc<str>], valid: &[bool]) -> (Box<[u64]>, Box<[Arc<str>]>) {
    let mut dict: Vec<Arc<str>> = Vec::new();
    let mut index: HashMap<&str, u64> = HashMap::new();
    let codes: Vec<u64> = values
        .iter()
        .zip(valid)
        .filter(|(_, ok)| **ok)
        .map(|(s, _)| {
            *index.entry(s).or_insert_with(|| {
                dict.push(s.clone());
                dict.len() as u64 - 1
            })
        })
        .collect();
    let width = code_width(dict.len());
    let mut w = BitWriter::default();
    put_valid(&mut w, valid);
    for c in codes {
        w.put(c, width);
    }
    (w.finish(), dict.into_boxed_slice())
}

fn code_width(entries: usize) -> u32 {
    usize::BITS - entries.saturating_sub(1).leading_zeros()
}

/// The first `take` of the `n` points [`pack_strings`] packed (`""` where
/// not valid).
pub(crate) fn unpack_strings(
    words: &[u64],
    dict: &[Arc<str>],
    (n, take): (usize, usize),
    out: &mut Vec<Arc<str>>,
    valid: &mut Vec<bool>,
) {
    let mut r = BitReader::new(words);
    let from = valid.len();
    get_valid(&mut r, n, take, valid);
    let width = code_width(dict.len());
    let empty: Arc<str> = Arc::from("");
    out.extend((from..from + take).map(|k| {
        if valid[k] {
            dict[r.get(width) as usize].clone()
        } else {
            empty.clone()
        }
    }));
}

#[cfg(test)]
#[path = "codec_tests.rs"]
pub(crate) mod tests;
