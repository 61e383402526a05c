//! Parsed points: a dense, pooled representation shared by both parsers.
//!
//! A [`ParsedBatch`] keeps every point's tags and fields in two flat pools so parsing a point
//! does not allocate. Names and values are [`Span`]s — 8-byte `(offset, length)` pairs into the
//! request body, or into the batch's side buffer when unescaping forced a copy — and field values
//! are 16-byte [`Value`]s. A typical point (3 tags, 6 fields) takes 232 bytes of pool instead
//! of the 488 that borrowed `Cow`s took, so parsing writes, and the Arrow build reads back,
//! less than half the memory.

use std::borrow::Cow;
use std::ops::Range;

use arrow::datatypes::DataType;

use crate::error::LineError;

/// A field value as written by the client: the view [`ParsedBatch::value`] returns (the pools
/// store the compact [`Value`]).
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
    /// InfluxDB's (InfluxQL's) name of the type: `float`, `integer`, `unsigned`, `string`,
    /// `boolean`, as `SHOW FIELD KEYS` and `field type conflict` messages show it.
    pub fn influxql_name(self) -> &'static str {
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

/// Set in [`Span`]'s length word when the bytes live in the batch's side buffer.
const SIDE: u32 = 1 << 31;

/// Largest body the parsers accept: span offsets and lengths are 31-bit.
pub const MAX_BODY_BYTES: usize = (SIDE - 1) as usize;

/// Bytes of a name or value: `(offset, length)` into the request body or, for unescaped
/// copies, into the batch's side buffer. Resolve with [`ParsedBatch::bytes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    off: u32,
    len: u32,
}

impl Span {
    /// `body[off..off + len]`; callers guarantee both fit in 31 bits ([`MAX_BODY_BYTES`]).
    #[inline(always)]
    pub(crate) fn body(off: usize, len: usize) -> Span {
        debug_assert!(off <= MAX_BODY_BYTES && len <= MAX_BODY_BYTES);
        Span {
            off: off as u32,
            len: len as u32,
        }
    }

    /// Length in bytes.
    #[inline(always)]
    pub fn len(self) -> usize {
        (self.len & !SIDE) as usize
    }

    /// True for a zero-length span.
    #[inline(always)]
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    #[inline(always)]
    fn to_bits(self) -> u64 {
        self.off as u64 | (self.len as u64) << 32
    }

    #[inline(always)]
    fn from_bits(b: u64) -> Span {
        Span {
            off: b as u32,
            len: (b >> 32) as u32,
        }
    }
}

/// A stored field value: its type and 8 bytes of payload (the number's bits, the boolean, or a
/// string's [`Span`]); 16 bytes. Read it with [`ParsedBatch::value`] or the `as_*` accessors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Value {
    kind: FieldType,
    bits: u64,
}

impl Value {
    /// A float.
    #[inline(always)]
    pub fn float(v: f64) -> Value {
        Value {
            kind: FieldType::Float,
            bits: v.to_bits(),
        }
    }
    /// An integer.
    #[inline(always)]
    pub fn integer(v: i64) -> Value {
        Value {
            kind: FieldType::Integer,
            bits: v as u64,
        }
    }
    /// An unsigned integer.
    #[inline(always)]
    pub fn uinteger(v: u64) -> Value {
        Value {
            kind: FieldType::UInteger,
            bits: v,
        }
    }
    /// A boolean.
    #[inline(always)]
    pub fn boolean(v: bool) -> Value {
        Value {
            kind: FieldType::Boolean,
            bits: v as u64,
        }
    }
    /// A string whose bytes are `s`.
    #[inline(always)]
    pub fn string(s: Span) -> Value {
        Value {
            kind: FieldType::String,
            bits: s.to_bits(),
        }
    }
    /// The value's type.
    #[inline(always)]
    pub fn field_type(self) -> FieldType {
        self.kind
    }
    /// The payload as a float (meaningful for [`FieldType::Float`]).
    #[inline(always)]
    pub fn as_f64(self) -> f64 {
        f64::from_bits(self.bits)
    }
    /// The payload as an integer (meaningful for [`FieldType::Integer`]).
    #[inline(always)]
    pub fn as_i64(self) -> i64 {
        self.bits as i64
    }
    /// The payload as an unsigned integer (meaningful for [`FieldType::UInteger`]).
    #[inline(always)]
    pub fn as_u64(self) -> u64 {
        self.bits
    }
    /// The payload as a boolean (meaningful for [`FieldType::Boolean`]).
    #[inline(always)]
    pub fn as_bool(self) -> bool {
        self.bits != 0
    }
    /// The payload as a string span (meaningful for [`FieldType::String`]).
    #[inline(always)]
    pub fn as_span(self) -> Span {
        Span::from_bits(self.bits)
    }
}

/// One parsed point; its tags and fields are ranges into the batch's pools (40 bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointEntry {
    /// Measurement name (unescaped).
    pub measurement: Span,
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

/// Points parsed from (part of) one request, in input order, plus the lines that failed.
///
/// Invariant: every span stored in the pools resolves inside this batch's body or side
/// buffer. Only the parsers (spans of positions they scanned, copies they appended),
/// [`ParsedBatch::span_of`] (containment-checked) and [`ParsedBatch::append`] (rebases or
/// copies) put spans there; the hot loops of `Catalog::resolve` and the Arrow build rely on it
/// to read names without bounds checks.
///
/// Dropping a batch returns its (emptied) pools to a per-thread cache that the next
/// [`ParsedBatch::with_capacity`] on that thread reuses, so steady-state parsing does not
/// fault in fresh pages for every request.
#[derive(Debug, Default, Clone)]
pub struct ParsedBatch<'a> {
    /// The request body the spans point into.
    body: &'a [u8],
    /// Unescaped copies of names and string values (spans with the side flag).
    side: Vec<u8>,
    // The pools are crate-private so every span in them is known to be in bounds for this
    // batch (see `own_bytes`); read them through the accessors.
    pub(crate) points: Vec<PointEntry>,
    pub(crate) tags: Vec<(Span, Span)>,
    pub(crate) fields: Vec<(Span, Value)>,
    /// Lines that failed to parse, in input order.
    pub errors: Vec<LineError>,
}

type Pools = (
    Vec<PointEntry>,
    Vec<(Span, Span)>,
    Vec<(Span, Value)>,
    Vec<u8>,
);

thread_local! {
    static POOLS: std::cell::RefCell<Option<Pools>> = const { std::cell::RefCell::new(None) };
}

/// Pools larger than this are freed instead of cached (bounds memory held per thread).
const MAX_POOLED_BYTES: usize = 64 << 20;

impl Drop for ParsedBatch<'_> {
    fn drop(&mut self) {
        let mut pools: Pools = (
            std::mem::take(&mut self.points),
            std::mem::take(&mut self.tags),
            std::mem::take(&mut self.fields),
            std::mem::take(&mut self.side),
        );
        // Plain data: clearing is a length reset, no per-element drop walk.
        pools.0.clear();
        pools.1.clear();
        pools.2.clear();
        pools.3.clear();
        let bytes = pools.0.capacity() * std::mem::size_of::<PointEntry>()
            + pools.1.capacity() * std::mem::size_of::<(Span, Span)>()
            + pools.2.capacity() * std::mem::size_of::<(Span, Value)>()
            + pools.3.capacity();
        if bytes == 0 || bytes > MAX_POOLED_BYTES {
            return;
        }
        let _ = POOLS.try_with(|p| {
            if let Ok(mut slot) = p.try_borrow_mut() {
                let keep = match &*slot {
                    None => true,
                    Some((pp, _, _, _)) => pp.capacity() < pools.0.capacity(),
                };
                if keep {
                    *slot = Some(pools);
                }
            }
        });
    }
}

/// The bytes of `s` given the body and side buffer (a free function so the parsers can read
/// names while holding the pools mutably).
#[inline(always)]
pub(crate) fn resolve<'s>(body: &'s [u8], side: &'s [u8], s: Span) -> &'s [u8] {
    let (off, len) = (s.off as usize, s.len());
    let src = if s.len & SIDE == 0 { body } else { side };
    &src[off..off + len]
}

/// [`resolve`] without bounds checks, for the parsers' hot loops.
///
/// # Safety
/// `s` must have been made for this `body`/`side` pair (by [`Span::body`] within `body`, or
/// by [`push_side`]/[`side_span`] for bytes already in `side`) and `side` not truncated below
/// it since: the parsers only pass spans of the point they are parsing.
#[inline(always)]
pub(crate) unsafe fn resolve_unchecked<'s>(body: &'s [u8], side: &'s [u8], s: Span) -> &'s [u8] {
    let (off, len) = (s.off as usize, s.len());
    let src = if s.len & SIDE == 0 { body } else { side };
    debug_assert!(off + len <= src.len());
    // SAFETY: the caller guarantees `off + len <= src.len()` (see above).
    unsafe { src.get_unchecked(off..off + len) }
}

impl<'a> ParsedBatch<'a> {
    /// An empty batch over `body`.
    pub fn new(body: &'a [u8]) -> ParsedBatch<'a> {
        ParsedBatch {
            body,
            side: Vec::new(),
            points: Vec::new(),
            tags: Vec::new(),
            fields: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// An empty batch over `body` with room for about `points` points (`tags` tags, `fields`
    /// fields), reusing this thread's cached pools when there are any.
    pub fn with_capacity(
        body: &'a [u8],
        points: usize,
        tags: usize,
        fields: usize,
    ) -> ParsedBatch<'a> {
        let cached = POOLS
            .try_with(|p| p.try_borrow_mut().ok().and_then(|mut s| s.take()))
            .ok()
            .flatten();
        let mut b = ParsedBatch::new(body);
        if let Some((pp, tp, fp, sp)) = cached {
            b.points = pp;
            b.tags = tp;
            b.fields = fp;
            b.side = sp;
        }
        b.points.reserve(points);
        b.tags.reserve(tags);
        b.fields.reserve(fields);
        b
    }

    /// The body the spans point into.
    #[inline(always)]
    pub fn body(&self) -> &'a [u8] {
        self.body
    }

    /// The points, in input order.
    #[inline]
    pub fn points(&self) -> &[PointEntry] {
        &self.points
    }

    /// The tag pool: `(key, value)`; a point's tags are [`PointEntry::tags`] of it.
    #[inline]
    pub fn tags(&self) -> &[(Span, Span)] {
        &self.tags
    }

    /// The field pool: `(key, value)`; a point's fields are [`PointEntry::fields`] of it.
    #[inline]
    pub fn fields(&self) -> &[(Span, Value)] {
        &self.fields
    }

    /// The bytes of a span read from this batch's own pools, without bounds checks.
    #[inline(always)]
    pub(crate) fn own_bytes(&self, s: Span) -> &[u8] {
        // SAFETY: spans in the pools resolve in bounds (the struct's invariant); callers only
        // pass spans they read from `self.points`/`self.tags`/`self.fields`.
        unsafe { resolve_unchecked(self.body, &self.side, s) }
    }

    /// The bytes of `s`.
    #[inline(always)]
    pub fn bytes(&self, s: Span) -> &[u8] {
        resolve(self.body, &self.side, s)
    }

    /// Copies `v` into the side buffer and returns its span.
    pub fn push_side(&mut self, v: &[u8]) -> Span {
        push_side(&mut self.side, v)
    }

    /// A span for `v`: into the body when `v` lies inside it (no copy), else a copy in the side
    /// buffer.
    pub fn span_of(&mut self, v: &[u8]) -> Span {
        let base = self.body.as_ptr() as usize;
        let p = v.as_ptr() as usize;
        if p >= base && p + v.len() <= base + self.body.len() && self.body.len() <= MAX_BODY_BYTES {
            Span::body(p - base, v.len())
        } else {
            self.push_side(v)
        }
    }

    /// The stored form of `v` (strings via [`ParsedBatch::span_of`]).
    pub fn store_value(&mut self, v: &FieldValue<'_>) -> Value {
        match v {
            FieldValue::Float(f) => Value::float(*f),
            FieldValue::Integer(i) => Value::integer(*i),
            FieldValue::UInteger(u) => Value::uinteger(*u),
            FieldValue::Boolean(b) => Value::boolean(*b),
            FieldValue::String(s) => Value::string(self.span_of(s)),
        }
    }

    /// The view of a stored value (strings borrow the body or the side buffer).
    #[inline]
    pub fn value(&self, v: Value) -> FieldValue<'_> {
        match v.kind {
            FieldType::Float => FieldValue::Float(v.as_f64()),
            FieldType::Integer => FieldValue::Integer(v.as_i64()),
            FieldType::UInteger => FieldValue::UInteger(v.as_u64()),
            FieldType::Boolean => FieldValue::Boolean(v.as_bool()),
            FieldType::String => FieldValue::String(Cow::Borrowed(self.bytes(v.as_span()))),
        }
    }

    /// Measurement name of `p`.
    #[inline]
    pub fn measurement(&self, p: &PointEntry) -> &[u8] {
        self.bytes(p.measurement)
    }

    /// Tag `i` of the pool as `(key, value)` bytes.
    #[inline]
    pub fn tag(&self, i: usize) -> (&[u8], &[u8]) {
        let (k, v) = self.tags[i];
        (self.bytes(k), self.bytes(v))
    }

    /// Field `i` of the pool as `(key, value)`.
    #[inline]
    pub fn field(&self, i: usize) -> (&[u8], FieldValue<'_>) {
        let (k, v) = self.fields[i];
        (self.bytes(k), self.value(v))
    }

    /// Tags of `p` as `(key, value)` bytes, sorted by key.
    pub fn tags_of<'s>(
        &'s self,
        p: &PointEntry,
    ) -> impl ExactSizeIterator<Item = (&'s [u8], &'s [u8])> + Clone + 's {
        self.tags[p.tags.start as usize..p.tags.end as usize]
            .iter()
            .map(move |&(k, v)| (self.bytes(k), self.bytes(v)))
    }

    /// Fields of `p` as `(key, value)`, in line order.
    pub fn fields_of<'s>(
        &'s self,
        p: &PointEntry,
    ) -> impl ExactSizeIterator<Item = (&'s [u8], FieldValue<'s>)> + 's {
        self.fields[p.fields.start as usize..p.fields.end as usize]
            .iter()
            .map(move |&(k, v)| (self.bytes(k), self.value(v)))
    }

    /// The body, the side buffer and the pools at once (for the parsers).
    #[inline(always)]
    pub(crate) fn parts_mut(&mut self) -> Parts<'_, 'a> {
        Parts {
            body: self.body,
            side: &mut self.side,
            points: &mut self.points,
            tags: &mut self.tags,
            fields: &mut self.fields,
        }
    }

    /// Appends `other` (parsed from a later part of the same body), rebasing its ranges and
    /// side-buffer spans.
    pub fn append(&mut self, mut other: ParsedBatch<'a>) {
        if self.body.is_empty() {
            // Body spans of an empty body are all empty: valid against any body.
            self.body = other.body;
        } else if !std::ptr::eq(self.body, other.body) {
            // Parsed from another body (not what the parsers do): copy its body-borrowed
            // bytes into its side buffer so every span stays valid against `self`.
            other.rehome();
        }
        if !other.side.is_empty() {
            let base = self.side.len() as u32;
            let fix = |s: &mut Span| {
                if s.len & SIDE != 0 {
                    s.off += base;
                }
            };
            for p in &mut other.points {
                fix(&mut p.measurement);
            }
            for (k, v) in &mut other.tags {
                fix(k);
                fix(v);
            }
            for (k, v) in &mut other.fields {
                fix(k);
                if v.kind == FieldType::String {
                    let mut s = v.as_span();
                    fix(&mut s);
                    *v = Value::string(s);
                }
            }
            self.side.extend_from_slice(&other.side);
        }
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

impl ParsedBatch<'_> {
    /// Turns every body span into a side-buffer copy (slow path of `append`).
    #[cold]
    fn rehome(&mut self) {
        let body = self.body;
        let side = &mut self.side;
        let mut fix = |s: &mut Span| {
            if s.len & SIDE == 0 {
                let (off, len) = (s.off as usize, s.len());
                *s = push_side(side, &body[off..off + len]);
            }
        };
        for p in &mut self.points {
            fix(&mut p.measurement);
        }
        for (k, v) in &mut self.tags {
            fix(k);
            fix(v);
        }
        for (k, v) in &mut self.fields {
            fix(k);
            if v.kind == FieldType::String {
                let mut s = v.as_span();
                fix(&mut s);
                *v = Value::string(s);
            }
        }
        self.body = &[];
    }
}

/// Disjoint mutable borrows of a batch's parts (see [`ParsedBatch::parts_mut`]).
pub(crate) struct Parts<'b, 'a> {
    pub(crate) body: &'a [u8],
    pub(crate) side: &'b mut Vec<u8>,
    pub(crate) points: &'b mut Vec<PointEntry>,
    pub(crate) tags: &'b mut Vec<(Span, Span)>,
    pub(crate) fields: &'b mut Vec<(Span, Value)>,
}

/// Appends `v` to a side buffer and returns its span.
#[inline]
pub(crate) fn push_side(side: &mut Vec<u8>, v: &[u8]) -> Span {
    let off = side.len();
    side.extend_from_slice(v);
    Span {
        off: off as u32,
        len: v.len() as u32 | SIDE,
    }
}

/// A side-buffer span of `len` bytes starting at `off` (the caller wrote them there).
#[inline]
pub(crate) fn side_span(off: usize, len: usize) -> Span {
    Span {
        off: off as u32,
        len: len as u32 | SIDE,
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
    // SAFETY: `reserve` guarantees `n` writable bytes after `len`, which `copy_short` fills
    // exactly, before `set_len`.
    unsafe {
        copy_short(out.as_mut_ptr().add(len), v);
        out.set_len(len + n);
    }
}

/// Copies `v` to `dst`: two possibly overlapping words for 4..=16 bytes, a byte loop below,
/// `memcpy` above.
///
/// # Safety
/// `dst` must be valid for `v.len()` bytes of writes and not overlap `v`.
#[inline(always)]
pub(crate) unsafe fn copy_short(dst: *mut u8, v: &[u8]) {
    let (n, src) = (v.len(), v.as_ptr());
    // SAFETY: the caller guarantees `n` writable bytes at `dst`; every write below stays in
    // `[dst, dst + n)` and every read in `v`.
    unsafe {
        if n > 16 {
            std::ptr::copy_nonoverlapping(src, dst, n);
        } else if n >= 8 {
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

/// A one-bit fingerprint of a name (length, first and last byte) for cheap "maybe seen" sets
/// in a `u64`. The last byte matters: related names often share a prefix and a length
/// (`usage_user`/`usage_idle`, `bytes_recv`/`bytes_sent`), and every false hit costs a scan.
#[inline(always)]
pub(crate) fn fingerprint(name: &[u8]) -> u64 {
    let (f, l) = match name {
        [] => (0, 0),
        [f, .., l] => (*f as u32, *l as u32),
        [f] => (*f as u32, *f as u32),
    };
    let h = (name.len() as u32)
        .wrapping_mul(7)
        .wrapping_add(f.wrapping_mul(5))
        .wrapping_add(l.wrapping_mul(3));
    1u64 << (h & 63)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_pools_are_reused() {
        let body = b"m v=1".to_vec();
        let cap = {
            let mut b = ParsedBatch::with_capacity(&body, 1000, 2000, 4000);
            b.tags.push((Span::body(0, 1), Span::body(0, 1)));
            b.tags.capacity()
        };
        let b: ParsedBatch<'_> = ParsedBatch::with_capacity(&body, 1, 1, 1);
        assert!(b.tags.is_empty());
        assert_eq!(b.tags.capacity(), cap);
    }

    #[test]
    fn spans_resolve_into_body_and_side_buffer_and_survive_append() {
        let body = b"abcdef".to_vec();
        let mut a = ParsedBatch::new(&body);
        let s1 = a.push_side(b"xy");
        let mut b = ParsedBatch::new(&body);
        let s2 = b.push_side(b"zzz");
        let in_body = b.span_of(&body[2..4]);
        b.tags.push((s2, in_body));
        b.fields.push((s2, Value::string(s2)));
        b.points.push(PointEntry {
            measurement: s2,
            tags: 0..1,
            fields: 0..1,
            time: 0,
            series_id: 0,
        });
        assert_eq!(a.bytes(s1), b"xy");
        assert_eq!(b.bytes(in_body), b"cd");
        a.append(b);
        let p = a.points[0].clone();
        assert_eq!(a.measurement(&p), b"zzz");
        assert_eq!(a.tag(0), (&b"zzz"[..], &b"cd"[..]));
        assert_eq!(a.field(0).1, FieldValue::String(Cow::Borrowed(b"zzz")));
        // The layout this representation exists for.
        assert_eq!(std::mem::size_of::<(Span, Span)>(), 16);
        assert_eq!(std::mem::size_of::<(Span, Value)>(), 24);
        assert_eq!(std::mem::size_of::<PointEntry>(), 40);
    }

    #[test]
    fn append_from_another_body_copies_its_bytes() {
        let (one, two) = (b"first body".to_vec(), b"second".to_vec());
        let mut a = ParsedBatch::new(&one);
        a.tags.push((Span::body(0, 5), Span::body(6, 4)));
        let mut b = ParsedBatch::new(&two);
        b.tags.push((Span::body(0, 3), Span::body(3, 3)));
        b.fields
            .push((Span::body(0, 6), Value::string(Span::body(1, 2))));
        a.append(b);
        assert_eq!(a.tag(0), (&b"first"[..], &b"body"[..]));
        assert_eq!(a.tag(1), (&b"sec"[..], &b"ond"[..]));
        assert_eq!(a.field(0).0, b"second");
        assert_eq!(a.field(0).1, FieldValue::String(Cow::Borrowed(b"ec")));
        assert_eq!(a.own_bytes(a.tags[1].1), b"ond");
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
