//! Finding the ends of names: byte classes, SSE2/SWAR skips to the next delimiter, and the
//! 16-byte fast paths that take a whole short unescaped element with one vector compare.
//!
//! Delimiters follow Go's scanner: a `,` ` ` `=` or newline is escaped when the byte before it
//! is a backslash (a newline only when an odd run of backslashes precedes it).

/// The first position from `i` that is not a space, a tab or a NUL byte.
#[inline]
pub(super) fn skip_whitespace(b: &[u8], mut i: usize) -> usize {
    // A bit test rather than a `matches!` (which became a jump table); most calls see a
    // byte above the space and leave at the first compare.
    const WS: u64 = 1 << b' ' | 1 << b'\t' | 1;
    while i < b.len() && b[i] <= b' ' && WS >> b[i] & 1 != 0 {
        i += 1;
    }
    i
}

// Byte classes for the key scanners (bit set = the scanner must look at the byte).
pub(super) const C_COMMA: u8 = 1;
pub(super) const C_SPACE: u8 = 2;
pub(super) const C_EQ: u8 = 4;
pub(super) const C_NL: u8 = 8;
pub(super) const C_BSLASH: u8 = 16;

pub(super) const CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b',' as usize] = C_COMMA;
    t[b' ' as usize] = C_SPACE;
    t[b'=' as usize] = C_EQ;
    t[b'\n' as usize] = C_NL;
    t[b'\\' as usize] = C_BSLASH;
    t
};

/// Bit 7 of each byte of the result is set where `w` has byte `c` (exact for the lowest match,
/// which is all [`scan_key`] uses).
#[inline(always)]
fn has_byte(w: u64, c: u8) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let x = w ^ (LO * c as u64);
    x.wrapping_sub(LO) & !x & HI
}

/// Scans from `i` to the first unescaped byte whose class is in `stop` (or a real line end).
/// Returns `(position, saw_backslash)`; position is `b.len()` or the delimiter. `i` must be at
/// least 1 (scans start after an element's first byte).
#[inline(always)]
pub(super) fn scan_key(b: &[u8], mut i: usize, stop: u8, line_start: usize) -> (usize, bool) {
    let mut esc = false;
    let mask = stop | C_NL | C_BSLASH;
    loop {
        i = skip_plain(b, i);
        if i >= b.len() {
            return (b.len(), esc);
        }
        let cls = CLASS[b[i] as usize] & mask;
        if cls == 0 {
            i += 1;
            continue;
        }
        if cls == C_BSLASH {
            esc = true;
            i += 1;
            continue;
        }
        debug_assert!(i > 0 && i < b.len());
        // SAFETY: `i < b.len()` (checked above) and `i > 0` (callers start scanning after
        // the element's first byte), so `i - 1` is in bounds.
        if unsafe { *b.get_unchecked(i - 1) } == b'\\' {
            // Escaped delimiter (Go checks the previous byte). A newline is special: it ends the
            // line unless `scanLine` skipped it (an odd run of backslashes before it).
            if cls == C_NL && !odd_backslashes(b, i, line_start) {
                return (i, esc);
            }
            i += 1;
            continue;
        }
        return (i, esc);
    }
}

/// Bit masks of the 16 bytes from `i` (bit n = byte `i + n`): `=`, comma or space, newline,
/// backslash; `None` within 16 bytes of the end of `b`. The short element scanners below use
/// them to find a whole unescaped element with one vector compare, leaving everything else
/// (long elements, backslashes, errors) to the byte-exact [`scan_key`] path; when they
/// answer, that path would answer the same.
#[inline(always)]
fn masks16(b: &[u8], i: usize) -> Option<(u32, u32, u32, u32)> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
            _mm_set1_epi8,
        };
        if i + 16 > b.len() {
            return None;
        }
        // SAFETY: SSE2 is always available on x86_64; the unaligned load reads
        // `b[i..i + 16]`, which is in bounds.
        unsafe {
            let v = _mm_loadu_si128(b.as_ptr().add(i) as *const __m128i);
            let m = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
            Some((
                _mm_movemask_epi8(m(b'=')) as u32,
                _mm_movemask_epi8(_mm_or_si128(m(b','), m(b' '))) as u32,
                _mm_movemask_epi8(m(b'\n')) as u32,
                _mm_movemask_epi8(m(b'\\')) as u32,
            ))
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (b, i);
        None
    }
}

/// The end of an unescaped measurement starting at `s` (first byte not a delimiter) that
/// ends at a comma or space within 16 bytes.
#[inline(always)]
pub(super) fn short_measurement(b: &[u8], s: usize) -> Option<usize> {
    let (_, stop, nl, bs) = masks16(b, s)?;
    let k = (stop | nl | bs).trailing_zeros();
    if k >= 16 || stop >> k & 1 == 0 {
        return None;
    }
    Some(s + k as usize)
}

/// A whole unescaped tag `key=value` from `ks` (first byte not a delimiter) within 16
/// bytes, the value ending at a comma or space: `(end of key, end of value)`.
#[inline(always)]
pub(super) fn short_tag(b: &[u8], ks: usize) -> Option<(usize, usize)> {
    let (eq, stop, nl, bs) = masks16(b, ks)?;
    let any = eq | stop | nl;
    // The key ends at the first delimiter, which must be `=`.
    let k = any.trailing_zeros();
    if k >= 16 || eq >> k & 1 == 0 {
        return None;
    }
    // The value's first byte (k + 1 <= 16) may be `=` but no other delimiter; the value
    // ends at the next delimiter, which must be a comma or a space.
    if (stop | nl) >> (k + 1) & 1 != 0 {
        return None;
    }
    let e = (any & !((2u32 << (k + 1)) - 1)).trailing_zeros();
    if e >= 16 || stop >> e & 1 == 0 || bs & ((2u32 << e) - 1) != 0 {
        return None;
    }
    Some((ks + k as usize, ks + e as usize))
}

/// The end (the `=`) of an unescaped field key from `ks` (first byte not a delimiter)
/// within 16 bytes.
#[inline(always)]
pub(super) fn short_key(b: &[u8], ks: usize) -> Option<usize> {
    let (eq, stop, nl, bs) = masks16(b, ks)?;
    // The first delimiter or backslash must be the `=`.
    let k = (eq | stop | nl | bs).trailing_zeros();
    if k >= 16 || eq >> k & 1 == 0 {
        return None;
    }
    Some(ks + k as usize)
}

/// Advances from `i` to the first of `, = \\ \n` and space, or to within 8 bytes of the end
/// (the caller's byte loop finishes the tail): 16 bytes per step with SSE2 (part of the x86_64
/// baseline), then 8 per step with SWAR.
#[inline(always)]
fn skip_plain(b: &[u8], mut i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
            _mm_set1_epi8,
        };
        while i + 16 <= b.len() {
            // SAFETY: SSE2 is always available on x86_64; the unaligned load reads
            // `b[i..i + 16]`, which is in bounds.
            let m = unsafe {
                let v = _mm_loadu_si128(b.as_ptr().add(i) as *const __m128i);
                let eq = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
                let any = _mm_or_si128(
                    _mm_or_si128(eq(b','), eq(b' ')),
                    _mm_or_si128(_mm_or_si128(eq(b'='), eq(b'\n')), eq(b'\\')),
                );
                _mm_movemask_epi8(any) as u32
            };
            if m != 0 {
                return i + m.trailing_zeros() as usize;
            }
            i += 16;
        }
    }
    while i + 8 <= b.len() {
        let w = load8(b, i);
        let m = has_byte(w, b',')
            | has_byte(w, b' ')
            | has_byte(w, b'=')
            | has_byte(w, b'\n')
            | has_byte(w, b'\\');
        if m != 0 {
            return i + (m.trailing_zeros() >> 3) as usize;
        }
        i += 8;
    }
    i
}

/// True when an odd run of backslashes (back to `line_start`) precedes `b[i]`.
fn odd_backslashes(b: &[u8], i: usize, line_start: usize) -> bool {
    let mut n = 0;
    let mut j = i;
    while j > line_start && b[j - 1] == b'\\' {
        n += 1;
        j -= 1;
    }
    n % 2 == 1
}

/// True at the end of the line (a newline or the end of the body).
#[inline]
pub(super) fn at_eol(b: &[u8], i: usize) -> bool {
    i >= b.len() || b[i] == b'\n'
}

/// `b[start..end]` for an element the scanners just delimited (`start < end <= b.len()`),
/// without the bounds checks the compiler cannot drop.
#[inline(always)]
pub(super) fn raw(b: &[u8], start: usize, end: usize) -> &[u8] {
    debug_assert!(start <= end && end <= b.len());
    // SAFETY: callers pass a key's first byte and the delimiter `scan_key` stopped at, which
    // is at most `b.len()`.
    unsafe { b.get_unchecked(start..end) }
}

/// Reads the 8 bytes at `i` as a little-endian word; the caller ensures `i + 8 <= b.len()`.
#[inline(always)]
pub(super) fn load8(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-exact path of the tag loop: `(key end, value end)` when the tag is valid and
    /// unescaped, `None` otherwise.
    fn tag_by_scans(b: &[u8], ks: usize) -> Option<(usize, usize)> {
        let (ke, kesc) = scan_key(b, ks + 1, C_COMMA | C_SPACE | C_EQ, 0);
        if at_eol(b, ke) || b[ke] != b'=' || kesc || b[ks] == b'\\' {
            return None;
        }
        let vs = ke + 1;
        if at_eol(b, vs) || matches!(b[vs], b' ' | b',') || b[vs] == b'\\' {
            return None;
        }
        let (ve, vesc) = scan_key(b, vs + 1, C_COMMA | C_SPACE | C_EQ, 0);
        if at_eol(b, ve) || b[ve] == b'=' || vesc {
            return None;
        }
        Some((ke, ve))
    }

    /// Runs `check` at every start position (bytes in `skip` excluded) of 50,000 random
    /// strings of up to 40 bytes, mostly plain bytes so that whole elements occur often;
    /// returns how many times `check` saw a fast-path answer (returned true).
    fn fast_path_cases(
        seed: u64,
        skip: &[u8],
        mut check: impl FnMut(&[u8], usize) -> bool,
    ) -> usize {
        let alphabet = b"ab=, \n\\";
        let mut x = seed;
        let mut found = 0;
        for _ in 0..50_000 {
            let len = 1 + (x % 40) as usize;
            let b: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let r = (x >> 20) as usize % 16;
                    if r < 9 {
                        b'a'
                    } else {
                        alphabet[r - 9]
                    }
                })
                .collect();
            for start in 0..b.len() {
                if !skip.contains(&b[start]) && check(&b, start) {
                    found += 1;
                }
            }
        }
        found
    }

    #[test]
    fn short_tag_agrees_with_the_byte_scans() {
        let found = fast_path_cases(0x9e37_79b9_7f4a_7c15, b" ,=\n", |b, ks| {
            let Some(t) = short_tag(b, ks) else {
                return false;
            };
            assert_eq!(
                Some(t),
                tag_by_scans(b, ks),
                "{:?} at {ks}",
                String::from_utf8_lossy(b)
            );
            true
        });
        assert!(found > 10_000, "too few fast-path tags exercised: {found}");
    }

    #[test]
    fn short_key_agrees_with_the_byte_scan() {
        let found = fast_path_cases(0x2545_f491_4f6c_dd1d, b" ,=\n", |b, ks| {
            let Some(ke) = short_key(b, ks) else {
                return false;
            };
            let (end, esc) = scan_key(b, ks + 1, C_COMMA | C_SPACE | C_EQ, 0);
            assert_eq!(
                (ke, false),
                (end, esc || b[ks] == b'\\'),
                "{:?} at {ks}",
                String::from_utf8_lossy(b)
            );
            assert_eq!(b[ke], b'=');
            true
        });
        assert!(found > 10_000, "too few fast-path keys exercised: {found}");
    }

    #[test]
    fn short_measurement_agrees_with_the_byte_scan() {
        let found = fast_path_cases(0x1234_5678_9abc_def1, b" ,\n", |b, s| {
            let Some(e) = short_measurement(b, s) else {
                return false;
            };
            let (end, esc) = scan_key(b, s + 1, C_COMMA | C_SPACE, s);
            assert_eq!(
                (e, false),
                (end, esc || b[s] == b'\\'),
                "{:?} at {s}",
                String::from_utf8_lossy(b)
            );
            assert!(matches!(b[e], b',' | b' '));
            true
        });
        assert!(
            found > 10_000,
            "too few fast-path measurements exercised: {found}"
        );
    }
}
