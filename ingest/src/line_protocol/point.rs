//! The grammar of one line: `measurement[,tag=value...] field=value[,field=value...] [time]`.
//!
//! [`parse_point`] reads the parts in order; each part is its own function, inlined, so the
//! split costs no calls. Error texts and the order of the checks are InfluxDB 1.x's.

use super::number::{fast_timestamp, parse_i64, parse_number};
use super::pool::{field_named, insert_tag, name, push_fast, push_pair, res, tag_named};
use super::scan::{
    at_eol, raw, scan_key, short_key, short_measurement, short_tag, skip_whitespace, CLASS,
    C_COMMA, C_EQ, C_NL, C_SPACE,
};
use super::value::{parse_bool, parse_string};
use super::{Ctx, Reason, MAX_KEY_LENGTH};
use crate::point::{fingerprint, is_reserved, less, Parts, PointEntry, Span, Value};
use crate::precision::{MAX_NANO_TIME, MIN_NANO_TIME};
use crate::series::series_id_pairs;

/// The series-key part of a line (measurement and tags), as the field loop needs it.
#[derive(Clone, Copy)]
struct Key {
    measurement: Span,
    /// Start of the point's tags in the tag pool.
    tags_start: usize,
    /// [`fingerprint`]s of the tag keys, or-ed: rules out most field/tag name clashes.
    tag_mask: u64,
    /// Bytes of measurement + tags in the line.
    len: usize,
}

/// Parses one point starting at `s` (first non-whitespace byte of the line). Returns the
/// index of the terminating newline (or `b.len()`).
#[inline]
pub(super) fn parse_point(
    b: &[u8],
    s: usize,
    ctx: &Ctx,
    out: &mut Parts<'_, '_>,
    scratch: &mut Vec<u8>,
) -> Result<usize, Reason> {
    let (measurement, i) = parse_measurement(b, s, out.side)?;
    let (key, i) = parse_tags(b, s, i, measurement, out)?;
    let fields_start = out.fields.len();
    let i = parse_fields(b, s, i, key, out)?;
    let (time, end) = parse_timestamp(b, i, ctx)?;
    let side: &[u8] = out.side;
    let tags = &out.tags[key.tags_start..];
    let series_id = series_id_pairs(
        scratch,
        res(b, side, measurement),
        tags.iter()
            .map(|&(k, v)| (res(b, side, k), res(b, side, v))),
    );
    push_fast(
        out.points,
        PointEntry {
            measurement,
            tags: key.tags_start as u32..out.tags.len() as u32,
            fields: fields_start as u32..out.fields.len() as u32,
            time,
            series_id,
        },
    );
    Ok(end)
}

/// The measurement from `s`: its span and the index of the comma or space after it.
#[inline(always)]
fn parse_measurement(b: &[u8], s: usize, side: &mut Vec<u8>) -> Result<(Span, usize), Reason> {
    if b[s] == b',' {
        return Err("missing measurement".into());
    }
    let (i, esc) = match short_measurement(b, s) {
        Some(i) => (i, false),
        None => {
            let (i, esc) = scan_key(b, s + 1, C_COMMA | C_SPACE, s);
            if at_eol(b, i) {
                return Err("missing fields".into());
            }
            (i, esc || b[s] == b'\\')
        }
    };
    Ok((name(side, b, s, i, esc), i))
}

/// The tags from `i` (the byte after the measurement), sorted by key into the tag pool as
/// they are parsed (see [`insert_tag`]); returns the key part and the index of the space
/// after it. Duplicate and reserved keys are noted while the key is at hand and reported
/// after the key length check, as a pass over the sorted tags would.
#[inline(always)]
fn parse_tags(
    b: &[u8],
    s: usize,
    mut i: usize,
    measurement: Span,
    out: &mut Parts<'_, '_>,
) -> Result<(Key, usize), Reason> {
    let tags_start = out.tags.len();
    let (mut tag_mask, mut dup, mut reserved) = (0u64, false, false);
    if b[i] == b',' {
        i += 1;
        loop {
            let t = tag_bounds(b, s, i)?;
            let key = name(out.side, b, i, t.key_end, t.key_esc);
            let value = name(out.side, b, t.key_end + 1, t.value_end, t.value_esc);
            let side: &[u8] = out.side;
            let kb = res(b, side, key);
            tag_mask |= fingerprint(kb);
            reserved |= is_reserved(kb);
            let n = out.tags.len();
            if n > tags_start && !less(res(b, side, out.tags[n - 1].0), kb) {
                if n - tags_start < WIDE {
                    dup |= insert_tag(b, side, out.tags, tags_start, key, value);
                } else {
                    // Insertion is linear per tag: past WIDE tags, sort once at the end
                    // (`dup` makes the end look).
                    dup = true;
                    push_pair(out.tags, key, value);
                }
            } else {
                push_pair(out.tags, key, value);
            }
            i = t.value_end;
            if b[i] == b' ' {
                break;
            }
            i += 1;
        }
    }
    let key = Key {
        measurement,
        tags_start,
        tag_mask,
        len: i - s,
    };
    if key.len > MAX_KEY_LENGTH {
        return Err(key_too_long(key.len));
    }
    if dup
        && (out.tags.len() - tags_start <= WIDE
            || sort_wide_tags(b, out.side, out.tags, tags_start))
    {
        return Err("duplicate tags".into());
    }
    if reserved {
        check_reserved_tags(b, out, key)?;
    }
    Ok((key, i))
}

/// Sorts a wide point's tags by key (stable); true if two have the same key.
#[cold]
#[inline(never)]
fn sort_wide_tags(b: &[u8], side: &[u8], tags: &mut [(Span, Span)], start: usize) -> bool {
    let tags = &mut tags[start..];
    tags.sort_by(|x, y| res(b, side, x.0).cmp(res(b, side, y.0)));
    tags.windows(2)
        .any(|w| res(b, side, w[0].0) == res(b, side, w[1].0))
}

/// Where one `key=value` tag from `ks` ends.
struct TagBounds {
    /// The `=`.
    key_end: usize,
    key_esc: bool,
    /// The comma or space after the value.
    value_end: usize,
    value_esc: bool,
}

/// The bounds of the tag at `ks`: the 16-byte fast path, else the byte-exact scans.
#[inline]
fn tag_bounds(b: &[u8], s: usize, ks: usize) -> Result<TagBounds, Reason> {
    if at_eol(b, ks) || matches!(b[ks], b' ' | b',' | b'=') {
        return Err("missing tag key".into());
    }
    if let Some((key_end, value_end)) = short_tag(b, ks) {
        return Ok(TagBounds {
            key_end,
            key_esc: false,
            value_end,
            value_esc: false,
        });
    }
    let (ke, kesc) = scan_key(b, ks + 1, C_COMMA | C_SPACE | C_EQ, s);
    if at_eol(b, ke) || b[ke] != b'=' {
        return Err("missing tag value".into());
    }
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
    Ok(TagBounds {
        key_end: ke,
        key_esc: kesc || b[ks] == b'\\',
        value_end: ve,
        value_esc: vesc || b[vs] == b'\\',
    })
}

/// The first reserved tag key in sorted order, as an error.
#[cold]
fn check_reserved_tags(b: &[u8], out: &Parts<'_, '_>, key: Key) -> Result<(), Reason> {
    let side: &[u8] = out.side;
    for &(k, _) in &out.tags[key.tags_start..] {
        let k = res(b, side, k);
        if is_reserved(k) {
            return Err(format!(
                "invalid tag key: input tag \"{}\" on measurement \"{}\" is invalid (reserved column name)",
                String::from_utf8_lossy(k),
                String::from_utf8_lossy(res(b, side, key.measurement))
            )
            .into());
        }
    }
    Ok(())
}

#[cold]
fn key_too_long(len: usize) -> Reason {
    format!("max key length exceeded: {len} > {MAX_KEY_LENGTH}").into()
}

/// The fields from `i` (the space after the key part) into the field pool; returns the index
/// after the last value.
#[inline(always)]
fn parse_fields(
    b: &[u8],
    s: usize,
    mut i: usize,
    key: Key,
    out: &mut Parts<'_, '_>,
) -> Result<usize, Reason> {
    i = skip_whitespace(b, i);
    if at_eol(b, i) {
        return Err("missing fields".into());
    }
    let mut fields = Fields {
        start: out.fields.len(),
        mask: 0,
        // `key.len + 4 + field key length` may not exceed MAX_KEY_LENGTH (key.len <= it
        // here); as a bound on the field key alone, negative meaning every key is too long.
        key_room: MAX_KEY_LENGTH as isize - key.len as isize - 4,
    };
    loop {
        i = parse_field(b, s, i, key, &mut fields, out)?;
        if at_eol(b, i) || b[i] == b' ' {
            break;
        }
        // b[i] == ','; a space or newline after it is rejected by `parse_field`.
        i += 1;
        if i >= b.len() {
            return Err("invalid field format".into());
        }
    }
    // All 64 fingerprint bits: a wide point (64 fields or more, or the marker set below),
    // whose duplicates may have been left to this one pass.
    if fields.mask == u64::MAX {
        dedupe_wide(b, out.side, out.fields, fields.start);
    }
    Ok(i)
}

/// Fields a point may have before duplicate keys are found by sorting once at the end of the
/// line instead of by a scan per field (a scan per field is quadratic: a 100,000-field line
/// took 7.6 s to parse, a 32 MiB one would take hours).
const WIDE: usize = 32;

/// The duplicate-key rules of [`parse_field`] applied to a wide point's fields at once: per
/// key, the last value of the first value's type replaces the first value, values of other
/// types stay as further fields (so the catalog reports the type conflict). Order kept.
#[cold]
#[inline(never)]
fn dedupe_wide(b: &[u8], side: &[u8], fields: &mut Vec<(Span, Value)>, start: usize) {
    let n = fields.len() - start;
    let name = |fields: &[(Span, Value)], i: usize| res(b, side, fields[start + i].0);
    let mut order: Vec<usize> = (0..n).collect();
    // Stable: equal keys stay in line order.
    order.sort_by(|&x, &y| name(fields, x).cmp(name(fields, y)));
    let mut keep = vec![true; n];
    let mut g = 0;
    while g < n {
        let first = order[g];
        let ty = fields[start + first].1.field_type();
        let mut j = g + 1;
        while j < n && name(fields, order[j]) == name(fields, first) {
            let k = order[j];
            if fields[start + k].1.field_type() == ty {
                fields[start + first].1 = fields[start + k].1;
                keep[k] = false;
            }
            j += 1;
        }
        g = j;
    }
    let mut w = start;
    for (k, kept) in keep.into_iter().enumerate() {
        if kept {
            fields[w] = fields[start + k];
            w += 1;
        }
    }
    fields.truncate(w);
}

/// The fields of the point being parsed so far.
struct Fields {
    /// Where they start in the field pool.
    start: usize,
    /// [`fingerprint`]s of their keys, or-ed; all ones once duplicates are left to
    /// [`dedupe_wide`].
    mask: u64,
    /// The longest field key allowed (negative: none is).
    key_room: isize,
}

/// One `key=value` field from `ks`, added to the point's fields (the same key twice in a
/// line: the last value wins, as InfluxDB keeps it, if both have one type; a field named
/// `time` is dropped);
/// returns the index after the value.
#[inline(always)]
fn parse_field(
    b: &[u8],
    s: usize,
    ks: usize,
    key: Key,
    fields: &mut Fields,
    out: &mut Parts<'_, '_>,
) -> Result<usize, Reason> {
    let (ke, kesc) = field_key_bounds(b, s, ks)?;
    if (ke - ks) as isize > fields.key_room {
        return Err(key_too_long(key.len + 4 + (ke - ks)));
    }
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
    // InfluxDB drops a field named `time`; a point left without fields is rejected later
    // (as a dropped point, like v1's shard does).
    if raw(b, ks, ke) == b"time" {
        return Ok(ve);
    }
    let k = name(out.side, b, ks, ke, kesc);
    let side: &[u8] = out.side;
    let kb = res(b, side, k);
    if is_reserved(kb) {
        let (what, why) = ("invalid field name", "is invalid (reserved column name)");
        return Err(field_error(b, side, kb, key, what, why));
    }
    let fp = fingerprint(kb);
    // A field key equal to a tag key would make two columns of one name.
    if key.tag_mask & fp != 0 && tag_named(b, side, &out.tags[key.tags_start..], kb) {
        let (what, why) = ("conflicting field and tag key", "is also a tag key");
        return Err(field_error(b, side, kb, key, what, why));
    }
    let dup = if fields.mask & fp == 0 {
        None
    } else if out.fields.len() - fields.start >= WIDE {
        // A scan per field is quadratic: past WIDE fields, one pass at the end (a mask
        // of all ones says so, and sends every later field here).
        fields.mask = u64::MAX;
        None
    } else {
        field_named(b, side, &out.fields[fields.start..], kb)
    };
    match dup {
        Some(at) if out.fields[fields.start + at].1.field_type() == value.field_type() => {
            out.fields[fields.start + at].1 = value
        }
        // The same field with two types (`f=1,f="x"`): both are kept, so the catalog drops the
        // point with InfluxDB 1.x's `field type conflict` (its shard creates the field from the
        // first value, then refuses the second).
        _ => push_pair(out.fields, k, value),
    }
    fields.mask |= fp;
    Ok(ve)
}

/// The end (the `=`) of the field key at `ks` and whether it has escapes.
#[inline(always)]
fn field_key_bounds(b: &[u8], s: usize, ks: usize) -> Result<(usize, bool), Reason> {
    // `ks < b.len()`. A space or newline can only be here after a comma (the first key
    // follows skipped whitespace and an end-of-line check).
    if CLASS[b[ks] as usize] & (C_EQ | C_COMMA | C_SPACE | C_NL) != 0 {
        return Err(if b[ks] == b'=' {
            "missing field key"
        } else {
            "invalid field format"
        }
        .into());
    }
    if let Some(ke) = short_key(b, ks) {
        return Ok((ke, false));
    }
    let (ke, kesc) = scan_key(b, ks + 1, C_COMMA | C_SPACE | C_EQ, s);
    if at_eol(b, ke) || b[ke] != b'=' {
        return Err("invalid field format".into());
    }
    Ok((ke, kesc || b[ks] == b'\\'))
}

/// InfluxDB's text for a refused field name: `<what>: input field "<field>" on measurement
/// "<measurement>" <why>`.
#[cold]
fn field_error(b: &[u8], side: &[u8], field: &[u8], key: Key, what: &str, why: &str) -> Reason {
    format!(
        "{what}: input field \"{}\" on measurement \"{}\" {why}",
        String::from_utf8_lossy(field),
        String::from_utf8_lossy(res(b, side, key.measurement))
    )
    .into()
}

/// The timestamp from `i` (the end of the fields): the point's time in nanoseconds and the
/// index of the line end.
#[inline(always)]
fn parse_timestamp(b: &[u8], i: usize, ctx: &Ctx) -> Result<(i64, usize), Reason> {
    let mut time = ctx.default_time;
    let mut end = i;
    if !at_eol(b, i) {
        let ts = skip_whitespace(b, i);
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
            time = ctx.precision.to_nanos(raw).ok_or_else(out_of_range)?;
            while !at_eol(b, j) {
                if b[j] != b' ' {
                    return Err("point is invalid".into());
                }
                j += 1;
            }
        }
        end = j;
    }
    Ok((time, end))
}

#[cold]
fn out_of_range() -> Reason {
    format!("time outside range {MIN_NANO_TIME} - {MAX_NANO_TIME}").into()
}
