//! The hot store's plain columns: one field of one series' points, and the
//! open tail of a series (its newest points, uncompressed, so that inserts and
//! rewrites of recent points stay cheap) or a range of it decoded for a read.

use std::sync::Arc;

use engine::arrow::array::{Array, AsArray};
use engine::arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};
/// Makes room for `n` more in `v`, growing it by at least a quarter, not by
/// doubling: a series' columns hold a day of points, and doubling left up to half of them unused (RSS +254 MB for
/// 169 MB of held points at TSBS's 200 hosts × 24 h). An eighth copied too much.
pub(crate) fn grow<T>(v: &mut Vec<T>, n: usize) {
    if v.capacity() - v.len() < n {
        v.reserve_exact(n.max(v.len() / 4).max(16));
    }
}

/// `s`, sharing `before`'s allocation when it is the same text.
fn shared(before: Option<&Arc<str>>, s: &str) -> Arc<str> {
    match before {
        Some(b) if **b == *s => b.clone(),
        _ => Arc::from(s),
    }
}

/// Values of one field of one series, as many as the series has times.
#[derive(Debug, Clone)]
pub(crate) enum Values {
    Float(Vec<f64>),
    Integer(Vec<i64>),
    Unsigned(Vec<u64>),
    Boolean(Vec<bool>),
    /// Shared where a value repeats the one before it (a status string
    /// rarely changes): no allocation per point then.
    String(Vec<Arc<str>>),
}

/// One field's column of one series.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    pub(crate) values: Values,
    /// Whether the point has this field.
    pub(crate) valid: Vec<bool>,
}

impl Column {
    pub(crate) fn nulls(kind: &DataType, len: usize) -> Option<Column> {
        let values = match kind {
            DataType::Float64 => Values::Float(vec![0.0; len]),
            DataType::Int64 => Values::Integer(vec![0; len]),
            DataType::UInt64 => Values::Unsigned(vec![0; len]),
            DataType::Boolean => Values::Boolean(vec![false; len]),
            DataType::Utf8 => Values::String(vec![Arc::from(""); len]),
            _ => return None,
        };
        Some(Column {
            values,
            valid: vec![false; len],
        })
    }

    fn insert_null(&mut self, at: usize) {
        grow(&mut self.valid, 1);
        self.valid.insert(at, false);
        match &mut self.values {
            Values::Float(v) => {
                grow(v, 1);
                v.insert(at, 0.0)
            }
            Values::Integer(v) => {
                grow(v, 1);
                v.insert(at, 0)
            }
            Values::Unsigned(v) => {
                grow(v, 1);
                v.insert(at, 0)
            }
            Values::Boolean(v) => {
                grow(v, 1);
                v.insert(at, false)
            }
            Values::String(v) => {
                grow(v, 1);
                let empty = shared(v.get(at.wrapping_sub(1)), "");
                v.insert(at, empty)
            }
        }
    }

    /// Sets value `at` from row `row` of `src` when it has one (and, unless
    /// `overwrite`, when `at` has none yet); the bytes added.
    fn set(&mut self, at: usize, src: &Src<'_>, row: usize, overwrite: bool) -> isize {
        if src.is_null(row) || (!overwrite && self.valid[at]) {
            return 0;
        }
        self.valid[at] = true;
        match (&mut self.values, src) {
            (Values::Float(v), Src::Float(a)) => v[at] = a.value(row),
            (Values::Integer(v), Src::Integer(a)) => v[at] = a.value(row),
            (Values::Unsigned(v), Src::Unsigned(a)) => v[at] = a.value(row),
            (Values::Boolean(v), Src::Boolean(a)) => v[at] = a.value(row),
            (Values::String(v), Src::String(a)) => {
                let new = a.value(row);
                let delta = new.len() as isize - v[at].len() as isize;
                v[at] = shared(at.checked_sub(1).map(|p| &v[p]), new);
                return delta;
            }
            // A field's type never changes (first write wins at the door).
            _ => self.valid[at] = false,
        }
        0
    }

    /// Appends `rows` of `src` (null where a row has none); the string bytes added.
    fn extend(&mut self, src: &Src<'_>, rows: &[u32]) -> isize {
        let n = rows.len();
        grow(&mut self.valid, n);
        match src.nulls() {
            None => self.valid.extend(std::iter::repeat_n(true, n)),
            Some(nulls) => self
                .valid
                .extend(rows.iter().map(|&r| nulls.is_valid(r as usize))),
        }
        fn put<T: Copy, A: Fn(usize) -> T>(v: &mut Vec<T>, rows: &[u32], at: A) {
            grow(v, rows.len());
            v.extend(rows.iter().map(|&r| at(r as usize)));
        }
        match (&mut self.values, src) {
            (Values::Float(v), Src::Float(a)) => put(v, rows, |r| a.values()[r]),
            (Values::Integer(v), Src::Integer(a)) => put(v, rows, |r| a.values()[r]),
            (Values::Unsigned(v), Src::Unsigned(a)) => put(v, rows, |r| a.values()[r]),
            (Values::Boolean(v), Src::Boolean(a)) => put(v, rows, |r| a.value(r)),
            (Values::String(v), Src::String(a)) => {
                grow(v, n);
                let mut bytes = 0;
                for &r in rows {
                    let s = if a.is_null(r as usize) {
                        ""
                    } else {
                        a.value(r as usize)
                    };
                    bytes += s.len();
                    v.push(shared(v.last(), s));
                }
                return bytes as isize;
            }
            // A field's type never changes (first write wins at the door).
            _ => {
                let from = self.valid.len() - n;
                self.valid[from..].fill(false);
                self.extend_nulls_values(n);
            }
        }
        0
    }

    /// Appends the first `n` points of `other` (of the same type; nulls otherwise).
    pub(crate) fn extend_from_prefix(&mut self, other: &Column, n: usize) {
        match (&mut self.values, &other.values) {
            (Values::Float(v), Values::Float(o)) => v.extend_from_slice(&o[..n]),
            (Values::Integer(v), Values::Integer(o)) => v.extend_from_slice(&o[..n]),
            (Values::Unsigned(v), Values::Unsigned(o)) => v.extend_from_slice(&o[..n]),
            (Values::Boolean(v), Values::Boolean(o)) => v.extend_from_slice(&o[..n]),
            (Values::String(v), Values::String(o)) => v.extend_from_slice(&o[..n]),
            _ => return self.extend_nulls(n),
        }
        self.valid.extend_from_slice(&other.valid[..n]);
    }

    fn same_kind(&self, other: &Column) -> bool {
        std::mem::discriminant(&self.values) == std::mem::discriminant(&other.values)
    }

    /// No points, of this column's type.
    pub(crate) fn empty_like(&self) -> Column {
        let mut c = Column {
            values: match &self.values {
                Values::Float(_) => Values::Float(Vec::new()),
                Values::Integer(_) => Values::Integer(Vec::new()),
                Values::Unsigned(_) => Values::Unsigned(Vec::new()),
                Values::Boolean(_) => Values::Boolean(Vec::new()),
                Values::String(_) => Values::String(Vec::new()),
            },
            valid: Vec::new(),
        };
        c.clear();
        c
    }

    fn clear(&mut self) {
        self.valid.clear();
        match &mut self.values {
            Values::Float(v) => v.clear(),
            Values::Integer(v) => v.clear(),
            Values::Unsigned(v) => v.clear(),
            Values::Boolean(v) => v.clear(),
            Values::String(v) => v.clear(),
        }
    }

    /// Appends `n` points without this field.
    pub(crate) fn extend_nulls(&mut self, n: usize) {
        grow(&mut self.valid, n);
        self.valid.extend(std::iter::repeat_n(false, n));
        self.extend_nulls_values(n);
    }

    fn extend_nulls_values(&mut self, n: usize) {
        match &mut self.values {
            Values::Float(v) => v.resize(v.len() + n, 0.0),
            Values::Integer(v) => v.resize(v.len() + n, 0),
            Values::Unsigned(v) => v.resize(v.len() + n, 0),
            Values::Boolean(v) => v.resize(v.len() + n, false),
            Values::String(v) => {
                let empty = shared(v.last(), "");
                v.resize(v.len() + n, empty)
            }
        }
    }

    /// Keeps its first `n` points (all, if it has no more).
    pub(crate) fn truncate(&mut self, n: usize) {
        self.valid.truncate(n);
        match &mut self.values {
            Values::Float(v) => v.truncate(n),
            Values::Integer(v) => v.truncate(n),
            Values::Unsigned(v) => v.truncate(n),
            Values::Boolean(v) => v.truncate(n),
            Values::String(v) => v.truncate(n),
        }
    }

    /// Gives back capacity past `n` points (kept: at least `n`).
    pub(crate) fn shrink_to(&mut self, n: usize) {
        self.valid.shrink_to(n);
        match &mut self.values {
            Values::Float(v) => v.shrink_to(n),
            Values::Integer(v) => v.shrink_to(n),
            Values::Unsigned(v) => v.shrink_to(n),
            Values::Boolean(v) => v.shrink_to(n),
            Values::String(v) => v.shrink_to(n),
        }
    }

    /// Drops its `n` points from `at` (a decoded chunk's points before a
    /// read's range).
    pub(crate) fn drain_at(&mut self, at: usize, n: usize) {
        if n == 0 {
            return;
        }
        let r = at..at + n;
        self.valid.drain(r.clone());
        match &mut self.values {
            Values::Float(v) => drop(v.drain(r)),
            Values::Integer(v) => drop(v.drain(r)),
            Values::Unsigned(v) => drop(v.drain(r)),
            Values::Boolean(v) => drop(v.drain(r)),
            Values::String(v) => drop(v.drain(r)),
        }
    }

    pub(crate) fn drain_front(&mut self, n: usize) -> usize {
        self.valid.drain(..n);
        match &mut self.values {
            Values::Float(v) => drop(v.drain(..n)),
            Values::Integer(v) => drop(v.drain(..n)),
            Values::Unsigned(v) => drop(v.drain(..n)),
            Values::Boolean(v) => drop(v.drain(..n)),
            Values::String(v) => return v.drain(..n).map(|s| s.len()).sum(),
        }
        0
    }
}

/// A batch's field column, downcast once.
pub(crate) enum Src<'a> {
    Float(&'a engine::arrow::array::PrimitiveArray<Float64Type>),
    Integer(&'a engine::arrow::array::PrimitiveArray<Int64Type>),
    Unsigned(&'a engine::arrow::array::PrimitiveArray<UInt64Type>),
    Boolean(&'a engine::arrow::array::BooleanArray),
    String(&'a engine::arrow::array::StringArray),
}

impl Src<'_> {
    pub(crate) fn of(a: &dyn Array) -> Option<Src<'_>> {
        Some(match a.data_type() {
            DataType::Float64 => Src::Float(a.as_primitive_opt()?),
            DataType::Int64 => Src::Integer(a.as_primitive_opt()?),
            DataType::UInt64 => Src::Unsigned(a.as_primitive_opt()?),
            DataType::Boolean => Src::Boolean(a.as_boolean_opt()?),
            DataType::Utf8 => Src::String(a.as_string_opt()?),
            _ => return None,
        })
    }

    fn nulls(&self) -> Option<&engine::arrow::buffer::NullBuffer> {
        match self {
            Src::Float(a) => a.nulls(),
            Src::Integer(a) => a.nulls(),
            Src::Unsigned(a) => a.nulls(),
            Src::Boolean(a) => a.nulls(),
            Src::String(a) => a.nulls(),
        }
    }

    pub(crate) fn is_null(&self, row: usize) -> bool {
        match self {
            Src::Float(a) => a.is_null(row),
            Src::Integer(a) => a.is_null(row),
            Src::Unsigned(a) => a.is_null(row),
            Src::Boolean(a) => a.is_null(row),
            Src::String(a) => a.is_null(row),
        }
    }
}

/// A batch's field: the table's field index, its column, its type.
pub(crate) type BatchField<'a> = (usize, Src<'a>, DataType);

/// Points of one series, time-sorted, as plain columns: a series' open tail,
/// a sealed chunk decoded to merge into it, or what a read decoded.
#[derive(Debug, Default)]
pub(crate) struct Plain {
    /// Point times, ascending, each once.
    pub(crate) times: Vec<i64>,
    /// By the table's field index; `None` where the series has no such field.
    pub(crate) columns: Vec<Option<Column>>,
}

impl Plain {
    /// The points with a time inside `[min, max]`: their index range.
    pub(crate) fn span(&self, min: i64, max: i64) -> std::ops::Range<usize> {
        let from = self.times.partition_point(|&t| t < min);
        let to = self.times.partition_point(|&t| t <= max);
        from..to.max(from)
    }

    /// Points of room its largest buffer has (times or a column's).
    pub(crate) fn capacity(&self) -> usize {
        self.columns
            .iter()
            .flatten()
            .map(|c| c.valid.capacity())
            .fold(self.times.capacity(), usize::max)
    }

    /// Columns (fields) held.
    pub(crate) fn cells(&self) -> usize {
        self.columns.iter().flatten().count()
    }

    /// Empty, with a column of the same type wherever `like` has one and
    /// `want` takes its index (the buffers kept: a read decodes into the same
    /// scratch series after series).
    pub(crate) fn reset_like(&mut self, like: &Plain, want: impl Fn(usize) -> bool) {
        self.times.clear();
        self.columns.resize_with(like.columns.len(), || None);
        for (i, (mine, theirs)) in self.columns.iter_mut().zip(&like.columns).enumerate() {
            match (mine.as_mut(), theirs) {
                (_, Some(_)) if !want(i) => *mine = None,
                (Some(m), Some(t)) if m.same_kind(t) => m.clear(),
                (_, Some(t)) => *mine = Some(t.empty_like()),
                (_, None) => *mine = None,
            }
        }
    }

    /// Keeps its first `n` points (every column: some may hold fewer).
    pub(crate) fn truncate(&mut self, n: usize) {
        self.times.truncate(n);
        for c in self.columns.iter_mut().flatten() {
            c.truncate(n);
        }
    }

    /// Gives back capacity past `n` points in every column.
    pub(crate) fn shrink_to(&mut self, n: usize) {
        self.times.shrink_to(n);
        for c in self.columns.iter_mut().flatten() {
            c.shrink_to(n);
        }
    }

    /// Drops the first `n` points; the string bytes dropped.
    pub(crate) fn drain_front(&mut self, n: usize) -> usize {
        self.times.drain(..n);
        self.columns
            .iter_mut()
            .flatten()
            .map(|c| c.drain_front(n))
            .sum()
    }

    /// Appends `rows` (times ascending, all after the newest held) from a
    /// batch; the string bytes added.
    pub(crate) fn append(
        &mut self,
        rows: &[u32],
        times: &[i64],
        fields: &[BatchField<'_>],
        present: &[bool],
    ) -> isize {
        let old = self.times.len();
        let n = rows.len();
        grow(&mut self.times, n);
        self.times.extend(rows.iter().map(|&r| times[r as usize]));
        let mut added = 0;
        // The series' columns of fields this batch lacks: no value at the new times.
        for (c, &here) in self.columns.iter_mut().zip(present) {
            if let (Some(c), false) = (c, here) {
                c.extend_nulls(n);
            }
        }
        for (fi, src, kind) in fields {
            let slot = &mut self.columns[*fi];
            if slot.is_none() {
                if rows.iter().all(|&r| src.is_null(r as usize)) {
                    continue;
                }
                let Some(c) = Column::nulls(kind, old) else {
                    continue;
                };
                *slot = Some(c);
            }
            if let Some(c) = slot {
                added += c.extend(src, rows);
            }
        }
        added
    }

    /// Merges row `row` (at time `t`) of a batch in, a point at a time held
    /// overwritten field by field (unless `overwrite` is false: then only its
    /// fields without a value are set); the string bytes added.
    pub(crate) fn merge_row(
        &mut self,
        row: usize,
        t: i64,
        fields: &[BatchField<'_>],
        overwrite: bool,
    ) -> isize {
        let len = self.times.len();
        grow(&mut self.times, 1);
        let at = if self.times.last().is_none_or(|&last| t > last) {
            self.times.push(t);
            Err(len)
        } else {
            self.times.binary_search(&t)
        };
        if let Err(at) = at {
            if at < len {
                // `push` above appends; a time inside the series is inserted.
                self.times.insert(at, t);
            }
            for c in self.columns.iter_mut().flatten() {
                c.insert_null(at);
            }
        }
        let at = at.unwrap_or_else(|e| e);
        let mut added = 0;
        for (fi, src, kind) in fields {
            if src.is_null(row) {
                continue;
            }
            let slot = &mut self.columns[*fi];
            if slot.is_none() {
                let Some(c) = Column::nulls(kind, self.times.len()) else {
                    continue;
                };
                *slot = Some(c);
            }
            if let Some(c) = slot {
                added += c.set(at, src, row, overwrite);
            }
        }
        added
    }
}
