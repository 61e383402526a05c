//! Parsed points: borrowed, pooled representation shared by both parsers.
//!
//! A [`ParsedBatch`] keeps every point's tags and fields in two flat pools so parsing a point
//! does not allocate; names and values borrow the request body unless unescaping forced a copy.

use std::borrow::Cow;
use std::ops::Range;

use arrow::datatypes::DataType;

use crate::error::LineError;

/// A field value as written by the client.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue<'a> {
    /// `1`, `1.5`, `-1e3`.
    Float(f64),
    /// `1i`.
    Integer(i64),
    /// `1u`.
    UInteger(u64),
    /// `"text"` (unescaped).
    String(Cow<'a, [u8]>),
    /// `t`, `true`, `F`, ...
    Boolean(bool),
}

impl FieldValue<'_> {
    /// The value's type.
    pub fn field_type(&self) -> FieldType {
        match self {
            FieldValue::Float(_) => FieldType::Float,
            FieldValue::Integer(_) => FieldType::Integer,
            FieldValue::UInteger(_) => FieldType::UInteger,
            FieldValue::String(_) => FieldType::String,
            FieldValue::Boolean(_) => FieldType::Boolean,
        }
    }
}

/// The type of a field; the first type written to a (database, measurement, field) wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum FieldType {
    /// Float64.
    Float = 1,
    /// Int64.
    Integer = 2,
    /// UInt64.
    UInteger = 3,
    /// Utf8.
    String = 4,
    /// Boolean.
    Boolean = 5,
}

impl FieldType {
    /// InfluxDB's name of the type, as used in `field type conflict` messages.
    pub fn name(self) -> &'static str {
        match self {
            FieldType::Float => "float",
            FieldType::Integer => "integer",
            FieldType::UInteger => "unsigned",
            FieldType::String => "string",
            FieldType::Boolean => "boolean",
        }
    }

    /// The Arrow type of the field's column.
    pub fn data_type(self) -> DataType {
        match self {
            FieldType::Float => DataType::Float64,
            FieldType::Integer => DataType::Int64,
            FieldType::UInteger => DataType::UInt64,
            FieldType::String => DataType::Utf8,
            FieldType::Boolean => DataType::Boolean,
        }
    }

    /// Inverse of `as u8` (persisted in catalog records).
    pub fn from_u8(b: u8) -> Option<FieldType> {
        Some(match b {
            1 => FieldType::Float,
            2 => FieldType::Integer,
            3 => FieldType::UInteger,
            4 => FieldType::String,
            5 => FieldType::Boolean,
            _ => return None,
        })
    }

    /// The field type stored in an Arrow column of type `dt`, if any.
    pub fn from_data_type(dt: &DataType) -> Option<FieldType> {
        Some(match dt {
            DataType::Float64 => FieldType::Float,
            DataType::Int64 => FieldType::Integer,
            DataType::UInt64 => FieldType::UInteger,
            DataType::Utf8 => FieldType::String,
            DataType::Boolean => FieldType::Boolean,
            _ => return None,
        })
    }
}

/// One parsed point; its tags and fields are ranges into the batch's pools.
#[derive(Debug, Clone)]
pub struct PointEntry<'a> {
    /// Measurement name (unescaped).
    pub measurement: Cow<'a, [u8]>,
    /// Range of this point's tags in [`ParsedBatch::tags`], sorted by key.
    pub tags: Range<u32>,
    /// Range of this point's fields in [`ParsedBatch::fields`], in line order (a field named
    /// `time` is already removed; an empty range means `time` was the only field).
    pub fields: Range<u32>,
    /// Timestamp in nanoseconds since the epoch.
    pub time: i64,
    /// [`series_id`](crate::series::series_id) of measurement + tags.
    pub series_id: u64,
}

/// A borrowed name or tag value: borrowed from the body unless unescaping copied it.
pub type Name<'a> = Cow<'a, [u8]>;

/// Points parsed from (part of) one request, in input order, plus the lines that failed.
///
/// Dropping a batch returns its (emptied) pools to a per-thread cache that the next
/// [`ParsedBatch::with_capacity`] on that thread reuses, so steady-state parsing does not
/// fault in fresh pages for every request.
#[derive(Debug, Default, Clone)]
pub struct ParsedBatch<'a> {
    /// The points.
    pub points: Vec<PointEntry<'a>>,
    /// Tag pool: `(key, value)`.
    pub tags: Vec<(Name<'a>, Name<'a>)>,
    /// Field pool: `(key, value)`.
    pub fields: Vec<(Name<'a>, FieldValue<'a>)>,
    /// Lines that failed to parse, in input order.
    pub errors: Vec<LineError>,
    /// True once any pooled name or value owns heap memory (`Cow::Owned`, from unescaping).
    /// Code that pushes owned entries into the pools must call [`ParsedBatch::mark_owned`].
    owned: bool,
}

type PointPool = Vec<PointEntry<'static>>;
type TagPool = Vec<(Name<'static>, Name<'static>)>;
type FieldPool = Vec<(Name<'static>, FieldValue<'static>)>;

thread_local! {
    static POOLS: std::cell::RefCell<Option<(PointPool, TagPool, FieldPool)>> =
        const { std::cell::RefCell::new(None) };
}

/// Pools larger than this are freed instead of cached (bounds memory held per thread).
const MAX_POOLED_BYTES: usize = 64 << 20;

/// Re-types an empty vector to another lifetime, keeping its allocation (std collects a
/// `Map<IntoIter<T>>` in place when the layouts match; nothing is iterated since it is empty).
fn recycle<T, U>(mut v: Vec<T>) -> Vec<U> {
    v.clear();
    v.into_iter().filter_map(|_| None::<U>).collect()
}

impl Drop for ParsedBatch<'_> {
    fn drop(&mut self) {
        let mut points = std::mem::take(&mut self.points);
        let mut tags = std::mem::take(&mut self.tags);
        let mut fields = std::mem::take(&mut self.fields);
        if !self.owned {
            // Every entry borrows the body (no `Cow::Owned` was ever pushed), so no element
            // has anything to free: skip the per-element drop walk (~10% of parsing).
            // SAFETY: a length of 0 is always <= capacity and has no uninitialised elements;
            // the forgotten elements own no resources.
            unsafe {
                points.set_len(0);
                tags.set_len(0);
                fields.set_len(0);
            }
        }
        let bytes = points.capacity() * std::mem::size_of::<PointEntry<'_>>()
            + tags.capacity() * std::mem::size_of::<(Name<'_>, Name<'_>)>()
            + fields.capacity() * std::mem::size_of::<(Name<'_>, FieldValue<'_>)>();
        if bytes == 0 || bytes > MAX_POOLED_BYTES {
            return;
        }
        let pools = (recycle(points), recycle(tags), recycle(fields));
        let _ = POOLS.try_with(|p| {
            if let Ok(mut slot) = p.try_borrow_mut() {
                let keep = match &*slot {
                    None => true,
                    Some((pp, _, _)) => pp.capacity() < pools.0.capacity(),
                };
                if keep {
                    *slot = Some(pools);
                }
            }
        });
    }
}

impl<'a> ParsedBatch<'a> {
    /// An empty batch with room for about `points` points (`tags` tags, `fields` fields),
    /// reusing this thread's cached pools when there are any.
    pub fn with_capacity(points: usize, tags: usize, fields: usize) -> ParsedBatch<'a> {
        let cached = POOLS
            .try_with(|p| p.try_borrow_mut().ok().and_then(|mut s| s.take()))
            .ok()
            .flatten();
        let mut b = ParsedBatch::default();
        if let Some((pp, tp, fp)) = cached {
            b.points = recycle(pp);
            b.tags = recycle(tp);
            b.fields = recycle(fp);
        }
        b.points.reserve(points);
        b.tags.reserve(tags);
        b.fields.reserve(fields);
        b
    }

    /// Records that an owned (`Cow::Owned`) name or value was pushed into the pools, so that
    /// dropping the batch frees it.
    #[inline]
    pub fn mark_owned(&mut self) {
        self.owned = true;
    }

    /// Tags of `p`.
    pub fn tags_of(&self, p: &PointEntry<'a>) -> &[(Name<'a>, Name<'a>)] {
        &self.tags[p.tags.start as usize..p.tags.end as usize]
    }

    /// Fields of `p`.
    pub fn fields_of(&self, p: &PointEntry<'a>) -> &[(Name<'a>, FieldValue<'a>)] {
        &self.fields[p.fields.start as usize..p.fields.end as usize]
    }

    /// Appends `other` (parsed from a later part of the same body), rebasing its ranges.
    pub fn append(&mut self, mut other: ParsedBatch<'a>) {
        self.owned |= other.owned;
        let tag_base = self.tags.len() as u32;
        let field_base = self.fields.len() as u32;
        self.tags.append(&mut other.tags);
        self.fields.append(&mut other.fields);
        self.points.extend(other.points.drain(..).map(|mut p| {
            p.tags = p.tags.start + tag_base..p.tags.end + tag_base;
            p.fields = p.fields.start + field_base..p.fields.end + field_base;
            p
        }));
        self.errors.append(&mut other.errors);
    }
}

/// Reserved column names: never usable as tag or field keys.
pub const RESERVED_COLUMNS: [&str; 4] = ["time", "series_id", "__seq", "__row"];

/// True if `name` is a reserved column name.
#[inline]
pub fn is_reserved(name: &[u8]) -> bool {
    match name.len() {
        4 => name == b"time",
        5 => name[0] == b'_' && (name == b"__seq" || name == b"__row"),
        9 => name == b"series_id",
        _ => false,
    }
}

/// Byte-slice equality tuned for short names (no `memcmp` call for up to 16 bytes).
#[inline(always)]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 4 {
        // Indices 0, n/2 and n-1 cover every byte of a 1–3 byte name.
        n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1])
    } else if n < 8 {
        // Two overlapping 4-byte words cover 4–7 bytes.
        let word = |s: &[u8], i: usize| {
            let mut w = [0u8; 4];
            w.copy_from_slice(&s[i..i + 4]);
            u32::from_le_bytes(w)
        };
        word(a, 0) == word(b, 0) && word(a, n - 4) == word(b, n - 4)
    } else if n <= 16 {
        let word = |s: &[u8], i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&s[i..i + 8]);
            u64::from_le_bytes(w)
        };
        word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8)
    } else {
        a == b
    }
}

/// `out.extend_from_slice(v)` without a `memcpy` call for the short names and tag values
/// payloads usually hold
/// (the call and its size dispatch cost more than copying a dozen bytes).
#[inline(always)]
pub(crate) fn extend_short(out: &mut Vec<u8>, v: &[u8]) {
    if v.len() > 16 {
        out.extend_from_slice(v);
        return;
    }
    out.reserve(v.len());
    let (len, n) = (out.len(), v.len());
    // SAFETY: `reserve` guarantees `n` writable bytes after `len`; every write below stays in
    // `[len, len + n)` (two possibly overlapping words cover lengths 4..=16), reads stay in
    // `v`, and exactly those `n` bytes are initialised before `set_len`.
    unsafe {
        let dst = out.as_mut_ptr().add(len);
        let src = v.as_ptr();
        if n >= 8 {
            let a = std::ptr::read_unaligned(src as *const u64);
            let b = std::ptr::read_unaligned(src.add(n - 8) as *const u64);
            std::ptr::write_unaligned(dst as *mut u64, a);
            std::ptr::write_unaligned(dst.add(n - 8) as *mut u64, b);
        } else if n >= 4 {
            let a = std::ptr::read_unaligned(src as *const u32);
            let b = std::ptr::read_unaligned(src.add(n - 4) as *const u32);
            std::ptr::write_unaligned(dst as *mut u32, a);
            std::ptr::write_unaligned(dst.add(n - 4) as *mut u32, b);
        } else {
            for i in 0..n {
                *dst.add(i) = *src.add(i);
            }
        }
        out.set_len(len + n);
    }
}

/// Bytewise `a < b`, deciding on the first byte without a `memcmp` call when it can.
#[inline(always)]
pub(crate) fn less(a: &[u8], b: &[u8]) -> bool {
    match (a.first(), b.first()) {
        (Some(x), Some(y)) if x != y => x < y,
        _ => a < b,
    }
}

/// A one-bit fingerprint of a non-empty name (length and first byte) for cheap "maybe seen"
/// sets in a `u64`.
#[inline(always)]
pub(crate) fn fingerprint(name: &[u8]) -> u64 {
    let f = name.first().copied().unwrap_or(0) as u32;
    1u64 << ((name.len() as u32).wrapping_mul(7).wrapping_add(f) & 63)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_pools_are_reused() {
        let body = b"m v=1".to_vec();
        let cap = {
            let mut b = ParsedBatch::with_capacity(1000, 2000, 4000);
            b.tags
                .push((Cow::Borrowed(&body[..1]), Cow::Borrowed(&body[..1])));
            b.tags.capacity()
        };
        let b: ParsedBatch<'_> = ParsedBatch::with_capacity(1, 1, 1);
        assert!(b.tags.is_empty());
        assert_eq!(b.tags.capacity(), cap);
    }

    #[test]
    fn same_is_byte_equality_at_every_length() {
        let base: Vec<u8> = (0..40u8).map(|i| b'a' + i % 26).collect();
        for n in 0..=base.len() {
            let a = &base[..n];
            let copy = a.to_vec();
            assert!(same(a, &copy), "len {n}");
            for k in 0..n {
                let mut c = a.to_vec();
                c[k] ^= 0x20;
                assert!(!same(a, &c), "len {n}, differs at {k}");
            }
            if n > 0 {
                assert!(!same(a, &base[..n - 1]));
            }
        }
    }
}
