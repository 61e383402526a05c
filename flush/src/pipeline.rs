//! The flusher: committed WAL entries → coalesced Arrow batches → chDB.
//!
//! One coordinator thread receives committed entries in sequence order (from
//! the WAL writer, with their in-memory batches attached), buffers them per
//! (database, measurement) and hands a buffer to a worker when it reaches
//! `max_points_per_batch` or `max_age_ms`. Workers (one per engine connection)
//! create tables and columns on demand and insert; distinct measurements flush
//! in parallel, one job per measurement at a time (so DDL and inserts of one
//! table never race).
//!
//! The WAL's flushed sequence advances over the contiguous prefix of entries
//! all of whose parts are in the engine. Tables set `fsync_after_insert`, so
//! "in the engine" means durable there before the WAL forgets it.
//!
//! Exactly once across crashes: every row carries `__seq`, and an INSERT is a
//! single block into an unpartitioned MergeTree, i.e. one part, atomically.
//! On start-up the replayed entries whose `(table, __seq)` is already in the
//! engine (a crash between the insert and `mark_flushed`) are skipped, and
//! only the others are inserted.
//!
//! A failed insert is retried with exponential back-off, forever, and
//! surfaced through [`FlushStatus`], a log line and
//! `chingest_flush_failures_total`; data is never dropped.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arrow::array::{AsArray, RecordBatch, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use crossbeam_channel::{bounded, select, unbounded, Receiver, Sender};
use parking_lot::Mutex;

use crate::engine::{quote_string, Engine};
use crate::error::{EngineError, Result};
use crate::table::{self, coalesce, qualified, ColumnKind, Part, TableCache};

/// Flusher settings.
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FlushConfig {
    /// A measurement's buffer is flushed once it holds this many points.
    /// Default: 200,000 (the engine has a fixed cost of ~8–10 ms per INSERT).
    pub max_points_per_batch: usize,
    /// ... or once its oldest point has waited this long. Default: 1000 ms.
    pub max_age_ms: u64,
    /// First retry delay after a failed insert; doubles up to `retry_max_ms`.
    /// Default: 100 ms.
    pub retry_initial_ms: u64,
    /// Longest retry delay. Default: 10,000 ms.
    pub retry_max_ms: u64,
    /// Engine threads per insert (`max_threads`); 0 = the engine's default
    /// (one per core). Default: 1: concurrency comes from one insert per
    /// connection, and on a small machine an insert fanning out over every
    /// core competes with parsing (measured: 1M points/s sustainable at p95
    /// 160 ms with 1, 85% of 1.2M offered at p95 330 ms with 2).
    pub insert_threads: usize,
    /// Concurrent inserts (engine connections used); 0 means all of the
    /// engine's connections. Default: 0. Twice as many workers run, so one
    /// job's coalescing overlaps another's insert.
    pub workers: usize,
    /// Retention per database, in seconds (absent or 0 = keep forever): the
    /// database's tables are created with a TTL that deletes older rows in
    /// background merges. [`Flusher::set_retention`] adds databases later.
    pub retention_secs: std::collections::BTreeMap<String, u64>,
}

impl Default for FlushConfig {
    fn default() -> Self {
        Self {
            max_points_per_batch: 200_000,
            max_age_ms: 1000,
            retry_initial_ms: 100,
            retry_max_ms: 10_000,
            insert_threads: 1,
            workers: 0,
            retention_secs: Default::default(),
        }
    }
}

impl FlushConfig {
    /// Checks the settings make sense.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.max_points_per_batch == 0 {
            return Err("flush.max_points_per_batch must be at least 1".into());
        }
        if self.retry_initial_ms == 0 || self.retry_max_ms < self.retry_initial_ms {
            return Err("flush.retry_initial_ms must be ≥ 1 and ≤ flush.retry_max_ms".into());
        }
        Ok(())
    }
}

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

/// Where the flusher reports the flushed watermark (the WAL).
pub type MarkFlushed = Box<dyn Fn(u64) -> std::result::Result<(), String> + Send + Sync>;

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

/// What the flusher resumes from at start-up.
#[derive(Debug, Default)]
pub struct Resume {
    /// The WAL's durable flushed sequence.
    pub flushed_seq: u64,
    /// Unflushed entries read back from the WAL, in sequence order.
    pub entries: Vec<(u64, FlushWrite)>,
    /// Sequences above `flushed_seq` that will never arrive (corrupt,
    /// missing or undecodable entries, already reported by the caller).
    pub skip: Vec<RangeInclusive<u64>>,
}

type Key = (String, String);

struct Job {
    key: Key,
    parts: Vec<Part>,
}

/// Requests to the coordinator from other threads.
enum Control {
    /// Discard `db`'s data up to `up_to_seq`; answer once none of it is in flight.
    DropDatabase {
        db: String,
        up_to_seq: u64,
        done: Sender<()>,
    },
}

struct JobDone {
    key: Key,
    parts: Vec<Part>,
    outcome: Result<()>,
}

impl Flusher {
    /// Starts the flusher: first re-inserts what `resume` holds that the engine
    /// lacks, then consumes `committed` (each message unpacked by `unpack` into
    /// its sequence number and write, e.g. the WAL's `Committed<FlushWrite>`)
    /// until it disconnects. Messages must arrive in sequence order, gap-free.
    pub fn start<M: Send + 'static>(
        engine: Engine,
        config: FlushConfig,
        committed: Receiver<M>,
        unpack: fn(M) -> (u64, FlushWrite),
        resume: Resume,
        mark_flushed: MarkFlushed,
    ) -> Result<Flusher> {
        let status = Arc::new(Mutex::new(FlushStatus {
            flushed_seq: resume.flushed_seq,
            ..Default::default()
        }));
        let mut cache = TableCache::default();
        for (db, secs) in &config.retention_secs {
            cache.set_retention(db, *secs);
        }
        let tables = Arc::new(Mutex::new(cache));
        let inserts_n = match config.workers {
            0 => engine.pool_size(),
            n => n.min(engine.pool_size()),
        }
        .max(1);
        let workers_n = 2 * inserts_n;
        let insert_threads = config.insert_threads;
        let inserts = Arc::new(Semaphore::new(inserts_n));
        let (job_tx, job_rx) = bounded::<Job>(workers_n);
        let (done_tx, done_rx) = unbounded::<JobDone>();
        let (control_tx, control_rx) = unbounded::<Control>();

        let mut tracker = Tracker::new(resume.flushed_seq);
        for r in &resume.skip {
            for seq in r.clone() {
                tracker.done.insert(seq);
            }
        }
        let mut coordinator = Coordinator {
            config: config.clone(),
            buffers: HashMap::new(),
            in_flight: HashSet::new(),
            retry_at: HashMap::new(),
            backoff: HashMap::new(),
            tracker,
            status: status.clone(),
            mark_flushed,
            job_tx,
            dropped: HashMap::new(),
            drop_waiters: Vec::new(),
        };
        let replay = already_in_engine(&engine, &resume.entries)?;
        for (seq, write) in resume.entries {
            coordinator.add(seq, write, &replay);
        }
        coordinator.advance();

        let mut workers = Vec::with_capacity(workers_n);
        let known = KnownSeries::default();
        for i in 0..workers_n {
            let (engine, job_rx, done_tx, tables, known, inserts) = (
                engine.clone(),
                job_rx.clone(),
                done_tx.clone(),
                tables.clone(),
                known.clone(),
                inserts.clone(),
            );
            workers.push(
                std::thread::Builder::new()
                    .name(format!("chingest-flush-{i}"))
                    .spawn(move || {
                        worker(
                            engine,
                            job_rx,
                            done_tx,
                            tables,
                            known,
                            inserts,
                            insert_threads,
                        )
                    })
                    .expect("spawn flush worker"),
            );
        }
        drop(done_tx);
        let coordinator = std::thread::Builder::new()
            .name("chingest-flush".into())
            .spawn(move || coordinator.run(committed, unpack, done_rx, control_rx))
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

/// Which (database, measurement, seq) of `entries` the engine already holds.
fn already_in_engine(
    engine: &Engine,
    entries: &[(u64, FlushWrite)],
) -> Result<HashSet<(String, String, u64)>> {
    let mut ranges: HashMap<Key, (u64, u64)> = HashMap::new();
    for (seq, w) in entries {
        for (m, _) in &w.tables {
            let r = ranges
                .entry((w.db.clone(), m.clone()))
                .or_insert((*seq, *seq));
            r.0 = r.0.min(*seq);
            r.1 = r.1.max(*seq);
        }
    }
    let mut present = HashSet::new();
    for ((db, m), (lo, hi)) in ranges {
        let exists = engine.query_text(&format!(
            "SELECT count() FROM system.tables WHERE database = {} AND name = {}",
            quote_string(&db),
            quote_string(&m)
        ))?;
        if exists.trim() == "0" {
            continue;
        }
        let seqs = engine.query_text(&format!(
            "SELECT DISTINCT `__seq` FROM {} WHERE `__seq` BETWEEN {lo} AND {hi}",
            qualified(&db, &m)
        ))?;
        for s in seqs.lines().filter_map(|l| l.trim().parse::<u64>().ok()) {
            present.insert((db.clone(), m.clone(), s));
        }
    }
    if !present.is_empty() {
        tracing::info!(
            parts = present.len(),
            "replay: skipping parts the engine already holds"
        );
    }
    Ok(present)
}

/// Tracks which sequences are wholly in the engine and the contiguous prefix.
struct Tracker {
    /// Last sequence of the contiguous flushed prefix.
    watermark: u64,
    remaining: HashMap<u64, usize>,
    done: BTreeSet<u64>,
}

impl Tracker {
    fn new(flushed: u64) -> Self {
        Self {
            watermark: flushed,
            remaining: HashMap::new(),
            done: BTreeSet::new(),
        }
    }

    fn register(&mut self, seq: u64, parts: usize) {
        if parts == 0 {
            self.done.insert(seq);
        } else {
            self.remaining.insert(seq, parts);
        }
    }

    fn part_done(&mut self, seq: u64) {
        if let Some(n) = self.remaining.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                self.remaining.remove(&seq);
                self.done.insert(seq);
            }
        }
    }

    /// Advances the watermark; returns it if it moved.
    fn advance(&mut self) -> Option<u64> {
        let before = self.watermark;
        while self.done.remove(&(self.watermark + 1)) {
            self.watermark += 1;
        }
        // Sequences at or below the watermark can linger only from `skip`.
        while let Some(&first) = self.done.first() {
            if first <= self.watermark {
                self.done.remove(&first);
            } else {
                break;
            }
        }
        (self.watermark > before).then_some(self.watermark)
    }
}

#[derive(Default)]
struct Buffer {
    parts: VecDeque<Part>,
    points: usize,
    oldest: Option<Instant>,
}

struct Coordinator {
    config: FlushConfig,
    buffers: HashMap<Key, Buffer>,
    in_flight: HashSet<Key>,
    retry_at: HashMap<Key, Instant>,
    backoff: HashMap<Key, Duration>,
    tracker: Tracker,
    status: Arc<Mutex<FlushStatus>>,
    mark_flushed: MarkFlushed,
    job_tx: Sender<Job>,
    /// Dropped databases: parts of theirs with a sequence at or below the
    /// value are discarded, buffered or still to arrive.
    dropped: HashMap<String, u64>,
    /// Drop requests waiting for the database's in-flight jobs to finish.
    drop_waiters: Vec<(String, Sender<()>)>,
}

impl Coordinator {
    fn add(&mut self, seq: u64, write: FlushWrite, skip: &HashSet<(String, String, u64)>) {
        let mut parts = 0;
        let now = Instant::now();
        let mut points = 0;
        let dropped = self
            .dropped
            .get(&write.db)
            .is_some_and(|up_to| seq <= *up_to);
        for (m, batch) in write.tables {
            if dropped
                || batch.num_rows() == 0
                || skip.contains(&(write.db.clone(), m.clone(), seq))
            {
                continue;
            }
            parts += 1;
            points += batch.num_rows() as u64;
            let buf = self.buffers.entry((write.db.clone(), m)).or_default();
            buf.points += batch.num_rows();
            buf.oldest.get_or_insert(now);
            buf.parts.push_back(Part { seq, batch });
        }
        self.tracker.register(seq, parts);
        self.status.lock().pending_points += points;
    }

    fn run<M>(
        mut self,
        committed: Receiver<M>,
        unpack: fn(M) -> (u64, FlushWrite),
        done: Receiver<JobDone>,
        control: Receiver<Control>,
    ) {
        let none = HashSet::new();
        let tick = Duration::from_millis(20);
        let mut open = true;
        loop {
            select! {
                recv(committed) -> msg => match msg {
                    Ok(m) => {
                        let (seq, write) = unpack(m);
                        self.add(seq, write, &none);
                        // Drain whatever else is ready without waiting.
                        while let Ok(m) = committed.try_recv() {
                            let (seq, write) = unpack(m);
                            self.add(seq, write, &none);
                        }
                    }
                    Err(_) => open = false,
                },
                recv(done) -> msg => if let Ok(d) = msg { self.finished(d) },
                recv(control) -> msg => if let Ok(c) = msg { self.control(c) },
                default(tick) => {}
            }
            // A disconnected channel is always ready; stop selecting on it.
            if !open {
                while let Ok(d) = done.recv_timeout(tick) {
                    self.finished(d);
                }
            }
            self.advance();
            self.dispatch(!open);
            if !open
                && self.buffers.values().all(|b| b.parts.is_empty())
                && self.in_flight.is_empty()
            {
                break;
            }
            metrics::gauge!("chingest_flush_pending_points")
                .set(self.status.lock().pending_points as f64);
        }
        self.advance();
        drop(self.job_tx);
        tracing::info!(flushed_seq = self.tracker.watermark, "flusher stopped");
    }

    fn control(&mut self, c: Control) {
        match c {
            Control::DropDatabase {
                db,
                up_to_seq,
                done,
            } => {
                let up_to = self.dropped.entry(db.clone()).or_insert(0);
                *up_to = (*up_to).max(up_to_seq);
                let up_to = *up_to;
                let mut discarded = 0u64;
                for ((d, _), buf) in self.buffers.iter_mut() {
                    if *d != db {
                        continue;
                    }
                    let (gone, kept): (Vec<Part>, Vec<Part>) =
                        buf.parts.drain(..).partition(|p| p.seq <= up_to);
                    for p in &gone {
                        buf.points -= p.batch.num_rows();
                        discarded += p.batch.num_rows() as u64;
                        self.tracker.part_done(p.seq);
                    }
                    buf.parts = kept.into();
                    if buf.parts.is_empty() {
                        buf.oldest = None;
                    }
                }
                self.retry_at.retain(|(d, _), _| *d != db);
                self.backoff.retain(|(d, _), _| *d != db);
                {
                    let mut st = self.status.lock();
                    st.pending_points = st.pending_points.saturating_sub(discarded);
                }
                tracing::info!(db, up_to, discarded, "flusher: dropped database");
                self.drop_waiters.push((db, done));
                self.answer_drop_waiters();
            }
        }
    }

    /// Answers drop requests whose database has no insert in flight.
    fn answer_drop_waiters(&mut self) {
        let in_flight = &self.in_flight;
        self.drop_waiters.retain(|(db, done)| {
            if in_flight.iter().any(|(d, _)| d == db) {
                true
            } else {
                let _ = done.send(());
                false
            }
        });
    }

    fn advance(&mut self) {
        if let Some(seq) = self.tracker.advance() {
            match (self.mark_flushed)(seq) {
                Ok(()) => self.status.lock().flushed_seq = seq,
                Err(e) => {
                    // The engine has the rows; the WAL keeps them a while longer
                    // and a restart skips them (`__seq` check). Not data loss.
                    tracing::error!(seq, error = %e, "could not advance the WAL's flushed sequence");
                }
            }
        }
    }

    fn dispatch(&mut self, closing: bool) {
        let now = Instant::now();
        let max_age = Duration::from_millis(self.config.max_age_ms);
        let mut ready: Vec<Key> = self
            .buffers
            .iter()
            .filter(|(k, b)| {
                !b.parts.is_empty()
                    && !self.in_flight.contains(*k)
                    && self.retry_at.get(*k).is_none_or(|t| *t <= now)
                    && (closing
                        || b.points >= self.config.max_points_per_batch
                        || b.oldest.is_some_and(|o| now.duration_since(o) >= max_age))
            })
            .map(|(k, _)| k.clone())
            .collect();
        // Oldest first, so one hot measurement cannot starve the others.
        ready.sort_by_key(|k| self.buffers[k].oldest);
        for key in ready {
            let buf = self.buffers.get_mut(&key).expect("ready key");
            // Take whole parts up to the batch size (at least one).
            let mut parts = Vec::new();
            let mut points = 0;
            while let Some(p) = buf.parts.front() {
                let n = p.batch.num_rows();
                if !parts.is_empty() && points + n > self.config.max_points_per_batch {
                    break;
                }
                points += n;
                parts.push(buf.parts.pop_front().expect("front exists"));
            }
            buf.points -= points;
            buf.oldest = if buf.parts.is_empty() {
                None
            } else {
                Some(now)
            };
            match self.job_tx.try_send(Job {
                key: key.clone(),
                parts,
            }) {
                Ok(()) => {
                    self.in_flight.insert(key);
                }
                Err(e) => {
                    // Every worker busy: put the parts back and try next tick.
                    let job = e.into_inner();
                    let buf = self.buffers.get_mut(&key).expect("ready key");
                    for p in job.parts.into_iter().rev() {
                        buf.points += p.batch.num_rows();
                        buf.parts.push_front(p);
                    }
                    buf.oldest.get_or_insert(now);
                    break;
                }
            }
        }
        let in_flight = self.in_flight.len();
        self.status.lock().jobs_in_flight = in_flight;
    }

    fn finished(&mut self, d: JobDone) {
        self.in_flight.remove(&d.key);
        let dropped_up_to = self.dropped.get(&d.key.0).copied();
        let outcome = match (d.outcome, dropped_up_to) {
            // A failed insert into a dropped database is not retried.
            (Err(_), Some(up_to)) if d.parts.iter().all(|p| p.seq <= up_to) => Ok(()),
            (o, _) => o,
        };
        self.answer_drop_waiters();
        match outcome {
            Ok(()) => {
                self.backoff.remove(&d.key);
                self.retry_at.remove(&d.key);
                let points: u64 = d.parts.iter().map(|p| p.batch.num_rows() as u64).sum();
                for p in &d.parts {
                    self.tracker.part_done(p.seq);
                }
                let mut st = self.status.lock();
                st.pending_points = st.pending_points.saturating_sub(points);
                st.points_flushed += points;
                st.consecutive_failures = 0;
                st.last_error = None;
            }
            Err(e) => {
                let delay = self
                    .backoff
                    .get(&d.key)
                    .map_or(Duration::from_millis(self.config.retry_initial_ms), |d| {
                        (*d * 2).min(Duration::from_millis(self.config.retry_max_ms))
                    });
                self.backoff.insert(d.key.clone(), delay);
                self.retry_at.insert(d.key.clone(), Instant::now() + delay);
                metrics::counter!("chingest_flush_failures_total").increment(1);
                tracing::error!(db = %d.key.0, measurement = %d.key.1, retry_in_ms = delay.as_millis() as u64,
                    error = %e, "flush failed; will retry");
                {
                    let mut st = self.status.lock();
                    st.consecutive_failures += 1;
                    st.last_error = Some(format!("{}.{}: {e}", d.key.0, d.key.1));
                }
                let buf = self.buffers.entry(d.key).or_default();
                for p in d.parts.into_iter().rev() {
                    buf.points += p.batch.num_rows();
                    buf.parts.push_front(p);
                }
                buf.oldest.get_or_insert(Instant::now());
            }
        }
    }
}

/// Series ids already written to each database's series table by this
/// process, so each series costs one series-table row, not one per flush.
type KnownSeries = Arc<Mutex<HashMap<String, IdSet>>>;

/// A set of series ids. They are xxh3 hashes already, so the set uses them
/// as their own hash instead of hashing them again with SipHash.
type IdSet = HashSet<u64, std::hash::BuildHasherDefault<IdHasher>>;

#[derive(Default)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed; fold anything else in for completeness.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

fn worker(
    engine: Engine,
    jobs: Receiver<Job>,
    done: Sender<JobDone>,
    tables: Arc<Mutex<TableCache>>,
    known: KnownSeries,
    inserts: Arc<Semaphore>,
    insert_threads: usize,
) {
    for job in jobs {
        let start = Instant::now();
        // A panic is a failed job (retried), not a dead worker and a stuck flusher.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            insert_job(&engine, &job, &tables, &known, &inserts, insert_threads)
        }))
        .unwrap_or_else(|panic| {
            let msg = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            Err(EngineError::Arrow(format!("flush job panicked: {msg}")))
        });
        metrics::histogram!("chingest_flush_batch_seconds").record(start.elapsed().as_secs_f64());
        let _ = done.send(JobDone {
            key: job.key,
            parts: job.parts,
            outcome,
        });
    }
}

fn insert_job(
    engine: &Engine,
    job: &Job,
    tables: &Mutex<TableCache>,
    known: &KnownSeries,
    inserts: &Semaphore,
    insert_threads: usize,
) -> Result<()> {
    let (db, measurement) = &job.key;
    let build = Instant::now();
    let (batch, columns) = coalesce(&job.parts)?;
    metrics::histogram!("chingest_flush_arrow_build_seconds").record(build.elapsed().as_secs_f64());
    let _permit = inserts.acquire();
    let conn = engine.connection();
    tables.lock().ensure(&conn, db, measurement, &columns)?;
    let rows = batch.num_rows();
    let series = {
        let known = known.lock();
        new_series(&batch, &columns, known.get(db.as_str()))
    };
    let insert = Instant::now();
    let settings = table::single_part_settings(rows, insert_threads);
    conn.insert_batch(&qualified(db, measurement), batch, &settings)?;
    metrics::histogram!("chingest_chdb_insert_seconds").record(insert.elapsed().as_secs_f64());
    metrics::histogram!("chingest_flush_batch_points").record(rows as f64);
    metrics::counter!("chingest_flush_points_total").increment(rows as u64);
    if let Some(series) = series {
        let ids: Vec<u64> = series
            .column(0)
            .as_primitive::<arrow::datatypes::UInt64Type>()
            .values()
            .to_vec();
        let series = with_measurement(series, measurement)?;
        conn.insert_batch(&qualified(db, table::SERIES_TABLE), series, &[])?;
        known.lock().entry(db.clone()).or_default().extend(ids);
    }
    Ok(())
}

/// The distinct series of `batch` not in `known`, as (series_id, series_key)
/// rows, where the key is `tag=value` pairs sorted by tag, comma-separated,
/// empty tags omitted; `None` when there are none.
fn new_series(
    batch: &RecordBatch,
    columns: &[(String, ColumnKind)],
    known: Option<&IdSet>,
) -> Option<RecordBatch> {
    let ids = batch
        .column_by_name(table::SERIES_ID)?
        .as_primitive::<arrow::datatypes::UInt64Type>();
    let mut tags: Vec<(&str, &StringArray)> = columns
        .iter()
        .filter(|(_, k)| *k == ColumnKind::Tag)
        .filter_map(|(n, _)| Some((n.as_str(), batch.column_by_name(n)?.as_string::<i32>())))
        .collect();
    tags.sort_by_key(|(n, _)| *n);
    let mut seen = IdSet::default();
    let mut out_ids = Vec::new();
    let mut out_keys = Vec::new();
    for row in 0..batch.num_rows() {
        let id = ids.value(row);
        if known.is_some_and(|k| k.contains(&id)) || !seen.insert(id) {
            continue;
        }
        let key = tags
            .iter()
            .filter(|(_, a)| !a.value(row).is_empty())
            .map(|(n, a)| format!("{n}={}", a.value(row)))
            .collect::<Vec<_>>()
            .join(",");
        out_ids.push(id);
        out_keys.push(key);
    }
    if out_ids.is_empty() {
        return None;
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("series_id", DataType::UInt64, false),
        Field::new("series_key", DataType::Utf8, false),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(UInt64Array::from(out_ids)),
            Arc::new(StringArray::from(out_keys)),
        ],
    )
    .ok()
}

fn with_measurement(series: RecordBatch, measurement: &str) -> Result<RecordBatch> {
    let n = series.num_rows();
    let mut fields: Vec<Field> = series
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new("measurement", DataType::Utf8, false));
    let mut cols = series.columns().to_vec();
    cols.push(Arc::new(StringArray::from_iter_values(
        std::iter::repeat_n(measurement, n),
    )));
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)
        .map_err(|e| EngineError::Arrow(e.to_string()))
}

/// A counting semaphore for the number of concurrent inserts.
struct Semaphore {
    free: Mutex<usize>,
    freed: parking_lot::Condvar,
}

struct Permit<'a>(&'a Semaphore);

impl Semaphore {
    fn new(n: usize) -> Self {
        Self {
            free: Mutex::new(n),
            freed: parking_lot::Condvar::new(),
        }
    }

    fn acquire(&self) -> Permit<'_> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watermark_moves_over_the_contiguous_prefix_only() {
        let mut t = Tracker::new(10);
        t.register(11, 2);
        t.register(12, 1);
        t.register(13, 0);
        assert_eq!(t.advance(), None);
        t.part_done(12);
        assert_eq!(t.advance(), None, "11 is still missing a part");
        t.part_done(11);
        assert_eq!(t.advance(), None);
        t.part_done(11);
        assert_eq!(t.advance(), Some(13));
        assert!(t.done.is_empty() && t.remaining.is_empty());
    }

    #[test]
    fn skipped_sequences_count_as_done() {
        let mut t = Tracker::new(0);
        t.done.insert(1);
        t.done.insert(2);
        t.register(3, 1);
        assert_eq!(t.advance(), Some(2));
        t.part_done(3);
        assert_eq!(t.advance(), Some(3));
    }
}
