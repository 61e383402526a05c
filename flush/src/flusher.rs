//! The [`Flusher`]: committed WAL entries in, coalesced inserts out.
//!
//! [`Flusher::start`] first re-inserts what the [`Resume`] holds that the
//! engine lacks (`replay`), then runs one coordinator thread (`coordinator`)
//! that buffers per (database, measurement) and a pool of workers (`worker`)
//! that create tables and insert. The WAL's flushed sequence advances through
//! a [`FlushedLog`] over the contiguous prefix of entries all of whose parts
//! are in the engine (`watermark`); tables set `fsync_after_insert`, so "in
//! the engine" means durable there before the WAL forgets it.

use std::sync::Arc;
use std::thread::JoinHandle;

use arrow::array::RecordBatch;
use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use parking_lot::Mutex;

use crate::config::FlushConfig;
use crate::coordinator::{Control, Coordinator};
use crate::engine::Engine;
use crate::error::Result;
use crate::replay::{already_in_engine, Resume};
use crate::table::TableCache;
use crate::watermark::{FlushedLog, Watermark};
use crate::worker::{Job, JobDone, Semaphore, Worker};

/// One committed request as the flusher receives it: its database and one
/// batch per measurement (ingest's layout: `time` Int64 ns, `series_id`,
/// non-null Utf8 tags, nullable fields).
#[derive(Debug, Clone, Default)]
pub struct FlushWrite {
    /// chingest database.
    pub db: String,
    /// (measurement, batch) pairs.
    pub tables: Vec<(String, RecordBatch)>,
}

impl FlushWrite {
    /// Points in all tables.
    pub fn points(&self) -> u64 {
        self.tables.iter().map(|(_, b)| b.num_rows() as u64).sum()
    }
}

/// What the flusher is doing, for /health and metrics.
#[derive(Debug, Clone, Default)]
pub struct FlushStatus {
    /// Points buffered or being inserted.
    pub pending_points: u64,
    /// Inserts running now.
    pub jobs_in_flight: usize,
    /// Failures since the last success.
    pub consecutive_failures: u64,
    /// The last failure's message, cleared by a success.
    pub last_error: Option<String>,
    /// Highest sequence whose whole prefix is in the engine.
    pub flushed_seq: u64,
    /// Points inserted since start.
    pub points_flushed: u64,
}

/// The running flusher.
pub struct Flusher {
    status: Arc<Mutex<FlushStatus>>,
    control: Sender<Control>,
    coordinator: Option<JoinHandle<()>>,
    workers: Vec<JoinHandle<()>>,
    tables: Arc<Mutex<TableCache>>,
}

impl Flusher {
    /// Starts the flusher: first re-inserts what `resume` holds that the engine
    /// lacks, then consumes `committed` (each message converted into its
    /// sequence number and write, e.g. the WAL's `Committed<FlushWrite>`)
    /// until it disconnects, reporting the flushed watermark to `log`.
    /// Messages must arrive in sequence order, gap-free.
    pub fn start<M>(
        engine: Engine,
        config: FlushConfig,
        committed: Receiver<M>,
        resume: Resume,
        log: Arc<dyn FlushedLog>,
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
        let inserts = insert_slots(&engine, &config);
        let (job_tx, job_rx) = bounded::<Job>(2 * inserts);
        let (done_tx, done_rx) = unbounded::<JobDone>();
        let (control_tx, control_rx) = unbounded::<Control>();

        let watermark = Watermark::resume(resume.flushed_seq, &resume.skip);
        let insert_threads = config.insert_threads;
        let mut coordinator = Coordinator::new(config, watermark, status.clone(), log, job_tx);
        let held = already_in_engine(&engine, &resume.entries)?;
        for (seq, write) in resume.entries {
            coordinator.add(seq, write, &held);
        }
        coordinator.advance();

        let workers = Worker {
            engine,
            jobs: job_rx,
            done: done_tx,
            tables: tables.clone(),
            inserts: Arc::new(Semaphore::new(inserts)),
            insert_threads,
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
    }

    /// `DROP DATABASE` support: discards every part of `db` with a sequence at
    /// or below `up_to_seq` (buffered, or still to arrive from the WAL) as if
    /// flushed, and returns once no insert into `db` is running, so dropping
    /// the engine's database afterwards cannot be undone by a late insert.
    /// Writes with later sequences (a re-created database) flush normally.
    pub fn drop_database(&self, db: &str, up_to_seq: u64) {
        let (done, wait) = bounded(1);
        let sent = self.control.send(Control::DropDatabase {
            db: db.to_string(),
            up_to_seq,
            done,
        });
        if sent.is_ok() {
            let _ = wait.recv();
        }
        self.forget_database(db);
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

/// Concurrent inserts: `config.workers`, at most (and by default) the
/// engine's connections, at least one.
fn insert_slots(engine: &Engine, config: &FlushConfig) -> usize {
    match config.workers {
        0 => engine.pool_size(),
        n => n.min(engine.pool_size()),
    }
    .max(1)
}
