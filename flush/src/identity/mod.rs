//! Which points of a table may have been written more than once.
//!
//! InfluxDB's point identity (a point written twice is one point, its fields
//! merged, last write wins) made every read group all rows by
//! `(series_id, time)`: most of a heavy query's time (docs/influxql.md, "What
//! point identity costs"), although time-series writes are append-mostly and
//! nearly every point has one row. The flusher sees every row before the
//! engine does, so it knows, per table, which series were written at or
//! before a time they already had: only there can two rows share a point.
//! Reads group those rows; every other row is a point as it is.
//!
//! Per table, in memory:
//! - `written`: per series, where its rows may lie: every time at or before
//!   a floor, and up to [`SPANS`] time ranges above it (each the first and
//!   last time of one insert's rows of that series, merged where they
//!   overlap; past [`SPANS`] the lowest joins the floor). A late row that
//!   falls between them, as when concurrent requests of one writer commit
//!   out of order, is known to be new: no grouping for it.
//! - `rewritten`: per series, the time range of rows that may share a point
//!   with another row (written where the series may have a row already, or
//!   twice in one insert). Grouping them is exact either way.
//!
//! About 60 bytes per series a table has, while the process runs.
//!
//! Both are loaded from the table itself the first time a table is touched
//! after start ([`IdentityIndex::before_insert`], [`IdentityIndex::snapshot`]):
//! each series' `max(time)` (its floor), and the series and times holding
//! more than one row. The table is the truth, so a crash, a replay or a restart cannot
//! leave the index claiming less than the table holds. Rows inserted after
//! the load pass [`IdentityIndex::before_insert`] under the table's lock
//! before their INSERT, so an insert in flight is always in the index.
//!
//! A read takes a [`Snapshot`] before its statement and asks
//! [`Snapshot::still_valid`] after it: a rewrite the flusher found meanwhile
//! (its rows may be in what the statement read) bumps the table's epoch, and
//! the read runs again (or groups everything). Admin SQL may insert rows
//! anywhere: while such a statement runs every read groups everything, and
//! afterwards each table reloads from the engine.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch, TimestampNanosecondArray, UInt64Array};
use arrow::datatypes::{TimestampNanosecondType, UInt64Type};
use engine::table::{SERIES_ID, TIME};
use engine::{AdminWriteObserver, PooledConnection};
use engine::{EngineError, Result};
use parking_lot::Mutex;

mod last;
mod lookup;
mod written;

pub use last::{Cell, LastPoint, LastPoints, Reader, TableLasts};

use lookup::loaded;
use written::Written;
pub use written::SPANS;

/// Rewritten series a read lists in its statement before it groups the whole
/// table instead (~65 bytes each, within the engine's statement size).
pub const MAX_LISTED_SERIES: usize = 500;

/// What a read must group to apply point identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rewrites {
    /// No point of the table has more than one row: rows are points.
    None,
    /// Only rows of these series inside these time ranges (ns, inclusive)
    /// may share a point: `(series_id, first, last)`, sorted by series.
    Ranges(Vec<(u64, i64, i64)>),
    /// Any row may share its point with another: group them all.
    All,
}

/// Column `name` of `batch` as a `T` array, or an error naming `who` and
/// what the column should have been.
pub(crate) fn typed<'b, T: arrow::datatypes::ArrowPrimitiveType>(
    batch: &'b RecordBatch,
    name: &str,
    who: &str,
) -> Result<&'b arrow::array::PrimitiveArray<T>> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<T>())
        .ok_or_else(|| EngineError::Arrow(format!("{who}: no {} {name} column", T::DATA_TYPE)))
}

/// Series ids are xxh3 hashes already: hashing them again would cost the
/// insert path a second hash per row.
#[derive(Debug, Default)]
struct SeriesIdHasher(u64);

impl Hasher for SeriesIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type BySeries<V> = HashMap<u64, V, BuildHasherDefault<SeriesIdHasher>>;

/// What one table is known to hold.
#[derive(Debug, Default)]
struct Known {
    written: BySeries<Written>,
    rewritten: BySeries<(i64, i64)>,
    /// Reload from the engine before the next use (admin SQL ran), keeping
    /// what is known: an insert in flight is in `written` already.
    stale: bool,
    /// Inserts recorded and not yet ended, by token: their rows may be
    /// invisible to a lookup.
    in_flight: HashMap<u64, InFlight>,
    next_token: u64,
}

impl Known {
    /// Marks `(sid, t)` as possibly sharing a point; true if that is news.
    fn rewrite(&mut self, sid: u64, t: i64) -> bool {
        match self.rewritten.get_mut(&sid) {
            Some(r) if r.0 <= t && t <= r.1 => false,
            Some(r) => {
                *r = (r.0.min(t), r.1.max(t));
                true
            }
            None => {
                self.rewritten.insert(sid, (t, t));
                true
            }
        }
    }
}

/// An insert recorded and not yet ended: each series' first and last time
/// in it (a quick test), and its rows (the exact one).
#[derive(Debug, Clone)]
struct InFlight {
    spans: Arc<BySeries<(i64, i64)>>,
    series: UInt64Array,
    times: TimestampNanosecondArray,
}

impl InFlight {
    /// Which of `keys` (series, time) this insert writes.
    fn holds(&self, keys: &HashSet<(u64, i64)>, out: &mut HashSet<(u64, i64)>) {
        let near = keys.iter().any(|(sid, t)| {
            self.spans
                .get(sid)
                .is_some_and(|&(a, b)| a <= *t && *t <= b)
        });
        if !near {
            return;
        }
        for (&sid, &t) in self.series.values().iter().zip(self.times.values().iter()) {
            if keys.contains(&(sid, t)) {
                out.insert((sid, t));
            }
        }
    }
}

/// One series' rows in the insert being recorded.
#[derive(Debug, Clone, Copy)]
struct InBatch {
    first: i64,
    last: i64,
    /// Its rows came in time order (else duplicates are looked for exactly).
    ordered: bool,
}

#[derive(Debug, Default)]
struct Table {
    known: Mutex<Option<Known>>,
    /// Bumped (before the INSERT) whenever `rewritten` grows.
    epoch: AtomicU64,
}

/// The index of every table this process touched. One per engine.
#[derive(Debug, Default)]
pub struct IdentityIndex {
    tables: Mutex<HashMap<(String, String), Arc<Table>>>,
    /// The last point of each series of the tables read for them.
    last: LastPoints,
    /// Admin statements that may change data, running now.
    admin_writes: AtomicU64,
    /// Bumped when an admin statement that may change data starts and ends.
    admin_epoch: AtomicU64,
}

/// A read's view of one table ([`IdentityIndex::snapshot`]).
#[derive(Debug)]
pub struct Snapshot {
    /// What to group.
    pub rewrites: Rewrites,
    table: Arc<Table>,
    epoch: u64,
    admin_epoch: u64,
}

impl Snapshot {
    /// Whether a statement that started after this snapshot and has ended
    /// now read nothing the snapshot did not know of.
    pub fn still_valid(&self, index: &IdentityIndex) -> bool {
        self.table.epoch.load(SeqCst) == self.epoch
            && index.admin_epoch.load(SeqCst) == self.admin_epoch
    }
}

/// An insert recorded by [`IdentityIndex::before_insert`]: while it lives,
/// other inserts treat its rows as possibly present. Drop it once the INSERT
/// has ended, whatever its outcome.
#[derive(Debug)]
pub struct InsertGuard {
    table: Arc<Table>,
    token: u64,
}

impl Drop for InsertGuard {
    fn drop(&mut self) {
        if let Some(k) = self.table.known.lock().as_mut() {
            k.in_flight.remove(&self.token);
        }
    }
}

impl IdentityIndex {
    /// An index keeping the last points of at most `last_point_series`
    /// series ([`LastPoints`]; 0: none).
    pub fn new(last_point_series: usize) -> IdentityIndex {
        IdentityIndex {
            last: LastPoints::new(last_point_series),
            ..IdentityIndex::default()
        }
    }

    /// The last point of each series of the tables read for them.
    pub fn last_points(&self) -> &LastPoints {
        &self.last
    }

    fn table(&self, db: &str, measurement: &str) -> Arc<Table> {
        self.tables
            .lock()
            .entry((db.to_string(), measurement.to_string()))
            .or_default()
            .clone()
    }

    /// Records the rows of `batch` (coalesced: `time` Timestamp(ns),
    /// `series_id` UInt64) before they are inserted into `db`.`measurement`
    /// (which exists), and bumps the table's epoch when a rewrite is news.
    /// Keep the returned guard until the INSERT has ended.
    ///
    /// A row is a rewrite when its time repeats within the batch, or when
    /// the series may have a row there already ([`Written`]) and it does: the
    /// engine is asked for those rows, and a row that may be in an insert
    /// still in flight (invisible to the question) counts as one. So rows
    /// that only arrive late (concurrent requests of one writer committed out
    /// of order) are known to be new, and reads need not group them.
    pub fn before_insert(
        &self,
        conn: &PooledConnection,
        db: &str,
        measurement: &str,
        batch: &RecordBatch,
    ) -> Result<InsertGuard> {
        let times = typed::<TimestampNanosecondType>(batch, TIME, "identity index")?;
        let series = typed::<UInt64Type>(batch, SERIES_ID, "identity index")?;
        let pairs = || series.values().iter().zip(times.values().iter());
        let table = self.table(db, measurement);
        let (guard, suspects, others) = {
            let mut lock = table.known.lock();
            let known = loaded(&mut lock, conn, db, measurement)?;
            let mut news = false;
            let mut suspects: Vec<(u64, i64)> = Vec::new();
            let mut batch_rows: BySeries<InBatch> = BySeries::default();
            for (&sid, &t) in pairs() {
                // A time already in the series' rewritten range needs no
                // lookup: it is grouped whatever the engine holds.
                let grouped = known
                    .rewritten
                    .get(&sid)
                    .is_some_and(|&(a, b)| a <= t && t <= b);
                if !grouped && known.written.get(&sid).is_some_and(|w| w.may_hold(t)) {
                    suspects.push((sid, t));
                }
                // In time order, only an equal time repeats a point within
                // the batch; out of order, see below.
                match batch_rows.get_mut(&sid) {
                    Some(b) if t > b.last => b.last = t,
                    Some(b) if t == b.last => news |= known.rewrite(sid, t),
                    Some(b) => {
                        b.first = b.first.min(t);
                        b.ordered = false;
                    }
                    None => {
                        batch_rows.insert(
                            sid,
                            InBatch {
                                first: t,
                                last: t,
                                ordered: true,
                            },
                        );
                    }
                }
            }
            // Series whose rows came out of order (concurrent requests folded
            // into one insert): their times, sorted, repeats found.
            // (Most inserts have none: no second pass over their rows then.)
            if batch_rows.values().any(|b| !b.ordered) {
                let mut unordered: Vec<(u64, i64)> = pairs()
                    .filter(|(sid, _)| batch_rows.get(sid).is_some_and(|b| !b.ordered))
                    .map(|(&sid, &t)| (sid, t))
                    .collect();
                unordered.sort_unstable();
                for w in unordered.windows(2) {
                    if w[0] == w[1] {
                        news |= known.rewrite(w[0].0, w[0].1);
                    }
                }
            }
            let mut spans = BySeries::default();
            for (sid, b) in batch_rows {
                known
                    .written
                    .entry(sid)
                    .or_insert(Written::NOTHING)
                    .add(b.first, b.last);
                spans.insert(sid, (b.first, b.last));
            }
            let others: Vec<InFlight> = known.in_flight.values().cloned().collect();
            let token = known.next_token;
            known.next_token += 1;
            known.in_flight.insert(
                token,
                InFlight {
                    spans: Arc::new(spans),
                    series: series.clone(),
                    times: times.clone(),
                },
            );
            if news {
                table.epoch.fetch_add(1, SeqCst);
            }
            let guard = InsertGuard {
                table: table.clone(),
                token,
            };
            (guard, suspects, others)
        };
        if suspects.is_empty() {
            return Ok(guard);
        }
        // Asked with the table unlocked: reads and other inserts go on.
        let present = lookup::present(conn, db, measurement, &suspects)?;
        // Suspects the engine does not hold may be in an insert still in
        // flight: those its rows do write are rewrites too.
        let absent: HashSet<(u64, i64)> = suspects
            .iter()
            .copied()
            .filter(|k| !present.contains(k))
            .collect();
        let mut in_flight = HashSet::new();
        if !absent.is_empty() {
            for o in &others {
                o.holds(&absent, &mut in_flight);
            }
        }
        let mut lock = table.known.lock();
        let known = lock.as_mut().expect("loaded above");
        let mut news = false;
        for (sid, t) in suspects {
            if present.contains(&(sid, t)) || in_flight.contains(&(sid, t)) {
                news |= known.rewrite(sid, t);
            }
        }
        if news {
            table.epoch.fetch_add(1, SeqCst);
        }
        Ok(guard)
    }

    /// What a read of `db`.`measurement` must group, as known now. Loads the
    /// table's index from the engine first if this process has not yet.
    pub fn snapshot(
        &self,
        conn: &dyn Fn() -> PooledConnection,
        db: &str,
        measurement: &str,
    ) -> Result<Snapshot> {
        let table = self.table(db, measurement);
        // A connection is taken with the table unlocked: a flush worker holds
        // one while it waits for the table's lock.
        let mut held: Option<PooledConnection> = None;
        loop {
            let admin_epoch = self.admin_epoch.load(SeqCst);
            let mut guard = table.known.lock();
            let epoch = table.epoch.load(SeqCst);
            let rewrites = if self.admin_writes.load(SeqCst) > 0 {
                Rewrites::All
            } else {
                let known = match (guard.as_ref().is_none_or(|k| k.stale), &held) {
                    (false, _) => guard.as_mut().expect("loaded"),
                    (true, Some(c)) => loaded(&mut guard, c, db, measurement)?,
                    (true, None) => {
                        drop(guard);
                        held = Some(conn());
                        continue;
                    }
                };
                match known.rewritten.len() {
                    0 => Rewrites::None,
                    n if n <= MAX_LISTED_SERIES => {
                        let mut ranges: Vec<_> = known
                            .rewritten
                            .iter()
                            .map(|(&s, &(a, b))| (s, a, b))
                            .collect();
                        ranges.sort_unstable();
                        Rewrites::Ranges(ranges)
                    }
                    _ => Rewrites::All,
                }
            };
            return Ok(Snapshot {
                rewrites,
                table: table.clone(),
                epoch,
                admin_epoch,
            });
        }
    }

    /// Forgets table `(db, measurement)` (`DROP MEASUREMENT`, with no insert into it
    /// running): a table created again under its name starts from what the engine holds.
    pub fn forget_table(&self, db: &str, measurement: &str) {
        self.tables
            .lock()
            .remove(&(db.to_string(), measurement.to_string()));
        self.last.forget_table(db, measurement);
    }

    /// Forgets the last points of `db`'s tables (`DROP DATABASE`). (What may
    /// share a point is kept: claiming more than a table holds is safe.)
    pub fn forget_database(&self, db: &str) {
        self.last.forget_database(db);
    }

    /// An admin statement that may change data starts: reads group
    /// everything until [`admin_write_done`](Self::admin_write_done), and
    /// reads running now will not trust what they read. (The engine's SQL
    /// sandbox calls it through [`AdminWriteObserver`].)
    pub fn admin_write_started(&self) {
        self.admin_writes.fetch_add(1, SeqCst);
        self.admin_epoch.fetch_add(1, SeqCst);
        self.last.admin_write_started();
    }

    /// The admin statement ended: every table reloads from the engine before
    /// its next use.
    pub fn admin_write_done(&self) {
        for t in self.tables.lock().values() {
            if let Some(k) = t.known.lock().as_mut() {
                k.stale = true;
            }
        }
        self.admin_epoch.fetch_add(1, SeqCst);
        self.admin_writes.fetch_sub(1, SeqCst);
        self.last.admin_write_done();
    }
}

/// The engine's SQL sandbox tells the index about admin statements that may
/// change data ([`crate::ReadState::admin_writes`]).
impl AdminWriteObserver for IdentityIndex {
    fn admin_write_started(&self) {
        IdentityIndex::admin_write_started(self);
    }

    fn admin_write_done(&self) {
        IdentityIndex::admin_write_done(self);
    }
}
