//! Flush workers: each takes a job (one table's parts), coalesces them into
//! one batch, creates the table and its columns as needed and inserts the
//! batch as one block, then reports the outcome to the coordinator.
//!
//! Twice as many workers run as inserts may (a [`Semaphore`] of engine
//! connections), so one job's coalescing overlaps another's insert.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Condvar, Mutex};

use crate::buffer::Key;
use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::table::{self, coalesce, qualified, Part, TableCache};

/// One table's parts to insert as one block.
pub(crate) struct Job {
    pub(crate) key: Key,
    pub(crate) parts: Vec<Part>,
}

/// A job's outcome, with its parts back (to retry or count as flushed).
pub(crate) struct JobDone {
    pub(crate) key: Key,
    pub(crate) parts: Vec<Part>,
    pub(crate) outcome: Result<()>,
}

/// What every worker thread shares.
#[derive(Clone)]
pub(crate) struct Worker {
    pub(crate) engine: Engine,
    pub(crate) jobs: Receiver<Job>,
    pub(crate) done: Sender<JobDone>,
    pub(crate) tables: Arc<Mutex<TableCache>>,
    /// Free insert slots (engine connections used for inserts).
    pub(crate) inserts: Arc<Semaphore>,
    /// Engine threads per insert (`FlushConfig::insert_threads`).
    pub(crate) insert_threads: usize,
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
            let outcome =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.insert(&job)))
                    .unwrap_or_else(|panic| {
                        let msg = panic
                            .downcast_ref::<String>()
                            .map(String::as_str)
                            .or_else(|| panic.downcast_ref::<&str>().copied())
                            .unwrap_or("unknown panic");
                        Err(EngineError::Arrow(format!("flush job panicked: {msg}")))
                    });
            metrics::histogram!("chingest_flush_batch_seconds")
                .record(start.elapsed().as_secs_f64());
            let _ = self.done.send(JobDone {
                key: job.key,
                parts: job.parts,
                outcome,
            });
        }
    }

    fn insert(&self, job: &Job) -> Result<()> {
        let (db, measurement) = &job.key;
        let build = Instant::now();
        let (batch, columns) = coalesce(&job.parts)?;
        metrics::histogram!("chingest_flush_arrow_build_seconds")
            .record(build.elapsed().as_secs_f64());
        let _permit = self.inserts.acquire();
        let conn = self.engine.connection();
        self.tables
            .lock()
            .ensure(&conn, db, measurement, &columns)?;
        let rows = batch.num_rows();
        let insert = Instant::now();
        let settings = table::single_part_settings(rows, self.insert_threads);
        conn.insert_batch(&qualified(db, measurement), batch, &settings)?;
        metrics::histogram!("chingest_chdb_insert_seconds").record(insert.elapsed().as_secs_f64());
        metrics::histogram!("chingest_flush_batch_points").record(rows as f64);
        metrics::counter!("chingest_flush_points_total").increment(rows as u64);
        Ok(())
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
