//! One measurement's held points: per series, time-sorted plain columns (one per
//! field, with a validity byte per value), point identity on insert (a point at a
//! time the series holds overwrites it field by field: last write wins, as the
//! engine's point merge reads it).

use std::collections::HashMap;

use engine::arrow::array::{Array, AsArray, RecordBatch};
use engine::arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};

/// Values of one field of one series, as many as the series has times.
#[derive(Debug, Clone)]
pub(crate) enum Values {
    Float(Vec<f64>),
    Integer(Vec<i64>),
    Unsigned(Vec<u64>),
    Boolean(Vec<bool>),
    String(Vec<String>),
}

/// One field's column of one series.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    pub(crate) values: Values,
    /// Whether the point has this field.
    pub(crate) valid: Vec<bool>,
}

impl Column {
    fn nulls(kind: &DataType, len: usize) -> Option<Column> {
        let values = match kind {
            DataType::Float64 => Values::Float(vec![0.0; len]),
            DataType::Int64 => Values::Integer(vec![0; len]),
            DataType::UInt64 => Values::Unsigned(vec![0; len]),
            DataType::Boolean => Values::Boolean(vec![false; len]),
            DataType::Utf8 => Values::String(vec![String::new(); len]),
            _ => return None,
        };
        Some(Column {
            values,
            valid: vec![false; len],
        })
    }

    fn insert_null(&mut self, at: usize) {
        self.valid.insert(at, false);
        match &mut self.values {
            Values::Float(v) => v.insert(at, 0.0),
            Values::Integer(v) => v.insert(at, 0),
            Values::Unsigned(v) => v.insert(at, 0),
            Values::Boolean(v) => v.insert(at, false),
            Values::String(v) => v.insert(at, String::new()),
        }
    }

    /// Sets value `at` from row `row` of `src` when it has one; the bytes added.
    fn set(&mut self, at: usize, src: &Src<'_>, row: usize) -> isize {
        if src.is_null(row) {
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
                v[at] = new.to_string();
                return delta;
            }
            // A field's type never changes (first write wins at the door).
            _ => self.valid[at] = false,
        }
        0
    }

    fn drain_front(&mut self, n: usize) -> usize {
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
enum Src<'a> {
    Float(&'a engine::arrow::array::PrimitiveArray<Float64Type>),
    Integer(&'a engine::arrow::array::PrimitiveArray<Int64Type>),
    Unsigned(&'a engine::arrow::array::PrimitiveArray<UInt64Type>),
    Boolean(&'a engine::arrow::array::BooleanArray),
    String(&'a engine::arrow::array::StringArray),
}

impl Src<'_> {
    fn of(a: &dyn Array) -> Option<Src<'_>> {
        Some(match a.data_type() {
            DataType::Float64 => Src::Float(a.as_primitive_opt()?),
            DataType::Int64 => Src::Integer(a.as_primitive_opt()?),
            DataType::UInt64 => Src::Unsigned(a.as_primitive_opt()?),
            DataType::Boolean => Src::Boolean(a.as_boolean_opt()?),
            DataType::Utf8 => Src::String(a.as_string_opt()?),
            _ => return None,
        })
    }

    fn is_null(&self, row: usize) -> bool {
        match self {
            Src::Float(a) => a.is_null(row),
            Src::Integer(a) => a.is_null(row),
            Src::Unsigned(a) => a.is_null(row),
            Src::Boolean(a) => a.is_null(row),
            Src::String(a) => a.is_null(row),
        }
    }
}

/// One series' held points.
#[derive(Debug, Default)]
pub(crate) struct Series {
    /// Its tags with a value, sorted by key.
    pub(crate) tags: Vec<(String, String)>,
    /// Point times, ascending, each once.
    pub(crate) times: Vec<i64>,
    /// By the table's field index; `None` where the series has no such field.
    pub(crate) columns: Vec<Option<Column>>,
}

impl Series {
    /// The value of tag `key` (`""` where the series lacks it).
    pub(crate) fn tag(&self, key: &str) -> &str {
        self.tags
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .map_or("", |i| self.tags[i].1.as_str())
    }

    /// The points with a time inside `[min, max]`: their index range.
    pub(crate) fn span(&self, min: i64, max: i64) -> std::ops::Range<usize> {
        let from = self.times.partition_point(|&t| t < min);
        let to = self.times.partition_point(|&t| t <= max);
        from..to.max(from)
    }

    fn cells(&self) -> usize {
        self.columns.iter().flatten().count()
    }
}

/// One measurement's held points.
#[derive(Debug)]
pub(crate) struct Table {
    /// Every point of the measurement with a time at or after this is held.
    pub(crate) complete_from: i64,
    /// The newest time ever held.
    pub(crate) newest: i64,
    /// Field names, by index (`Series::columns`).
    pub(crate) fields: Vec<String>,
    pub(crate) series: HashMap<u64, Series>,
    /// What the held points take, bytes (`HotConfig::max_memory`).
    pub(crate) bytes: usize,
    /// Values held (times and fields).
    pub(crate) values: usize,
}

/// Bytes per held time and per held field value (plus its validity byte).
const TIME_BYTES: usize = 8;
const VALUE_BYTES: usize = 9;

impl Table {
    /// A measurement first seen now: nothing of it was written before.
    pub(crate) fn new() -> Table {
        Table {
            complete_from: i64::MIN,
            newest: i64::MIN,
            fields: Vec::new(),
            series: HashMap::new(),
            bytes: 0,
            values: 0,
        }
    }

    /// Forgets every held point; complete again only from after the newest
    /// time ever held (what comes later is all new).
    pub(crate) fn empty(&mut self) {
        self.series.clear();
        self.complete_from = self.newest.saturating_add(1).max(self.complete_from);
        self.bytes = 0;
        self.values = 0;
    }

    fn field_index(&mut self, name: &str) -> usize {
        match self.fields.iter().position(|f| f == name) {
            Some(i) => i,
            None => {
                self.fields.push(name.to_string());
                self.fields.len() - 1
            }
        }
    }

    /// Merges ingest's `batch` (docs/architecture.md: `time`, `series_id`, tags
    /// non-null Utf8, fields nullable) in, then drops points older than `window`
    /// before their series' newest (with an eighth of slack, so the columns
    /// move once per eighth of a window, not per point). False when the batch
    /// is not in that layout (the caller forgets the table).
    pub(crate) fn insert(&mut self, batch: &RecordBatch, window: i64) -> bool {
        let schema = batch.schema();
        let (Some(time), Some(sid)) = (
            batch
                .column_by_name("time")
                .and_then(|c| c.as_primitive_opt::<Int64Type>()),
            batch
                .column_by_name("series_id")
                .and_then(|c| c.as_primitive_opt::<UInt64Type>()),
        ) else {
            return false;
        };
        let mut tags = Vec::new();
        let mut fields = Vec::new();
        for (i, f) in schema.fields().iter().enumerate() {
            let name = f.name().as_str();
            if name == "time" || name == "series_id" {
                continue;
            }
            let col = batch.column(i);
            if f.is_nullable() {
                let Some(src) = Src::of(col.as_ref()) else {
                    return false;
                };
                fields.push((self.field_index(name), src, f.data_type().clone()));
            } else {
                let Some(s) = col.as_string_opt::<i32>() else {
                    return false;
                };
                tags.push((name, s));
            }
        }
        let nfields = self.fields.len();
        let mut touched: Vec<u64> = Vec::new();
        for row in 0..batch.num_rows() {
            if time.is_null(row) || sid.is_null(row) {
                continue;
            }
            let (t, id) = (time.value(row), sid.value(row));
            if t < self.complete_from {
                // Older than what the table holds completely: the engine has it.
                continue;
            }
            let series = self.series.entry(id).or_insert_with(|| {
                let mut tags: Vec<(String, String)> = tags
                    .iter()
                    .filter(|(_, a)| !a.value(row).is_empty())
                    .map(|(k, a)| (k.to_string(), a.value(row).to_string()))
                    .collect();
                tags.sort();
                Series {
                    tags,
                    ..Series::default()
                }
            });
            if series.columns.len() < nfields {
                series.columns.resize_with(nfields, || None);
            }
            let len = series.times.len();
            let at = if series.times.last().is_none_or(|&last| t > last) {
                series.times.push(t);
                Err(len)
            } else {
                series.times.binary_search(&t)
            };
            let mut added = 0isize;
            let mut values = 0usize;
            if let Err(at) = at {
                if at < len {
                    // `push` above appends; a time inside the series is inserted.
                    series.times.insert(at, t);
                }
                values += 1;
                added += TIME_BYTES as isize;
                for c in series.columns.iter_mut().flatten() {
                    c.insert_null(at);
                    values += 1;
                    added += VALUE_BYTES as isize;
                }
            }
            let at = at.unwrap_or_else(|e| e);
            for (fi, src, kind) in &fields {
                if src.is_null(row) {
                    continue;
                }
                let slot = &mut series.columns[*fi];
                if slot.is_none() {
                    let Some(c) = Column::nulls(kind, series.times.len()) else {
                        continue;
                    };
                    values += series.times.len();
                    added += (VALUE_BYTES * series.times.len()) as isize;
                    *slot = Some(c);
                }
                if let Some(c) = slot {
                    added += c.set(at, src, row);
                }
            }
            self.bytes = (self.bytes as isize + added).max(0) as usize;
            self.values += values;
            self.newest = self.newest.max(t);
            if touched.last() != Some(&id) {
                touched.push(id);
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for id in touched {
            self.evict(id, window);
        }
        true
    }

    /// Drops series `id`'s points older than `window` before its newest.
    fn evict(&mut self, id: u64, window: i64) {
        let Some(s) = self.series.get_mut(&id) else {
            return;
        };
        let (Some(&first), Some(&last)) = (s.times.first(), s.times.last()) else {
            return;
        };
        let cut = last.saturating_sub(window);
        if first >= cut.saturating_sub(window / 8) {
            return;
        }
        let n = s.times.partition_point(|&t| t < cut);
        s.times.drain(..n);
        let cells = s.cells();
        let mut strings = 0;
        for c in s.columns.iter_mut().flatten() {
            strings += c.drain_front(n);
        }
        self.values = self.values.saturating_sub(n * (1 + cells));
        self.bytes = self
            .bytes
            .saturating_sub(n * (TIME_BYTES + VALUE_BYTES * cells) + strings);
        self.complete_from = self.complete_from.max(cut);
    }
}
