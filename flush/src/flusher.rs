//! The [`Flusher`]: committed WAL entries in, coalesced inserts out.
//!
//! [`Flusher::start`] first re-inserts what the [`Resume`] holds that the
//! engine lacks (`replay`), then runs one coordinator thread (`coordinator`)
//! that buffers per (database, measurement) and a pool of workers (`worker`)
//! that write each job to the flusher's [`Destination`]: the engine's tables
//! (`table_writer`: create tables, insert), or what [`Flusher::start_to`]
//! is given. The WAL's flushed sequence advances through
//! a [`FlushedLog`] over the contiguous prefix of entries all of whose parts
//! are in the engine (`watermark`); tables set `fsync_after_insert`, so "in
//! the engine" means durable there before the WAL forgets it.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use engine::table::{Part, TableCache};
use engine::Engine;
use engine::{EngineError, Result};
use parking_lot::Mutex;

use crate::config::FlushConfig;
use crate::coordinator::{Control, Coordinator};
use crate::dead_letter::DeadLetter;
use crate::destination::{Destination, InsertSlots};
use crate::fence::DropScope;
use crate::read_state::ReadState;
use crate::replay::{already_in_engine, held_seqs, Resume};
use crate::status::FlushStatus;
use crate::table_writer::TableWriter;
use crate::watermark::{FlushedLog, Watermark};
use crate::worker::{Job, JobDone, Worker};
use crate::write::FlushWrite;

/// What an operator retry of one dead letter came to ([`Flusher::retry`]).
#[derive(Debug)]
pub enum RetryOutcome {
    /// Inserted now.
    Inserted,
    /// The engine already held it (by `__seq`): nothing inserted.
    AlreadyInEngine,
    /// The engine refused it again.
    Failed(EngineError),
}

/// The running flusher.
pub struct Flusher {
    status: Arc<Mutex<FlushStatus>>,
    control: Sender<Control>,
    coordinator: Option<JoinHandle<()>>,
    workers: Vec<JoinHandle<()>>,
    tables: Arc<Mutex<TableCache>>,
    engine: Engine,
    reads: ReadState,
    stop_by: Arc<Mutex<Option<Instant>>>,
    destination: Arc<dyn Destination>,
}

impl Flusher {
    /// Starts the flusher: first re-inserts what `resume` holds that the engine
    /// lacks, then consumes `committed` (each message converted into its
    /// sequence number and write, e.g. the WAL's `Committed<FlushWrite>`)
    /// until it disconnects, reporting the flushed watermark to `log`.
    /// Messages must arrive in sequence order, gap-free. `reads` is the
    /// engine's [`ReadState`] (the one whose identity index the engine's
    /// sandbox tells of admin writes), which the flusher keeps up to date.
    pub fn start<M>(
        engine: Engine,
        reads: ReadState,
        config: FlushConfig,
        committed: Receiver<M>,
        resume: Resume,
        log: Arc<dyn FlushedLog>,
    ) -> Result<Flusher>
    where
        M: Into<(u64, FlushWrite)> + Send + 'static,
    {
        let insert_threads = config.insert_threads;
        let engine_tables = engine.clone();
        let identity = reads.identity_handle();
        Flusher::start_with(
            engine,
            reads,
            config,
            committed,
            resume,
            log,
            move |tables| {
                Arc::new(TableWriter {
                    engine: engine_tables,
                    identity,
                    tables,
                    insert_threads,
                })
            },
        )
    }

    /// [`Flusher::start`], writing to `destination` instead of the engine's tables
    /// (storage passes a ClickHouse cluster, whose client the engine is). When the
    /// destination verifies each write, what replay re-sends is written with every part
    /// verified (a shard is asked what it holds first), not checked against the
    /// engine's tables up front.
    pub fn start_to<M>(
        engine: Engine,
        reads: ReadState,
        config: FlushConfig,
        committed: Receiver<M>,
        resume: Resume,
        log: Arc<dyn FlushedLog>,
        destination: Arc<dyn Destination>,
    ) -> Result<Flusher>
    where
        M: Into<(u64, FlushWrite)> + Send + 'static,
    {
        Flusher::start_with(engine, reads, config, committed, resume, log, |_| {
            destination
        })
    }

    /// Starts the flusher writing to the destination `destination` makes of the
    /// flusher's table cache.
    fn start_with<M>(
        engine: Engine,
        reads: ReadState,
        config: FlushConfig,
        committed: Receiver<M>,
        resume: Resume,
        log: Arc<dyn FlushedLog>,
        destination: impl FnOnce(Arc<Mutex<TableCache>>) -> Arc<dyn Destination>,
    ) -> Result<Flusher>
    where
        M: Into<(u64, FlushWrite)> + Send + 'static,
    {
        let status = Arc::new(Mutex::new(FlushStatus {
            flushed_seq: resume.flushed_seq,
            ..Default::default()
        }));
        let mut cache = TableCache::default();
        for (db, secs) in &resume.retention_secs {
            cache.set_retention(db, *secs);
        }
        let tables = Arc::new(Mutex::new(cache));
        let destination = destination(tables.clone());
        let inserts = insert_slots(&engine, &config);
        let (job_tx, job_rx) = bounded::<Job>(2 * inserts);
        let (done_tx, done_rx) = unbounded::<JobDone>();
        let (control_tx, control_rx) = unbounded::<Control>();

        let watermark = Watermark::resume(resume.flushed_seq, &resume.skip);
        let stop_by = Arc::new(Mutex::new(None));
        let unflushed = reads.unflushed_handle();
        // Entries up to the watermark are in the engine; the rest arrive
        // below (replay) or from `committed`.
        unflushed.mark_received(resume.flushed_seq);
        let mut coordinator = Coordinator::new(
            config,
            watermark,
            status.clone(),
            log.clone(),
            job_tx,
            stop_by.clone(),
            unflushed,
        );
        coordinator.set_dropped(&resume.dropped);
        let (mut held, unverifiable) = if destination.verifies_each_write() {
            // Each write asks (`verify_all_up_to` below).
            Default::default()
        } else {
            already_in_engine(&engine, &resume.entries)
        };
        let replayed_up_to = resume
            .entries
            .iter()
            .map(|(seq, _)| *seq)
            .max()
            .unwrap_or(0);
        held.extend(resume.dead_lettered.iter().cloned());
        // A table the engine cannot be asked about is not replayed blindly
        // (duplicates) nor allowed to stop the start: its parts become dead
        // letters. If even that fails, they go through the normal path.
        let letters: Vec<DeadLetter> = resume
            .entries
            .iter()
            .flat_map(|(seq, w)| {
                w.tables.iter().filter_map(|(m, batch)| {
                    let key = (w.db.clone(), m.clone());
                    let error = unverifiable.get(&key)?;
                    (batch.num_rows() > 0
                        && !coordinator.is_dropped(&w.db, m, *seq)
                        && !held.contains(&(w.db.clone(), m.clone(), *seq)))
                    .then(|| DeadLetter {
                        db: w.db.clone(),
                        measurement: m.clone(),
                        seq: *seq,
                        batch: batch.clone(),
                        error: error.clone(),
                    })
                })
            })
            .collect();
        if !letters.is_empty() {
            match log.dead_letter(&letters) {
                Ok(()) => {
                    let points: u64 = letters.iter().map(DeadLetter::points).sum();
                    status.lock().quarantined_points += points;
                    tracing::error!(
                        parts = letters.len(),
                        points,
                        "replay: parts of tables the engine cannot be asked about were quarantined"
                    );
                    held.extend(letters.into_iter().map(|l| (l.db, l.measurement, l.seq)));
                }
                Err(e) => tracing::error!(error = %e, "replay: cannot store dead letters"),
            }
        }
        for (seq, write) in resume.entries {
            coordinator.add(seq, write, &held);
        }
        if destination.verifies_each_write() {
            coordinator.verify_all_up_to(replayed_up_to);
        }
        coordinator.advance();

        let workers = Worker {
            destination: destination.clone(),
            jobs: job_rx,
            done: done_tx,
            tables: tables.clone(),
            inserts: Arc::new(InsertSlots::new(inserts)),
        }
        .spawn(2 * inserts);
        let coordinator = std::thread::Builder::new()
            .name("chingest-flush".into())
            .spawn(move || coordinator.run(committed, done_rx, control_rx))
            .expect("spawn flush coordinator");
        Ok(Flusher {
            status,
            control: control_tx,
            coordinator: Some(coordinator),
            workers,
            tables,
            engine,
            reads,
            stop_by,
            destination,
        })
    }

    /// A snapshot of the flusher's state.
    pub fn status(&self) -> FlushStatus {
        self.status.lock().clone()
    }

    /// Sets `db`'s retention (seconds, 0 = forever) for tables created from
    /// now on; call before its first write (`CREATE DATABASE … WITH DURATION`).
    pub fn set_retention(&self, db: &str, secs: u64) {
        self.tables.lock().set_retention(db, secs);
    }

    /// Forgets cached table state of `db` (call after dropping it).
    pub fn forget_database(&self, db: &str) {
        self.tables.lock().forget_database(db);
        self.reads.identity().forget_database(db);
    }

    /// `DROP DATABASE` support: discards every part of `db` with a sequence at
    /// or below `up_to_seq` (buffered, or still to arrive from the WAL) as if
    /// flushed, and returns once no insert into `db` is running, so dropping
    /// the engine's database afterwards cannot be undone by a late insert.
    /// Writes with later sequences (a re-created database) flush normally.
    pub fn drop_database(&self, db: &str, up_to_seq: u64) {
        self.drop_scope(DropScope::database(db), up_to_seq);
        self.forget_database(db);
    }

    /// `DROP MEASUREMENT` support: like [`Flusher::drop_database`] for the
    /// parts of one table. Parts of it with later sequences (written after the
    /// drop) flush normally.
    pub fn drop_measurement(&self, db: &str, measurement: &str, up_to_seq: u64) {
        self.drop_scope(DropScope::measurement(db, measurement), up_to_seq);
    }

    /// Forgets what the flusher and the reads' identity index know of table
    /// `(db, measurement)`, after the engine dropped it (with nothing of it
    /// queued): its next insert creates it anew.
    pub fn forget_table(&self, db: &str, measurement: &str) {
        self.tables.lock().forget_table(db, measurement);
        self.reads.identity().forget_table(db, measurement);
    }

    fn drop_scope(&self, scope: DropScope, up_to_seq: u64) {
        let (done, wait) = bounded(1);
        let sent = self.control.send(Control::Drop {
            scope,
            up_to_seq,
            done,
        });
        if sent.is_ok() {
            let _ = wait.recv();
        }
    }

    /// Inserts dead letters again (an operator's retry); see [`Retrier::retry`].
    pub fn retry(&self, letters: &[DeadLetter]) -> Vec<RetryOutcome> {
        self.retrier().retry(letters)
    }

    /// A handle that retries dead letters without borrowing the flusher (so
    /// a caller keeping the flusher behind a lock need not hold it meanwhile).
    pub fn retrier(&self) -> Retrier {
        Retrier {
            engine: self.engine.clone(),
            tables: self.tables.clone(),
            destination: self.destination.clone(),
        }
    }

    /// Test hook: the next `n` successful inserts into `db` report a failure anyway
    /// (an error after a successful INSERT).
    #[doc(hidden)]
    pub fn inject_failure_after_inserts_for_tests(db: &str, n: u32) {
        *crate::table_writer::FAIL_AFTER_INSERT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((db.to_string(), n));
    }

    /// Like [`Flusher::join`], bounded: once the committed channel has
    /// disconnected, flushes what it can until `deadline`, then stops; what is
    /// not flushed stays in the WAL and replays on the next start. Returns
    /// true if every thread stopped (the engine can then be closed), false if
    /// an insert was still running at the deadline (its thread is left to
    /// process exit; the engine must not be closed under it).
    pub fn shutdown(mut self, deadline: Instant) -> bool {
        *self.stop_by.lock() = Some(deadline);
        let wait = |h: &JoinHandle<()>| {
            // A little past the deadline: the coordinator notices it within a tick.
            while !h.is_finished() && Instant::now() < deadline + Duration::from_millis(200) {
                std::thread::sleep(Duration::from_millis(10));
            }
            h.is_finished()
        };
        let mut clean = true;
        if let Some(c) = self.coordinator.take() {
            if wait(&c) {
                let _ = c.join();
            } else {
                clean = false;
            }
        }
        for w in self.workers.drain(..) {
            if wait(&w) {
                let _ = w.join();
            } else {
                clean = false;
            }
        }
        clean
    }

    /// Waits until the committed channel has disconnected (the WAL shut down)
    /// and everything received is in the engine and marked flushed.
    pub fn join(mut self) {
        if let Some(c) = self.coordinator.take() {
            let _ = c.join();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// Retries dead letters through the flusher's one insert path.
#[derive(Clone)]
pub struct Retrier {
    engine: Engine,
    tables: Arc<Mutex<TableCache>>,
    destination: Arc<dyn Destination>,
}

impl std::fmt::Debug for Retrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retrier").finish_non_exhaustive()
    }
}

impl Retrier {
    /// Inserts dead letters again, one part per insert, each after asking the
    /// engine whether it already holds the part's `__seq` (exactly once: a
    /// crash between an earlier insert and the dead letter's removal must not
    /// insert it twice). Runs on the caller's thread, beside the flusher's own
    /// jobs. The caller removes the dead letters that come back `Inserted` or
    /// `AlreadyInEngine`.
    pub fn retry(&self, letters: &[DeadLetter]) -> Vec<RetryOutcome> {
        let verifies = self.destination.verifies_each_write();
        letters
            .iter()
            .map(|l| {
                // A destination that verifies each write is asked by the write itself.
                if !verifies {
                    let held = match held_seqs(&self.engine, &l.db, &l.measurement, &[l.seq]) {
                        Ok(h) => h,
                        Err(e) => return RetryOutcome::Failed(e),
                    };
                    if held.contains(&l.seq) {
                        return RetryOutcome::AlreadyInEngine;
                    }
                }
                let part = Part {
                    seq: l.seq,
                    batch: l.batch.clone(),
                };
                let outcome = self.destination.write(
                    &l.db,
                    &l.measurement,
                    std::slice::from_ref(&part),
                    if verifies { l.seq } else { 0 },
                    None,
                );
                match outcome {
                    Ok(()) => RetryOutcome::Inserted,
                    Err(e) => {
                        self.tables.lock().forget_table(&l.db, &l.measurement);
                        RetryOutcome::Failed(e)
                    }
                }
            })
            .collect()
    }
}

/// Concurrent inserts: `config.workers`, at most (and by default) the
/// engine's connections, at least one.
fn insert_slots(engine: &Engine, config: &FlushConfig) -> usize {
    match config.workers {
        0 => engine.pool_size(),
        n => n.min(engine.pool_size()),
    }
    .max(1)
}
