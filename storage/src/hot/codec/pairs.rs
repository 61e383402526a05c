//! Runs of signed codes decoded two per table lookup. A random walk's step
//! of a few units (TSBS's integer fields, a gauge in tenths) is a 6-bit
//! code and a repeat a 1-bit one: two of them lie in 12 bits, looked up at
//! once, where [`Cursor::signed`] looked up a code's layout, then shifted,
//! then looked up the next (one chain of dependent steps per value).

use super::bits::{Cursor, WIDTHS};

/// The held bits a [`PAIRS`] entry is looked up by.
const PAIR_BITS: u32 = 12;

/// The code at the low end of `low` (its low `avail` bits), if it lies whole
/// in them and is of a bucket whose number fits an `i8` (the first three):
/// its bits and its number.
const fn narrow_code(low: u32, avail: u32) -> Option<(u32, i64)> {
    // `k` ones then a zero: bucket `k`. Ones up to `avail` are a prefix cut off.
    let k = low.trailing_ones();
    if k >= avail || k > 2 {
        return None;
    }
    let width = WIDTHS[k as usize];
    let bits = k + 1 + width;
    if bits > avail {
        return None;
    }
    let u = ((low >> (k + 1)) & ((1 << width) - 1)) as i64;
    Some((bits, (u >> 1) ^ -(u & 1)))
}

/// By the next [`PAIR_BITS`] held bits: the two codes that lie whole in
/// them, packed as their bits (low byte), 2 (next byte), and their numbers
/// as `i8`s (the high bytes); 0 where fewer than two do.
static PAIRS: [u32; 1 << PAIR_BITS] = {
    let mut pairs = [0u32; 1 << PAIR_BITS];
    let mut low = 0u32;
    while low < 1 << PAIR_BITS {
        if let Some((a_bits, a)) = narrow_code(low, PAIR_BITS) {
            if let Some((b_bits, b)) = narrow_code(low >> a_bits, PAIR_BITS - a_bits) {
                pairs[low as usize] = (a_bits + b_bits)
                    | 2 << 8
                    | ((a as i8 as u8 as u32) << 16)
                    | ((b as i8 as u8 as u32) << 24);
            }
        }
        low += 1;
    }
    pairs
};

impl Cursor<'_> {
    /// The next `n` signed codes ([`Cursor::signed`]) as running sums from
    /// `prev`, each given to `emit` with its index (`0..n`); the last sum.
    /// Two codes at a time where the held bits' next 12 hold two narrow
    /// ones, else one as `signed` reads it.
    #[inline(always)]
    pub(super) fn sums(
        &mut self,
        mut prev: i64,
        n: usize,
        mut emit: impl FnMut(usize, i64),
    ) -> i64 {
        let mut i = 0;
        while i + 2 <= n {
            if self.held < PAIR_BITS {
                self.load(self.pos());
            }
            let e = PAIRS[(self.win & ((1 << PAIR_BITS) - 1)) as usize];
            if e == 0 {
                prev = prev.wrapping_add(self.signed());
                emit(i, prev);
                i += 1;
                continue;
            }
            prev = prev.wrapping_add(i64::from((e >> 16) as u8 as i8));
            emit(i, prev);
            prev = prev.wrapping_add(i64::from((e >> 24) as u8 as i8));
            emit(i + 1, prev);
            // At most `PAIR_BITS`: a plain shift.
            let bits = e & 0xff;
            self.win >>= bits;
            self.held -= bits;
            i += 2;
        }
        if i < n {
            prev = prev.wrapping_add(self.signed());
            emit(i, prev);
        }
        prev
    }
}

#[cfg(test)]
#[path = "pairs_tests.rs"]
mod tests;
