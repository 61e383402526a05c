//! Numbers: field values (Go's `scanNumber` and conversion, with a fast path for the shapes
//! clients send) and timestamps (SWAR, eight digits per step).

use super::scan::{at_eol, load8};
use super::Reason;
use crate::point::Value;

/// The decimal value of 8 ASCII digits loaded by [`load8`] (first byte most significant), or
/// `None` when any byte is not a digit (SWAR: no per-byte branches).
#[inline(always)]
pub(super) fn eight_digits(w: u64) -> Option<u64> {
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    // Every high nibble must be 3 and every byte + 6 must keep it 3 (i.e. low nibble <= 9); a
    // carry between bytes only happens when some high nibble is already not 3.
    let hi = w & 0xF0F0_F0F0_F0F0_F0F0;
    let hi6 = w.wrapping_add(0x0606_0606_0606_0606) & 0xF0F0_F0F0_F0F0_F0F0;
    if hi | (hi6 >> 4) != 0x3333_3333_3333_3333 {
        return None;
    }
    let mut v = w - ZEROS;
    // Pairwise combine: bytes → 2-digit → 4-digit → 8-digit values.
    v = v.wrapping_mul(10).wrapping_add(v >> 8);
    v = ((v & 0x0000_00FF_0000_00FF)
        .wrapping_mul(100 + (1_000_000 << 32))
        .wrapping_add(((v >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32))))
        >> 32;
    Some(v)
}

/// The number of leading ASCII digits (0–8) of the 8 bytes `w` loaded by [`load8`], and their
/// decimal value (first byte most significant). SWAR, no per-byte branches.
#[inline(always)]
pub(super) fn leading_digits(w: u64) -> (usize, u64) {
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    // A byte is a digit when its high nibble is 3 and adding 6 keeps it 3 (low nibble <= 9);
    // a carry out of the + 6 only leaves a non-digit byte, so it only disturbs later bytes.
    let hi = w & 0xF0F0_F0F0_F0F0_F0F0;
    let hi6 = w.wrapping_add(0x0606_0606_0606_0606) & 0xF0F0_F0F0_F0F0_F0F0;
    let bad = (hi | (hi6 >> 4)) ^ 0x3333_3333_3333_3333;
    // 8 when every byte is a digit.
    let k = (bad.trailing_zeros() >> 3) as usize;
    // Digit values of the first k bytes moved to the top (most significant) positions; the
    // zero bytes shifted in are leading zeros. Borrows of the subtraction only start at a
    // non-digit byte and run upwards, into bytes that are shifted out. Two shifts: k = 0
    // shifts by 64 in all, which one shift cannot.
    let sh = 4 * (8 - k) as u32;
    let mut v = (w.wrapping_sub(ZEROS) << sh) << sh;
    v = v.wrapping_mul(10).wrapping_add(v >> 8);
    v = ((v & 0x0000_00FF_0000_00FF)
        .wrapping_mul(100 + (1_000_000 << 32))
        .wrapping_add(((v >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32))))
        >> 32;
    (k, v)
}

const POW10_U64: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// A timestamp that is 1–19 plain digits followed by a space or the line end, with the index
/// after it; `None` for anything else (signs, other bytes, overflow), which the exact scan
/// handles with the right error. Never accepts what the exact scan would reject or parse
/// differently.
#[inline(always)]
pub(super) fn fast_timestamp(b: &[u8], ts: usize) -> Option<(i64, usize)> {
    let mut j = ts;
    let mut v: u64 = 0;
    // At most two 8-digit steps, so with the tail below the value has <= 19 digits and
    // cannot overflow a u64.
    while j + 8 <= b.len() && j - ts <= 8 {
        match eight_digits(load8(b, j)) {
            Some(d) => {
                v = v * 100_000_000 + d;
                j += 8;
            }
            None => break,
        }
    }
    if j + 8 <= b.len() {
        // The rest of the digits (three for nanoseconds) in one step.
        let (k, d) = leading_digits(load8(b, j));
        if j - ts + k > 19 {
            return None;
        }
        v = v * POW10_U64[k] + d;
        j += k;
    } else {
        while j < b.len() && j - ts < 19 && b[j].is_ascii_digit() {
            v = v * 10 + (b[j] - b'0') as u64;
            j += 1;
        }
    }
    if j == ts || !(at_eol(b, j) || b[j] == b' ') {
        return None;
    }
    i64::try_from(v).ok().map(|v| (v, j))
}

/// Error of [`parse_i64`] / [`parse_u64`], worded as Go's `strconv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IntError {
    /// Not a run of digits.
    Syntax,
    /// Does not fit.
    Range,
}

impl std::fmt::Display for IntError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IntError::Syntax => "invalid syntax",
            IntError::Range => "value out of range",
        })
    }
}

/// Go's `strconv.ParseUint(d, 10, 64)`.
fn parse_u64(d: &[u8]) -> Result<u64, IntError> {
    if d.is_empty() {
        return Err(IntError::Syntax);
    }
    if d.len() <= 19 {
        // Up to 19 digits cannot overflow a u64: no checks in the loop.
        let mut v: u64 = 0;
        for &c in d {
            let x = c.wrapping_sub(b'0');
            if x > 9 {
                return Err(IntError::Syntax);
            }
            v = v * 10 + x as u64;
        }
        return Ok(v);
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    for &c in d {
        if !c.is_ascii_digit() {
            return Err(IntError::Syntax);
        }
        match v
            .checked_mul(10)
            .and_then(|x| x.checked_add((c - b'0') as u64))
        {
            Some(x) => v = x,
            None => overflow = true,
        }
    }
    if overflow {
        Err(IntError::Range)
    } else {
        Ok(v)
    }
}

/// Go's `strconv.ParseInt(d, 10, 64)`.
pub(super) fn parse_i64(d: &[u8]) -> Result<i64, IntError> {
    let (neg, digits) = match d.first() {
        Some(b'-') => (true, &d[1..]),
        _ => (false, d),
    };
    let v = parse_u64(digits)?;
    if neg {
        if v <= i64::MAX as u64 + 1 {
            Ok((v as i64).wrapping_neg())
        } else {
            Err(IntError::Range)
        }
    } else {
        i64::try_from(v).map_err(|_| IntError::Range)
    }
}

const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Go's `scanNumber` followed by the value conversion; returns the value and the index after it.
// Inlined into the field loop: returning the result through memory from an out-of-line call
// stalled the caller's reads of it (store forwarding).
#[inline(always)]
pub(super) fn parse_number(b: &[u8], start: usize) -> Result<(Value, usize), Reason> {
    // Fast path for the shapes real payloads use (`123`, `-1.25`, `42i`, `7u`); anything else,
    // errors included, goes through the exact port of Go's scanner below.
    let n = b.len();
    let mut i = start;
    let neg = b[i] == b'-';
    if neg {
        i += 1;
    }
    let d0 = i;
    let mut m: u64 = 0;
    // Long integer parts (counters, byte totals) eight digits at a time. The value is only
    // used below when the digit count rules out wrapping, exactly as in the byte loop.
    // (The eighth byte is tested first: short integer parts, as in most floats, skip the
    // word test.)
    while i + 8 <= n && b[i + 7].is_ascii_digit() {
        match eight_digits(load8(b, i)) {
            Some(d) => {
                m = m.wrapping_mul(100_000_000).wrapping_add(d);
                i += 8;
            }
            None => break,
        }
    }
    while i < n && b[i].is_ascii_digit() {
        m = m.wrapping_mul(10).wrapping_add((b[i] - b'0') as u64);
        i += 1;
    }
    let int_digits = i - d0;
    let mut frac = 0usize;
    let mut decimal = false;
    if i < n && b[i] == b'.' {
        decimal = true;
        i += 1;
        let f0 = i;
        while i < n && b[i].is_ascii_digit() {
            m = m.wrapping_mul(10).wrapping_add((b[i] - b'0') as u64);
            i += 1;
        }
        frac = i - f0;
    }
    let term = |j: usize| j >= n || matches!(b[j], b',' | b' ' | b'\n');
    if term(i) {
        let digits = int_digits + frac;
        if digits > 0 && digits <= 15 {
            // At most 15 digits: `m < 2^63`, so the signed conversion (one instruction on
            // x86_64, unlike u64 → f64) is exact and gives the same value.
            let v = (m as i64) as f64 / POW10[frac];
            return Ok((Value::float(if neg { -v } else { v }), i));
        }
    } else if !decimal && int_digits > 0 && int_digits <= 18 && term(i + 1) {
        if b[i] == b'i' {
            let v = m as i64;
            return Ok((Value::integer(if neg { -v } else { v }), i + 1));
        }
        if b[i] == b'u' && !neg {
            return Ok((Value::uinteger(m), i + 1));
        }
    }
    parse_number_slow(b, start)
}

/// What Go's `scanNumber` learns about a number the fast path did not take.
#[derive(Default)]
struct Shape {
    /// The index after the number.
    end: usize,
    neg: bool,
    is_int: bool,
    is_uint: bool,
    decimal: bool,
    scientific: bool,
    /// The significant digits, for plain decimals (Clinger: exact when the mantissa is below
    /// 2^53 and the power of ten is exactly representable).
    mantissa: u64,
    sig_digits: u32,
    frac_digits: u32,
}

/// The exact port of Go's scanner and conversion, errors included.
#[cold]
fn parse_number_slow(b: &[u8], start: usize) -> Result<(Value, usize), Reason> {
    let n = scan_number(b, start)?;
    if n.is_int {
        integer(b, start, n.end)
    } else if n.is_uint {
        unsigned(b, start, n.end, n.neg)
    } else {
        float(b, start, &n)
    }
}

/// Go's `scanNumber`: the number's end and shape, or why it is not a number.
fn scan_number(b: &[u8], start: usize) -> Result<Shape, Reason> {
    let mut n = Shape {
        neg: b[start] == b'-',
        ..Shape::default()
    };
    let mut i = start + n.neg as usize;
    if n.neg && i == b.len() {
        return Err("invalid number".into());
    }
    while i < b.len() {
        match b[i] {
            b',' | b' ' | b'\n' => break,
            b'0'..=b'9' => n.digit(b[i]),
            b'i' if i > start && !(n.is_int || n.is_uint) => n.is_int = true,
            b'u' if i > start && !(n.is_int || n.is_uint) => n.is_uint = true,
            b'.' if !n.decimal => n.decimal = true,
            b'e' | b'E' if i > start => n.scientific = true,
            b'+' | b'-' if matches!(b[i - 1], b'e' | b'E') => {}
            _ => return Err("invalid number".into()),
        }
        i += 1;
    }
    n.end = i;
    n.check(start)?;
    Ok(n)
}

impl Shape {
    fn digit(&mut self, c: u8) {
        if self.sig_digits < 19 {
            self.mantissa = self.mantissa * 10 + (c - b'0') as u64;
            if self.mantissa != 0 {
                self.sig_digits += 1;
            }
        } else {
            self.sig_digits = u32::MAX / 2; // too long for the fast path
        }
        if self.decimal {
            self.frac_digits += 1;
        }
    }

    /// Go's checks after the scan: no `i`/`u` with a fraction or exponent, and at least one
    /// byte besides the sign, the point and the `i`.
    fn check(&self, start: usize) -> Result<(), Reason> {
        if (self.is_int || self.is_uint) && (self.decimal || self.scientific) {
            return Err("invalid number".into());
        }
        let numeric =
            self.end - start - self.is_int as usize - self.decimal as usize - self.neg as usize;
        if numeric == 0 {
            return Err("invalid number".into());
        }
        Ok(())
    }
}

/// `b[start..end]` is an integer ending in `i`.
fn integer(b: &[u8], start: usize, end: usize) -> Result<(Value, usize), Reason> {
    if b[end - 1] != b'i' {
        return Err("invalid number".into());
    }
    let text = &b[start..end - 1];
    match parse_i64(text) {
        Ok(v) => Ok((Value::integer(v), end)),
        Err(e) => {
            let t = String::from_utf8_lossy(text);
            Err(
                format!("unable to parse integer {t}: strconv.ParseInt: parsing \"{t}\": {e}")
                    .into(),
            )
        }
    }
}

/// `b[start..end]` is an unsigned integer ending in `u`.
fn unsigned(b: &[u8], start: usize, end: usize, neg: bool) -> Result<(Value, usize), Reason> {
    if b[end - 1] != b'u' || neg {
        return Err("invalid number".into());
    }
    let text = &b[start..end - 1];
    match parse_u64(text) {
        Ok(v) => Ok((Value::uinteger(v), end)),
        Err(e) => {
            let t = String::from_utf8_lossy(text);
            Err(
                format!("unable to parse unsigned {t}: strconv.ParseUint: parsing \"{t}\": {e}")
                    .into(),
            )
        }
    }
}

/// `b[start..n.end]` is a float: Clinger's fast path, else Rust's exact parser.
fn float(b: &[u8], start: usize, n: &Shape) -> Result<(Value, usize), Reason> {
    if !n.scientific && n.sig_digits <= 15 && (n.frac_digits as usize) < POW10.len() {
        let v = n.mantissa as f64 / POW10[n.frac_digits as usize];
        return Ok((Value::float(if n.neg { -v } else { v }), n.end));
    }
    let text = std::str::from_utf8(&b[start..n.end]).map_err(|_| Reason::from("invalid float"))?;
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok((Value::float(v), n.end)),
        _ => Err("invalid float".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn eight_digits_matches_scalar_and_rejects_non_digits() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for k in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = if k < 10 {
                [
                    0, 1, 9, 10, 99_999_999, 12_345_678, 10_000_000, 9, 1_000, 90_000_009,
                ][k as usize]
            } else {
                x % 100_000_000
            };
            let text = format!("{n:08}");
            assert_eq!(eight_digits(load8(text.as_bytes(), 0)), Some(n), "{text}");
            // Corrupt one byte with a non-digit (including the bytes around '0'..'9').
            let mut bad = text.into_bytes();
            let pos = (x >> 32) as usize % 8;
            bad[pos] =
                [b'/', b':', b' ', b'-', 0xFF, 0xFA, 0x39 + 0x80, b'a'][(x >> 40) as usize % 8];
            assert_eq!(eight_digits(load8(&bad, 0)), None, "{bad:?}");
        }
    }

    #[test]
    fn fast_timestamp_only_takes_plain_digits() {
        assert_eq!(
            fast_timestamp(b"1700000000000000000", 0),
            Some((1_700_000_000_000_000_000, 19))
        );
        assert_eq!(fast_timestamp(b"x 12 ", 2), Some((12, 4)));
        assert_eq!(fast_timestamp(b"123456789\n", 0), Some((123_456_789, 9)));
        assert_eq!(
            fast_timestamp(b"9223372036854775807", 0),
            Some((i64::MAX, 19))
        );
        // Left to the exact scan (which reports the error or handles the sign).
        assert_eq!(fast_timestamp(b"9223372036854775808", 0), None);
        assert_eq!(fast_timestamp(b"12345678901234567890", 0), None);
        assert_eq!(fast_timestamp(b"-5", 0), None);
        assert_eq!(fast_timestamp(b"12345678x", 0), None);
        assert_eq!(fast_timestamp(b"", 0), None);
        assert_eq!(fast_timestamp(b"12\r\n", 0), None);
        // Timestamps followed by more bytes, so the last digits take the word step.
        assert_eq!(
            fast_timestamp(b"1700000000000000123\nm v=1", 0),
            Some((1_700_000_000_000_000_123, 19))
        );
        assert_eq!(fast_timestamp(b"17000000000000001234 m v=1", 0), None);
        assert_eq!(
            fast_timestamp(b"123456789012 \nxxxxxxx", 0),
            Some((123_456_789_012, 12))
        );
    }

    #[test]
    fn leading_digits_counts_and_converts_the_digit_prefix() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Mostly digits, sometimes another byte (including ones next to '0'..'9').
            let w: Vec<u8> = (0..8)
                .map(|i| {
                    let r = (x >> (i * 8)) as u8;
                    if r < 52 {
                        [b'/', b':', b'.', b' ', 0xff, b'a', b'0' + 10, b'0' - 1][r as usize % 8]
                    } else {
                        b'0' + r % 10
                    }
                })
                .collect();
            let k = w.iter().take_while(|c| c.is_ascii_digit()).count();
            let v = w[..k].iter().fold(0u64, |v, c| v * 10 + (c - b'0') as u64);
            assert_eq!(leading_digits(load8(&w, 0)), (k, v), "{w:?}");
        }
    }
}
