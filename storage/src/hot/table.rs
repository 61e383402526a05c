//! One measurement's held points: per series (`series.rs`) sealed compressed
//! chunks and a plain open tail, point identity on insert (a point at a time the
//! series holds overwrites it field by field: last write wins, as the engine's
//! point merge reads it).

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::Hasher;

use engine::arrow::array::{Array, AsArray, RecordBatch, StringArray};
use engine::arrow::datatypes::{Int64Type, UInt64Type};

pub(crate) use super::chunk::{Bounds, Chunk};
use super::column::Src;
pub(crate) use super::column::{Column, Plain, Values};
pub(crate) use super::series::{Series, Sift, TIME_BYTES, VALUE_BYTES};
pub(crate) use super::tag_index::TagIndex;

/// Points per sealed chunk (`series.rs`): TSBS's shape held 0.8–0.9 bytes per
/// value at 256, 512 and 1,024 alike (`cost.rs`); at 1,024 (and its eighth of
/// slack) a 10 s series keeps its last 2.8–3.2 h plain, so the usual dashboard
/// range (the last hour or three) decodes nothing.
const CHUNK: usize = 1024;

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

/// One measurement's held points.
#[derive(Debug)]
pub(crate) struct Table {
    /// Every point of the measurement with a time at or after this is held.
    pub(crate) complete_from: i64,
    /// The newest time ever held.
    pub(crate) newest: i64,
    /// Every series the measurement has is in `series` (`SHOW TAG VALUES`
    /// from the store: `influxql/hot/tag_values.rs`). Eviction by window keeps
    /// each series' newest points, so only emptying the table, a refill (older
    /// series may be in the engine only) or a point of a new series older than
    /// `complete_from` (left to the engine) make this false, for good.
    pub(crate) every_series: bool,
    /// Field names, by index (`Series::columns`).
    pub(crate) fields: Vec<String>,
    pub(crate) series: SeriesMap,
    /// `series` by tag key and value: changed only with `series` (a series
    /// added in `merge`, all forgotten in `empty`).
    pub(crate) tags: TagIndex,
    /// What the held points take, bytes (`HotConfig::max_memory`).
    pub(crate) bytes: usize,
    /// Values held (times and fields).
    pub(crate) values: usize,
    /// Kept between inserts: no allocation per batch.
    scratch: Groups,
    /// Points per sealed chunk.
    pub(crate) chunk: usize,
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

impl Table {
    /// A measurement first seen now: nothing of it was written before.
    pub(crate) fn new() -> Table {
        Table {
            complete_from: i64::MIN,
            newest: i64::MIN,
            every_series: true,
            fields: Vec::new(),
            series: SeriesMap::default(),
            tags: TagIndex::default(),
            bytes: 0,
            values: 0,
            scratch: Groups::default(),
            chunk: CHUNK,
        }
    }

    /// Forgets every held point; complete again only from after the newest
    /// time ever held (what comes later is all new).
    pub(crate) fn empty(&mut self) {
        self.series.clear();
        self.tags.clear();
        self.every_series = false;
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
        let missed = std::cell::Cell::new(false);
        g.group(batch.num_rows(), |row| {
            if time.is_null(row) || sid.is_null(row) {
                return None;
            }
            if time.value(row) < self.complete_from {
                // Older than what the table holds completely: the engine has it
                // (and a series only it has, if the table lacks this one).
                if !self.series.contains_key(&sid.value(row)) {
                    missed.set(true);
                }
                return None;
            }
            Some(sid.value(row))
        });
        if missed.get() {
            self.every_series = false;
        }
        let nfields = self.fields.len();
        let mut present = vec![false; nfields];
        for (fi, _, _) in &fields {
            present[*fi] = true;
        }
        let times = time.values();
        for (k, id) in g.ids.iter().enumerate() {
            let rows = &g.order[g.starts[k] as usize..g.starts[k + 1] as usize];
            let series = match self.series.entry(*id) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    let tags = tags_at(&tags, rows[0] as usize);
                    self.tags.add(*id, &tags);
                    let new = Series::new(tags);
                    self.bytes += new.bytes();
                    e.insert(new)
                }
            };
            let (bytes, values) = (series.bytes(), series.values());
            series.merge(
                rows, times, &fields, &present, nfields, overwrite, self.chunk,
            );
            self.bytes = (self.bytes + series.bytes()).saturating_sub(bytes);
            self.values = (self.values + series.values()).saturating_sub(values);
            if let Some(last) = series.newest() {
                self.newest = self.newest.max(last);
            }
        }
        for &id in &g.ids {
            self.evict(id, window);
        }
        self.scratch = g;
        true
    }

    /// Adds the series of `batch` (ingest's layout) it lacks, tags only:
    /// their points are before `complete_from`, the engine's (the refill,
    /// `refill.rs`). False when the batch is not in that layout.
    pub(crate) fn seed_series(&mut self, batch: &RecordBatch) -> bool {
        let schema = batch.schema();
        let Some(sid) = batch
            .column_by_name("series_id")
            .and_then(|c| c.as_primitive_opt::<UInt64Type>())
        else {
            return false;
        };
        let mut tags = Vec::new();
        for (i, f) in schema.fields().iter().enumerate() {
            let name = f.name().as_str();
            if name == "time" || name == "series_id" || f.is_nullable() {
                continue;
            }
            let Some(s) = batch.column(i).as_string_opt::<i32>() else {
                return false;
            };
            tags.push((name, s));
        }
        for row in 0..batch.num_rows() {
            if sid.is_null(row) {
                continue;
            }
            let id = sid.value(row);
            if let Entry::Vacant(e) = self.series.entry(id) {
                let tags = tags_at(&tags, row);
                // Listed by its tags too, or a read's tag condition would
                // never name it (`tag_index.rs`).
                self.tags.add(id, &tags);
                let new = Series::new(tags);
                self.bytes += new.bytes();
                e.insert(new);
            }
        }
        true
    }

    /// Drops series `id`'s points older than `window` before its newest:
    /// whole sealed chunks, so a series may hold up to a chunk more than the
    /// window (what the table holds completely stays the cut).
    fn evict(&mut self, id: u64, window: i64) {
        let Some(s) = self.series.get_mut(&id) else {
            return;
        };
        let (Some(first), Some(last)) = (s.oldest(), s.newest()) else {
            return;
        };
        let cut = last.saturating_sub(window);
        if first >= cut.saturating_sub(window / 8) {
            return;
        }
        let (bytes, values) = (s.bytes(), s.values());
        s.evict_before(cut);
        self.values = (self.values + s.values()).saturating_sub(values);
        self.bytes = (self.bytes + s.bytes()).saturating_sub(bytes);
        self.complete_from = self.complete_from.max(cut);
    }
}

/// A series' tags at batch row `row`: its non-empty tag values, by key.
fn tags_at(tags: &[(&str, &StringArray)], row: usize) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = tags
        .iter()
        .filter(|(_, a)| !a.value(row).is_empty())
        .map(|(k, a)| (k.to_string(), a.value(row).to_string()))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use engine::arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray, UInt64Array};
    use engine::arrow::datatypes::{Field, Schema};

    use super::*;
    use engine::arrow::datatypes::DataType;

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

    fn floats(s: &Plain) -> Vec<Option<f64>> {
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
    fn a_seeded_series_is_found_by_its_tags() {
        let mut t = Table::new();
        assert!(t.insert(&batch(&[(1, "a", 20, Some(2.0), None)]), i64::MAX));
        // Series 2 has points only before the refill's cutoff: tags only.
        assert!(t.seed_series(&batch(&[(2, "b", 5, None, None), (1, "a", 5, None, None)])));
        assert_eq!(t.tags.series_with("host", "a"), &[1]);
        assert_eq!(t.tags.series_with("host", "b"), &[2]);
        assert_eq!(t.series[&2].tag("host"), "b");
        // Its tags count against the memory budget as points do.
        assert_eq!(t.bytes, t.series[&1].bytes() + host("b"));
        assert_eq!(t.series[&2].bytes(), host("b"));
    }

    /// What a series' `host` tag of value `v` takes (`series::tag_bytes`).
    fn host(v: &str) -> usize {
        super::super::series::tag_bytes(&[("host".to_string(), v.to_string())])
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
        let s = t.series[&1].all();
        assert_eq!(s.times, vec![10, 15, 20]);
        assert_eq!(floats(&s), vec![Some(1.0), Some(1.5), Some(2.0)]);
        let c = s.columns[1].as_ref().unwrap();
        assert_eq!(c.valid, vec![false, false, true]);
        assert!(matches!(&c.values, Values::Integer(v) if v[2] == 21));
        assert_eq!(t.series[&1].tag("host"), "a");
        assert_eq!(t.series[&1].tag("region"), "");
        assert_eq!(t.complete_from, i64::MIN);
        assert_eq!(t.values, 3 * 3);
        assert_eq!(t.bytes, 3 * (TIME_BYTES + 2 * VALUE_BYTES) + host("a"));
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
        let s = t.series[&1].all();
        assert_eq!(s.times, vec![10, 20, 30]);
        assert_eq!(floats(&s), vec![Some(1.0), Some(2.0), Some(3.5)]);
        let c = s.columns[1].as_ref().unwrap();
        assert_eq!(c.valid, vec![true, true, true]);
        assert!(matches!(&c.values, Values::Integer(v) if v == &vec![1, 2, 3]));
        assert_eq!(t.bytes, 3 * (TIME_BYTES + 2 * VALUE_BYTES) + host("a"));
    }

    #[test]
    fn eviction_raises_what_the_table_holds_completely() {
        let mut t = Table::new();
        let rows: Vec<_> = (0..100)
            .map(|k| (7, "a", k * 10, Some(k as f64), None))
            .collect();
        // A window of 80: the first points go once they are a window and an eighth old.
        assert!(t.insert(&batch(&rows), 80));
        assert_eq!(t.series[&7].oldest(), Some(990 - 80));
        assert_eq!(t.complete_from, 990 - 80);
        // A point older than that is the engine's only.
        assert!(t.insert(&batch(&[(7, "a", 5, Some(0.5), None)]), 80));
        assert_eq!(t.series[&7].oldest(), Some(990 - 80));
        assert_eq!(t.values, t.series[&7].len() * 2);
        // Emptied: complete again only after the newest time held.
        t.empty();
        assert_eq!(t.complete_from, 991);
        assert!(t.insert(&batch(&[(7, "a", 995, Some(1.0), None)]), 80));
        assert_eq!(t.series[&7].all().times, vec![995]);
    }

    #[test]
    fn every_series_holds_until_a_series_may_be_the_engines_only() {
        let mut t = Table::new();
        let rows: Vec<_> = (0..100)
            .map(|k| (7, "a", k * 10, Some(k as f64), None))
            .collect();
        // Eviction by window keeps each series (its newest points).
        assert!(t.insert(&batch(&rows), 80));
        assert!(t.complete_from > 0 && t.every_series);
        // An old point of a held series changes nothing; a new series' does.
        assert!(t.insert(&batch(&[(7, "a", 5, Some(0.5), None)]), 80));
        assert!(t.every_series);
        assert!(t.insert(&batch(&[(8, "b", 5, Some(0.5), None)]), 80));
        assert!(!t.every_series && !t.series.contains_key(&8));
        // Emptied: the series written before are the engine's only.
        let mut t = Table::new();
        assert!(t.insert(&batch(&rows), 80));
        t.empty();
        assert!(!t.every_series);
    }

    #[test]
    fn eviction_drops_whole_sealed_chunks_and_counts_their_bytes() {
        let mut t = Table::new();
        t.chunk = 16;
        // 200 points at 10 apart, a window of 800: 80 points and an eighth.
        for k in 0..200 {
            let row = (7, "a", k * 10, Some((k % 5) as f64), Some(k));
            assert!(t.insert(&batch(&[row]), 800));
        }
        let s = &t.series[&7];
        assert!(s.sealed() >= 4, "{} sealed", s.sealed());
        // Raised at the last eviction: at most an eighth of a window (and
        // the chunk that straddled the cut then) ago.
        let cut = t.complete_from;
        assert!(
            (1990 - 800 - 100 - 16 * 10..=1990 - 800).contains(&cut),
            "{cut}"
        );
        // Whole chunks: what is held reaches back past the cut, by less than a chunk.
        let oldest = s.oldest().unwrap();
        assert!(oldest <= cut && oldest > cut - 16 * 10, "oldest {oldest}");
        let all = s.all();
        assert_eq!(
            all.times,
            (oldest / 10..200).map(|k| k * 10).collect::<Vec<_>>()
        );
        assert_eq!(t.values, s.len() * 3);
        assert_eq!(t.bytes, s.bytes());
        // Sealed points take less than the plain tail's 8 + 2 × 9 bytes, even
        // in chunks this small.
        assert!(
            t.bytes < s.len() * (TIME_BYTES + 2 * VALUE_BYTES),
            "{} bytes",
            t.bytes
        );
        // A read of a range inside the sealed chunks decodes just those, and
        // of them only the fields it asks for.
        let mut scratch = Plain::default();
        let p = s.points(cut, cut + 100, &[1], &mut scratch);
        assert!(p.times.len() < all.times.len());
        let span = p.span(cut, cut + 100);
        assert_eq!(
            p.times[span.clone()],
            (cut / 10..=cut / 10 + 10)
                .map(|k| k * 10)
                .collect::<Vec<_>>()
        );
        assert!(p.columns[0].is_none());
        let i = p.columns[1].as_ref().unwrap();
        assert!(matches!(&i.values, Values::Integer(v) if v[span.start] == cut / 10));
    }

    #[test]
    fn rewrites_and_fills_reach_into_sealed_chunks() {
        let mut t = Table::new();
        t.chunk = 8;
        let rows: Vec<_> = (0..40).map(|k| (1, "a", k * 10, None, Some(k))).collect();
        assert!(t.insert(&batch(&rows), i64::MAX));
        assert!(t.series[&1].sealed() >= 3);
        // A rewrite of a sealed point, a late point between two, a new field.
        assert!(t.insert(
            &batch(&[
                (1, "a", 30, Some(3.5), Some(-3)),
                (1, "a", 35, Some(0.5), None)
            ]),
            i64::MAX
        ));
        // The refill's snapshot: only slots without a value are filled.
        assert!(t.fill(
            &batch(&[
                (1, "a", 30, Some(9.0), Some(9)),
                (1, "a", 20, Some(2.0), Some(9))
            ]),
            i64::MAX
        ));
        let s = t.series[&1].all();
        assert_eq!(s.times.len(), 41);
        assert_eq!(&s.times[2..6], &[20, 30, 35, 40]);
        assert_eq!(
            floats(&s)[..6],
            [None, None, Some(2.0), Some(3.5), Some(0.5), None]
        );
        let c = s.columns[1].as_ref().unwrap();
        let Values::Integer(v) = &c.values else {
            panic!("not integers")
        };
        assert_eq!(&v[2..5], &[2, -3, 0]);
        assert_eq!(&c.valid[2..6], &[true, true, false, true]);
        assert_eq!(t.values, 41 * 3);
        assert_eq!(t.bytes, t.series[&1].bytes());
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
        // The default chunk, and one so small that late points and rewrites
        // land in sealed chunks all the time.
        for chunk in [CHUNK, 8] {
            let mut model: Model = BTreeMap::new();
            let mut t = Table::new();
            t.chunk = chunk;
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
                let held = &t.series[s].all();
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
    }
}
