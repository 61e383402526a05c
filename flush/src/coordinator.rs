//! The coordinator: one thread that receives committed entries in sequence
//! order, buffers their parts per (database, measurement), hands a buffer to
//! a worker when it is due (`max_points_per_batch` or `max_age_ms`), handles
//! failed jobs, answers `DROP DATABASE` and `DROP MEASUREMENT`, and reports the watermark to the
//! [`FlushedLog`].
//!
//! One job per table at a time, so the DDL and inserts of one table never
//! race; distinct tables flush in parallel.
//!
//! A failed job is classified (`classify.rs`):
//! - transient (engine busy, memory, disk, I/O): its parts go back and the
//!   table is retried with exponential back-off, forever;
//! - deterministic (the engine refuses the statement for what it is, or an
//!   unknown error that repeated `quarantine_after_failures` times): the job
//!   is bisected until the parts that fail alone are found, and each of those
//!   is set aside as a dead letter through the [`FlushedLog`] (durable before
//!   it counts as done), so the watermark moves on and every other part of
//!   the table, every other table and database keep flowing. Nothing is
//!   dropped: a dead letter keeps its rows and the engine's error.
//!
//! A retried job first asks the engine which of its parts it already holds
//! (`verify_up_to`, see `worker.rs`): exactly once on every retry path.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use crossbeam_channel::{select, Receiver, Sender};
use engine::table::Part;
use engine::EngineError;
use parking_lot::Mutex;

use crate::buffer::{Buffer, Key};
use crate::classify::{classify, signature, FailureClass};
use crate::config::FlushConfig;
use crate::dead_letter::DeadLetter;
use crate::fence::{DropScope, Fences};
use crate::replay::Held;
use crate::status::FlushStatus;
use crate::unflushed::Unflushed;
use crate::watermark::{FlushedLog, Watermark};
use crate::worker::{Job, JobDone};
use crate::write::FlushWrite;

/// Requests to the coordinator from other threads.
pub(crate) enum Control {
    /// Discard the scope's data up to `up_to_seq`; answer once none of it is in flight.
    Drop {
        scope: DropScope,
        up_to_seq: u64,
        done: Sender<()>,
    },
}

/// A table whose last job failed: when it is tried next, and how it failed.
struct Failing {
    delay: Duration,
    until: Instant,
    /// What the failures compare by (`classify::signature`).
    signature: String,
    /// Consecutive failures with that signature.
    repeats: u32,
}

pub(crate) struct Coordinator {
    config: FlushConfig,
    buffers: HashMap<Key, Buffer>,
    in_flight: HashSet<Key>,
    failing: HashMap<Key, Failing>,
    /// Groups of parts being isolated after a deterministic failure, tried
    /// before the table's buffer (bisection: a failing group is halved).
    isolate: HashMap<Key, VecDeque<Vec<Part>>>,
    /// Per table, the highest sequence of a part whose insert failed: a retry
    /// of parts at or below it checks the engine first.
    verify_up_to: HashMap<Key, u64>,
    watermark: Watermark,
    status: Arc<Mutex<FlushStatus>>,
    log: Arc<dyn FlushedLog>,
    jobs: Sender<Job>,
    /// Dropped databases and measurements: parts they cover with a sequence
    /// at or below the fence are discarded, buffered or still to arrive.
    dropped: Fences,
    /// Drop requests waiting for the in-flight jobs they cover to finish.
    drop_waiters: Vec<(DropScope, Sender<()>)>,
    /// Once the input has ended: stop at this instant even with parts left
    /// (they stay in the WAL and replay on the next start).
    stop_by: Arc<Mutex<Option<Instant>>>,
    /// What reads see of the parts not yet in the engine: added on receipt,
    /// removed once inserted, set aside or dropped.
    unflushed: Arc<Unflushed>,
}

impl Coordinator {
    pub(crate) fn new(
        config: FlushConfig,
        watermark: Watermark,
        status: Arc<Mutex<FlushStatus>>,
        log: Arc<dyn FlushedLog>,
        jobs: Sender<Job>,
        stop_by: Arc<Mutex<Option<Instant>>>,
        unflushed: Arc<Unflushed>,
    ) -> Self {
        Self {
            config,
            buffers: HashMap::new(),
            in_flight: HashSet::new(),
            failing: HashMap::new(),
            isolate: HashMap::new(),
            verify_up_to: HashMap::new(),
            watermark,
            status,
            log,
            jobs,
            dropped: Fences::default(),
            drop_waiters: Vec::new(),
            stop_by,
            unflushed,
        }
    }

    /// Drop fences known at start-up.
    pub(crate) fn set_dropped(&mut self, dropped: &Fences) {
        for (scope, up_to) in dropped.iter() {
            self.dropped.raise(scope.clone(), up_to);
        }
    }

    /// Whether part `seq` of table `(db, measurement)` was dropped.
    pub(crate) fn is_dropped(&self, db: &str, measurement: &str, seq: u64) -> bool {
        self.dropped.is_dropped(db, measurement, seq)
    }

    /// Every table buffered now may be on the cluster's shards up to `seq` (replay after
    /// a crash): its jobs ask each shard first.
    pub(crate) fn verify_all_up_to(&mut self, seq: u64) {
        for key in self.buffers.keys() {
            let v = self.verify_up_to.entry(key.clone()).or_insert(0);
            *v = (*v).max(seq);
        }
    }

    /// Buffers the parts of entry `seq`, except those of a dropped database or
    /// measurement and those in `skip` (already in the engine or in the
    /// dead-letter store).
    pub(crate) fn add(&mut self, seq: u64, write: FlushWrite, skip: &Held) {
        let now = Instant::now();
        let (mut parts, mut points) = (0, 0);
        let kept: Vec<(String, RecordBatch)> = write
            .tables
            .into_iter()
            .filter(|(m, batch)| {
                !self.dropped.is_dropped(&write.db, m, seq)
                    && batch.num_rows() > 0
                    && !skip.contains(&(write.db.clone(), m.clone(), seq))
            })
            .collect();
        // Readable before the entry counts as received (`unflushed.rs`).
        self.unflushed
            .add(&write.db, seq, kept.iter().map(|(m, b)| (m.as_str(), b)));
        for (m, batch) in kept {
            parts += 1;
            points += batch.num_rows() as u64;
            let buf = self.buffers.entry((write.db.clone(), m)).or_default();
            buf.push(Part { seq, batch }, now);
        }
        self.watermark.register(seq, parts);
        self.status.lock().pending_points += points;
        self.unflushed.mark_received(seq);
    }

    /// Runs until `committed` disconnects and every buffered part is in the
    /// engine, a dead letter or discarded (or the stop deadline passes), then
    /// stops the workers.
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
            if open {
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
            } else {
                // A disconnected channel is always ready; stop selecting on it.
                select! {
                    recv(done) -> msg => if let Ok(d) = msg { self.finished(d) },
                    recv(control) -> msg => if let Ok(c) = msg { self.control(c) },
                    default(tick) => {}
                }
            }
            while let Ok(d) = done.try_recv() {
                self.finished(d);
            }
            self.advance();
            self.dispatch(!open);
            if !open && self.is_idle() {
                break;
            }
            if !open && self.stop_by.lock().is_some_and(|t| Instant::now() >= t) {
                let st = self.status.lock().clone();
                tracing::warn!(
                    pending_points = st.pending_points,
                    jobs_in_flight = st.jobs_in_flight,
                    "flusher: shutdown deadline reached; what is not flushed stays in the WAL"
                );
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

    /// Nothing buffered, isolated or in flight.
    fn is_idle(&self) -> bool {
        self.buffers.values().all(Buffer::is_empty)
            && self.isolate.values().all(VecDeque::is_empty)
            && self.in_flight.is_empty()
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

    /// Hands every due buffer (isolation groups first, then oldest first) to a
    /// worker while one is free.
    fn dispatch(&mut self, closing: bool) {
        let now = Instant::now();
        let max_points = self.config.max_points_per_batch;
        let max_age = Duration::from_millis(self.config.max_age_ms);
        let free = |k: &Key| {
            !self.in_flight.contains(k) && self.failing.get(k).is_none_or(|f| f.until <= now)
        };
        let mut isolated: Vec<Key> = self
            .isolate
            .iter()
            .filter(|(k, q)| !q.is_empty() && free(k))
            .map(|(k, _)| k.clone())
            .collect();
        isolated.sort();
        let hurried = self.unflushed.take_hurried();
        let mut ready: Vec<Key> = self
            .buffers
            .iter()
            .filter(|(k, b)| {
                (b.is_due(now, max_points, max_age, closing)
                    || (!b.is_empty() && hurried.contains(*k)))
                    && free(k)
                    && self.isolate.get(*k).is_none_or(VecDeque::is_empty)
            })
            .map(|(k, _)| k.clone())
            .collect();
        // Oldest first, so one hot measurement cannot starve the others.
        ready.sort_by_key(|k| self.buffers[k].oldest());
        for (key, from_isolation) in isolated
            .into_iter()
            .map(|k| (k, true))
            .chain(ready.into_iter().map(|k| (k, false)))
        {
            let parts = if from_isolation {
                self.isolate
                    .get_mut(&key)
                    .and_then(VecDeque::pop_front)
                    .expect("non-empty isolation queue")
            } else {
                self.buffers
                    .get_mut(&key)
                    .expect("ready key")
                    .take(max_points, now)
            };
            let job = Job {
                verify_up_to: self.verify_up_to.get(&key).copied().unwrap_or(0),
                key: key.clone(),
                parts,
                isolated: from_isolation,
            };
            if let Err(e) = self.jobs.try_send(job) {
                // Every worker busy: put the parts back and try next tick.
                let job = e.into_inner();
                self.put_back(&key, job.parts, job.isolated, now);
                break;
            }
            self.in_flight.insert(key);
        }
        let in_flight = self.in_flight.len();
        self.status.lock().jobs_in_flight = in_flight;
    }

    /// Returns parts taken for a job to where they came from.
    fn put_back(&mut self, key: &Key, parts: Vec<Part>, isolated: bool, now: Instant) {
        if isolated {
            self.isolate
                .entry(key.clone())
                .or_default()
                .push_front(parts);
        } else {
            self.buffers
                .entry(key.clone())
                .or_default()
                .put_back(parts, now);
        }
    }

    fn finished(&mut self, d: JobDone) {
        let JobDone {
            key,
            parts,
            outcome,
            isolated,
        } = d;
        self.in_flight.remove(&key);
        let outcome = match (outcome, self.dropped.over(&key.0, &key.1)) {
            // A failed insert into a dropped database or measurement is not retried.
            (Err(_), Some(up_to)) if parts.iter().all(|p| p.seq <= up_to) => Ok(()),
            (o, _) => o,
        };
        self.answer_drop_waiters();
        match outcome {
            Ok(()) => self.succeeded(&key, &parts),
            Err(e) => self.failed(key, parts, e, isolated),
        }
    }

    fn succeeded(&mut self, key: &Key, parts: &[Part]) {
        if self.isolate.get(key).is_none_or(VecDeque::is_empty) {
            self.failing.remove(key);
        } else if let Some(f) = self.failing.get_mut(key) {
            // Still isolating: keep the count of the failure being isolated,
            // so its other half is recognised at once.
            f.until = Instant::now();
        }
        let points: u64 = parts.iter().map(|p| p.batch.num_rows() as u64).sum();
        // The INSERT has ended: the table shows these rows from now on.
        self.unflushed.remove(key, parts.iter().map(|p| p.seq));
        for p in parts {
            self.watermark.part_done(p.seq);
        }
        let mut st = self.status.lock();
        st.pending_points = st.pending_points.saturating_sub(points);
        st.points_flushed += points;
        st.consecutive_failures = 0;
        st.last_error = None;
    }

    fn failed(&mut self, key: Key, parts: Vec<Part>, e: EngineError, isolated: bool) {
        let now = Instant::now();
        if let Some(max) = parts.iter().map(|p| p.seq).max() {
            let v = self.verify_up_to.entry(key.clone()).or_insert(0);
            *v = (*v).max(max);
        }
        metrics::counter!("chingest_flush_failures_total").increment(1);
        let sig = signature(&e);
        let initial = Duration::from_millis(self.config.retry_initial_ms);
        let f = self.failing.entry(key.clone()).or_insert(Failing {
            delay: Duration::ZERO,
            until: now,
            signature: String::new(),
            repeats: 0,
        });
        if f.signature == sig {
            f.repeats += 1;
        } else {
            f.signature = sig;
            f.repeats = 1;
        }
        let class = classify(&e);
        let deterministic = class == FailureClass::Deterministic
            || (class == FailureClass::Unknown
                && f.repeats >= self.config.quarantine_after_failures.max(1));
        {
            let mut st = self.status.lock();
            st.consecutive_failures += 1;
            st.last_error = Some(format!("{}.{}: {e}", key.0, key.1));
        }
        if deterministic {
            f.until = now;
            if parts.len() > 1 {
                let half = parts.len() / 2;
                let mut first = parts;
                let second = first.split_off(half);
                tracing::warn!(db = %key.0, measurement = %key.1, parts = first.len() + second.len(),
                    error = %e, "flush refused deterministically; isolating the parts that cause it");
                let q = self.isolate.entry(key).or_default();
                q.push_front(second);
                q.push_front(first);
            } else {
                for p in parts {
                    self.quarantine(&key, p, &e);
                }
            }
            return;
        }
        let delay = if f.delay.is_zero() {
            initial
        } else {
            (f.delay * 2).min(Duration::from_millis(self.config.retry_max_ms))
        };
        f.delay = delay;
        f.until = now + delay;
        tracing::error!(db = %key.0, measurement = %key.1, retry_in_ms = delay.as_millis() as u64,
            class = ?class, error = %e, "flush failed; will retry");
        self.put_back(&key, parts, isolated, now);
    }

    /// Sets one part aside as a dead letter; once that is durable, the part
    /// counts as done. If the dead-letter store fails, the part is retried.
    fn quarantine(&mut self, key: &Key, part: Part, e: &EngineError) {
        let letter = DeadLetter {
            db: key.0.clone(),
            measurement: key.1.clone(),
            seq: part.seq,
            batch: part.batch.clone(),
            error: e.to_string(),
        };
        let points = letter.points();
        match self.log.dead_letter(std::slice::from_ref(&letter)) {
            Ok(()) => {
                tracing::error!(db = %key.0, measurement = %key.1, seq = part.seq, points,
                    error = %e, "flush refused deterministically: part quarantined as a dead letter");
                // Set aside: reads stop showing it, as they do after a restart.
                self.unflushed.remove(key, [part.seq]);
                self.unflushed.set_aside(key);
                self.watermark.part_done(part.seq);
                let mut st = self.status.lock();
                st.pending_points = st.pending_points.saturating_sub(points);
                st.quarantined_points += points;
            }
            Err(me) => {
                tracing::error!(db = %key.0, measurement = %key.1, seq = part.seq,
                    error = %me, "cannot store a dead letter; the part is retried");
                let now = Instant::now();
                if let Some(f) = self.failing.get_mut(key) {
                    f.delay = Duration::from_millis(self.config.retry_max_ms);
                    f.until = now + f.delay;
                }
                self.put_back(key, vec![part], true, now);
            }
        }
    }

    fn control(&mut self, c: Control) {
        match c {
            Control::Drop {
                scope,
                up_to_seq,
                done,
            } => self.drop_scope(scope, up_to_seq, done),
        }
    }

    /// Discards the parts `scope` covers up to `up_to_seq` as if flushed (and
    /// those still to arrive), then answers `done` once no insert it covers is
    /// running.
    fn drop_scope(&mut self, scope: DropScope, up_to_seq: u64, done: Sender<()>) {
        self.dropped.raise(scope.clone(), up_to_seq);
        let mut gone: Vec<Part> = Vec::new();
        for ((d, m), buf) in self.buffers.iter_mut() {
            if let Some(up_to) = self.dropped.over(d, m).filter(|_| scope.covers(d, m)) {
                gone.extend(buf.discard_up_to(up_to));
            }
        }
        for ((d, m), q) in self.isolate.iter_mut() {
            if !scope.covers(d, m) {
                continue;
            }
            let up_to = self.dropped.over(d, m).unwrap_or(up_to_seq);
            for group in q.iter_mut() {
                let (out, kept): (Vec<Part>, Vec<Part>) = std::mem::take(group)
                    .into_iter()
                    .partition(|p| p.seq <= up_to);
                gone.extend(out);
                *group = kept;
            }
            q.retain(|g| !g.is_empty());
        }
        self.unflushed
            .remove_dropped(&scope, |d, m| self.dropped.over(d, m));
        let mut discarded = 0u64;
        for p in gone {
            discarded += p.batch.num_rows() as u64;
            self.watermark.part_done(p.seq);
        }
        self.failing.retain(|(d, m), _| !scope.covers(d, m));
        {
            let mut st = self.status.lock();
            st.pending_points = st.pending_points.saturating_sub(discarded);
        }
        tracing::info!(
            db = scope.db,
            measurement = scope.measurement,
            up_to_seq,
            discarded,
            "flusher: dropped"
        );
        self.drop_waiters.push((scope, done));
        self.answer_drop_waiters();
    }

    /// Answers drop requests that cover no insert in flight.
    fn answer_drop_waiters(&mut self) {
        let in_flight = &self.in_flight;
        self.drop_waiters.retain(|(scope, done)| {
            if in_flight.iter().any(|(d, m)| scope.covers(d, m)) {
                true
            } else {
                let _ = done.send(());
                false
            }
        });
    }
}
