//! The embedded engine's tables as the flusher's [`Destination`]: a job's
//! parts coalesced into one batch, the table and its columns created as
//! needed, the batch inserted as one block (hence one part, atomically: what
//! makes replay checkable by `__seq`).
//!
//! Exactly once on retries: a job whose parts failed before (`verify_up_to`)
//! first asks the engine which of their `__seq` it already holds (an error
//! after a successful INSERT — unregistering the Arrow table, a panic — must
//! not insert twice) and inserts only the rest. The reads' identity index is
//! told of every insert before it runs, and the last points after it.

use std::sync::Arc;
use std::time::Instant;

use engine::table::{self, coalesce, qualified, Part, TableCache};
use engine::{Engine, EngineError, Result};
use parking_lot::Mutex;

use crate::destination::{Destination, InsertSlots};
use crate::identity::IdentityIndex;
use crate::replay::held_seqs;

/// Writes flushed rows into the embedded engine's tables.
pub(crate) struct TableWriter {
    pub(crate) engine: Engine,
    /// The reads' identity index, told of every insert before it runs.
    pub(crate) identity: Arc<IdentityIndex>,
    /// The tables and columns known to exist (the flusher's, shared).
    pub(crate) tables: Arc<Mutex<TableCache>>,
    /// Engine threads per insert (`FlushConfig::insert_threads`).
    pub(crate) insert_threads: usize,
}

impl Destination for TableWriter {
    /// Skips the parts with a sequence at or below `verify_up_to` that the
    /// engine already holds, then coalesces, creates the table and its
    /// columns as needed, and inserts (a slot held for the insert only, so
    /// coalescing overlaps another job's insert).
    fn write(
        &self,
        db: &str,
        measurement: &str,
        parts: &[Part],
        verify_up_to: u64,
        slots: Option<&InsertSlots>,
    ) -> Result<()> {
        let suspects: Vec<u64> = parts
            .iter()
            .filter(|p| p.seq <= verify_up_to)
            .map(|p| p.seq)
            .collect();
        let held = if suspects.is_empty() {
            Default::default()
        } else {
            held_seqs(&self.engine, db, measurement, &suspects)?
        };
        let owned: Vec<Part>;
        let parts: &[Part] = if held.is_empty() {
            parts
        } else {
            // Rows the engine holds that no INSERT reported (an earlier attempt's
            // outcome was unknown): the last points reload from the engine.
            self.identity.last_points().forget_table(db, measurement);
            tracing::info!(
                db,
                measurement,
                held = held.len(),
                "retry: skipping parts the engine already holds (exactly once)"
            );
            owned = parts
                .iter()
                .filter(|p| !held.contains(&p.seq))
                .cloned()
                .collect();
            &owned
        };
        if parts.is_empty() {
            return Ok(());
        }
        let build = Instant::now();
        let (batch, columns) = coalesce(parts)?;
        metrics::histogram!("chingest_flush_arrow_build_seconds")
            .record(build.elapsed().as_secs_f64());
        let _slot = slots.map(InsertSlots::acquire);
        let conn = self.engine.connection();
        self.tables
            .lock()
            .ensure(&conn, db, measurement, &columns)?;
        // Before the INSERT: a read must never see a rewrite the index lacks.
        // The guard lives until the INSERT has ended.
        let _recorded = self
            .identity
            .before_insert(&conn, db, measurement, &batch)?;
        let rows = batch.num_rows();
        let last_points = self.identity.last_points();
        // Kept whether or not the table's last points are cached now (a clone shares the
        // columns): a read may start caching them while the INSERT runs, and its load may
        // miss these rows; `apply` after the INSERT merges them into any cache that exists
        // by then (deciding before the INSERT lost them: lastpoint answered nothing).
        let kept = batch.clone();
        let insert = Instant::now();
        let settings = table::single_part_settings(rows, self.insert_threads);
        conn.insert_batch(&qualified(db, measurement), batch, &settings)?;
        // The engine holds the rows now, and they are still in the unflushed
        // set (removed once this job is reported done).
        last_points.apply(db, measurement, &kept);
        if injected_failure_after_insert(db) {
            return Err(EngineError::Arrow(
                "injected failure after a successful INSERT (test hook)".into(),
            ));
        }
        metrics::histogram!("chingest_chdb_insert_seconds").record(insert.elapsed().as_secs_f64());
        engine::ingest_load::INGEST_LOAD.record(build.elapsed());
        metrics::histogram!("chingest_flush_batch_points").record(rows as f64);
        metrics::counter!("chingest_flush_points_total").increment(rows as u64);
        Ok(())
    }

    /// The engine's tables are asked once before replay (`replay.rs`) and
    /// before an operator's retry.
    fn verifies_each_write(&self) -> bool {
        false
    }
}

/// Test hook ([`crate::Flusher::inject_failure_after_inserts_for_tests`]): this many
/// successful inserts into this database report a failure anyway. Scoped to one
/// database so that tests running in parallel in one process are not affected.
pub(crate) static FAIL_AFTER_INSERT: std::sync::Mutex<Option<(String, u32)>> =
    std::sync::Mutex::new(None);

/// Whether the test hook turns this successful insert into `db` into a failure.
fn injected_failure_after_insert(db: &str) -> bool {
    let mut hook = FAIL_AFTER_INSERT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match hook.as_mut() {
        Some((target, n)) if target == db && *n > 0 => {
            *n -= 1;
            true
        }
        _ => false,
    }
}
