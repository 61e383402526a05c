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
//! - `latest`: each series' latest time the engine holds or is about to;
//! - `rewritten`: per series, the time range of rows written at or before
//!   that series' latest time (a rewrite, or a late point: both are merged,
//!   which is exact either way).
//!
//! Both are loaded from the table itself the first time a table is touched
//! after start ([`IdentityIndex::before_insert`], [`IdentityIndex::snapshot`]):
//! each series' `max(time)`, and the series and times holding more than one
//! row. The table is the truth, so a crash, a replay or a restart cannot
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

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::{TimestampNanosecondType, UInt64Type};
use parking_lot::Mutex;

use crate::engine::PooledConnection;
use crate::error::{EngineError, Result};
use crate::table::{qualified, SERIES_ID, TIME};

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
    latest: BySeries<i64>,
    rewritten: BySeries<(i64, i64)>,
    /// Reload from the engine before the next use (admin SQL ran), keeping
    /// what is known: an insert in flight is in `latest` already.
    stale: bool,
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

impl IdentityIndex {
    fn table(&self, db: &str, measurement: &str) -> Arc<Table> {
        self.tables
            .lock()
            .entry((db.to_string(), measurement.to_string()))
            .or_default()
            .clone()
    }

    /// Records the rows of `batch` (coalesced: `time` Timestamp(ns),
    /// `series_id` UInt64) before they are inserted into `db`.`measurement`
    /// (which exists): a row at or before its series' latest time marks a
    /// possible rewrite, and bumps the table's epoch when that is news.
    pub fn before_insert(
        &self,
        conn: &PooledConnection,
        db: &str,
        measurement: &str,
        batch: &RecordBatch,
    ) -> Result<()> {
        let arrow_err = |what: &str| EngineError::Arrow(format!("identity index: {what}"));
        let times = batch
            .column_by_name(TIME)
            .and_then(|c| c.as_primitive_opt::<TimestampNanosecondType>())
            .ok_or_else(|| arrow_err("no Timestamp(ns) time column"))?;
        let series = batch
            .column_by_name(SERIES_ID)
            .and_then(|c| c.as_primitive_opt::<UInt64Type>())
            .ok_or_else(|| arrow_err("no UInt64 series_id column"))?;
        let table = self.table(db, measurement);
        let mut guard = table.known.lock();
        let known = loaded(&mut guard, conn, db, measurement)?;
        let mut news = false;
        for (&sid, &t) in series.values().iter().zip(times.values().iter()) {
            match known.latest.get_mut(&sid) {
                Some(latest) if t <= *latest => match known.rewritten.get_mut(&sid) {
                    Some(r) if r.0 <= t && t <= r.1 => {}
                    Some(r) => {
                        *r = (r.0.min(t), r.1.max(t));
                        news = true;
                    }
                    None => {
                        known.rewritten.insert(sid, (t, t));
                        news = true;
                    }
                },
                Some(latest) => *latest = t,
                None => {
                    known.latest.insert(sid, t);
                }
            }
        }
        if news {
            table.epoch.fetch_add(1, SeqCst);
        }
        Ok(())
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

    /// An admin statement that may change data starts: reads group
    /// everything until [`admin_write_done`](Self::admin_write_done), and
    /// reads running now will not trust what they read.
    pub fn admin_write_started(&self) {
        self.admin_writes.fetch_add(1, SeqCst);
        self.admin_epoch.fetch_add(1, SeqCst);
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
    }
}

/// The table's index, loaded (or reloaded, keeping what is known) from the
/// engine when needed. A table the engine does not have holds nothing.
fn loaded<'a>(
    known: &'a mut Option<Known>,
    conn: &PooledConnection,
    db: &str,
    measurement: &str,
) -> Result<&'a mut Known> {
    if known.as_ref().is_some_and(|k| !k.stale) {
        return Ok(known.as_mut().expect("checked"));
    }
    let k = known.get_or_insert_with(Known::default);
    let table = qualified(db, measurement);
    let latest = format!(
        "SELECT series_id, toUnixTimestamp64Nano(max(time)) FROM {table} GROUP BY series_id"
    );
    // Sorted by (series_id, time): grouped in order, streaming.
    let shared = format!(
        "SELECT series_id, toUnixTimestamp64Nano(min(time)), toUnixTimestamp64Nano(max(time)) \
         FROM (SELECT series_id, time FROM {table} GROUP BY series_id, time HAVING count() > 1) \
         GROUP BY series_id SETTINGS optimize_aggregation_in_order = 1"
    );
    let rows = |sql: &str| -> Result<Vec<Vec<i128>>> {
        match conn.query(sql, chdb_rust::format::OutputFormat::TabSeparated) {
            Ok(out) => Ok(String::from_utf8_lossy(&out)
                .lines()
                .map(|l| l.split('\t').filter_map(|v| v.parse().ok()).collect())
                .collect()),
            Err(e) if absent(&e) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    };
    for r in rows(&latest)? {
        if let [sid, t] = r[..] {
            let (sid, t) = (sid as u64, t as i64);
            let e = k.latest.entry(sid).or_insert(t);
            *e = (*e).max(t);
        }
    }
    for r in rows(&shared)? {
        if let [sid, a, b] = r[..] {
            let (sid, a, b) = (sid as u64, a as i64, b as i64);
            let e = k.rewritten.entry(sid).or_insert((a, b));
            *e = (e.0.min(a), e.1.max(b));
        }
    }
    k.stale = false;
    Ok(k)
}

fn absent(e: &EngineError) -> bool {
    let m = e.to_string();
    ["UNKNOWN_TABLE", "UNKNOWN_DATABASE"]
        .iter()
        .any(|c| m.contains(c))
}
