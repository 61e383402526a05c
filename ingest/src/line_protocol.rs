//! InfluxDB line protocol parser over borrowed bytes.
//!
//! Grammar and error texts follow InfluxDB 1.x (`models/points.go`), since chingest keeps v1's
//! partial-write semantics:
//!
//! ```text
//! measurement[,tag=value...] field=value[,field=value...] [timestamp]
//! ```
//!
//! * Measurement, tag keys, tag values and field keys: a delimiter (`,` ` ` `=`) is escaped when
//!   the byte before it is a backslash; `\,` `\ ` `\=` unescape, any other backslash is literal.
//! * String field values: `\"` and `\\` unescape; newlines are allowed inside.
//! * Floats (`1`, `1.`, `.5`, `-1.5e-3`), integers `1i`, unsigned `1u`, booleans
//!   `t T true True TRUE f F false False FALSE`.
//! * A field named `time` is dropped; duplicate fields in one line: the last wins.
//!
//! Each line yields a point or a [`LineError`]; a bad line spares its neighbours. Names and
//! string values are spans into the body unless unescaping forces a copy (into the batch's side
//! buffer); tags and fields go to the batch's flat pools, so the common case allocates nothing
//! per point. Bodies over [`MAX_BODY_BYTES`] (2 GiB) are refused as one error.

use std::borrow::Cow;

use rayon::prelude::*;

use crate::error::LineError;
use crate::lines::{chunk_bounds, scan_line};
use crate::point::{
    fingerprint, is_reserved, less, resolve_unchecked, same, side_span, FieldValue, ParsedBatch,
    Parts, PointEntry, Span, Value, MAX_BODY_BYTES,
};
use crate::precision::Precision;
use crate::series::{series_id_pairs, SERIES_KEY_VERSION};
use xxhash_rust::xxh3::xxh3_64;

/// Largest allowed size of measurement + tags (Go's `models.MaxKeyLength`).
pub const MAX_KEY_LENGTH: usize = 65535;

/// Bodies at least this large are split and parsed on the rayon pool.
pub const DEFAULT_PARALLEL_CHUNK_BYTES: usize = 512 * 1024;

type Reason = Cow<'static, str>;

/// Parses a whole body on the calling thread.
pub fn parse_lines(body: &[u8], precision: Precision, now_ns: i64) -> ParsedBatch<'_> {
    if body.len() > MAX_BODY_BYTES {
        return too_large(body);
    }
    let ctx = Ctx::new(precision, now_ns);
    let mut out = new_batch(body, body.len());
    parse_range(body, 0, body.len(), &ctx, &mut out);
    out
}

#[cold]
fn too_large(body: &[u8]) -> ParsedBatch<'_> {
    let mut out = ParsedBatch::new(body);
    out.errors.push(LineError {
        line: String::new(),
        reason: format!("request body exceeds {MAX_BODY_BYTES} bytes"),
    });
    out
}

/// Parses a body, splitting it at line boundaries into `chunk_bytes` chunks parsed in
/// parallel on the current rayon pool; results are in input order.
pub fn parse_lines_parallel(
    body: &[u8],
    precision: Precision,
    now_ns: i64,
    chunk_bytes: usize,
) -> ParsedBatch<'_> {
    // About one chunk per worker: fewer chunks means less stitching (each later chunk's pools
    // are moved into the first one's).
    let per_thread = body.len() / rayon::current_num_threads().max(1) + 1;
    let bounds = chunk_bounds(body, chunk_bytes.max(per_thread));
    if bounds.len() <= 2 || body.len() > MAX_BODY_BYTES {
        return parse_lines(body, precision, now_ns);
    }
    let ctx = Ctx::new(precision, now_ns);
    let parts: Vec<(ParsedBatch<'_>, usize)> = bounds
        .par_windows(2)
        .map(|w| {
            let mut out = new_batch(body, w[1] - w[0]);
            let end = parse_range(body, w[0], w[1], &ctx, &mut out);
            (out, end)
        })
        .collect();
    let mut out = ParsedBatch::new(body);
    let mut pos = 0usize;
    for (i, (part, end)) in parts.into_iter().enumerate() {
        let (start, soft_end) = (bounds[i], bounds[i + 1]);
        if start == pos {
            if i == 0 {
                out = part;
            } else {
                out.append(part);
            }
            pos = end;
        } else if pos < soft_end {
            // The previous chunk's last line ran past our start (a newline inside a quoted
            // string): the speculative parse began mid-line; redo it from the true line start.
            let mut redo = ParsedBatch::new(body);
            pos = parse_range(body, pos, soft_end, &ctx, &mut redo);
            out.append(redo);
        }
    }
    out
}

fn new_batch(body: &[u8], bytes: usize) -> ParsedBatch<'_> {
    // A guess from typical line sizes; only capacity, never correctness. Bounded by the body.
    let lines = bytes / 96 + 1;
    ParsedBatch::with_capacity(body, lines, lines * 2, lines * 4)
}

struct Ctx {
    precision: Precision,
    default_time: i64,
}

impl Ctx {
    fn new(precision: Precision, now_ns: i64) -> Ctx {
        Ctx {
            precision,
            default_time: precision.truncate(now_ns),
        }
    }
}

/// Parses the lines that start in `[start, soft_end)` into `out`; returns the position after
/// the last line parsed (>= `soft_end` unless the body ended).
fn parse_range<'a>(
    body: &'a [u8],
    start: usize,
    soft_end: usize,
    ctx: &Ctx,
    out: &mut ParsedBatch<'a>,
) -> usize {
    let mut scratch = Vec::with_capacity(256);
    let mut pos = start;
    while pos < soft_end && pos < body.len() {
        let line_start = pos;
        let s = skip_whitespace(body, pos);
        if s >= body.len() {
            return body.len();
        }
        match body[s] {
            b'\n' => {
                pos = s + 1;
                continue;
            }
            b'#' => {
                pos = scan_line(body, line_start) + 1;
                continue;
            }
            _ => {}
        }
        let mut parts = out.parts_mut();
        let (tags0, fields0, side0) = (parts.tags.len(), parts.fields.len(), parts.side.len());
        match parse_point(body, s, ctx, &mut parts, &mut scratch) {
            Ok(end) => pos = end + 1,
            Err(reason) => {
                parts.tags.truncate(tags0);
                parts.fields.truncate(fields0);
                parts.side.truncate(side0);
                let end = scan_line(body, line_start);
                out.errors.push(LineError {
                    line: String::from_utf8_lossy(&body[s..end]).into_owned(),
                    reason: reason.into_owned(),
                });
                pos = end + 1;
            }
        }
    }
    pos.min(body.len())
}

#[inline]
fn skip_whitespace(b: &[u8], mut i: usize) -> usize {
    // A bit test rather than a `matches!` (which became a jump table); most calls see a
    // byte above the space and leave at the first compare.
    const WS: u64 = 1 << b' ' | 1 << b'\t' | 1;
    while i < b.len() && b[i] <= b' ' && WS >> b[i] & 1 != 0 {
        i += 1;
    }
    i
}

// Byte classes for the key scanners (bit set = the scanner must look at the byte).
const C_COMMA: u8 = 1;
const C_SPACE: u8 = 2;
const C_EQ: u8 = 4;
const C_NL: u8 = 8;
const C_BSLASH: u8 = 16;

const CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b',' as usize] = C_COMMA;
    t[b' ' as usize] = C_SPACE;
    t[b'=' as usize] = C_EQ;
    t[b'\n' as usize] = C_NL;
    t[b'\\' as usize] = C_BSLASH;
    t
};

/// Scans from `i` to the first unescaped byte whose class is in `stop` (or a real line end).
/// Returns `(position, saw_backslash)`; position is `b.len()` or the delimiter.
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
fn scan_key(b: &[u8], mut i: usize, stop: u8, line_start: usize) -> (usize, bool) {
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
fn short_measurement(b: &[u8], s: usize) -> Option<usize> {
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
fn short_tag(b: &[u8], ks: usize) -> Option<(usize, usize)> {
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
fn short_key(b: &[u8], ks: usize) -> Option<usize> {
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

fn odd_backslashes(b: &[u8], i: usize, line_start: usize) -> bool {
    let mut n = 0;
    let mut j = i;
    while j > line_start && b[j - 1] == b'\\' {
        n += 1;
        j -= 1;
    }
    n % 2 == 1
}

/// Appends `raw` to `out` with `\,` `\ ` `\=` unescaped; other backslashes stay literal.
fn unescape_key(out: &mut Vec<u8>, raw: &[u8]) {
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' && i + 1 < raw.len() && matches!(raw[i + 1], b',' | b' ' | b'=') {
            out.push(raw[i + 1]);
            i += 2;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
}

/// The span of the name `b[start..end]`: the body itself, or its unescaped copy in `side`.
#[inline(always)]
fn name(side: &mut Vec<u8>, b: &[u8], start: usize, end: usize, esc: bool) -> Span {
    if esc {
        let off = side.len();
        unescape_key(side, &b[start..end]);
        side_span(off, side.len() - off)
    } else {
        Span::body(start, end - start)
    }
}

/// `v.push(x)` with the growth path kept out of line, so the common case is a store and a
/// length bump inlined into the parser (std's out-of-line push showed as ~13% of parsing).
#[inline(always)]
fn push_fast<T>(v: &mut Vec<T>, x: T) {
    if v.len() == v.capacity() {
        grow_one(v);
    }
    let len = v.len();
    // SAFETY: `len < capacity` after the check above, so slot `len` is allocated and
    // uninitialised; writing it and bumping the length by one keeps the vector valid.
    unsafe {
        v.as_mut_ptr().add(len).write(x);
        v.set_len(len + 1);
    }
}

/// [`push_fast`] for a pair, storing each half straight into the slot: building the tuple on
/// the stack first made the compiler copy it with wide loads over narrower stores, which
/// stalls store-to-load forwarding (the hottest instruction of the parser).
#[inline(always)]
fn push_pair<A, B>(v: &mut Vec<(A, B)>, a: A, b: B) {
    if v.len() == v.capacity() {
        grow_one(v);
    }
    let len = v.len();
    // SAFETY: as in `push_fast`; both halves of the slot are initialised before `set_len`.
    unsafe {
        let slot = v.as_mut_ptr().add(len);
        std::ptr::addr_of_mut!((*slot).0).write(a);
        std::ptr::addr_of_mut!((*slot).1).write(b);
        v.set_len(len + 1);
    }
}

#[cold]
#[inline(never)]
fn grow_one<T>(v: &mut Vec<T>) {
    v.reserve(1);
}

#[inline]
fn at_eol(b: &[u8], i: usize) -> bool {
    i >= b.len() || b[i] == b'\n'
}

/// Bytes of a span of the point being parsed.
#[inline(always)]
fn res<'s>(b: &'s [u8], side: &'s [u8], s: Span) -> &'s [u8] {
    // SAFETY: `parse_point` only resolves spans it made in this call, from positions inside
    // `b` or from bytes it appended to `side` (which `parse_range` truncates only after the
    // point is abandoned).
    unsafe { resolve_unchecked(b, side, s) }
}

/// `b[start..end]` for an element the scanners just delimited (`start < end <= b.len()`),
/// without the bounds checks the compiler cannot drop.
#[inline(always)]
fn raw(b: &[u8], start: usize, end: usize) -> &[u8] {
    debug_assert!(start <= end && end <= b.len());
    // SAFETY: callers pass a key's first byte and the delimiter `scan_key` stopped at, which
    // is at most `b.len()`.
    unsafe { b.get_unchecked(start..end) }
}

/// True if one of `tags` (spans of the point being parsed) has key `k`.
#[inline(always)]
fn tag_named(b: &[u8], side: &[u8], tags: &[(Span, Span)], k: &[u8]) -> bool {
    for &(t, _) in tags {
        if same(res(b, side, t), k) {
            return true;
        }
    }
    false
}

/// Index of the field named `k` among `fields` (spans of the point being parsed).
#[inline(always)]
fn field_named(b: &[u8], side: &[u8], fields: &[(Span, Value)], k: &[u8]) -> Option<usize> {
    for (i, &(f, _)) in fields.iter().enumerate() {
        if same(res(b, side, f), k) {
            return Some(i);
        }
    }
    None
}

/// Inserts the tag `(key, value)` into the point's tags `tags[start..]` (sorted by key bytes)
/// when it does not sort after the last one; returns true if a tag of the same key is there.
/// Out of line: most points need it once, and inlined it crowded the parser's registers.
#[inline(never)]
fn insert_tag(
    b: &[u8],
    side: &[u8],
    tags: &mut Vec<(Span, Span)>,
    start: usize,
    key: Span,
    value: Span,
) -> bool {
    push_pair(tags, key, value);
    let kb = res(b, side, key);
    let t = &mut tags[start..];
    let mut j = t.len() - 1;
    let mut dup = false;
    while j > 0 {
        let prev = res(b, side, t[j - 1].0);
        if less(kb, prev) {
            t[j] = t[j - 1];
            j -= 1;
        } else {
            // The others are sorted, so an equal key can only be the one just before.
            dup = same(prev, kb);
            break;
        }
    }
    t[j] = (key, value);
    dup
}

/// The series id of the point being parsed (measurement and its sorted tags, all spans made
/// by this `parse_point` call): the key of [`series_id_pairs`], byte for byte, written after
/// one capacity check instead of two per name.
#[inline(always)]
fn series_id_of(
    scratch: &mut Vec<u8>,
    b: &[u8],
    side: &[u8],
    measurement: Span,
    tags: &[(Span, Span)],
) -> u64 {
    // Span lengths are below 2^31, so the key's u32 length prefixes are exact.
    let mut total = 1 + 4 + measurement.len();
    for &(k, v) in tags {
        total += 8 + k.len() + v.len();
    }
    scratch.clear();
    scratch.reserve(total);
    // SAFETY: `reserve` makes `total` bytes writable from the start of `scratch`; the writes
    // below are the version byte and, per name, a 4-byte length and the name's bytes, which
    // add up to exactly `total`, all initialised before `set_len(total)`.
    unsafe {
        let base = scratch.as_mut_ptr();
        *base = SERIES_KEY_VERSION;
        let mut p = put_name(base.add(1), res(b, side, measurement));
        for &(k, v) in tags {
            p = put_name(p, res(b, side, k));
            p = put_name(p, res(b, side, v));
        }
        debug_assert_eq!(p.offset_from(base) as usize, total);
        scratch.set_len(total);
    }
    let id = xxh3_64(scratch);
    debug_assert_eq!(
        id,
        series_id_pairs(
            &mut Vec::new(),
            res(b, side, measurement),
            tags.iter()
                .map(|&(k, v)| (res(b, side, k), res(b, side, v)))
        )
    );
    id
}

/// Writes `v.len()` as a little-endian u32 and then `v` at `p`; returns the end.
///
/// # Safety
/// `p` must be valid for `4 + v.len()` bytes of writes, not overlapping `v`, and
/// `v.len() < 2^32`.
#[inline(always)]
unsafe fn put_name(p: *mut u8, v: &[u8]) -> *mut u8 {
    let n = v.len();
    // SAFETY: the caller guarantees room for `4 + n` bytes at `p`; the reads stay in `v`
    // (two possibly overlapping words cover lengths 4..=16).
    unsafe {
        std::ptr::write_unaligned(p as *mut [u8; 4], (n as u32).to_le_bytes());
        let (dst, src) = (p.add(4), v.as_ptr());
        if n > 16 {
            std::ptr::copy_nonoverlapping(src, dst, n);
        } else if n >= 8 {
            let a = std::ptr::read_unaligned(src as *const u64);
            let z = std::ptr::read_unaligned(src.add(n - 8) as *const u64);
            std::ptr::write_unaligned(dst as *mut u64, a);
            std::ptr::write_unaligned(dst.add(n - 8) as *mut u64, z);
        } else if n >= 4 {
            let a = std::ptr::read_unaligned(src as *const u32);
            let z = std::ptr::read_unaligned(src.add(n - 4) as *const u32);
            std::ptr::write_unaligned(dst as *mut u32, a);
            std::ptr::write_unaligned(dst.add(n - 4) as *mut u32, z);
        } else {
            for i in 0..n {
                *dst.add(i) = *src.add(i);
            }
        }
        dst.add(n)
    }
}

/// Parses one point starting at `s` (first non-whitespace byte of the line). Returns the
/// index of the terminating newline (or `b.len()`).
fn parse_point(
    b: &[u8],
    s: usize,
    ctx: &Ctx,
    out: &mut Parts<'_, '_>,
    scratch: &mut Vec<u8>,
) -> Result<usize, Reason> {
    // --- measurement
    if b[s] == b',' {
        return Err("missing measurement".into());
    }
    let (mut i, esc) = match short_measurement(b, s) {
        Some(i) => (i, false),
        None => {
            let (i, esc) = scan_key(b, s + 1, C_COMMA | C_SPACE, s);
            if at_eol(b, i) {
                return Err("missing fields".into());
            }
            (i, esc || b[s] == b'\\')
        }
    };
    let measurement = name(out.side, b, s, i, esc);

    // --- tags
    let tags_start = out.tags.len();
    let mut tag_mask = 0u64;
    // Tags are kept sorted by key as they are parsed (insertion, see `insert_tag`), which
    // also finds duplicate keys; the error is reported where a sort after the loop would.
    let mut dup = false;
    // Reserved keys are noted while the key is at hand and reported after the duplicate
    // check, in sorted order, exactly as a separate pass over the sorted tags would.
    let mut reserved = false;
    if b[i] == b',' {
        i += 1;
        loop {
            // key
            if at_eol(b, i) || matches!(b[i], b' ' | b',' | b'=') {
                return Err("missing tag key".into());
            }
            let ks = i;
            let (ke, kesc, vs, ve, vesc) = match short_tag(b, ks) {
                Some((ke, ve)) => (ke, false, ke + 1, ve, false),
                None => {
                    let (ke, kesc) = scan_key(b, i + 1, C_COMMA | C_SPACE | C_EQ, s);
                    if at_eol(b, ke) || b[ke] != b'=' {
                        return Err("missing tag value".into());
                    }
                    let kesc = kesc || b[ks] == b'\\';
                    // value
                    let vs = ke + 1;
                    if at_eol(b, vs) || matches!(b[vs], b' ' | b',') {
                        return Err("missing tag value".into());
                    }
                    let (ve, vesc) = scan_key(b, vs + 1, C_COMMA | C_SPACE | C_EQ, s);
                    if at_eol(b, ve) {
                        return Err("missing fields".into());
                    }
                    if b[ve] == b'=' {
                        return Err("invalid tag format".into());
                    }
                    (ke, kesc, vs, ve, vesc || b[vs] == b'\\')
                }
            };
            let key = name(out.side, b, ks, ke, kesc);
            let value = name(out.side, b, vs, ve, vesc);
            let side: &[u8] = out.side;
            let kb = res(b, side, key);
            tag_mask |= fingerprint(kb);
            reserved |= is_reserved(kb);
            let n = out.tags.len();
            if n > tags_start && !less(res(b, side, out.tags[n - 1].0), kb) {
                dup |= insert_tag(b, side, out.tags, tags_start, key, value);
            } else {
                push_pair(out.tags, key, value);
            }
            i = ve;
            if b[i] == b' ' {
                break;
            }
            i += 1;
        }
    }
    let key_len = i - s;
    if key_len > MAX_KEY_LENGTH {
        return Err(format!("max key length exceeded: {key_len} > {MAX_KEY_LENGTH}").into());
    }
    {
        let side: &[u8] = out.side;
        let tags = &out.tags[tags_start..];
        if dup {
            return Err("duplicate tags".into());
        }
        for &(k, _) in tags.iter().filter(|_| reserved) {
            let k = res(b, side, k);
            if is_reserved(k) {
                return Err(format!(
                    "invalid tag key: input tag \"{}\" on measurement \"{}\" is invalid (reserved column name)",
                    String::from_utf8_lossy(k),
                    String::from_utf8_lossy(res(b, side, measurement))
                )
                .into());
            }
        }
    }

    // --- fields
    i = skip_whitespace(b, i);
    if at_eol(b, i) {
        return Err("missing fields".into());
    }
    let fields_start = out.fields.len();
    // `key_len + 4 + field key length` may not exceed MAX_KEY_LENGTH (key_len <= it here);
    // as a bound on the field key alone, negative meaning every key is too long.
    let field_key_room = MAX_KEY_LENGTH as isize - key_len as isize - 4;
    let mut field_mask = 0u64;
    loop {
        // field key
        let ks = i;
        // `i < b.len()`. A space or newline can only be here after a comma (the first key
        // follows skipped whitespace and an end-of-line check).
        if CLASS[b[i] as usize] & (C_EQ | C_COMMA | C_SPACE | C_NL) != 0 {
            return Err(if b[i] == b'=' {
                "missing field key"
            } else {
                "invalid field format"
            }
            .into());
        }
        let (ke, kesc) = match short_key(b, ks) {
            Some(ke) => (ke, false),
            None => {
                let (ke, kesc) = scan_key(b, i + 1, C_COMMA | C_SPACE | C_EQ, s);
                if at_eol(b, ke) || b[ke] != b'=' {
                    return Err("invalid field format".into());
                }
                (ke, kesc || b[ks] == b'\\')
            }
        };
        if (ke - ks) as isize > field_key_room {
            let sz = key_len + 4 + (ke - ks);
            return Err(format!("max key length exceeded: {sz} > {MAX_KEY_LENGTH}").into());
        }
        // field value
        let vs = ke + 1;
        let Some(&c) = b.get(vs) else {
            return Err("missing field value".into());
        };
        let (value, ve) = match c {
            b'0'..=b'9' | b'.' | b'-' | b'N' | b'n' => parse_number(b, vs)?,
            b'"' => parse_string(b, vs, out.side)?,
            b',' | b' ' | b'\n' => return Err("missing field value".into()),
            _ => parse_bool(b, vs)?,
        };
        let raw_key = raw(b, ks, ke);
        if raw_key == b"time" {
            // InfluxDB drops a field named `time`; a point left without fields is rejected
            // later (as a dropped point, like v1's shard does).
        } else {
            let key = name(out.side, b, ks, ke, kesc);
            let side: &[u8] = out.side;
            let kb = res(b, side, key);
            if is_reserved(kb) {
                return Err(format!(
                    "invalid field name: input field \"{}\" on measurement \"{}\" is invalid (reserved column name)",
                    String::from_utf8_lossy(kb),
                    String::from_utf8_lossy(res(b, side, measurement))
                )
                .into());
            }
            let fp = fingerprint(kb);
            // A field key equal to a tag key would make two columns of one name.
            if tag_mask & fp != 0 && tag_named(b, side, &out.tags[tags_start..], kb) {
                return Err(format!(
                    "conflicting field and tag key: input field \"{}\" on measurement \"{}\" is also a tag key",
                    String::from_utf8_lossy(kb),
                    String::from_utf8_lossy(res(b, side, measurement))
                )
                .into());
            }
            // Same field twice in one line: the last one wins (InfluxDB keeps the last).
            let dup = if field_mask & fp != 0 {
                field_named(b, side, &out.fields[fields_start..], kb)
            } else {
                None
            };
            match dup {
                Some(at) => out.fields[fields_start + at].1 = value,
                None => push_pair(out.fields, key, value),
            }
            field_mask |= fp;
        }
        i = ve;
        if at_eol(b, i) || b[i] == b' ' {
            break;
        }
        // b[i] == ','; a space or newline after it is rejected at the top of the loop.
        i += 1;
        if i >= b.len() {
            return Err("invalid field format".into());
        }
    }

    // --- timestamp
    let mut time = ctx.default_time;
    let mut end = i;
    if !at_eol(b, i) {
        let ts = skip_whitespace(b, i);
        // Fast path: a plain run of digits (what clients send) is validated and converted in
        // one pass, eight digits per step; anything else takes the exact scan below.
        let (mut j, fast) = match fast_timestamp(b, ts) {
            Some((raw, j)) => (j, Some(raw)),
            None => (ts, None),
        };
        if fast.is_none() {
            while !at_eol(b, j) && b[j] != b' ' {
                if !(b[j].is_ascii_digit() || (j == ts && b[j] == b'-')) {
                    return Err("bad timestamp".into());
                }
                j += 1;
            }
        }
        if j > ts {
            let raw = match fast {
                Some(raw) => raw,
                None => parse_i64(&b[ts..j]).map_err(|e| -> Reason {
                    format!(
                        "strconv.ParseInt: parsing \"{}\": {e}",
                        String::from_utf8_lossy(&b[ts..j])
                    )
                    .into()
                })?,
            };
            time = ctx.precision.to_nanos(raw).ok_or_else(|| -> Reason {
                format!(
                    "time outside range {} - {}",
                    crate::precision::MIN_NANO_TIME,
                    crate::precision::MAX_NANO_TIME
                )
                .into()
            })?;
            while !at_eol(b, j) {
                if b[j] != b' ' {
                    return Err("point is invalid".into());
                }
                j += 1;
            }
        }
        end = j;
    }

    let side: &[u8] = out.side;
    let series_id = series_id_of(scratch, b, side, measurement, &out.tags[tags_start..]);
    push_fast(
        out.points,
        PointEntry {
            measurement,
            tags: tags_start as u32..out.tags.len() as u32,
            fields: fields_start as u32..out.fields.len() as u32,
            time,
            series_id,
        },
    );
    Ok(end)
}

/// Reads the 8 bytes at `i` as a little-endian word; the caller ensures `i + 8 <= b.len()`.
#[inline(always)]
fn load8(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(w)
}

/// The decimal value of 8 ASCII digits loaded by [`load8`] (first byte most significant), or
/// `None` when any byte is not a digit (SWAR: no per-byte branches).
#[inline(always)]
fn eight_digits(w: u64) -> Option<u64> {
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
fn leading_digits(w: u64) -> (usize, u64) {
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
fn fast_timestamp(b: &[u8], ts: usize) -> Option<(i64, usize)> {
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
enum IntError {
    Syntax,
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

fn parse_i64(d: &[u8]) -> Result<i64, IntError> {
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
fn parse_number(b: &[u8], start: usize) -> Result<(Value, usize), Reason> {
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

#[cold]
fn parse_number_slow(b: &[u8], start: usize) -> Result<(Value, usize), Reason> {
    let mut i = start;
    let neg = b[i] == b'-';
    if neg {
        i += 1;
        if i == b.len() {
            return Err("invalid number".into());
        }
    }
    let (mut is_int, mut is_uint, mut decimal, mut scientific) = (false, false, false, false);
    // Fast-path accumulation for plain decimals (Clinger: exact when mantissa < 2^53 and the
    // power of ten is exactly representable).
    let mut mantissa: u64 = 0;
    let mut sig_digits = 0u32;
    let mut frac_digits = 0u32;
    while i < b.len() {
        let c = b[i];
        match c {
            b',' | b' ' | b'\n' => break,
            b'0'..=b'9' => {
                if sig_digits < 19 {
                    mantissa = mantissa * 10 + (c - b'0') as u64;
                    if mantissa != 0 {
                        sig_digits += 1;
                    }
                } else {
                    sig_digits = u32::MAX / 2; // too long for the fast path
                }
                if decimal {
                    frac_digits += 1;
                }
            }
            b'i' if i > start && !(is_int || is_uint) => is_int = true,
            b'u' if i > start && !(is_int || is_uint) => is_uint = true,
            b'.' => {
                if decimal {
                    return Err("invalid number".into());
                }
                decimal = true;
            }
            b'e' | b'E' if i > start => scientific = true,
            b'+' | b'-' if matches!(b[i - 1], b'e' | b'E') => {}
            _ => return Err("invalid number".into()),
        }
        i += 1;
    }
    if (is_int || is_uint) && (decimal || scientific) {
        return Err("invalid number".into());
    }
    let mut numeric = i - start;
    if is_int {
        numeric -= 1;
    }
    if decimal {
        numeric -= 1;
    }
    if neg {
        numeric -= 1;
    }
    if numeric == 0 {
        return Err("invalid number".into());
    }
    if is_int {
        if b[i - 1] != b'i' {
            return Err("invalid number".into());
        }
        let text = &b[start..i - 1];
        return match parse_i64(text) {
            Ok(v) => Ok((Value::integer(v), i)),
            Err(e) => {
                let t = String::from_utf8_lossy(text);
                Err(
                    format!("unable to parse integer {t}: strconv.ParseInt: parsing \"{t}\": {e}")
                        .into(),
                )
            }
        };
    }
    if is_uint {
        if b[i - 1] != b'u' || neg {
            return Err("invalid number".into());
        }
        let text = &b[start..i - 1];
        return match parse_u64(text) {
            Ok(v) => Ok((Value::uinteger(v), i)),
            Err(e) => {
                let t = String::from_utf8_lossy(text);
                Err(format!(
                    "unable to parse unsigned {t}: strconv.ParseUint: parsing \"{t}\": {e}"
                )
                .into())
            }
        };
    }
    if !scientific && sig_digits <= 15 && (frac_digits as usize) < POW10.len() {
        let v = mantissa as f64 / POW10[frac_digits as usize];
        return Ok((Value::float(if neg { -v } else { v }), i));
    }
    let text = std::str::from_utf8(&b[start..i]).map_err(|_| Reason::from("invalid float"))?;
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok((Value::float(v), i)),
        _ => Err("invalid float".into()),
    }
}

/// Go's `scanBoolean`. Inlined for the same reason as [`parse_number`].
#[inline(always)]
fn parse_bool(b: &[u8], start: usize) -> Result<(Value, usize), Reason> {
    if !matches!(b[start], b't' | b'f' | b'T' | b'F') {
        return Err("invalid boolean".into());
    }
    // `true` and `false` followed by a delimiter (what clients send): one compare each.
    let term = |j: usize| j >= b.len() || matches!(b[j], b',' | b' ' | b'\n');
    if let Some(w) = b.get(start..start + 4) {
        if w == b"true" && term(start + 4) {
            return Ok((Value::boolean(true), start + 4));
        }
        if w == b"fals" && b.get(start + 4) == Some(&b'e') && term(start + 5) {
            return Ok((Value::boolean(false), start + 5));
        }
    }
    let mut i = start + 1;
    while !term(i) {
        i += 1;
    }
    let v = match &b[start..i] {
        b"t" | b"T" | b"true" | b"True" | b"TRUE" => true,
        b"f" | b"F" | b"false" | b"False" | b"FALSE" => false,
        _ => return Err("invalid boolean".into()),
    };
    Ok((Value::boolean(v), i))
}

/// A double-quoted string value starting at `start` (the opening quote); an escaped value is
/// unescaped into `side`.
fn parse_string(b: &[u8], start: usize, side: &mut Vec<u8>) -> Result<(Value, usize), Reason> {
    let mut i = start + 1;
    let mut esc = false;
    loop {
        match memchr::memchr2(b'"', b'\\', &b[i.min(b.len())..]) {
            None => return Err("unbalanced quotes".into()),
            Some(off) => {
                let j = i + off;
                if b[j] == b'\\' {
                    esc = true;
                    i = j + 2;
                    if i > b.len() {
                        return Err("unbalanced quotes".into());
                    }
                } else {
                    let next = j + 1;
                    // After the closing quote only a separator may follow.
                    if !(at_eol(b, next) || matches!(b[next], b',' | b' ')) {
                        return Err("invalid field format".into());
                    }
                    let span = if esc {
                        let off = side.len();
                        unescape_string(side, &b[start + 1..j]);
                        side_span(off, side.len() - off)
                    } else {
                        Span::body(start + 1, j - start - 1)
                    };
                    return Ok((Value::string(span), next));
                }
            }
        }
    }
}

/// Appends `raw` to `out` with `\\"` and `\\\\` unescaped; other backslashes stay literal.
fn unescape_string(out: &mut Vec<u8>, raw: &[u8]) {
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' && i + 1 < raw.len() && matches!(raw[i + 1], b'"' | b'\\') {
            out.push(raw[i + 1]);
            i += 2;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
}

/// Appends `s` escaped for a measurement, tag key, tag value or field key.
pub fn escape_key(out: &mut Vec<u8>, s: &[u8]) {
    for &c in s {
        if matches!(c, b',' | b' ' | b'=') {
            out.push(b'\\');
        }
        out.push(c);
    }
}

/// Appends `s` as a double-quoted string field value.
pub fn escape_string_value(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &c in s {
        if matches!(c, b'"' | b'\\') {
            out.push(b'\\');
        }
        out.push(c);
    }
    out.push(b'"');
}

/// Renders one point as a line of line protocol (no newline); the inverse of the parser for
/// every value the parser can produce (round-trip tested).
pub fn render_point<K: AsRef<[u8]>, V: AsRef<[u8]>, F: AsRef<[u8]>>(
    out: &mut Vec<u8>,
    measurement: &[u8],
    tags: &[(K, V)],
    fields: &[(F, FieldValue<'_>)],
    time: Option<i64>,
) {
    escape_key(out, measurement);
    for (k, v) in tags {
        out.push(b',');
        escape_key(out, k.as_ref());
        out.push(b'=');
        escape_key(out, v.as_ref());
    }
    out.push(b' ');
    for (n, (k, v)) in fields.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        escape_key(out, k.as_ref());
        out.push(b'=');
        match v {
            FieldValue::Float(f) => {
                // `{:?}` keeps full precision and always shows a `.` or exponent.
                out.extend_from_slice(format!("{f:?}").as_bytes());
            }
            FieldValue::Integer(i) => out.extend_from_slice(format!("{i}i").as_bytes()),
            FieldValue::UInteger(u) => out.extend_from_slice(format!("{u}u").as_bytes()),
            FieldValue::String(s) => escape_string_value(out, s),
            FieldValue::Boolean(v) => out.extend_from_slice(if *v { b"true" } else { b"false" }),
        }
    }
    if let Some(t) = time {
        out.push(b' ');
        out.extend_from_slice(t.to_string().as_bytes());
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
