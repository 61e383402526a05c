//! The last point of every series of the tables someone reads the last
//! points of (`ORDER BY time DESC LIMIT 1`: Grafana's "current value",
//! TSBS `lastpoint`), kept in memory so such a read needs no engine
//! statement.
//!
//! Why in memory: a table is sorted by `(series_id, time)` and each part
//! holds a slice of every series, so the engine reads every granule of
//! every part to find the series' tails (docs/influxql.md has the numbers).
//! The flusher sees every row it inserts; keeping, per series, the point at
//! its latest time costs one hash lookup per inserted row, and only for
//! tables that were read this way.
//!
//! Per series, the point at its latest time: each column's value from the
//! latest write (`(__seq, __row)`) among the rows at that time, InfluxDB's
//! point identity. Merging rows in is commutative and idempotent (a later
//! time replaces the point; the same time merges column by column by
//! version; an earlier time changes nothing), so inserts ending in any
//! order, a load racing them and a read adding its unflushed rows to a copy
//! all come to the same point.
//!
//! Exactness: a table is loaded from the engine the first time it is read
//! (the rows at each series' latest time), and every INSERT that ends after
//! the load began is merged in ([`LastPoints::apply`], called after the
//! INSERT and before the rows leave the flusher's unflushed set, so a read
//! that takes the unflushed rows first and this copy second misses no
//! acknowledged row). What can change rows behind the flusher's back makes
//! the table forgotten (reloaded at its next read): a drop, an admin SQL
//! statement that may write, an insert that found its rows already in the
//! engine (a retry after an INSERT whose outcome was unknown).
//!
//! Memory: about 60 bytes per column per series; at most
//! `[sql] last_point_cache_series` series over all tables (a table that
//! would pass it is not cached, and such reads go to the engine).

use std::collections::HashMap;
use std::io::Cursor;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::ArrowNativeType;
use arrow::datatypes::{
    DataType, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, TimestampNanosecondType,
    UInt32Type, UInt64Type,
};
use arrow::ipc::reader::StreamReader;
use engine::table::{qualified, ROW, SEQ, SERIES_ID, TIME};
use engine::PooledConnection;
use engine::{EngineError, Result};
use parking_lot::Mutex;

use super::{typed, BySeries};
use strings::Strings;

/// A table that was too large to cache is tried again after this long.
const TOO_LARGE_RETRY: Duration = Duration::from_secs(60);

/// One stored value.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// A float field.
    Float(f64),
    /// A signed integer field.
    Integer(i64),
    /// An unsigned integer field.
    Unsigned(u64),
    /// A string field or a tag value (never empty for a tag: `''` is "no tag").
    /// Shared, so an answer's cell is a count more, not a copy (TSBS
    /// `lastpoint`: 9 tag cells a series, 9,000 allocations at 1,000 hosts).
    String(Arc<str>),
    /// A boolean field.
    Boolean(bool),
}

/// A column's value and the version `(__seq, __row)` of the row it came from.
#[derive(Debug, Clone, PartialEq)]
struct Versioned {
    version: (u64, u32),
    cell: Cell,
}

/// The point at one series' latest time.
#[derive(Debug, Clone, PartialEq)]
pub struct LastPoint {
    /// Its time, ns.
    pub time: i64,
    /// By column index ([`TableLasts::column`]); `None`: no value.
    cells: Vec<Option<Versioned>>,
}

impl LastPoint {
    /// The value of column `i`, if the point has one.
    pub fn cell(&self, i: usize) -> Option<&Cell> {
        self.cells.get(i)?.as_ref().map(|v| &v.cell)
    }
}

/// Reads a table's last points with an overlay of newer rows.
#[derive(Debug)]
pub struct Reader<'a> {
    base: &'a TableLasts,
    overlay: &'a TableLasts,
    /// Per column asked for: its index in `base` and in `overlay`.
    columns: Vec<(Option<usize>, Option<usize>)>,
}

impl<'a> Reader<'a> {
    /// A reader of columns `names` of `base` with `overlay` merged in.
    pub fn new(base: &'a TableLasts, overlay: &'a TableLasts, names: &[&str]) -> Reader<'a> {
        let columns = names
            .iter()
            .map(|n| (base.column(n), overlay.column(n)))
            .collect();
        Reader {
            base,
            overlay,
            columns,
        }
    }

    /// `f` over every series' point as a read sees it (in no particular
    /// order): the table's last point and the unflushed rows' (an overlay)
    /// merged by the same rules as [`TableLasts::merge`], without copying
    /// either. `f` gets its id, time and cells (the columns asked for, in
    /// that order), the cells in one buffer reused from series to series:
    /// a vector allocated a series was a tenth of TSBS `lastpoint`'s
    /// allocations at 1,000 hosts.
    pub fn for_each(&self, mut f: impl FnMut(u64, i64, &[Option<&'a Cell>])) {
        let mut cells = Vec::with_capacity(self.columns.len());
        // An empty overlay (nothing unflushed: the usual read) is not
        // looked up a series at a time.
        let overlay = (!self.overlay.series.is_empty()).then_some(&self.overlay.series);
        for (&sid, b) in &self.base.series {
            let o = overlay.and_then(|o| o.get(&sid));
            let time = self.resolve(Some(b), o, &mut cells);
            f(sid, time, &cells);
        }
        for (&sid, o) in overlay.into_iter().flatten() {
            if !self.base.series.contains_key(&sid) {
                let time = self.resolve(None, Some(o), &mut cells);
                f(sid, time, &cells);
            }
        }
    }

    /// The point of a series from its base and overlay points: its time,
    /// and its cells into `cells`.
    fn resolve(
        &self,
        b: Option<&'a LastPoint>,
        o: Option<&'a LastPoint>,
        cells: &mut Vec<Option<&'a Cell>>,
    ) -> i64 {
        let at = |p: Option<&'a LastPoint>, i: Option<usize>| -> Option<&'a Versioned> {
            p?.cells.get(i?)?.as_ref()
        };
        let (time, use_b, use_o) = match (b, o) {
            (Some(b), Some(o)) if o.time > b.time => (o.time, false, true),
            (Some(b), Some(o)) if o.time < b.time => (b.time, true, false),
            (Some(b), Some(_)) => (b.time, true, true),
            (Some(b), None) => (b.time, true, false),
            (None, Some(o)) => (o.time, false, true),
            (None, None) => (i64::MIN, false, false),
        };
        let (b, o) = (b.filter(|_| use_b), o.filter(|_| use_o));
        cells.clear();
        if let (Some(b), None) = (b, o) {
            // The table's point alone (nothing unflushed: the usual read).
            cells.extend(
                self.columns
                    .iter()
                    .map(|&(bi, _)| Some(&at(Some(b), bi)?.cell)),
            );
            return time;
        }
        cells.extend(
            self.columns
                .iter()
                .map(|&(bi, oi)| match (at(b, bi), at(o, oi)) {
                    (Some(x), Some(y)) if x.version > y.version => Some(&x.cell),
                    (_, Some(y)) => Some(&y.cell),
                    (Some(x), None) => Some(&x.cell),
                    (None, None) => None,
                }),
        );
        time
    }
}

/// The last points of one table's series.
#[derive(Debug, Default, Clone)]
pub struct TableLasts {
    columns: HashMap<String, usize>,
    /// By series id.
    pub series: HashMap<u64, LastPoint>,
    /// One copy of each string value the points hold (`strings.rs`).
    strings: Strings,
}

impl TableLasts {
    /// The index of column `name` in each point, if any row had it.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.get(name).copied()
    }

    /// Merges the rows of `batch` (the engine's layout: `time`, `series_id`,
    /// `__seq`, `__row`, then tags and fields) into the points.
    pub fn merge(&mut self, batch: &RecordBatch) -> Result<()> {
        let who = "last points";
        let time = typed::<TimestampNanosecondType>(batch, TIME, who)?;
        let series = typed::<UInt64Type>(batch, SERIES_ID, who)?;
        let seq = typed::<UInt64Type>(batch, SEQ, who)?;
        let row = typed::<UInt32Type>(batch, ROW, who)?;
        // Each series' latest time in the batch and the rows at it.
        let mut latest: BySeries<(i64, Vec<usize>)> = BySeries::default();
        for (i, (&sid, &t)) in series.values().iter().zip(time.values()).enumerate() {
            match latest.get_mut(&sid) {
                Some((lt, rows)) if t > *lt => {
                    *lt = t;
                    rows.clear();
                    rows.push(i);
                }
                Some((lt, rows)) if t == *lt => rows.push(i),
                Some(_) => {}
                None => {
                    latest.insert(sid, (t, vec![i]));
                }
            }
        }
        let schema = batch.schema();
        let mut user: Vec<(usize, &ArrayRef)> = Vec::new();
        for (field, array) in schema.fields().iter().zip(batch.columns()) {
            let name = field.name();
            if [TIME, SERIES_ID, SEQ, ROW].contains(&name.as_str()) {
                continue;
            }
            let next = self.columns.len();
            let i = *self.columns.entry(name.clone()).or_insert(next);
            user.push((i, array));
        }
        let width = self.columns.len();
        for (sid, (t, rows)) in latest {
            let point = self.series.entry(sid).or_insert_with(|| LastPoint {
                time: t,
                cells: Vec::new(),
            });
            if t < point.time {
                continue;
            }
            if t > point.time {
                point.time = t;
                point.cells.clear();
            }
            point.cells.resize(width, None);
            for r in rows {
                let version = (seq.value(r), row.value(r));
                for &(i, array) in &user {
                    let slot = &mut point.cells[i];
                    if slot.as_ref().is_some_and(|v| v.version >= version) {
                        continue;
                    }
                    let Some(cell) = cell_at(array, r, &mut self.strings) else {
                        continue;
                    };
                    *slot = Some(Versioned { version, cell });
                }
            }
        }
        Ok(())
    }
}

/// Row `i` of `array` as a cell, a string as its copy in `strings`; `None`
/// for null. (A tag column holds `''` where a point lacks the tag: kept as
/// it is, readers know their tags.)
fn cell_at(array: &ArrayRef, i: usize, strings: &mut Strings) -> Option<Cell> {
    if array.is_null(i) {
        return None;
    }
    let mut string = |s: &str| Some(Cell::String(strings.get(s)));
    match array.data_type() {
        DataType::Float64 => Some(Cell::Float(array.as_primitive::<Float64Type>().value(i))),
        DataType::Int64 => Some(Cell::Integer(array.as_primitive::<Int64Type>().value(i))),
        DataType::UInt64 => Some(Cell::Unsigned(array.as_primitive::<UInt64Type>().value(i))),
        DataType::Boolean => Some(Cell::Boolean(array.as_boolean().value(i))),
        DataType::Utf8 => string(array.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => string(array.as_string::<i64>().value(i)),
        DataType::Binary => string(&String::from_utf8_lossy(array.as_binary::<i32>().value(i))),
        DataType::Dictionary(key, _) => {
            let (keys, values): (Option<usize>, &ArrayRef) = match key.as_ref() {
                DataType::Int8 => dict_at::<Int8Type>(array, i),
                DataType::Int16 => dict_at::<Int16Type>(array, i),
                DataType::Int32 => dict_at::<Int32Type>(array, i),
                DataType::Int64 => dict_at::<Int64Type>(array, i),
                _ => return None,
            };
            cell_at(values, keys?, strings)
        }
        _ => None,
    }
}

fn dict_at<K: arrow::datatypes::ArrowDictionaryKeyType>(
    array: &ArrayRef,
    i: usize,
) -> (Option<usize>, &ArrayRef) {
    let d = array.as_dictionary::<K>();
    let key = d.keys().value(i).as_usize();
    (Some(key), d.values())
}

/// What is known of one table.
#[derive(Debug)]
enum State {
    /// Being loaded: inserts ending meanwhile are merged in already.
    Loading(TableLasts),
    /// Shared with the reads that took it: an insert ending while one holds
    /// it merges into a copy ([`Arc::make_mut`]), so a read evaluates and
    /// renders its answer from the points it borrowed, with nothing locked
    /// and no cell copied (`storage`'s `last_rows.rs`).
    Ready(Arc<TableLasts>),
    /// More series than the budget allowed, at this time.
    TooLarge(Instant),
    /// Removed from the index: a load or insert still holding it changes nothing.
    Forgotten,
}

impl State {
    fn series(&self) -> usize {
        match self {
            State::Loading(t) => t.series.len(),
            State::Ready(t) => t.series.len(),
            State::TooLarge(_) | State::Forgotten => 0,
        }
    }
}

type Key = (String, String);

/// The last points of the tables that were read for them. One per engine.
#[derive(Debug, Default)]
pub struct LastPoints {
    tables: Mutex<HashMap<Key, Arc<Mutex<State>>>>,
    /// Series cached over all tables, and the most there may be (0: none).
    cached: AtomicUsize,
    max_series: usize,
    /// Admin statements that may write, running now: no copies meanwhile.
    admin_writes: AtomicU64,
}

impl LastPoints {
    /// At most `max_series` series cached over all tables (0: none).
    pub fn new(max_series: usize) -> LastPoints {
        LastPoints {
            max_series,
            ..LastPoints::default()
        }
    }

    fn table(&self, db: &str, measurement: &str) -> Option<Arc<Mutex<State>>> {
        self.tables
            .lock()
            .get(&(db.to_string(), measurement.to_string()))
            .cloned()
    }

    /// Merges the rows of `batch` (engine layout) that the engine now holds
    /// (its INSERT ended) into `db`.`measurement`'s points, if that table is
    /// cached. Call before the rows leave the flusher's unflushed set.
    pub fn apply(&self, db: &str, measurement: &str, batch: &RecordBatch) {
        let Some(table) = self.table(db, measurement) else {
            return;
        };
        let mut state = table.lock();
        let before = state.series();
        let merged = match &mut *state {
            State::Loading(t) => t.merge(batch),
            // A copy first if a read still holds these points: at most one
            // a read, however many inserts end while it holds them.
            State::Ready(t) => Arc::make_mut(t).merge(batch),
            State::TooLarge(_) | State::Forgotten => return,
        };
        if let Err(e) = merged {
            tracing::warn!(db, measurement, "last points: {e}; forgetting the table");
            drop(state);
            self.forget_table(db, measurement);
            return;
        }
        self.account(&mut state, before);
    }

    /// Keeps the global count right after `state` changed from `before`
    /// series; a table passing the budget stops being cached.
    fn account(&self, state: &mut State, before: usize) {
        let after = state.series();
        if after > before {
            let total = self.cached.fetch_add(after - before, SeqCst) + after - before;
            if total > self.max_series {
                self.cached.fetch_sub(after, SeqCst);
                *state = State::TooLarge(Instant::now());
            }
        } else {
            self.cached.fetch_sub(before - after, SeqCst);
        }
    }

    /// Whether `db`.`measurement` is cached now.
    pub fn tracks(&self, db: &str, measurement: &str) -> bool {
        self.table(db, measurement)
            .is_some_and(|t| matches!(*t.lock(), State::Loading(_) | State::Ready(_)))
    }

    /// Runs `f` over `db`.`measurement`'s last points (with the table's
    /// inserts waiting: keep it short; a clone of the `Arc` holds them as
    /// they are for as long as it lives), loading them from the engine
    /// (through `conn`) the first time; `None` when they cannot be had now
    /// (another read is loading them, the table has too many series, an
    /// admin statement may be writing, the cache is off).
    pub fn read<R>(
        &self,
        conn: &dyn Fn() -> PooledConnection,
        db: &str,
        measurement: &str,
        f: impl FnOnce(&Arc<TableLasts>) -> R,
    ) -> Result<Option<R>> {
        if self.max_series == 0 || self.admin_writes.load(SeqCst) > 0 {
            return Ok(None);
        }
        let key = (db.to_string(), measurement.to_string());
        let (table, fresh) = {
            let mut tables = self.tables.lock();
            match tables.get(&key) {
                Some(t) => (t.clone(), false),
                None => {
                    let t = Arc::new(Mutex::new(State::Loading(TableLasts::default())));
                    tables.insert(key, t.clone());
                    (t, true)
                }
            }
        };
        if !fresh {
            let state = table.lock();
            return Ok(match &*state {
                State::Ready(t) => Some(f(t)),
                State::TooLarge(at) if at.elapsed() >= TOO_LARGE_RETRY => {
                    drop(state);
                    self.forget_table(db, measurement);
                    None
                }
                _ => None,
            });
        }
        // Loaded with nothing locked: inserts ending meanwhile merge into
        // the Loading state, and merging is order-free.
        let loaded = load(&conn(), db, measurement, self.max_series);
        let mut state = table.lock();
        let before = state.series();
        match (loaded, &mut *state) {
            (Ok(Some(batches)), State::Loading(t)) => {
                if let Err(e) = batches.iter().try_for_each(|b| t.merge(b)) {
                    drop(state);
                    self.forget_table(db, measurement);
                    return Err(e);
                }
                let State::Loading(t) = std::mem::replace(&mut *state, State::Forgotten) else {
                    unreachable!("matched above")
                };
                *state = State::Ready(Arc::new(t));
                self.account(&mut state, before);
                Ok(match &*state {
                    State::Ready(t) => Some(f(t)),
                    _ => None,
                })
            }
            (Ok(None), State::Loading(_)) => {
                *state = State::TooLarge(Instant::now());
                self.account(&mut state, before);
                Ok(None)
            }
            (Err(e), State::Loading(_)) => {
                drop(state);
                self.forget_table(db, measurement);
                Err(e)
            }
            // Forgotten (or past the budget) while it loaded.
            _ => Ok(None),
        }
    }

    /// Forgets `db`.`measurement` (dropped, or changed behind the flusher):
    /// its next read loads it from the engine again.
    pub fn forget_table(&self, db: &str, measurement: &str) {
        let removed = self
            .tables
            .lock()
            .remove(&(db.to_string(), measurement.to_string()));
        self.forget(removed);
    }

    /// Forgets every table of `db`.
    pub fn forget_database(&self, db: &str) {
        let mut removed = Vec::new();
        self.tables.lock().retain(|(d, _), t| {
            if d == db {
                removed.push(t.clone());
            }
            d != db
        });
        self.forget(removed);
    }

    fn forget_all(&self) {
        let removed: Vec<_> = self.tables.lock().drain().map(|(_, t)| t).collect();
        self.forget(removed);
    }

    /// Marks tables removed from the index forgotten (never while holding the
    /// index's lock: a state is locked before it, never after).
    fn forget(&self, removed: impl IntoIterator<Item = Arc<Mutex<State>>>) {
        for t in removed {
            let mut state = t.lock();
            self.cached.fetch_sub(state.series(), SeqCst);
            *state = State::Forgotten;
        }
    }

    pub(super) fn admin_write_started(&self) {
        self.admin_writes.fetch_add(1, SeqCst);
        self.forget_all();
    }

    pub(super) fn admin_write_done(&self) {
        self.forget_all();
        self.admin_writes.fetch_sub(1, SeqCst);
    }

    /// Series cached now, over all tables.
    pub fn cached_series(&self) -> usize {
        self.cached.load(SeqCst)
    }
}

/// The rows at each series' latest time in `db`.`measurement`, every
/// column; `None` when the table has more than `max_series` series. A table
/// the engine does not have holds nothing.
fn load(
    conn: &PooledConnection,
    db: &str,
    measurement: &str,
    max_series: usize,
) -> Result<Option<Vec<RecordBatch>>> {
    let table = qualified(db, measurement);
    let sql = format!(
        "SELECT * FROM {table} WHERE (series_id, time) IN \
         (SELECT series_id, max(time) FROM {table} GROUP BY series_id) \
         SETTINGS max_rows_to_group_by = {}, group_by_overflow_mode = 'throw', \
         output_format_arrow_string_as_string = 1",
        max_series.saturating_add(1)
    );
    let out = match conn.query(&sql, engine::OutputFormat::ArrowStream) {
        Ok(out) => out,
        Err(e) if super::lookup::absent(&e) => return Ok(Some(Vec::new())),
        Err(e) if e.to_string().contains("TOO_MANY_ROWS") => return Ok(None),
        Err(e) => return Err(e),
    };
    let arrow_err = |e: arrow::error::ArrowError| EngineError::Arrow(format!("last points: {e}"));
    let mut batches = Vec::new();
    let mut cursor = Cursor::new(out.as_slice());
    // The answer may be several IPC streams one after another.
    while (cursor.position() as usize) < out.len() {
        let reader = StreamReader::try_new(&mut cursor, None).map_err(arrow_err)?;
        for b in reader {
            batches.push(b.map_err(arrow_err)?);
        }
    }
    Ok(Some(batches))
}

mod now;
mod strings;
#[cfg(test)]
mod tests;
