//! msgpack write bodies: the row format and the columnar format.
//!
//! **Row format** ([`CONTENT_TYPE_MSGPACK`](crate::CONTENT_TYPE_MSGPACK)): an array of point
//! maps (a single map is accepted too):
//! `{"measurement": str, "tags": {str: str}?, "fields": {str: value}, "timestamp": int?}`
//! (`"time"` is accepted for `"timestamp"`; unknown keys are ignored).
//!
//! **Columnar format** ([`CONTENT_TYPE_COLUMNAR_MSGPACK`](crate::CONTENT_TYPE_COLUMNAR_MSGPACK)):
//! a map (or an array of maps) `{"measurement": str, "tags": {str: str | [str]}?,
//! "timestamps": [int]?, "field": str, "values": [value]}`; as a superset, `"fields":
//! {name: [value]}` gives several columns. All arrays have the row count as length.
//!
//! A value is a msgpack float, int, bool or str — or HyperbyteDB's tagged form `{"Float": 1.0}`,
//! `{"Integer": 1}`, `{"UInteger": 1}`, `{"String": "…"}`, `{"Boolean": true}`; `nil` means
//! absent. Plain msgpack integers become `Integer` (InfluxDB's default) unless above `i64::MAX`.
//! Timestamps are integers in the request's precision; absent ones get the receive time.
//!
//! Malformed msgpack fails the whole request with the byte offset; points that are well-formed
//! msgpack but break a rule (no fields, reserved names, ...) are rejected one by one like lines.
//! Lengths are checked against the bytes left before anything is allocated; nesting is bounded.

use std::borrow::Cow;

use crate::error::{LineError, MsgpackError};
use crate::point::{
    is_reserved, resolve, FieldValue, ParsedBatch, PointEntry, Span, Value, MAX_BODY_BYTES,
};
use crate::precision::{Precision, MAX_NANO_TIME, MIN_NANO_TIME};
use crate::series::series_id_pairs;

/// Deepest nesting accepted (skipped values included).
pub const MAX_DEPTH: usize = 32;

/// Most elements reserved up front for a declared array length: a one-byte `nil` element
/// would otherwise reserve dozens of bytes before anything is read.
const PREALLOC_CAP: usize = 4096;

#[derive(Debug, Clone, Copy)]
enum V<'a> {
    Nil,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(&'a [u8]),
    Bin(&'a [u8]),
    Arr(usize),
    Map(usize),
    Ext,
}

struct Rd<'a> {
    b: &'a [u8],
    pos: usize,
}

fn err(offset: usize, reason: impl Into<String>) -> MsgpackError {
    MsgpackError {
        offset,
        reason: reason.into(),
    }
}

impl<'a> Rd<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], MsgpackError> {
        if self.b.len() - self.pos < n {
            return Err(err(self.pos, "unexpected end of input"));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn be(&mut self, n: usize) -> Result<u64, MsgpackError> {
        Ok(self.take(n)?.iter().fold(0u64, |a, &x| (a << 8) | x as u64))
    }
    fn count(&mut self, n: usize, per: usize) -> Result<usize, MsgpackError> {
        // Every element takes at least one byte: a count beyond that is a lie, refuse it
        // before anyone allocates for it.
        if n.saturating_mul(per) > self.b.len() - self.pos {
            return Err(err(
                self.pos,
                format!("length {n} exceeds the remaining input"),
            ));
        }
        Ok(n)
    }
    fn read(&mut self) -> Result<V<'a>, MsgpackError> {
        let at = self.pos;
        let m = self.take(1)?[0];
        Ok(match m {
            0x00..=0x7f => V::Int(m as i64),
            0x80..=0x8f => V::Map(self.count((m & 0x0f) as usize, 2)?),
            0x90..=0x9f => V::Arr(self.count((m & 0x0f) as usize, 1)?),
            0xa0..=0xbf => V::Str(self.take((m & 0x1f) as usize)?),
            0xc0 => V::Nil,
            0xc2 => V::Bool(false),
            0xc3 => V::Bool(true),
            0xc4..=0xc6 => {
                let n = self.be(1 << (m - 0xc4))? as usize;
                V::Bin(self.take(n)?)
            }
            0xc7..=0xc9 => {
                let n = self.be(1 << (m - 0xc7))? as usize;
                self.take(n + 1)?;
                V::Ext
            }
            0xca => V::Float(f32::from_bits(self.be(4)? as u32) as f64),
            0xcb => V::Float(f64::from_bits(self.be(8)?)),
            0xcc..=0xcf => V::UInt(self.be(1 << (m - 0xcc))?),
            0xd0 => V::Int(self.be(1)? as u8 as i8 as i64),
            0xd1 => V::Int(self.be(2)? as u16 as i16 as i64),
            0xd2 => V::Int(self.be(4)? as u32 as i32 as i64),
            0xd3 => V::Int(self.be(8)? as i64),
            0xd4..=0xd8 => {
                self.take(1 + (1 << (m - 0xd4)))?;
                V::Ext
            }
            0xd9..=0xdb => {
                let n = self.be(1 << (m - 0xd9))? as usize;
                V::Str(self.take(n)?)
            }
            0xdc | 0xdd => {
                let n = self.be(if m == 0xdc { 2 } else { 4 })? as usize;
                V::Arr(self.count(n, 1)?)
            }
            0xde | 0xdf => {
                let n = self.be(if m == 0xde { 2 } else { 4 })? as usize;
                V::Map(self.count(n, 2)?)
            }
            0xe0..=0xff => V::Int(m as i8 as i64),
            0xc1 => return Err(err(at, "invalid marker 0xc1")),
        })
    }
    /// Skips the rest of a value whose header `v` was just read.
    fn skip_rest(&mut self, v: V<'a>, depth: usize) -> Result<(), MsgpackError> {
        if depth > MAX_DEPTH {
            return Err(err(self.pos, format!("nesting deeper than {MAX_DEPTH}")));
        }
        let n = match v {
            V::Arr(n) => n,
            V::Map(n) => n * 2,
            _ => return Ok(()),
        };
        for _ in 0..n {
            let v = self.read()?;
            self.skip_rest(v, depth + 1)?;
        }
        Ok(())
    }
    fn str(&mut self, what: &str) -> Result<&'a [u8], MsgpackError> {
        let at = self.pos;
        match self.read()? {
            V::Str(s) | V::Bin(s) => Ok(s),
            _ => Err(err(at, format!("expected a string for {what}"))),
        }
    }
}

/// Reads a field value; `Ok(Err(reason))` is a per-point problem (value consumed).
fn read_value<'a>(
    r: &mut Rd<'a>,
    field: &[u8],
) -> Result<Result<Option<FieldValue<'a>>, String>, MsgpackError> {
    let at = r.pos;
    let v = r.read()?;
    Ok(match v {
        V::Nil => Ok(None),
        V::Map(1) => {
            let tag = r.str("tagged value")?;
            let inner = r.read()?;
            let val = match (tag, inner) {
                (b"Float", V::Float(f)) => Some(FieldValue::Float(f)),
                (b"Float", V::Int(i)) => Some(FieldValue::Float(i as f64)),
                (b"Float", V::UInt(u)) => Some(FieldValue::Float(u as f64)),
                (b"Integer", V::Int(i)) => Some(FieldValue::Integer(i)),
                (b"Integer", V::UInt(u)) => i64::try_from(u).ok().map(FieldValue::Integer),
                (b"UInteger", V::UInt(u)) => Some(FieldValue::UInteger(u)),
                (b"UInteger", V::Int(i)) => u64::try_from(i).ok().map(FieldValue::UInteger),
                (b"String", V::Str(s)) => Some(FieldValue::String(Cow::Borrowed(s))),
                (b"Boolean", V::Bool(b)) => Some(FieldValue::Boolean(b)),
                _ => {
                    r.skip_rest(inner, 1)?;
                    None
                }
            };
            match val {
                Some(v) => check_float(v, field).map(Some),
                None => Err(format!(
                    "invalid field value for \"{}\" at byte {at}",
                    String::from_utf8_lossy(field)
                )),
            }
        }
        V::Float(f) => check_float(FieldValue::Float(f), field).map(Some),
        V::Int(i) => Ok(Some(FieldValue::Integer(i))),
        V::UInt(u) => Ok(Some(match i64::try_from(u) {
            Ok(i) => FieldValue::Integer(i),
            Err(_) => FieldValue::UInteger(u),
        })),
        V::Bool(b) => Ok(Some(FieldValue::Boolean(b))),
        V::Str(s) => Ok(Some(FieldValue::String(Cow::Borrowed(s)))),
        other => {
            r.skip_rest(other, 1)?;
            Err(format!(
                "invalid field value for \"{}\" at byte {at}",
                String::from_utf8_lossy(field)
            ))
        }
    })
}

fn check_float<'a>(v: FieldValue<'a>, field: &[u8]) -> Result<FieldValue<'a>, String> {
    match v {
        FieldValue::Float(f) if !f.is_finite() => Err(format!(
            "{} is an unsupported value for field {}",
            if f.is_nan() {
                "NaN"
            } else if f > 0.0 {
                "+Inf"
            } else {
                "-Inf"
            },
            String::from_utf8_lossy(field)
        )),
        v => Ok(v),
    }
}

fn read_time(r: &mut Rd<'_>) -> Result<Result<Option<i64>, String>, MsgpackError> {
    let at = r.pos;
    Ok(match r.read()? {
        V::Nil => Ok(None),
        V::Int(i) => Ok(Some(i)),
        V::UInt(u) => i64::try_from(u)
            .map(Some)
            .map_err(|_| "bad timestamp".to_string()),
        other => {
            r.skip_rest(other, 1)?;
            Err(format!("bad timestamp at byte {at}"))
        }
    })
}

/// Validates a point whose tags/fields were pushed from `tags_start`/`fields_start` and
/// appends it: the same rules as line protocol.
fn finish_point<'a>(
    out: &mut ParsedBatch<'a>,
    measurement: &'a [u8],
    tags_start: usize,
    fields_start: usize,
    time: i64,
    scratch: &mut Vec<u8>,
) -> Result<(), String> {
    let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    if measurement.is_empty() {
        return Err("missing measurement".into());
    }
    let mspan = out.span_of(measurement);
    let parts = out.parts_mut();
    let (body, side, tags, fields) = (parts.body, &*parts.side, parts.tags, parts.fields);
    let r = |s: Span| resolve(body, side, s);
    let point_tags = &mut tags[tags_start..];
    point_tags.sort_by(|a, b| r(a.0).cmp(r(b.0)));
    if point_tags.windows(2).any(|w| r(w[0].0) == r(w[1].0)) {
        return Err("duplicate tags".into());
    }
    for &(k, _) in point_tags.iter() {
        let k = r(k);
        if k.is_empty() {
            return Err("missing tag key".into());
        }
        if is_reserved(k) {
            return Err(format!(
                "invalid tag key: input tag \"{}\" on measurement \"{}\" is invalid (reserved column name)",
                lossy(k),
                lossy(measurement)
            ));
        }
    }
    if fields.len() == fields_start {
        return Err("missing fields".into());
    }
    // Dedupe (last wins), drop `time`, check names.
    let raw: Vec<(Span, Value)> = fields.drain(fields_start..).collect();
    for (ks, v) in raw {
        let k = r(ks);
        if k.is_empty() {
            return Err("missing field key".into());
        }
        if k == b"time" {
            continue;
        }
        if is_reserved(k) {
            return Err(format!(
                "invalid field name: input field \"{}\" on measurement \"{}\" is invalid (reserved column name)",
                lossy(k),
                lossy(measurement)
            ));
        }
        if tags[tags_start..].iter().any(|&(t, _)| r(t) == k) {
            return Err(format!(
                "conflicting field and tag key: input field \"{}\" on measurement \"{}\" is also a tag key",
                lossy(k),
                lossy(measurement)
            ));
        }
        match fields[fields_start..].iter_mut().find(|(x, _)| r(*x) == k) {
            Some(slot) if slot.1.field_type() == v.field_type() => slot.1 = v,
            // Two types for one field: both kept, the catalog drops the point (as lines).
            _ => fields.push((ks, v)),
        }
    }
    let series_id = series_id_pairs(
        scratch,
        measurement,
        tags[tags_start..].iter().map(|&(k, v)| (r(k), r(v))),
    );
    parts.points.push(PointEntry {
        measurement: mspan,
        tags: tags_start as u32..tags.len() as u32,
        fields: fields_start as u32..fields.len() as u32,
        time,
        series_id,
    });
    Ok(())
}

/// A tag whose key and value are slices of the body.
fn push_tag(out: &mut ParsedBatch<'_>, k: &[u8], v: &[u8]) {
    let (k, v) = (out.span_of(k), out.span_of(v));
    out.tags.push((k, v));
}

/// A field whose key (and string value) are slices of the body.
fn push_field(out: &mut ParsedBatch<'_>, k: &[u8], v: &FieldValue<'_>) {
    let (k, v) = (out.span_of(k), out.store_value(v));
    out.fields.push((k, v));
}

fn too_large(body: &[u8]) -> Result<(), MsgpackError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(err(0, format!("body exceeds {MAX_BODY_BYTES} bytes")));
    }
    Ok(())
}

fn to_nanos(precision: Precision, t: Option<i64>, default_time: i64) -> Result<i64, String> {
    match t {
        None => Ok(default_time),
        Some(t) => precision
            .to_nanos(t)
            .ok_or_else(|| format!("time outside range {MIN_NANO_TIME} - {MAX_NANO_TIME}")),
    }
}

fn reject(
    out: &mut ParsedBatch<'_>,
    tags_start: usize,
    fields_start: usize,
    line: String,
    reason: String,
) {
    out.tags.truncate(tags_start);
    out.fields.truncate(fields_start);
    out.errors.push(LineError { line, reason });
}

/// The body's top-level value: `(entries, true)` for a single map, `(items,
/// false)` for an array of them, `None` for an empty body.
fn top_level(r: &mut Rd<'_>, expected: &str) -> Result<Option<(usize, bool)>, MsgpackError> {
    if r.b.is_empty() {
        return Ok(None);
    }
    match r.read()? {
        V::Arr(n) => Ok(Some((n, false))),
        V::Map(n) => Ok(Some((n, true))),
        _ => Err(err(0, expected)),
    }
}

/// Parses the row format.
pub fn parse_rows(
    body: &[u8],
    precision: Precision,
    now_ns: i64,
) -> Result<ParsedBatch<'_>, MsgpackError> {
    let default_time = precision.truncate(now_ns);
    too_large(body)?;
    let mut r = Rd { b: body, pos: 0 };
    let mut out = ParsedBatch::new(body);
    let mut scratch = Vec::new();
    let Some((n, single)) = top_level(&mut r, "expected an array of point maps")? else {
        return Ok(out);
    };
    let points = if single { 1 } else { n };
    out.points.reserve(points.min(PREALLOC_CAP));
    for idx in 0..points {
        let at = r.pos;
        let entries = if single {
            n
        } else {
            match r.read()? {
                V::Map(m) => m,
                _ => return Err(err(at, format!("point #{idx}: expected a map"))),
            }
        };
        let (tags_start, fields_start) = (out.tags.len(), out.fields.len());
        let mut measurement: Option<&[u8]> = None;
        let mut time = None;
        let mut problem: Option<String> = None;
        for _ in 0..entries {
            let key = r.str("a point key")?;
            match key {
                b"measurement" => measurement = Some(r.str("measurement")?),
                b"tags" => {
                    let at = r.pos;
                    match r.read()? {
                        V::Nil => {}
                        V::Map(m) => {
                            for _ in 0..m {
                                let k = r.str("a tag key")?;
                                let at = r.pos;
                                match r.read()? {
                                    V::Nil => {}
                                    V::Str([]) => {}
                                    V::Str(v) => push_tag(&mut out, k, v),
                                    _ => return Err(err(at, "expected a string tag value")),
                                }
                            }
                        }
                        _ => return Err(err(at, "expected a map for tags")),
                    }
                }
                b"fields" => {
                    let at = r.pos;
                    match r.read()? {
                        V::Map(m) => {
                            for _ in 0..m {
                                let k = r.str("a field key")?;
                                match read_value(&mut r, k)? {
                                    Ok(Some(v)) => push_field(&mut out, k, &v),
                                    Ok(None) => {}
                                    Err(e) => problem = problem.or(Some(e)),
                                }
                            }
                        }
                        V::Nil => {}
                        _ => return Err(err(at, "expected a map for fields")),
                    }
                }
                b"timestamp" | b"time" => match read_time(&mut r)? {
                    Ok(t) => time = t,
                    Err(e) => problem = problem.or(Some(e)),
                },
                _ => {
                    let v = r.read()?;
                    r.skip_rest(v, 1)?;
                }
            }
        }
        let line = || format!("msgpack point #{idx}");
        if let Some(p) = problem {
            reject(&mut out, tags_start, fields_start, line(), p);
            continue;
        }
        let Some(m) = measurement else {
            reject(
                &mut out,
                tags_start,
                fields_start,
                line(),
                "missing measurement".into(),
            );
            continue;
        };
        let result = to_nanos(precision, time, default_time)
            .and_then(|t| finish_point(&mut out, m, tags_start, fields_start, t, &mut scratch));
        if let Err(e) = result {
            reject(&mut out, tags_start, fields_start, line(), e);
        }
    }
    if r.pos != body.len() {
        return Err(err(r.pos, "trailing bytes after the points"));
    }
    Ok(out)
}

/// Parses the columnar format.
pub fn parse_columnar(
    body: &[u8],
    precision: Precision,
    now_ns: i64,
) -> Result<ParsedBatch<'_>, MsgpackError> {
    let default_time = precision.truncate(now_ns);
    too_large(body)?;
    let mut r = Rd { b: body, pos: 0 };
    let mut out = ParsedBatch::new(body);
    let Some((n, single)) = top_level(&mut r, "expected a columnar map")? else {
        return Ok(out);
    };
    if single {
        columnar_block(&mut r, n, 0, precision, default_time, &mut out)?;
    } else {
        for block in 0..n {
            let at = r.pos;
            match r.read()? {
                V::Map(m) => columnar_block(&mut r, m, block, precision, default_time, &mut out)?,
                _ => return Err(err(at, format!("block #{block}: expected a map"))),
            }
        }
    }
    if r.pos != body.len() {
        return Err(err(r.pos, "trailing bytes after the columnar data"));
    }
    Ok(out)
}

type Column<'a> = Vec<Result<Option<FieldValue<'a>>, String>>;
type TagColumn<'a> = (&'a [u8], Vec<Option<&'a [u8]>>);

fn read_array_len(r: &mut Rd<'_>, what: &str) -> Result<usize, MsgpackError> {
    let at = r.pos;
    match r.read()? {
        V::Arr(n) => Ok(n),
        _ => Err(err(at, format!("expected an array for {what}"))),
    }
}

fn columnar_block<'a>(
    r: &mut Rd<'a>,
    entries: usize,
    block: usize,
    precision: Precision,
    default_time: i64,
    out: &mut ParsedBatch<'a>,
) -> Result<(), MsgpackError> {
    let start = r.pos;
    let mut measurement: Option<&'a [u8]> = None;
    let mut const_tags: Vec<(&'a [u8], &'a [u8])> = Vec::new();
    let mut tag_cols: Vec<TagColumn<'a>> = Vec::new();
    let mut times: Option<Vec<Result<Option<i64>, String>>> = None;
    let mut single_field: Option<&'a [u8]> = None;
    let mut single_values: Option<Column<'a>> = None;
    let mut cols: Vec<(&'a [u8], Column<'a>)> = Vec::new();
    for _ in 0..entries {
        let key = r.str("a block key")?;
        match key {
            b"measurement" => measurement = Some(r.str("measurement")?),
            b"field" => single_field = Some(r.str("field")?),
            b"tags" => {
                let at = r.pos;
                let m = match r.read()? {
                    V::Map(m) => m,
                    V::Nil => 0,
                    _ => return Err(err(at, "expected a map for tags")),
                };
                for _ in 0..m {
                    let k = r.str("a tag key")?;
                    let at = r.pos;
                    match r.read()? {
                        V::Str(v) => const_tags.push((k, v)),
                        V::Nil => {}
                        V::Arr(n) => {
                            let mut vals = Vec::with_capacity(n.min(PREALLOC_CAP));
                            for _ in 0..n {
                                let at = r.pos;
                                vals.push(match r.read()? {
                                    V::Str(v) if !v.is_empty() => Some(v),
                                    V::Str(_) | V::Nil => None,
                                    _ => return Err(err(at, "expected a string tag value")),
                                });
                            }
                            tag_cols.push((k, vals));
                        }
                        _ => return Err(err(at, "expected a string or an array of strings")),
                    }
                }
            }
            b"timestamps" | b"times" | b"time" => {
                let n = read_array_len(r, "timestamps")?;
                let mut v = Vec::with_capacity(n.min(PREALLOC_CAP));
                for _ in 0..n {
                    v.push(read_time(r)?);
                }
                times = Some(v);
            }
            b"values" => {
                let n = read_array_len(r, "values")?;
                let name = single_field.unwrap_or(b"value");
                let mut v = Vec::with_capacity(n.min(PREALLOC_CAP));
                for _ in 0..n {
                    v.push(read_value(r, name)?);
                }
                single_values = Some(v);
            }
            b"fields" => {
                let at = r.pos;
                let m = match r.read()? {
                    V::Map(m) => m,
                    _ => return Err(err(at, "expected a map of field arrays")),
                };
                for _ in 0..m {
                    let name = r.str("a field name")?;
                    let n = read_array_len(r, "field values")?;
                    let mut v = Vec::with_capacity(n.min(PREALLOC_CAP));
                    for _ in 0..n {
                        v.push(read_value(r, name)?);
                    }
                    cols.push((name, v));
                }
            }
            _ => {
                let v = r.read()?;
                r.skip_rest(v, 1)?;
            }
        }
    }
    if let Some(v) = single_values {
        let name = single_field.ok_or_else(|| {
            err(
                start,
                format!("block #{block}: \"values\" without \"field\""),
            )
        })?;
        cols.push((name, v));
    }
    let measurement = measurement
        .ok_or_else(|| err(start, format!("block #{block}: missing \"measurement\"")))?;
    let rows = cols
        .first()
        .map(|c| c.1.len())
        .or(times.as_ref().map(|t| t.len()))
        .unwrap_or(0);
    let same = cols.iter().all(|c| c.1.len() == rows)
        && times.as_ref().is_none_or(|t| t.len() == rows)
        && tag_cols.iter().all(|t| t.1.len() == rows);
    if !same {
        return Err(err(
            start,
            format!("block #{block}: arrays of different lengths"),
        ));
    }
    let mut scratch = Vec::new();
    for row in 0..rows {
        let (tags_start, fields_start) = (out.tags.len(), out.fields.len());
        let line = || {
            format!(
                "msgpack block #{block} row {row} of measurement \"{}\"",
                String::from_utf8_lossy(measurement)
            )
        };
        for (k, v) in &const_tags {
            push_tag(out, k, v);
        }
        for (k, vals) in &tag_cols {
            if let Some(v) = vals[row] {
                push_tag(out, k, v);
            }
        }
        let mut problem = None;
        for (name, vals) in &cols {
            match &vals[row] {
                Ok(Some(v)) => push_field(out, name, v),
                Ok(None) => {}
                Err(e) => problem = problem.or(Some(e.clone())),
            }
        }
        let t = match &times {
            Some(ts) => ts[row].clone(),
            None => Ok(None),
        };
        let result = match (problem, t) {
            (Some(p), _) | (None, Err(p)) => Err(p),
            (None, Ok(t)) => to_nanos(precision, t, default_time).and_then(|t| {
                finish_point(out, measurement, tags_start, fields_start, t, &mut scratch)
            }),
        };
        if let Err(e) = result {
            reject(out, tags_start, fields_start, line(), e);
        }
    }
    Ok(())
}
