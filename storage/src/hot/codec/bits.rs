//! The bits the codec's columns are written in: a writer, a reader, and the
//! signed numbers (deltas, delta-of-deltas) of the integer, time and
//! decimal float codes, with the cursor their decoding loops read them by.

/// Bits, least significant first, in 64-bit words.
#[derive(Debug, Default)]
pub(super) struct BitWriter {
    words: Vec<u64>,
    pub(super) bits: usize,
}

impl BitWriter {
    /// Writes the low `n` (≤ 64) bits of `v`.
    pub(super) fn put(&mut self, v: u64, n: u32) {
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

    pub(super) fn bit(&mut self, b: bool) {
        self.put(u64::from(b), 1);
    }

    /// The bits written, their words only as long as they need.
    pub(super) fn finish(self) -> Box<[u64]> {
        self.words.into_boxed_slice()
    }
}

/// Reads what a [`BitWriter`] wrote.
pub(super) struct BitReader<'a> {
    pub(super) words: &'a [u64],
    pub(super) pos: usize,
}

impl<'a> BitReader<'a> {
    pub(super) fn new(words: &'a [u64]) -> BitReader<'a> {
        BitReader { words, pos: 0 }
    }

    pub(super) fn get(&mut self, n: u32) -> u64 {
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

    pub(super) fn bit(&mut self) -> bool {
        self.get(1) == 1
    }

    /// The next 64 bits without consuming them; zeros past the end.
    #[inline]
    pub(super) fn window(&self) -> u64 {
        let w = self.pos / 64;
        let off = (self.pos % 64) as u32;
        let lo = self.words.get(w).copied().unwrap_or(0) >> off;
        if off == 0 {
            lo
        } else {
            lo | self.words.get(w + 1).copied().unwrap_or(0) << (64 - off)
        }
    }

    pub(super) fn skip(&mut self, n: usize) {
        self.pos += n;
    }
}

/// Widths of a signed number's buckets after its prefix (`0`, `10`, `110`, …,
/// `11111`): a regular interval's delta-of-delta is one bit, a random walk's step
/// of a few units (TSBS's integer fields) six.
pub(super) const WIDTHS: [u32; 6] = [0, 4, 8, 16, 32, 64];

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

pub(super) fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

pub(super) fn put_signed(w: &mut BitWriter, v: i64) {
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
pub(super) struct Cursor<'a> {
    words: &'a [u64],
    /// The position of `win`'s first bit when it was loaded.
    base: usize,
    /// The next bits, least significant first.
    pub(super) win: u64,
    /// How many of `win`'s bits are left to read (zeros past the stream's end).
    pub(super) held: u32,
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
    pub(super) fn new(r: BitReader<'a>) -> Cursor<'a> {
        Cursor {
            words: r.words,
            base: r.pos,
            win: window_at(r.words, r.pos),
            held: 64,
        }
    }

    /// The position of the next bit.
    #[inline(always)]
    pub(super) fn pos(&self) -> usize {
        self.base + (64 - self.held) as usize
    }

    /// Loads the 64 bits from `pos`.
    #[inline(always)]
    pub(super) fn load(&mut self, pos: usize) {
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
    pub(super) fn signed(&mut self) -> i64 {
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
    pub(super) fn zeros(&mut self, most: usize) -> usize {
        self.hold(CODE_BITS);
        let run = (self.win.trailing_zeros().min(self.held) as usize).min(most);
        self.skip(run as u32);
        run
    }
}
