//! The names of the point being parsed, into the batch's pools: spans into the body or
//! unescaped copies in the side buffer, pushes without the out-of-line growth path, and
//! tags kept sorted by key as they arrive.

use crate::point::{less, resolve_unchecked, same, side_span, Span, Value};

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
pub(super) fn name(side: &mut Vec<u8>, b: &[u8], start: usize, end: usize, esc: bool) -> Span {
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
pub(super) fn push_fast<T>(v: &mut Vec<T>, x: T) {
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
pub(super) fn push_pair<A, B>(v: &mut Vec<(A, B)>, a: A, b: B) {
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

/// Bytes of a span of the point being parsed.
#[inline(always)]
pub(super) fn res<'s>(b: &'s [u8], side: &'s [u8], s: Span) -> &'s [u8] {
    // SAFETY: `parse_point` only resolves spans it made in this call, from positions inside
    // `b` or from bytes it appended to `side` (which `parse_range` truncates only after the
    // point is abandoned).
    unsafe { resolve_unchecked(b, side, s) }
}

/// True if one of `tags` (spans of the point being parsed, sorted by key) has key `k`.
#[inline(always)]
pub(super) fn tag_named(b: &[u8], side: &[u8], tags: &[(Span, Span)], k: &[u8]) -> bool {
    if tags.len() > 32 {
        // Many tags saturate the fingerprint mask: a scan per field would be quadratic.
        return wide_tag_named(b, side, tags, k);
    }
    for &(t, _) in tags {
        if same(res(b, side, t), k) {
            return true;
        }
    }
    false
}

#[cold]
#[inline(never)]
fn wide_tag_named(b: &[u8], side: &[u8], tags: &[(Span, Span)], k: &[u8]) -> bool {
    tags.binary_search_by(|&(t, _)| res(b, side, t).cmp(k))
        .is_ok()
}

/// Index of the field named `k` among `fields` (spans of the point being parsed).
#[inline(always)]
pub(super) fn field_named(
    b: &[u8],
    side: &[u8],
    fields: &[(Span, Value)],
    k: &[u8],
) -> Option<usize> {
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
pub(super) fn insert_tag(
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
