//! Flush workers: each takes a job (one table's parts), coalesces them into
//! one batch, creates the table and its columns as needed and inserts the
//! batch as one block, then reports the outcome to the coordinator.
//!
//! Twice as many workers run as inserts may (a [`Semaphore`] of engine
//! connections), so one job's coalescing overlaps another's insert.
//!
//! Exactly once on retries: a job whose parts failed before (`verify_up_to`)
//! first asks the engine which of their `__seq` it already holds (an error
//! after a successful INSERT — unregistering the Arrow table, a panic — must
//! not insert twice) and inserts only the rest. [`insert_parts`] is the one
//! insert path; operator retries of dead letters use it too.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use engine::table::{self, coalesce, qualified, Part, TableCache};
use engine::Engine;
use engine::{EngineError, Result};
use parking_lot::{Condvar, Mutex};

use crate::buffer::Key;
use crate::cluster::Cluster;
use crate::identity::IdentityIndex;
use crate::replay::held_seqs;

/// Where an insert goes: the engine's tables, or a cluster's shards through the engine.
#[derive(Clone, Copy)]
pub(crate) struct Destination<'a> {
    pub(crate) engine: &'a Engine,
    pub(crate) identity: &'a IdentityIndex,
    pub(crate) cluster: Option<&'a Cluster>,
    pub(crate) tables: &'a Mutex<TableCache>,
}

/// One table's parts to insert as one block.
pub(crate) struct Job {
    pub(crate) key: Key,
    pub(crate) parts: Vec<Part>,
    /// Parts with a sequence at or below this may already be in the engine
    /// (an earlier attempt failed after, or during, its INSERT): check first.
    /// 0: nothing to check.
    pub(crate) verify_up_to: u64,
    /// The job isolates parts of a deterministic failure (bisection).
    pub(crate) isolated: bool,
}

/// A job's outcome, with its parts back (to retry or count as flushed).
pub(crate) struct JobDone {
    pub(crate) key: Key,
    pub(crate) parts: Vec<Part>,
    pub(crate) outcome: Result<()>,
    pub(crate) isolated: bool,
}

/// What every worker thread shares.
#[derive(Clone)]
pub(crate) struct Worker {
    pub(crate) engine: Engine,
    /// The reads' identity index, told of every insert before it runs.
    pub(crate) identity: Arc<IdentityIndex>,
    pub(crate) jobs: Receiver<Job>,
    pub(crate) done: Sender<JobDone>,
    pub(crate) tables: Arc<Mutex<TableCache>>,
    /// Free insert slots (engine connections used for inserts).
    pub(crate) inserts: Arc<Semaphore>,
    /// Engine threads per insert (`FlushConfig::insert_threads`).
    pub(crate) insert_threads: usize,
    /// Where the rows go when not to the engine's tables: a ClickHouse cluster.
    pub(crate) cluster: Option<Arc<Cluster>>,
}

impl Worker {
    /// Starts `n` worker threads. They end once the job channel disconnects.
    pub(crate) fn spawn(self, n: usize) -> Vec<JoinHandle<()>> {
        (0..n)
            .map(|i| {
                let w = self.clone();
                std::thread::Builder::new()
                    .name(format!("chingest-flush-{i}"))
                    .spawn(move || w.run())
                    .expect("spawn flush worker")
            })
            .collect()
    }

    fn run(self) {
        for job in self.jobs.iter() {
            let start = Instant::now();
            // A panic is a failed job (retried), not a dead worker and a stuck flusher.
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                insert_parts(
                    Destination {
                        engine: &self.engine,
                        identity: &self.identity,
                        cluster: self.cluster.as_deref(),
                        tables: &self.tables,
                    },
                    Some(&self.inserts),
                    self.insert_threads,
                    &job.key,
                    &job.parts,
                    job.verify_up_to,
                )
            }))
            .unwrap_or_else(|panic| {
                let msg = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("unknown panic");
                Err(EngineError::Arrow(format!("flush job panicked: {msg}")))
            });
            if outcome.is_err() {
                // The table may have been dropped or altered behind our back:
                // the next attempt asks the engine again.
                self.tables.lock().forget_table(&job.key.0, &job.key.1);
            }
            metrics::histogram!("chingest_flush_batch_seconds")
                .record(start.elapsed().as_secs_f64());
            let _ = self.done.send(JobDone {
                key: job.key,
                parts: job.parts,
                outcome,
                isolated: job.isolated,
            });
        }
    }
}

/// Inserts `parts` of table `key` as one block: skips the parts with a
/// sequence at or below `verify_up_to` that the engine already holds, then
/// coalesces, creates the table and its columns as needed, and inserts. The
/// one insert path of the flusher (workers, operator retries).
pub(crate) fn insert_parts(
    to: Destination<'_>,
    slots: Option<&Semaphore>,
    insert_threads: usize,
    key: &Key,
    parts: &[Part],
    verify_up_to: u64,
) -> Result<()> {
    let Destination {
        engine,
        identity,
        cluster,
        tables,
    } = to;
    let (db, measurement) = key;
    if let Some(cluster) = cluster {
        let _permit = slots.map(Semaphore::acquire);
        let start = Instant::now();
        let done = cluster
            .deliver(engine, db, measurement, parts, verify_up_to)
            .map_err(crate::cluster::ClusterError::into_engine_error)?;
        let rows: u64 = done.rows.iter().sum();
        if done.already_held > 0 {
            tracing::info!(
                db,
                measurement,
                held = done.already_held,
                "retry: skipping rows the cluster already holds (exactly once)"
            );
        }
        engine::ingest_load::INGEST_LOAD.record(start.elapsed());
        metrics::histogram!("chingest_flush_batch_points").record(rows as f64);
        metrics::counter!("chingest_flush_points_total").increment(rows);
        return Ok(());
    }
    let suspects: Vec<u64> = parts
        .iter()
        .filter(|p| p.seq <= verify_up_to)
        .map(|p| p.seq)
        .collect();
    let held = if suspects.is_empty() {
        Default::default()
    } else {
        held_seqs(engine, db, measurement, &suspects)?
    };
    let owned: Vec<Part>;
    let parts: &[Part] = if held.is_empty() {
        parts
    } else {
        // Rows the engine holds that no INSERT reported (an earlier attempt's
        // outcome was unknown): the last points reload from the engine.
        identity.last_points().forget_table(db, measurement);
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
    metrics::histogram!("chingest_flush_arrow_build_seconds").record(build.elapsed().as_secs_f64());
    let _permit = slots.map(Semaphore::acquire);
    let conn = engine.connection();
    tables.lock().ensure(&conn, db, measurement, &columns)?;
    // Before the INSERT: a read must never see a rewrite the index lacks.
    // The guard lives until the INSERT has ended.
    let _recorded = identity.before_insert(&conn, db, measurement, &batch)?;
    let rows = batch.num_rows();
    let last_points = identity.last_points();
    // Kept whether or not the table's last points are cached now (a clone shares the
    // columns): a read may start caching them while the INSERT runs, and its load may
    // miss these rows; `apply` after the INSERT merges them into any cache that exists
    // by then (deciding before the INSERT lost them: lastpoint answered nothing).
    let kept = batch.clone();
    let insert = Instant::now();
    let settings = table::single_part_settings(rows, insert_threads);
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

/// A counting semaphore for the number of concurrent inserts.
pub(crate) struct Semaphore {
    free: Mutex<usize>,
    freed: Condvar,
}

/// One held slot of a [`Semaphore`], released on drop.
pub(crate) struct Permit<'a>(&'a Semaphore);

impl Semaphore {
    pub(crate) fn new(n: usize) -> Self {
        Self {
            free: Mutex::new(n),
            freed: Condvar::new(),
        }
    }

    /// Waits for a free slot.
    pub(crate) fn acquire(&self) -> Permit<'_> {
        let mut free = self.free.lock();
        while *free == 0 {
            self.freed.wait(&mut free);
        }
        *free -= 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *self.0.free.lock() += 1;
        self.0.freed.notify_one();
    }
}
