//! Floats: as integers at a decimal scale where every value allows one,
//! else by XOR with the value before (Gorilla).

use super::bits::{put_signed, BitReader, BitWriter, Cursor};
use super::ints::{mark_at, Mark, MARK_EVERY};
use super::{get_valid, put_valid};

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
#[cfg(test)]
pub(crate) fn pack_floats(values: &[f64], valid: &[bool]) -> Box<[u64]> {
    pack_floats_marked(values, valid).0
}

/// [`pack_floats`], with a [`Mark`] every [`MARK_EVERY`] values where
/// every point is valid: a dashboard's panel over a few hours reads from
/// inside a chunk, and decoded it from its first point.
pub(crate) fn pack_floats_marked(values: &[f64], valid: &[bool]) -> (Box<[u64]>, Box<[Mark]>) {
    let mut w = BitWriter::default();
    put_valid(&mut w, valid);
    let all = valid.iter().all(|&ok| ok);
    let mut marks = Vec::new();
    let scale = decimal_scale(values, valid);
    w.bit(scale.is_some());
    let ok = |(_, ok): &(&f64, &bool)| **ok;
    if let Some(d) = scale {
        w.put(d as u64, 3);
        let mut prev = 0i64;
        for (k, (&x, _)) in values.iter().zip(valid).filter(ok).enumerate() {
            let n = (x * SCALES[d]).round() as i64;
            mark_at(&mut marks, all, k, w.bits, prev, (0, 0));
            put_signed(&mut w, n.wrapping_sub(prev));
            prev = n;
        }
        return (w.finish(), marks.into_boxed_slice());
    }
    let mut prev: Option<u64> = None;
    let (mut lead, mut trail) = (u32::MAX, 0u32);
    for (k, (v, _)) in values.iter().zip(valid).filter(ok).enumerate() {
        let bits = v.to_bits();
        let Some(p) = prev else {
            w.put(bits, 64);
            prev = Some(bits);
            continue;
        };
        // No window sent yet (`u32::MAX`): the next XOR sends its own.
        let window = if lead == u32::MAX {
            (0, 0)
        } else {
            (lead as u8, trail as u8)
        };
        mark_at(&mut marks, all, k, w.bits, p as i64, window);
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
    (w.finish(), marks.into_boxed_slice())
}

/// Points `skip..take` of the `n` points [`pack_floats_marked`] packed
/// (with `marks`, or none), appended (0.0 where not valid): those before
/// `skip` decoded from the last mark before it, and not kept.
pub(crate) fn unpack_floats_from(
    words: &[u64],
    marks: &[Mark],
    n: usize,
    (skip, take): (usize, usize),
    out: &mut Vec<f64>,
    valid: &mut Vec<bool>,
) {
    let j = (skip / MARK_EVERY).min(marks.len());
    if j == 0 {
        let (at, from) = (out.len(), valid.len());
        unpack_floats(words, n, take, out, valid);
        out.drain(at..at + skip);
        valid.drain(from..from + skip);
        return;
    }
    // Marks only where every point is valid: value `k` is point `k`.
    let (m, start) = (marks[j - 1], j * MARK_EVERY);
    let mut r = BitReader::new(words);
    let all = r.bit();
    debug_assert!(all);
    valid.extend(std::iter::repeat_n(true, take - skip));
    let scale = r.bit().then(|| SCALES[r.get(3) as usize]);
    r.pos = m.pos as usize;
    if let Some(p) = scale {
        let mut c = Cursor::new(r);
        let prev = c.sums(m.prev, skip - start, |_, _| {});
        let at = out.len();
        out.resize(at + (take - skip), 0.0);
        let slots = &mut out[at..];
        c.sums(prev, take - skip, |k, v| slots[k] = v as f64 / p);
        return;
    }
    let mut xor = Xor {
        prev: m.prev as u64,
        lead: u32::from(m.window.0),
        trail: u32::from(m.window.1),
    };
    for _ in start..skip {
        xor.next(&mut r);
    }
    out.extend((skip..take).map(|_| f64::from_bits(xor.next(&mut r))));
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
        let mut c = Cursor::new(r);
        if all {
            let at = out.len();
            out.resize(at + take, 0.0);
            let slots = &mut out[at..];
            c.sums(0, take, |k, v| slots[k] = v as f64 / p);
            return;
        }
        let mut prev = 0i64;
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

#[cfg(test)]
#[path = "floats_tests.rs"]
mod tests;
