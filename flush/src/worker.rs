//! Flush workers: each takes a job (one table's parts), writes it to the
//! flusher's [`Destination`] (the engine's tables: coalesced, the table
//! and its columns created as needed, inserted as one block), then reports
//! the outcome to the coordinator.
//!
//! Twice as many workers run as inserts may ([`InsertSlots`] of engine
//! connections), so one job's coalescing overlaps another's insert. The
//! destination's `write` is the one write path; operator retries of dead
//! letters use it too.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use engine::table::{Part, TableCache};
use engine::{EngineError, Result};
use parking_lot::Mutex;

use crate::buffer::Key;
use crate::destination::{Destination, InsertSlots};

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
    /// Where the rows go.
    pub(crate) destination: Arc<dyn Destination>,
    pub(crate) jobs: Receiver<Job>,
    pub(crate) done: Sender<JobDone>,
    /// The tables known to exist, forgotten after a failure.
    pub(crate) tables: Arc<Mutex<TableCache>>,
    /// Free insert slots (engine connections used for inserts).
    pub(crate) inserts: Arc<InsertSlots>,
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
                self.destination.write(
                    &job.key.0,
                    &job.key.1,
                    &job.parts,
                    job.verify_up_to,
                    Some(&self.inserts),
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
