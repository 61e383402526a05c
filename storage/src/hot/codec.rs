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

use std::collections::HashMap;
use std::sync::Arc;

/// Bits, least significant first, in 64-bit words.
#[derive(Debug, Default)]
pub(crate) struct BitWriter {
    words: Vec<u64>,
    bits: usize,
}

impl BitWriter {
    /// Writes the low `n` (≤ 64) bits of `v`.
    fn put(&mut self, v: u64, n: u32) {
        if n == 0 {
            return;
        }
        let v = if n == 64 { v } else { v & ((1 << n) - 1) };
        let off = (self.bits % 64) as u32;
        if off == 0 {
            self.words.push(v);
        } else {
            *self.words.last_mut().expect("a word is open") |= v << off;
            if off + n > 64 {
                self.words.push(v >> (64 - off));
            }
        }
        self.bits += n as usize;
    }

    fn bit(&mut self, b: bool) {
        self.put(u64::from(b), 1);
    }

    /// The bits written, their words only as long as they need.
    pub(crate) fn finish(self) -> Box<[u64]> {
        self.words.into_boxed_slice()
    }
}

/// Reads what a [`BitWriter`] wrote.
pub(crate) struct BitReader<'a> {
    words: &'a [u64],
    pos: usize,
}

impl<'a> BitReader<'a> {
    pub(crate) fn new(words: &'a [u64]) -> BitReader<'a> {
        BitReader { words, pos: 0 }
    }

    fn get(&mut self, n: u32) -> u64 {
        if n == 0 {
            return 0;
        }
        let w = self.pos / 64;
        let off = (self.pos % 64) as u32;
        let mut v = self.words[w] >> off;
        if off + n > 64 {
            v |= self.words[w + 1] << (64 - off);
        }
        self.pos += n as usize;
        if n == 64 {
            v
        } else {
            v & ((1 << n) - 1)
        }
    }

    fn bit(&mut self) -> bool {
        self.get(1) == 1
    }

    /// The next 64 bits without consuming them; zeros past the end.
    #[inline]
    fn window(&self) -> u64 {
        let w = self.pos / 64;
        let off = (self.pos % 64) as u32;
        let lo = self.words.get(w).copied().unwrap_or(0) >> off;
        if off == 0 {
            lo
        } else {
            lo | self.words.get(w + 1).copied().unwrap_or(0) << (64 - off)
        }
    }

    fn skip(&mut self, n: usize) {
        self.pos += n;
    }
}

/// Widths of a signed number's buckets after its prefix (`0`, `10`, `110`, …,
/// `11111`): a regular interval's delta-of-delta is one bit, a random walk's step
/// of a few units (TSBS's integer fields) six.
const WIDTHS: [u32; 6] = [0, 4, 8, 16, 32, 64];

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

fn put_signed(w: &mut BitWriter, v: i64) {
    let u = zigzag(v);
    let last = WIDTHS.len() - 1;
    for (k, &width) in WIDTHS.iter().enumerate() {
        if k == last || (width < 64 && u < 1 << width) {
            // k ones, then a zero unless this is the last bucket.
            w.put((1 << k) - 1, k as u32);
            if k < last {
                w.bit(false);
            }
            w.put(u, width);
            return;
        }
    }
}

#[inline]
fn get_signed(r: &mut BitReader<'_>) -> i64 {
    // Prefix and value from one 64-bit window, not a read per part (decoding
    // is what a read of sealed chunks costs: TSBS `cpu-max-all-1` decodes
    // 30k integers): every bucket but the widest fits in it, prefix included.
    let last = WIDTHS.len() - 1;
    let win = r.window();
    let k = (win.trailing_ones() as usize).min(last);
    if k == last {
        r.pos += last;
        return unzigzag(r.get(WIDTHS[last]));
    }
    let (prefix, width) = (k as u32 + 1, WIDTHS[k]);
    r.pos += (prefix + width) as usize;
    unzigzag((win >> prefix) & ((1u64 << width) - 1))
}

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
    let mut r = BitReader::new(words);
    let (mut prev, mut delta) = (0i64, 0i64);
    out.reserve(n);
    for k in 0..n {
        let t = if k == 0 {
            r.get(64) as i64
        } else {
            delta = delta.wrapping_add(get_signed(&mut r));
            prev.wrapping_add(delta)
        };
        if t > max {
            return k;
        }
        out.push(t);
        prev = t;
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

/// Powers of ten a chunk's floats may be scaled by to be integers.
const SCALES: [f64; 5] = [1.0, 10.0, 100.0, 1_000.0, 10_000.0];

/// The smallest scale (index into [`SCALES`]) by which every valid value is an
/// integer that decodes back to the same bits (`n as f64 / scale`), if any.
fn decimal_scale(values: &[f64], valid: &[bool]) -> Option<usize> {
    (0..SCALES.len()).find(|&d| {
        let p = SCALES[d];
        values
            .iter()
            .zip(valid)
            .filter(|(_, ok)| **ok)
            .all(|(&x, _)| {
                let n = (x * p).round();
                n.abs() < 9.0e15 && ((n as i64) as f64 / p).to_bits() == x.to_bits()
            })
    })
}

/// Floats: where every value is a decimal of at most 4 places (a gauge's
/// `58.3`, or a whole number), the integers they are at that scale, as
/// [`pack_ints`] codes them (XOR finds no repeats in `58.3` against `58.4`:
/// 6 bytes a value, against under 2). Else by XOR with the previous valid
/// value: `0` the same; `10` and the meaningful bits inside the previous
/// window; `11`, 5 bits of leading zeros, 6 of length − 1, then the bits.
pub(crate) fn pack_floats(values: &[f64], valid: &[bool]) -> Box<[u64]> {
    let mut w = BitWriter::default();
    put_valid(&mut w, valid);
    let scale = decimal_scale(values, valid);
    w.bit(scale.is_some());
    if let Some(d) = scale {
        w.put(d as u64, 3);
        let mut prev = 0i64;
        for (&x, _) in values.iter().zip(valid).filter(|(_, ok)| **ok) {
            let n = (x * SCALES[d]).round() as i64;
            put_signed(&mut w, n.wrapping_sub(prev));
            prev = n;
        }
        return w.finish();
    }
    let mut prev: Option<u64> = None;
    let (mut lead, mut trail) = (u32::MAX, 0u32);
    for (v, _) in values.iter().zip(valid).filter(|(_, ok)| **ok) {
        let bits = v.to_bits();
        let Some(p) = prev else {
            w.put(bits, 64);
            prev = Some(bits);
            continue;
        };
        let x = bits ^ p;
        if x == 0 {
            w.bit(false);
        } else {
            w.bit(true);
            let (l, t) = (x.leading_zeros().min(31), x.trailing_zeros());
            if lead != u32::MAX && l >= lead && t >= trail {
                w.bit(false);
                w.put(x >> trail, 64 - lead - trail);
            } else {
                w.bit(true);
                let len = 64 - l - t;
                w.put(u64::from(l), 5);
                w.put(u64::from(len - 1), 6);
                w.put(x >> t, len);
                (lead, trail) = (l, t);
            }
        }
        prev = Some(bits);
    }
    w.finish()
}

/// The first `take` of the `n` points [`pack_floats`] packed, appended (0.0
/// where not valid).
pub(crate) fn unpack_floats(
    words: &[u64],
    n: usize,
    take: usize,
    out: &mut Vec<f64>,
    valid: &mut Vec<bool>,
) {
    let mut r = BitReader::new(words);
    let from = valid.len();
    let all = get_valid(&mut r, n, take, valid);
    out.reserve(take);
    if r.bit() {
        let p = SCALES[r.get(3) as usize];
        let mut prev = 0i64;
        if all {
            out.extend((0..take).map(|_| {
                prev = prev.wrapping_add(get_signed(&mut r));
                prev as f64 / p
            }));
            return;
        }
        for &ok in &valid[from..] {
            if ok {
                prev = prev.wrapping_add(get_signed(&mut r));
                out.push(prev as f64 / p);
            } else {
                out.push(0.0);
            }
        }
        return;
    }
    let mut xor = Xor {
        prev: 0,
        lead: 0,
        trail: 0,
    };
    let Some(first) = valid[from..].iter().position(|&ok| ok) else {
        out.extend(std::iter::repeat_n(0.0, take));
        return;
    };
    out.extend(std::iter::repeat_n(0.0, first));
    xor.prev = r.get(64);
    out.push(f64::from_bits(xor.prev));
    let rest = from + first + 1..from + take;
    if all {
        // No validity to test per point: the loop is the bits' alone.
        out.extend(rest.map(|_| f64::from_bits(xor.next(&mut r))));
        return;
    }
    for k in rest {
        out.push(if valid[k] {
            f64::from_bits(xor.next(&mut r))
        } else {
            0.0
        });
    }
}

/// The state of [`pack_floats`]' XOR coding: the value before, the window
/// of meaningful bits last sent.
struct Xor {
    prev: u64,
    lead: u32,
    trail: u32,
}

impl Xor {
    /// The next value. Control bits, header and meaningful bits from one
    /// 64-bit window where they fit in it (all but the longest XORs), as
    /// `get_signed` reads integers: a read per part was most of what a
    /// float cost to decode.
    #[inline]
    fn next(&mut self, r: &mut BitReader<'_>) -> u64 {
        let win = r.window();
        if win & 1 == 0 {
            r.pos += 1;
            return self.prev;
        }
        let (skip, len) = if win & 2 == 0 {
            (2, 64 - self.lead - self.trail)
        } else {
            self.lead = ((win >> 2) & 31) as u32;
            let len = ((win >> 7) & 63) as u32 + 1;
            self.trail = 64 - self.lead - len;
            (13, len)
        };
        let bits = if skip + len < 64 {
            r.pos += (skip + len) as usize;
            (win >> skip) & ((1u64 << len) - 1)
        } else {
            r.pos += skip as usize;
            r.get(len)
        };
        self.prev ^= bits << self.trail;
        self.prev
    }
}

/// Integers (unsigned as their bits) by the delta from the previous valid value.
pub(crate) fn pack_ints(values: impl Iterator<Item = i64>, valid: &[bool]) -> Box<[u64]> {
    let mut w = BitWriter::default();
    put_valid(&mut w, valid);
    let mut prev = 0i64;
    for (v, _) in values.zip(valid).filter(|(_, ok)| **ok) {
        put_signed(&mut w, v.wrapping_sub(prev));
        prev = v;
    }
    w.finish()
}

/// The first `take` of the `n` points [`pack_ints`] packed, appended to
/// `out` as `to` makes them (0 where not valid).
pub(crate) fn unpack_ints<T>(
    words: &[u64],
    n: usize,
    take: usize,
    valid: &mut Vec<bool>,
    out: &mut Vec<T>,
    to: impl Fn(i64) -> T,
) {
    let mut r = BitReader::new(words);
    let from = valid.len();
    let all = get_valid(&mut r, n, take, valid);
    out.reserve(take);
    let mut prev = 0i64;
    if all {
        // No validity to test per point: the loop is the bits' alone.
        out.extend((0..take).map(|_| {
            prev = prev.wrapping_add(get_signed(&mut r));
            to(prev)
        }));
        return;
    }
    for &ok in &valid[from..] {
        if ok {
            prev = prev.wrapping_add(get_signed(&mut r));
            out.push(to(prev));
        } else {
            out.push(to(0));
        }
    }
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
pub(crate) mod tests {
    use proptest::prelude::*;

    use super::*;

    fn edge_ints() -> impl Strategy<Value = i64> {
        prop_oneof![
            Just(i64::MIN),
            Just(i64::MAX),
            Just(0),
            Just(-1),
            -20i64..20,
            any::<i64>(),
        ]
    }

    fn edge_floats() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(f64::NAN),
            Just(f64::from_bits(0x7ff8_dead_beef_0001)),
            Just(f64::from_bits(0xfff0_0000_0000_0001)),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(-0.0),
            Just(0.0),
            Just(f64::MIN_POSITIVE),
            Just(f64::MAX),
            (0i32..100).prop_map(f64::from),
            any::<f64>(),
        ]
    }

    /// A gauge's column: decimals of one number of places (0 to 4), now and
    /// then one that no scale makes an integer.
    fn decimals() -> impl Strategy<Value = (Vec<f64>, Vec<bool>)> {
        (0i32..5).prop_flat_map(|d| {
            column(prop_oneof![
                20 => (-100_000i64..100_000).prop_map(move |n| n as f64 / 10f64.powi(d)),
                1 => Just(0.1 + 0.2),
                1 => Just(-0.0),
            ])
        })
    }

    /// Values with their validity: 0 to 300 points, sometimes all valid.
    fn column<T: std::fmt::Debug>(
        values: impl Strategy<Value = T>,
    ) -> impl Strategy<Value = (Vec<T>, Vec<bool>)> {
        prop::collection::vec(
            (values, prop_oneof![3 => Just(true), 1 => any::<bool>()]),
            0..300,
        )
        .prop_map(|v| v.into_iter().unzip())
    }

    /// What a reader sees: the value where valid, nothing elsewhere.
    fn seen<T: Copy>(values: &[T], valid: &[bool]) -> Vec<Option<T>> {
        values
            .iter()
            .zip(valid)
            .map(|(v, ok)| ok.then_some(*v))
            .collect()
    }

    /// `values` (with `valid`) packed and unpacked: the same validity, the same bits.
    fn floats_round_trip(values: &[f64], valid: &[bool]) -> Result<(), TestCaseError> {
        let (mut out, mut ok) = (Vec::new(), Vec::new());
        unpack_floats(
            &pack_floats(values, valid),
            values.len(),
            values.len(),
            &mut out,
            &mut ok,
        );
        prop_assert_eq!(&ok[..], valid);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(seen(&bits(&out), &ok), seen(&bits(values), valid));
        Ok(())
    }

    /// The XOR decoder as it was before it read from a 64-bit window (a
    /// read per part): the windowed one must give the same bits.
    pub(crate) fn unpack_xor_floats_by_parts(
        words: &[u64],
        n: usize,
        take: usize,
    ) -> Vec<Option<u64>> {
        let mut r = BitReader::new(words);
        let mut valid = Vec::new();
        get_valid(&mut r, n, take, &mut valid);
        assert!(!r.bit(), "a scaled column");
        let mut prev: Option<u64> = None;
        let (mut lead, mut trail) = (0u32, 0u32);
        let mut out = Vec::with_capacity(take);
        for &ok in &valid {
            if !ok {
                out.push(None);
                continue;
            }
            let bits = match prev {
                None => r.get(64),
                Some(p) if !r.bit() => p,
                Some(p) => {
                    if r.bit() {
                        lead = r.get(5) as u32;
                        let len = r.get(6) as u32 + 1;
                        trail = 64 - lead - len;
                    }
                    p ^ (r.get(64 - lead - trail) << trail)
                }
            };
            out.push(Some(bits));
            prev = Some(bits);
        }
        out
    }

    /// Floats no decimal scale makes integers (XOR coded), with runs of
    /// repeats and of values near each other (XORs of every length).
    fn xor_floats() -> impl Strategy<Value = (Vec<f64>, Vec<bool>)> {
        column(prop_oneof![
            4 => (0u64..100_000).prop_map(|n| n as f64 / 997.0),
            2 => edge_floats(),
            1 => Just(1.0 / 3.0),
            1 => (any::<u64>(), 0u32..64).prop_map(|(b, k)| f64::from_bits(0x4059_0000_0000_0000 ^ (b >> k))),
        ])
    }

    proptest! {
        #[test]
        fn the_windowed_xor_decoder_gives_the_bits_the_decoder_by_parts_gave(
            (mut values, valid) in xor_floats(),
            cut in 0.0f64..=1.0,
        ) {
            // One value no scale makes an integer: the column is XOR coded.
            values.push(1.0 / 3.0);
            let mut valid = valid;
            valid.push(true);
            let n = values.len();
            let take = ((n as f64) * cut) as usize;
            let words = pack_floats(&values, &valid);
            let (mut out, mut ok) = (Vec::new(), Vec::new());
            unpack_floats(&words, n, take, &mut out, &mut ok);
            let got: Vec<Option<u64>> = out.iter().zip(&ok).map(|(v, ok)| ok.then_some(v.to_bits())).collect();
            prop_assert_eq!(got, unpack_xor_floats_by_parts(&words, n, take));
        }

        #[test]
        fn times_round_trip(times in prop::collection::vec(edge_ints(), 0..300)) {
            let mut out = vec![7];
            unpack_times(&pack_times(&times), times.len(), &mut out);
            prop_assert_eq!(&out[1..], &times[..]);
        }

        #[test]
        fn floats_round_trip_to_the_bit((values, valid) in column(edge_floats())) {
            floats_round_trip(&values, &valid)?;
        }

        #[test]
        fn decimal_floats_round_trip_to_the_bit((values, valid) in decimals()) {
            floats_round_trip(&values, &valid)?;
        }

        #[test]
        fn ints_round_trip((values, valid) in column(edge_ints())) {
            let (mut out, mut ok) = (Vec::new(), Vec::new());
            let packed = pack_ints(values.iter().copied(), &valid);
            unpack_ints(&packed, values.len(), values.len(), &mut ok, &mut out, |v| v);
            prop_assert_eq!(&ok, &valid);
            prop_assert_eq!(seen(&out, &ok), seen(&values, &valid));
        }

        #[test]
        fn unsigned_round_trip((values, valid) in column(any::<u64>())) {
            let (mut out, mut ok) = (Vec::new(), Vec::new());
            let packed = pack_ints(values.iter().map(|&v| v as i64), &valid);
            unpack_ints(&packed, values.len(), values.len(), &mut ok, &mut out, |v| v as u64);
            prop_assert_eq!(seen(&out, &ok), seen(&values, &valid));
        }

        /// A read decodes a chunk only as far as its range reaches: the
        /// first `take` points of every kind are those a whole decode gives,
        /// and the times stop at the first after `max`.
        #[test]
        fn a_prefix_decodes_as_the_whole_does(
            (values, valid) in column(edge_ints()),
            floats in column(edge_floats()),
            decimals in decimals(),
            cut in 0.0f64..=1.0,
        ) {
            let n = values.len();
            let take = ((n as f64) * cut) as usize;
            let (mut out, mut ok) = (Vec::new(), Vec::new());
            unpack_ints(&pack_ints(values.iter().copied(), &valid), n, take, &mut ok, &mut out, |v| v);
            prop_assert_eq!(&ok[..], &valid[..take]);
            prop_assert_eq!(seen(&out, &ok), seen(&values[..take], &valid[..take]));
            for (values, valid) in [floats, decimals] {
                let n = values.len();
                let take = ((n as f64) * cut) as usize;
                let (mut out, mut ok) = (Vec::new(), Vec::new());
                unpack_floats(&pack_floats(&values, &valid), n, take, &mut out, &mut ok);
                prop_assert_eq!(&ok[..], &valid[..take]);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                prop_assert_eq!(seen(&bits(&out), &ok), seen(&bits(&values[..take]), &valid[..take]));
            }
            let bools: Vec<bool> = values.iter().map(|v| v % 3 == 0).collect();
            let (mut out, mut ok) = (Vec::new(), Vec::new());
            unpack_bools(&pack_bools(&bools, &valid), n, take, &mut out, &mut ok);
            prop_assert_eq!(seen(&out, &ok), seen(&bools[..take], &valid[..take]));
            let text: Vec<Arc<str>> = values.iter().map(|v| Arc::from((v % 5).to_string())).collect();
            let (words, dict) = pack_strings(&text, &valid);
            let (mut out, mut ok) = (Vec::new(), Vec::new());
            unpack_strings(&words, &dict, (n, take), &mut out, &mut ok);
            prop_assert_eq!(&ok[..], &valid[..take]);
            prop_assert!(out.iter().zip(&text).zip(&ok).all(|((a, b), ok)| !ok || a == b));
            let mut times = values.clone();
            times.sort_unstable();
            times.dedup();
            let max = times.get(take).copied().unwrap_or(i64::MAX);
            let mut got = Vec::new();
            let kept = unpack_times_until(&pack_times(&times), times.len(), max, &mut got);
            let want: Vec<i64> = times.iter().copied().take_while(|&t| t <= max).collect();
            prop_assert_eq!(kept, want.len());
            prop_assert_eq!(got, want);
        }

        #[test]
        fn bools_round_trip((values, valid) in column(any::<bool>())) {
            let (mut out, mut ok) = (Vec::new(), Vec::new());
            unpack_bools(&pack_bools(&values, &valid), values.len(), values.len(), &mut out, &mut ok);
            prop_assert_eq!(&ok, &valid);
            prop_assert_eq!(seen(&out, &ok), seen(&values, &valid));
        }

        #[test]
        fn strings_round_trip((values, valid) in column("[a-c]{0,3}|[^\u{0}]{0,20}")) {
            let values: Vec<Arc<str>> = values.iter().map(|s| Arc::from(s.as_str())).collect();
            let (words, dict) = pack_strings(&values, &valid);
            let (mut out, mut ok) = (Vec::new(), Vec::new());
            unpack_strings(&words, &dict, (values.len(), values.len()), &mut out, &mut ok);
            prop_assert_eq!(&ok, &valid);
            let text = |v: &[Arc<str>], ok: &[bool]| -> Vec<Option<String>> {
                v.iter().zip(ok).map(|(s, ok)| ok.then(|| s.to_string())).collect()
            };
            prop_assert_eq!(text(&out, &ok), text(&values, &valid));
        }
    }

    #[test]
    fn regular_times_take_a_bit_each_and_small_steps_a_byte() {
        let times: Vec<i64> = (0..1024)
            .map(|k| 1_700_000_000_000_000_000 + k * 10_000_000_000)
            .collect();
        // 64 bits for the first, the first delta in 5 + 64, then a bit each.
        assert!(pack_times(&times).len() * 8 <= 160);
        let walk: Vec<i64> = (0..1024).map(|k| 50 + (k % 7) - 3).collect();
        let valid = vec![true; walk.len()];
        // A gauge in tenths: as the integers it is in tenths, under 2 bytes.
        let tenths: Vec<f64> = walk.iter().map(|&n| n as f64 / 10.0).collect();
        assert!(pack_floats(&tenths, &valid).len() * 8 <= 1024 * 6 / 8 + 16);
        // Steps of at most 6: 2 + 4 bits each.
        assert!(pack_ints(walk.iter().copied(), &valid).len() * 8 <= 1024 * 6 / 8 + 16);
    }
}
