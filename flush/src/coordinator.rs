//! The coordinator: one thread that receives committed entries in sequence
//! order, buffers their parts per (database, measurement), hands a buffer to
//! a worker when it is due (`max_points_per_batch` or `max_age_ms`), retries
//! failed jobs with exponential back-off, answers `DROP DATABASE`, and
//! reports the watermark to the [`FlushedLog`].
//!
//! One job per table at a time, so the DDL and inserts of one table never
//! race; distinct tables flush in parallel. A failed insert is retried
//! forever and surfaced through [`FlushStatus`], a log line and
//! `chingest_flush_failures_total`; data is never dropped.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{select, Receiver, Sender};
use parking_lot::Mutex;

use crate::buffer::{Buffer, Key};
use crate::config::FlushConfig;
use crate::error::EngineError;
use crate::flusher::{FlushStatus, FlushWrite};
use crate::replay::Held;
use crate::table::Part;
use crate::watermark::{FlushedLog, Watermark};
use crate::worker::{Job, JobDone};

/// Requests to the coordinator from other threads.
pub(crate) enum Control {
    /// Discard `db`'s data up to `up_to_seq`; answer once none of it is in flight.
    DropDatabase {
        db: String,
        up_to_seq: u64,
        done: Sender<()>,
    },
}

/// When a failing table is tried next.
struct Backoff {
    delay: Duration,
    until: Instant,
}

pub(crate) struct Coordinator {
    config: FlushConfig,
    buffers: HashMap<Key, Buffer>,
    in_flight: HashSet<Key>,
    backoff: HashMap<Key, Backoff>,
    watermark: Watermark,
    status: Arc<Mutex<FlushStatus>>,
    log: Arc<dyn FlushedLog>,
    jobs: Sender<Job>,
    /// Dropped databases: parts of theirs with a sequence at or below the
    /// value are discarded, buffered or still to arrive.
    dropped: HashMap<String, u64>,
    /// Drop requests waiting for the database's in-flight jobs to finish.
    drop_waiters: Vec<(String, Sender<()>)>,
}

impl Coordinator {
    pub(crate) fn new(
        config: FlushConfig,
        watermark: Watermark,
        status: Arc<Mutex<FlushStatus>>,
        log: Arc<dyn FlushedLog>,
        jobs: Sender<Job>,
    ) -> Self {
        Self {
            config,
            buffers: HashMap::new(),
            in_flight: HashSet::new(),
            backoff: HashMap::new(),
            watermark,
            status,
            log,
            jobs,
            dropped: HashMap::new(),
            drop_waiters: Vec::new(),
        }
    }

    /// Buffers the parts of entry `seq`, except those of a dropped database
    /// and those in `skip` (already in the engine).
    pub(crate) fn add(&mut self, seq: u64, write: FlushWrite, skip: &Held) {
        let now = Instant::now();
        let (mut parts, mut points) = (0, 0);
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
            buf.push(Part { seq, batch }, now);
        }
        self.watermark.register(seq, parts);
        self.status.lock().pending_points += points;
    }

    /// Runs until `committed` disconnects and every buffered part is in the
    /// engine (or discarded), then stops the workers.
    pub(crate) fn run<M: Into<(u64, FlushWrite)>>(
        mut self,
        committed: Receiver<M>,
        done: Receiver<JobDone>,
        control: Receiver<Control>,
    ) {
        let none = Held::new();
        let tick = Duration::from_millis(20);
        let mut open = true;
        loop {
            select! {
                recv(committed) -> msg => match msg {
                    Ok(m) => {
                        self.receive(m, &none);
                        // Drain whatever else is ready without waiting.
                        while let Ok(m) = committed.try_recv() {
                            self.receive(m, &none);
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
            if !open && self.is_idle() {
                break;
            }
            metrics::gauge!("chingest_flush_pending_points")
                .set(self.status.lock().pending_points as f64);
        }
        self.advance();
        drop(self.jobs);
        tracing::info!(flushed_seq = self.watermark.flushed(), "flusher stopped");
    }

    fn receive<M: Into<(u64, FlushWrite)>>(&mut self, m: M, skip: &Held) {
        let (seq, write) = m.into();
        self.add(seq, write, skip);
    }

    /// Nothing buffered and nothing in flight.
    fn is_idle(&self) -> bool {
        self.buffers.values().all(Buffer::is_empty) && self.in_flight.is_empty()
    }

    /// Moves the watermark and tells the log.
    pub(crate) fn advance(&mut self) {
        let Some(seq) = self.watermark.advance() else {
            return;
        };
        match self.log.mark_flushed(seq) {
            Ok(()) => self.status.lock().flushed_seq = seq,
            Err(e) => {
                // The engine has the rows; the WAL keeps them a while longer
                // and a restart skips them (`__seq` check). Not data loss.
                tracing::error!(seq, error = %e, "could not advance the WAL's flushed sequence");
            }
        }
    }

    /// Hands every due buffer (oldest first) to a worker while one is free.
    fn dispatch(&mut self, closing: bool) {
        let now = Instant::now();
        let max_points = self.config.max_points_per_batch;
        let max_age = Duration::from_millis(self.config.max_age_ms);
        let mut ready: Vec<Key> = self
            .buffers
            .iter()
            .filter(|(k, b)| {
                b.is_due(now, max_points, max_age, closing)
                    && !self.in_flight.contains(*k)
                    && self.backoff.get(*k).is_none_or(|b| b.until <= now)
            })
            .map(|(k, _)| k.clone())
            .collect();
        // Oldest first, so one hot measurement cannot starve the others.
        ready.sort_by_key(|k| self.buffers[k].oldest());
        for key in ready {
            let buf = self.buffers.get_mut(&key).expect("ready key");
            let parts = buf.take(max_points, now);
            let job = Job {
                key: key.clone(),
                parts,
            };
            if let Err(e) = self.jobs.try_send(job) {
                // Every worker busy: put the parts back and try next tick.
                buf.put_back(e.into_inner().parts, now);
                break;
            }
            self.in_flight.insert(key);
        }
        let in_flight = self.in_flight.len();
        self.status.lock().jobs_in_flight = in_flight;
    }

    fn finished(&mut self, d: JobDone) {
        let JobDone {
            key,
            parts,
            outcome,
        } = d;
        self.in_flight.remove(&key);
        let outcome = match (outcome, self.dropped.get(&key.0)) {
            // A failed insert into a dropped database is not retried.
            (Err(_), Some(up_to)) if parts.iter().all(|p| p.seq <= *up_to) => Ok(()),
            (o, _) => o,
        };
        self.answer_drop_waiters();
        match outcome {
            Ok(()) => self.succeeded(&key, &parts),
            Err(e) => self.failed(key, parts, e),
        }
    }

    fn succeeded(&mut self, key: &Key, parts: &[Part]) {
        self.backoff.remove(key);
        let points: u64 = parts.iter().map(|p| p.batch.num_rows() as u64).sum();
        for p in parts {
            self.watermark.part_done(p.seq);
        }
        let mut st = self.status.lock();
        st.pending_points = st.pending_points.saturating_sub(points);
        st.points_flushed += points;
        st.consecutive_failures = 0;
        st.last_error = None;
    }

    fn failed(&mut self, key: Key, parts: Vec<Part>, e: EngineError) {
        let delay = self
            .backoff
            .get(&key)
            .map_or(Duration::from_millis(self.config.retry_initial_ms), |b| {
                (b.delay * 2).min(Duration::from_millis(self.config.retry_max_ms))
            });
        let now = Instant::now();
        self.backoff.insert(
            key.clone(),
            Backoff {
                delay,
                until: now + delay,
            },
        );
        metrics::counter!("chingest_flush_failures_total").increment(1);
        tracing::error!(db = %key.0, measurement = %key.1, retry_in_ms = delay.as_millis() as u64,
            error = %e, "flush failed; will retry");
        {
            let mut st = self.status.lock();
            st.consecutive_failures += 1;
            st.last_error = Some(format!("{}.{}: {e}", key.0, key.1));
        }
        self.buffers.entry(key).or_default().put_back(parts, now);
    }

    fn control(&mut self, c: Control) {
        match c {
            Control::DropDatabase {
                db,
                up_to_seq,
                done,
            } => self.drop_database(db, up_to_seq, done),
        }
    }

    /// Discards `db`'s parts up to `up_to_seq` as if flushed (and those still
    /// to arrive), then answers `done` once no insert into `db` is running.
    fn drop_database(&mut self, db: String, up_to_seq: u64, done: Sender<()>) {
        let up_to = self.dropped.entry(db.clone()).or_insert(0);
        *up_to = (*up_to).max(up_to_seq);
        let up_to = *up_to;
        let mut discarded = 0u64;
        for ((d, _), buf) in self.buffers.iter_mut() {
            if *d != db {
                continue;
            }
            for p in buf.discard_up_to(up_to) {
                discarded += p.batch.num_rows() as u64;
                self.watermark.part_done(p.seq);
            }
        }
        self.backoff.retain(|(d, _), _| *d != db);
        {
            let mut st = self.status.lock();
            st.pending_points = st.pending_points.saturating_sub(discarded);
        }
        tracing::info!(db, up_to, discarded, "flusher: dropped database");
        self.drop_waiters.push((db, done));
        self.answer_drop_waiters();
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
}
