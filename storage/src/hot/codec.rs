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

/// A stream's next bits held in a register: a run of codes reads a word
/// pair once per 26 or more bits, not once per code (a 6-bit code of TSBS's
/// integer fields read its window anew each time: `get_signed` was a sixth
/// of a profile of `single-groupby-5-1-12`, most of its decoding). Its
/// methods are inlined into the decoding loops and the widest code read
/// apart, by value, so that the cursor's words stay in registers: called,
/// `signed` loaded and stored them through memory for every value (a fifth
/// of `single-groupby-5-1-12`'s server time, stop 57).
struct Cursor<'a> {
    words: &'a [u64],
    /// The position of `win`'s first bit when it was loaded.
    base: usize,
    /// The next bits, least significant first.
    win: u64,
    /// How many of `win`'s bits are left to read (zeros past the stream's end).
    held: u32,
}

/// The 64 bits of `words` from bit `pos`, zeros past the end.
#[inline(always)]
fn window_at(words: &[u64], pos: usize) -> u64 {
    let (w, off) = (pos / 64, (pos % 64) as u32);
    match words.get(w..w.saturating_add(2)) {
        // `hi << 64` is no shift: in two steps, the second at most 63.
        Some(&[lo, hi]) => (lo >> off) | ((hi << 1) << (63 - off)),
        _ => BitReader { words, pos }.window(),
    }
}

/// The widest signed code at `pos` (its prefix `11111` and 64 bits): its
/// number and the position after it. Rare (a jump of times), so kept out
/// of the loops, and by value: a call taking the cursor by reference would
/// keep it in memory.
#[cold]
#[inline(never)]
fn widest_at(words: &[u64], pos: usize) -> (i64, usize) {
    let last = WIDTHS.len() - 1;
    let mut r = BitReader {
        words,
        pos: pos + last,
    };
    let v = r.get(WIDTHS[last]);
    (unzigzag(v), r.pos)
}

/// A signed code's layout by its first five bits (its prefix, `0` to
/// `11110`, lies within them), looked up rather than counted: the count of
/// trailing ones, its bound and the width's lookup were one chain of
/// dependent steps per value, a fifth of TSBS `high-cpu-1`'s server time.
#[derive(Clone, Copy)]
struct Code {
    /// Prefix bits before the value.
    prefix: u32,
    /// Prefix and value bits; 0 for the widest bucket (`11111`), read apart.
    bits: u32,
    /// The value's bits.
    mask: u64,
}

const CODES: [Code; 32] = {
    let mut codes = [Code {
        prefix: 0,
        bits: 0,
        mask: 0,
    }; 32];
    let mut low = 0;
    while low < 31 {
        // `k` ones then a zero: bucket `k`.
        let k = (low as u32).trailing_ones() as usize;
        let width = WIDTHS[k];
        codes[low] = Code {
            prefix: k as u32 + 1,
            bits: k as u32 + 1 + width,
            mask: (1u64 << width) - 1,
        };
        low += 1;
    }
    codes
};

/// The bits a signed code takes at most, but the widest bucket's: the
/// prefix (5) and 32 bits.
const CODE_BITS: u32 = 37;

impl<'a> Cursor<'a> {
    fn new(r: BitReader<'a>) -> Cursor<'a> {
        Cursor {
            words: r.words,
            base: r.pos,
            win: window_at(r.words, r.pos),
            held: 64,
        }
    }

    /// The position of the next bit.
    #[inline(always)]
    fn pos(&self) -> usize {
        self.base + (64 - self.held) as usize
    }

    /// Loads the 64 bits from `pos`.
    #[inline(always)]
    fn load(&mut self, pos: usize) {
        self.base = pos;
        self.win = window_at(self.words, pos);
        self.held = 64;
    }

    /// At least `n` (≤ 64) bits held.
    #[inline(always)]
    fn hold(&mut self, n: u32) {
        if self.held < n {
            self.load(self.pos());
        }
    }

    /// Consumes `n` (≤ `held`) bits.
    #[inline(always)]
    fn skip(&mut self, n: u32) {
        self.win = self.win.checked_shr(n).unwrap_or(0);
        self.held -= n;
    }

    /// The next signed number ([`put_signed`]): prefix and value from the
    /// held bits, which hold every bucket but the widest, prefix included.
    #[inline(always)]
    fn signed(&mut self) -> i64 {
        self.hold(CODE_BITS);
        let code = CODES[(self.win & 31) as usize];
        if code.bits == 0 {
            let (v, next) = widest_at(self.words, self.pos());
            self.load(next);
            return v;
        }
        let v = (self.win >> code.prefix) & code.mask;
        // At most `CODE_BITS` (< 64): a plain shift.
        self.win >>= code.bits;
        self.held -= code.bits;
        unzigzag(v)
    }

    /// How many of the next codes (at most `most`, ≤ 63) are a zero, a
    /// bit each (a regular interval's delta-of-delta), consumed.
    #[inline(always)]
    fn zeros(&mut self, most: usize) -> usize {
        self.hold(CODE_BITS);
        let run = (self.win.trailing_zeros().min(self.held) as usize).min(most);
        self.skip(run as u32);
        run
    }
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
        let mut c = Cursor::new(r);
        if all {
            out.extend((0..take).map(|_| {
                prev = prev.wrapping_add(c.signed());
                prev as f64 / p
            }));
            return;
        }
        for &ok in &valid[from..] {
            if ok {
                prev = prev.wrapping_add(c.signed());
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
    /// [`Cursor::signed`] reads integers: a read per part was most of what a
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
    pos: u32,
    /// The value before it.
    prev: i64,
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
        if all && k > 0 && k % MARK_EVERY == 0 {
            // Marks stop where a position no longer fits (never at a
            // chunk's size): mark `j` stays value `(j + 1) * MARK_EVERY`'s.
            if let Ok(pos) = u32::try_from(w.bits) {
                if marks.len() + 1 == k / MARK_EVERY {
                    marks.push(Mark { pos, prev });
                }
            }
        }
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
        for _ in start..skip {
            prev = prev.wrapping_add(c.signed());
        }
        // No validity to test per point: the loop is the bits' alone.
        out.extend((skip..take).map(|_| {
            prev = prev.wrapping_add(c.signed());
            to(prev)
        }));
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
