//! One measurement's held points: per series, time-sorted plain columns (one per
//! field, with a validity byte per value), point identity on insert (a point at a
//! time the series holds overwrites it field by field: last write wins, as the
//! engine's point merge reads it).

use std::collections::HashMap;
use std::hash::Hasher;
use std::sync::Arc;

use engine::arrow::array::{Array, AsArray, RecordBatch};
use engine::arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};

/// Series ids are hashes already (`ingest`'s xxh3 of the series key): mixed with
/// a per-process seed by one multiply (SipHash was a third of the coordinator's
/// cost per point), so a client cannot craft ids that collide here.
#[derive(Clone)]
pub(crate) struct SeededIds(u64);

impl Default for SeededIds {
    fn default() -> Self {
        use std::hash::BuildHasher;
        SeededIds(std::collections::hash_map::RandomState::new().hash_one(0x44u64) | 1)
    }
}

impl std::hash::BuildHasher for SeededIds {
    type Hasher = SeriesIdHasher;
    fn build_hasher(&self) -> SeriesIdHasher {
        SeriesIdHasher {
            seed: self.0,
            hash: 0,
        }
    }
}

pub(crate) struct SeriesIdHasher {
    seed: u64,
    hash: u64,
}

impl Hasher for SeriesIdHasher {
    fn finish(&self) -> u64 {
        self.hash
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(self.hash.rotate_left(8) ^ u64::from(*b));
        }
    }
    fn write_u64(&mut self, id: u64) {
        let h = (id ^ self.seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.hash = h ^ (h >> 29);
    }
}

pub(crate) type SeriesMap = HashMap<u64, Series, SeededIds>;

/// Makes room for `n` more in `v`, growing it by at least a quarter, not by
/// doubling: a series' columns hold a day of points, and doubling left up to half of them unused (RSS +254 MB for
/// 169 MB of held points at TSBS's 200 hosts × 24 h). An eighth copied too much.
fn grow<T>(v: &mut Vec<T>, n: usize) {
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
    fn nulls(kind: &DataType, len: usize) -> Option<Column> {
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

    /// Appends `n` points without this field.
    fn extend_nulls(&mut self, n: usize) {
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

    fn nulls(&self) -> Option<&engine::arrow::buffer::NullBuffer> {
        match self {
            Src::Float(a) => a.nulls(),
            Src::Integer(a) => a.nulls(),
            Src::Unsigned(a) => a.nulls(),
            Src::Boolean(a) => a.nulls(),
            Src::String(a) => a.nulls(),
        }
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
    pub(crate) series: SeriesMap,
    /// What the held points take, bytes (`HotConfig::max_memory`).
    pub(crate) bytes: usize,
    /// Values held (times and fields).
    pub(crate) values: usize,
    /// Kept between inserts: no allocation per batch.
    scratch: Groups,
}

/// A batch's rows by series, in batch order within each (a counting sort).
#[derive(Debug, Default)]
struct Groups {
    /// Group index by series id.
    index: HashMap<u64, u32, SeededIds>,
    /// Series id by group index.
    ids: Vec<u64>,
    /// Group index by row (`u32::MAX`: left out).
    group_of: Vec<u32>,
    /// Group `k`'s rows are `order[starts[k]..starts[k + 1]]`.
    starts: Vec<u32>,
    order: Vec<u32>,
}

impl Groups {
    /// Groups rows `0..rows` by the series `id_of` gives (`None`: left out).
    fn group(&mut self, rows: usize, id_of: impl Fn(usize) -> Option<u64>) {
        self.index.clear();
        self.ids.clear();
        self.group_of.clear();
        self.starts.clear();
        for row in 0..rows {
            let k = match id_of(row) {
                None => u32::MAX,
                Some(id) => *self.index.entry(id).or_insert_with(|| {
                    self.ids.push(id);
                    self.starts.push(0);
                    (self.ids.len() - 1) as u32
                }),
            };
            if k != u32::MAX {
                self.starts[k as usize] += 1;
            }
            self.group_of.push(k);
        }
        // Counts to exclusive ends, then each row placed before its group's end.
        let mut sum = 0;
        for c in &mut self.starts {
            sum += *c;
            *c = sum;
        }
        self.order.clear();
        self.order.resize(sum as usize, 0);
        for row in (0..rows).rev() {
            let k = self.group_of[row];
            if k != u32::MAX {
                self.starts[k as usize] -= 1;
                self.order[self.starts[k as usize] as usize] = row as u32;
            }
        }
        self.starts.push(sum);
    }
}

/// Bytes per held time and per held field value (plus its validity byte).
pub(crate) const TIME_BYTES: usize = 8;
pub(crate) const VALUE_BYTES: usize = 9;

impl Table {
    /// A measurement first seen now: nothing of it was written before.
    pub(crate) fn new() -> Table {
        Table {
            complete_from: i64::MIN,
            newest: i64::MIN,
            fields: Vec::new(),
            series: SeriesMap::default(),
            bytes: 0,
            values: 0,
            scratch: Groups::default(),
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
        self.merge(batch, window, true)
    }

    /// [`Table::insert`], but a value the table holds already stays: only
    /// slots (series, time, field) without a value are filled. The refill's
    /// merge (`refill.rs`): what the table holds came from writes at least as
    /// new as the refill's snapshot saw.
    pub(crate) fn fill(&mut self, batch: &RecordBatch, window: i64) -> bool {
        self.merge(batch, window, false)
    }

    fn merge(&mut self, batch: &RecordBatch, window: i64, overwrite: bool) -> bool {
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
        // Rows by series, in batch order: a series' rows are then appended
        // column by column (one type dispatch per field and series, not per
        // value), which is what ingest sends nearly always.
        let mut g = std::mem::take(&mut self.scratch);
        g.group(batch.num_rows(), |row| {
            // Older than what the table holds completely: the engine has it.
            (!time.is_null(row) && !sid.is_null(row) && time.value(row) >= self.complete_from)
                .then(|| sid.value(row))
        });
        let nfields = self.fields.len();
        let mut present = vec![false; nfields];
        for (fi, _, _) in &fields {
            present[*fi] = true;
        }
        let times = time.values();
        for (k, id) in g.ids.iter().enumerate() {
            let rows = &g.order[g.starts[k] as usize..g.starts[k + 1] as usize];
            let series = self.series.entry(*id).or_insert_with(|| {
                let row = rows[0] as usize;
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
            let appends = rows
                .iter()
                .map(|&r| times[r as usize])
                .is_sorted_by(|a, b| a < b)
                && series
                    .times
                    .last()
                    .is_none_or(|&last| times[rows[0] as usize] > last);
            let (added, values) = if appends {
                append(series, rows, times, &fields, &present)
            } else {
                rows.iter()
                    .map(|&r| merge_row(series, r as usize, times[r as usize], &fields, overwrite))
                    .fold((0, 0), |(a, v), (x, y)| (a + x, v + y))
            };
            self.bytes = (self.bytes as isize + added).max(0) as usize;
            self.values += values;
            if let Some(&last) = series.times.last() {
                self.newest = self.newest.max(last);
            }
        }
        for &id in &g.ids {
            self.evict(id, window);
        }
        self.scratch = g;
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

/// A batch's field: the table's field index, its column, its type.
type BatchField<'a> = (usize, Src<'a>, DataType);

/// Appends `rows` (times ascending, all after the series' newest) to `series`;
/// the bytes and values added.
fn append(
    series: &mut Series,
    rows: &[u32],
    times: &[i64],
    fields: &[BatchField<'_>],
    present: &[bool],
) -> (isize, usize) {
    let old = series.times.len();
    let n = rows.len();
    grow(&mut series.times, n);
    series.times.extend(rows.iter().map(|&r| times[r as usize]));
    let mut added = (TIME_BYTES * n) as isize;
    let mut values = n;
    // The series' columns of fields this batch lacks: no value at the new times.
    for (c, &here) in series.columns.iter_mut().zip(present) {
        if let (Some(c), false) = (c, here) {
            c.extend_nulls(n);
        }
    }
    for (fi, src, kind) in fields {
        let slot = &mut series.columns[*fi];
        if slot.is_none() {
            if rows.iter().all(|&r| src.is_null(r as usize)) {
                continue;
            }
            let Some(c) = Column::nulls(kind, old) else {
                continue;
            };
            values += old;
            added += (VALUE_BYTES * old) as isize;
            *slot = Some(c);
        }
        if let Some(c) = slot {
            added += c.extend(src, rows);
        }
    }
    let cells = series.cells();
    values += n * cells;
    added += (VALUE_BYTES * n * cells) as isize;
    (added, values)
}

/// Merges row `row` (at time `t`) into `series`, a point at a time it holds
/// overwritten field by field (unless `overwrite` is false: then only its
/// fields without a value are set); the bytes and values added.
fn merge_row(
    series: &mut Series,
    row: usize,
    t: i64,
    fields: &[BatchField<'_>],
    overwrite: bool,
) -> (isize, usize) {
    let len = series.times.len();
    grow(&mut series.times, 1);
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
    for (fi, src, kind) in fields {
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
            added += c.set(at, src, row, overwrite);
        }
    }
    (added, values)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use engine::arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray, UInt64Array};
    use engine::arrow::datatypes::{Field, Schema};

    use super::*;

    /// A row: series, host, time, f, i.
    type Point<'a> = (u64, &'a str, i64, Option<f64>, Option<i64>);

    /// Rows as ingest lays them out.
    fn batch(rows: &[Point<'_>]) -> RecordBatch {
        let schema = Schema::new(vec![
            Field::new("time", DataType::Int64, false),
            Field::new("series_id", DataType::UInt64, false),
            Field::new("host", DataType::Utf8, false),
            Field::new("f", DataType::Float64, true),
            Field::new("i", DataType::Int64, true),
        ]);
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2))),
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
            Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.3))),
            Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.4))),
        ];
        RecordBatch::try_new(Arc::new(schema), cols).unwrap()
    }

    fn floats(s: &Series) -> Vec<Option<f64>> {
        let c = s.columns[0].as_ref().unwrap();
        let Values::Float(v) = &c.values else {
            panic!("not floats")
        };
        v.iter()
            .zip(&c.valid)
            .map(|(x, ok)| ok.then_some(*x))
            .collect()
    }

    #[test]
    fn a_rewrite_overwrites_field_by_field_and_late_points_land_in_order() {
        let mut t = Table::new();
        assert!(t.insert(
            &batch(&[
                (1, "a", 20, Some(2.0), Some(20)),
                (1, "a", 10, Some(1.0), None)
            ]),
            i64::MAX
        ));
        // Only `i` at 20: `f` stays; a point between the two.
        assert!(t.insert(
            &batch(&[(1, "a", 20, None, Some(21)), (1, "a", 15, Some(1.5), None)]),
            i64::MAX
        ));
        let s = &t.series[&1];
        assert_eq!(s.times, vec![10, 15, 20]);
        assert_eq!(floats(s), vec![Some(1.0), Some(1.5), Some(2.0)]);
        let c = s.columns[1].as_ref().unwrap();
        assert_eq!(c.valid, vec![false, false, true]);
        assert!(matches!(&c.values, Values::Integer(v) if v[2] == 21));
        assert_eq!(s.tag("host"), "a");
        assert_eq!(s.tag("region"), "");
        assert_eq!(t.complete_from, i64::MIN);
        assert_eq!(t.values, 3 * 3);
        assert_eq!(t.bytes, 3 * (TIME_BYTES + 2 * VALUE_BYTES));
    }

    #[test]
    fn a_fill_sets_only_slots_without_a_value() {
        let mut t = Table::new();
        // Newer writes the coordinator gave: f at 20, i at 30.
        assert!(t.insert(
            &batch(&[(1, "a", 20, Some(2.0), None), (1, "a", 30, None, Some(3))]),
            i64::MAX
        ));
        // The refill's older snapshot of the same points, and one more.
        assert!(t.fill(
            &batch(&[
                (1, "a", 10, Some(1.0), Some(1)),
                (1, "a", 20, Some(-2.0), Some(2)),
                (1, "a", 30, Some(3.5), Some(-3))
            ]),
            i64::MAX
        ));
        let s = &t.series[&1];
        assert_eq!(s.times, vec![10, 20, 30]);
        assert_eq!(floats(s), vec![Some(1.0), Some(2.0), Some(3.5)]);
        let c = s.columns[1].as_ref().unwrap();
        assert_eq!(c.valid, vec![true, true, true]);
        assert!(matches!(&c.values, Values::Integer(v) if v == &vec![1, 2, 3]));
        assert_eq!(t.bytes, 3 * (TIME_BYTES + 2 * VALUE_BYTES));
    }

    #[test]
    fn eviction_raises_what_the_table_holds_completely() {
        let mut t = Table::new();
        let rows: Vec<_> = (0..100)
            .map(|k| (7, "a", k * 10, Some(k as f64), None))
            .collect();
        // A window of 80: the first points go once they are a window and an eighth old.
        assert!(t.insert(&batch(&rows), 80));
        let s = &t.series[&7];
        assert_eq!(s.times.first(), Some(&(990 - 80)));
        assert_eq!(t.complete_from, 990 - 80);
        // A point older than that is the engine's only.
        assert!(t.insert(&batch(&[(7, "a", 5, Some(0.5), None)]), 80));
        assert_eq!(t.series[&7].times.first(), Some(&(990 - 80)));
        assert_eq!(t.values, t.series[&7].times.len() * 2);
        // Emptied: complete again only after the newest time held.
        t.empty();
        assert_eq!(t.complete_from, 991);
        assert!(t.insert(&batch(&[(7, "a", 995, Some(1.0), None)]), 80));
        assert_eq!(t.series[&7].times, vec![995]);
    }

    /// Random batches (appends, late points, rewrites, fields coming and
    /// going) against a model: per series, time → last value of each field.
    #[test]
    fn inserts_agree_with_a_model_of_last_write_wins() {
        use std::collections::BTreeMap;
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        type Model = BTreeMap<u64, BTreeMap<i64, (Option<f64>, Option<i64>)>>;
        let mut model: Model = BTreeMap::new();
        let mut t = Table::new();
        let mut clock = [0i64; 4];
        for _ in 0..300 {
            let rows: Vec<Point<'_>> = (0..1 + next(40))
                .map(|_| {
                    let s = next(4);
                    let time = match next(10) {
                        0 => next(clock[s as usize] as u64 + 1) as i64,
                        _ => {
                            clock[s as usize] += 1 + next(3) as i64;
                            clock[s as usize]
                        }
                    };
                    let f = (next(4) > 0).then(|| next(100) as f64);
                    let i = (next(3) == 0).then(|| next(100) as i64);
                    (s, ["a", "b", "c", "d"][s as usize], time, f, i)
                })
                .collect();
            assert!(t.insert(&batch(&rows), i64::MAX));
            for &(s, _, time, f, i) in &rows {
                let p = model.entry(s).or_default().entry(time).or_default();
                p.0 = f.or(p.0);
                p.1 = i.or(p.1);
            }
        }
        let mut values = 0;
        for (s, points) in &model {
            let held = &t.series[s];
            assert_eq!(held.times, points.keys().copied().collect::<Vec<_>>());
            let column = |k: usize| held.columns.get(k).and_then(|c| c.as_ref());
            let f: Vec<Option<f64>> = match column(0) {
                Some(_) => floats(held),
                None => vec![None; held.times.len()],
            };
            assert_eq!(
                f,
                points.values().map(|p| p.0).collect::<Vec<_>>(),
                "series {s}"
            );
            let i: Vec<Option<i64>> = match column(1) {
                Some(Column {
                    values: Values::Integer(v),
                    valid,
                }) => v
                    .iter()
                    .zip(valid)
                    .map(|(x, ok)| ok.then_some(*x))
                    .collect(),
                _ => vec![None; held.times.len()],
            };
            assert_eq!(
                i,
                points.values().map(|p| p.1).collect::<Vec<_>>(),
                "series {s}"
            );
            values += held.times.len() * (1 + held.cells());
        }
        assert_eq!(t.values, values);
    }

    /// `cargo test -p storage --release hot_insert_cost -- --ignored --nocapture`: the
    /// coordinator's cost per point, TSBS's shape (200 hosts, 10 integer fields, 2,000
    /// points per batch, times ascending per series).
    #[test]
    #[ignore]
    fn hot_insert_cost() {
        let fields = 10;
        let mut schema = vec![
            Field::new("time", DataType::Int64, false),
            Field::new("series_id", DataType::UInt64, false),
            Field::new("hostname", DataType::Utf8, false),
        ];
        for f in 0..fields {
            schema.push(Field::new(format!("usage_{f}"), DataType::Int64, true));
        }
        let schema = Arc::new(Schema::new(schema));
        let batches: Vec<RecordBatch> = (0..864)
            .map(|b| {
                let n = 2000usize;
                let time = Int64Array::from_iter_values(
                    (0..n).map(|r| (b * 10 + (r / 200) as i64) * 10_000_000_000),
                );
                let sid = UInt64Array::from_iter_values((0..n).map(|r| (r % 200) as u64));
                let host =
                    StringArray::from_iter_values((0..n).map(|r| format!("host_{}", r % 200)));
                let mut cols: Vec<ArrayRef> = vec![Arc::new(time), Arc::new(sid), Arc::new(host)];
                for f in 0..fields {
                    cols.push(Arc::new(Int64Array::from_iter_values(
                        (0..n).map(|r| (r as i64 * 7 + f) % 100),
                    )));
                }
                RecordBatch::try_new(schema.clone(), cols).unwrap()
            })
            .collect();
        let mut t = Table::new();
        let started = std::time::Instant::now();
        for b in &batches {
            t.insert(b, 86_400_000_000_000);
        }
        let took = started.elapsed();
        let points = 864 * 2000;
        println!(
            "{points} points in {took:?}: {:.0} ns per point, {:.1} bytes per value held ({} bytes, {} values)",
            took.as_nanos() as f64 / points as f64,
            t.bytes as f64 / t.values as f64,
            t.bytes,
            t.values
        );
    }
}
