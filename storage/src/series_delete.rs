//! `DELETE` and `DROP SERIES`: the points of some series, inside a time range, gone from
//! the next query on, durably, and exactly those acknowledged before the statement began.
//!
//! 1. The statement's position is the WAL's last sequence: every write acknowledged before
//!    it is at or below it; every row carries its write's sequence (`__seq`).
//! 2. Wait until the flushed watermark passes it: every such row is in the engine, and none
//!    will be replayed after a restart (a replayed row the delete had removed would come
//!    back). No write waits meanwhile.
//! 3. Per table, the engine deletes the matching rows at or below that sequence (a
//!    lightweight `DELETE`, synchronous: the next query no longer sees them); rows written
//!    since are newer and stay. The identity index and the last points reload.
//! 4. The series that have no point left anywhere go from the catalog (InfluxDB drops a
//!    series from its index once its last point is deleted): with the write gate drained
//!    (`gate.rs`) and every committed write received by the flusher, a series is gone when
//!    neither the unflushed rows nor the table have it. When no series of a measurement is
//!    left, the measurement is dropped (`measurement_drop.rs`: its fields and tag keys too).
//!
//! A `kill -9` at any step loses no acknowledged point and answers nothing; the statement
//! can be run again. Rows set aside in the dead-letter queue at or below the position are
//! deleted from it too (`dead_letter_delete.rs`), so an operator's retry cannot bring them
//! back, and a series they still hold stays in the catalog.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use engine::arrow::array::AsArray;
use engine::arrow::datatypes::UInt64Type;

use crate::{Storage, StorageError};

/// How long a delete waits for the writes acknowledged before it to reach the engine.
const FLUSH_WAIT: Duration = Duration::from_secs(60);

/// What to delete from one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableDelete {
    /// The measurement.
    pub(crate) measurement: String,
    /// The engine's condition for the rows (tag conditions and time range, SQL over the
    /// table's columns); `None` for every row.
    pub(crate) condition: Option<String>,
    /// On a ClickHouse cluster, the same rows as a shard table holds them (`time` as
    /// `Int64` nanoseconds, tags as `String`); `None` for every row.
    pub(crate) on_shards: Option<String>,
}

impl TableDelete {
    /// The measurement's tag keys in `schema`, and the engine's condition for the rows to
    /// delete that were written at or below `up_to`.
    pub(crate) fn rows_up_to(
        &self,
        schema: &[ingest::MeasurementSchema],
        up_to: u64,
    ) -> (Vec<String>, String) {
        let tags = schema
            .iter()
            .find(|m| m.name == self.measurement)
            .map(|m| m.tag_keys.clone())
            .unwrap_or_default();
        let rows = match &self.condition {
            Some(c) => format!("({c}) AND __seq <= {up_to}"),
            None => format!("__seq <= {up_to}"),
        };
        (tags, rows)
    }
}

impl Storage {
    /// Deletes what `deletes` says from `db` (see the [module](self)).
    pub(crate) fn delete_series(
        &self,
        db: &str,
        deletes: &[TableDelete],
    ) -> Result<(), StorageError> {
        self.require(db)?;
        let _admin = self.lifecycle.admin.lock();
        for d in deletes {
            // The hot store cannot tell which of its points go: it serves none of them.
            self.hot.forget(db, &d.measurement);
        }
        let up_to = self.wal.last_seq();
        self.wait_flushed(up_to)?;
        let engine = self.engine()?;
        let schema = self.catalog.schema(db);
        for d in deletes {
            let (tags, rows) = d.rows_up_to(&schema, up_to);
            let letters = self.delete_from_dead_letters(db, &d.measurement, &tags, &rows, up_to)?;
            let mut matched = letters.removed;
            let table = engine::table::qualified(db, &d.measurement);
            let exists = engine.query(
                &format!("EXISTS TABLE {table}"),
                engine::OutputFormat::TabSeparated,
            )?;
            let exists = exists.starts_with(b"1");
            let in_table = if exists {
                series_ids(
                    &engine,
                    &format!("SELECT DISTINCT series_id FROM {table} WHERE {rows}"),
                )?
            } else {
                HashSet::new()
            };
            if !in_table.is_empty() {
                // Reads group every row and the last points reload meanwhile and after.
                let identity = self.reads.identity();
                identity.admin_write_started();
                let deleted = engine.execute(&format!("DELETE FROM {table} WHERE {rows}"));
                identity.admin_write_done();
                deleted?;
                tracing::info!(
                    db,
                    measurement = d.measurement,
                    series = in_table.len(),
                    up_to,
                    "points deleted"
                );
            }
            matched.extend(in_table);
            if matched.is_empty() {
                continue;
            }
            self.forget_emptied_series(db, &d.measurement, &matched, exists, &letters.kept)?;
        }
        Ok(())
    }

    /// Step 2: waits until every entry up to `seq` is in the engine.
    pub(crate) fn wait_flushed(&self, seq: u64) -> Result<(), StorageError> {
        let deadline = Instant::now() + FLUSH_WAIT;
        // Shut down: nothing is flushed any more.
        self.engine()?;
        let mut hurried: Option<Instant> = None;
        while self.wal.flushed_seq() < seq {
            // Asked again now and then, for parts that arrived after the last ask.
            if hurried.is_none_or(|t| t.elapsed() >= Duration::from_millis(100)) {
                self.reads.unflushed().hurry_all();
                hurried = Some(Instant::now());
            }
            if Instant::now() > deadline {
                return Err(StorageError::NotFlushed {
                    waited_secs: FLUSH_WAIT.as_secs(),
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    /// Step 4 for one table: forgets those of `matched` that have no point left (in the
    /// unflushed rows, the table when it `exists`, or the dead letters: `in_dead_letters`).
    fn forget_emptied_series(
        &self,
        db: &str,
        measurement: &str,
        matched: &HashSet<u64>,
        exists: bool,
        in_dead_letters: &HashSet<u64>,
    ) -> Result<(), StorageError> {
        let _drained = self.lifecycle.writes.drain();
        // Every write through the gate is submitted; this one is committed after them.
        let committed = self.wal.update_meta(Vec::new(), Vec::new())?.wait()?;
        let engine = self.engine()?;
        let unflushed = self.reads.unflushed();
        if !unflushed.wait_received(committed, FLUSH_WAIT) {
            return Err(StorageError::NotFlushed {
                waited_secs: FLUSH_WAIT.as_secs(),
            });
        }
        // The unflushed rows first: a part leaves them only once the table has it.
        let mut alive = HashSet::new();
        for part in unflushed.parts(db, measurement, i64::MIN, i64::MAX) {
            if let Some(ids) = part
                .batch
                .column_by_name(engine::table::SERIES_ID)
                .and_then(|c| c.as_primitive_opt::<UInt64Type>())
            {
                alive.extend(ids.values().iter().filter(|id| matched.contains(id)));
            }
        }
        // Every series the table has (a list of `matched` could pass the engine's statement
        // size; `series_id` leads the sort key).
        if exists {
            let table = engine::table::qualified(db, measurement);
            let in_table = series_ids(&engine, &format!("SELECT DISTINCT series_id FROM {table}"))?;
            alive.extend(matched.intersection(&in_table));
        }
        alive.extend(matched.intersection(in_dead_letters));
        let gone: HashSet<u64> = matched.difference(&alive).copied().collect();
        if gone.is_empty() {
            return Ok(());
        }
        let series = self
            .wal
            .meta_scan_prefix(&ingest::catalog::series_prefix(db))?;
        let drop = ingest::Catalog::series_drop(db, measurement.as_bytes(), &gone, series);
        if drop.emptied {
            tracing::info!(db, measurement, "no series left: dropping the measurement");
            return self.drop_measurement_drained(db, measurement).map(|_| ());
        }
        {
            let _commits = self.lifecycle.commits.write();
            self.wal
                .update_meta(Vec::new(), drop.keys.clone())?
                .wait()?;
            self.catalog
                .forget_series(db, measurement.as_bytes(), &drop);
        }
        tracing::info!(db, measurement, series = drop.ids.len(), "series dropped");
        Ok(())
    }
}

/// The `series_id`s `sql` answers (one UInt64 column).
fn series_ids(engine: &engine::Engine, sql: &str) -> Result<HashSet<u64>, StorageError> {
    let out = engine.query(sql, engine::OutputFormat::TabSeparated)?;
    std::str::from_utf8(&out)
        .map_err(|e| e.to_string())
        .and_then(|s| {
            s.lines()
                .filter(|l| !l.is_empty())
                .map(|l| l.parse::<u64>().map_err(|e| format!("{l:?}: {e}")))
                .collect()
        })
        .map_err(|message| StorageError::EngineAnswer {
            what: "series ids",
            message,
        })
}
