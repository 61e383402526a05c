//! Floats: as integers at a decimal scale where every value allows one,
//! else by XOR with the value before (Gorilla).

use super::bits::{put_signed, BitReader, BitWriter, Cursor};
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
