//! The applier (issue #44): the hot store's inserts off the write path.
//!
//! The coordinator (`flush::PartsObserver::received`) only queues an entry's
//! parts (Arrow batches: `Arc`ed buffers, cloned for a few words each) with
//! its WAL sequence and returns; one thread, at the lowest CPU priority the
//! kernel has (`SCHED_IDLE`: it runs when no other thread wants the CPU, so
//! it never takes a core from the write path; nice 19 would still take a
//! share of one under load), inserts them in sequence order.
//!
//! Reads. The applier publishes how far it got: every item queued with a
//! sequence at or below `s` is applied once no queued or running item has one
//! (items are queued in sequence order, so the front's says it). A read that
//! waited until the coordinator received the WAL's last acknowledged sequence
//! `acked` (every item up to it is queued then) is served from the store only
//! once every item up to `acked` that touches its measurement is applied
//! ([`Applier::wait_applied_for`]: other measurements' writes are not waited for),
//! within `[hot] apply_wait_ms`; otherwise the engine answers it (correct,
//! only slower) and `chingest_hot_fallbacks_total{reason="behind"}` counts it.
//!
//! Holding the tables' write lock while starved. At idle priority the applier
//! can be descheduled for a long time anywhere, the lock held too: it applies
//! at most [`SLICE_ROWS`] rows per hold (a fraction of a millisecond), and a
//! read takes the read lock with the same bound (`HotStore::try_read`),
//! falling back to the engine (`reason="locked"`) rather than waiting on a
//! descheduled thread. A reader may see part of an entry newer than the ones
//! it waited for (as it may see any newer write); never less than those.
//!
//! Memory. At most `[hot] max_backlog` bytes wait. A write that would take
//! the queue past it drops everything queued and itself into one
//! [`Item::Lost`] marker naming the measurements: applied in its place, it
//! empties them and makes them *pending*, served again only after their
//! refill (`refill.rs`) merged their window back in from the engine and the
//! WAL's unflushed rows (`chingest_hot_backlog_dropped_total` counts the
//! dropped entries). The marker takes the sequence of the oldest dropped entry,
//! so a read that needs any of them waits for the marker, and then finds the
//! measurements pending.
//!
//! Forgetting. `DELETE`, `DROP`, admin SQL and dead letters put the
//! measurement (or database, or all) into the store's never-served sets at
//! once; those sets are permanent until restart and the applier checks them
//! before each slice, so a queued older insert applied after the forget cannot
//! re-create the table, and a later one cannot resurrect it. A dead letter
//! (told on the coordinator's thread, which must not wait for the tables'
//! lock) is queued as [`Item::Forget`] at the newest sequence received, so a
//! read after it waits until it is applied.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use engine::arrow::array::RecordBatch;
use parking_lot::{Condvar, Mutex};

use super::{HotStore, Key};

/// How long after a dropped backlog the applier counts as dropping
/// ([`Applier::dropping`]).
pub(super) const QUIET: Duration = Duration::from_secs(10);

/// Rows applied under one hold of the tables' write lock.
pub(super) const SLICE_ROWS: usize = 1024;

/// Entries of received writes dropped from a full backlog.
pub(crate) const HOT_BACKLOG_DROPPED: &str = "chingest_hot_backlog_dropped_total";
/// Bytes of received writes waiting for the applier.
pub(crate) const HOT_BACKLOG_BYTES: &str = "chingest_hot_backlog_bytes";

/// What the applier does with one queued item.
#[derive(Debug)]
pub(super) enum Item {
    /// The kept parts of one WAL entry of `db` (measurement, the epoch it
    /// was wanted in: `wanted.rs`, batch): inserted.
    Parts {
        db: String,
        parts: Vec<(String, u64, RecordBatch)>,
    },
    /// A dead letter of this measurement was set aside: forgotten.
    Forget(Key),
    /// Entries dropped from a full backlog held these measurements: they are
    /// emptied and refilled.
    Lost(HashSet<Key>),
}

#[derive(Debug)]
struct Queued {
    seq: u64,
    bytes: usize,
    item: Item,
}

#[derive(Debug, Default)]
struct State {
    items: VecDeque<Queued>,
    bytes: usize,
    /// The sequence of the item being applied.
    running: Option<u64>,
    /// The measurements the item being applied touches (empty when none is).
    running_keys: Vec<Key>,
    /// The newest sequence queued.
    newest: u64,
    stopped: bool,
    /// Tests hold the applier to see what a backlog does.
    paused: bool,
    /// When a backlog was last dropped.
    dropped_at: Option<Instant>,
}

impl State {
    /// Whether every item with a sequence at or below `seq` is applied
    /// (tests wait for everything; reads wait for their measurement's).
    #[cfg(test)]
    fn applied(&self, seq: u64) -> bool {
        self.running.is_none_or(|s| s > seq) && self.items.front().is_none_or(|q| q.seq > seq)
    }

    /// Whether every item with a sequence at or below `seq` that touches
    /// `key` is applied: a read of one measurement does not wait for the
    /// writes of others (the dashboard benchmark's `behind` fallbacks were
    /// reads waiting behind other measurements' parts). Items are queued in
    /// sequence order, so the scan stops at the first newer one.
    fn applied_for(&self, seq: u64, key: &Key) -> bool {
        let running_touches =
            self.running.is_some_and(|s| s <= seq) && self.running_keys.iter().any(|k| k == key);
        !running_touches
            && self
                .items
                .iter()
                .take_while(|q| q.seq <= seq)
                .all(|q| !q.item.touches(key))
    }
}

impl Item {
    /// Whether applying this item changes what `key` holds.
    fn touches(&self, key: &Key) -> bool {
        match self {
            Item::Parts { db, parts } => *db == key.0 && parts.iter().any(|(m, _, _)| *m == key.1),
            Item::Forget(k) => k == key,
            Item::Lost(keys) => keys.contains(key),
        }
    }

    /// The measurements applying this item changes.
    fn keys(&self) -> Vec<Key> {
        match self {
            Item::Parts { db, parts } => parts
                .iter()
                .map(|(m, _, _)| (db.clone(), m.clone()))
                .collect(),
            Item::Forget(k) => vec![k.clone()],
            Item::Lost(keys) => keys.iter().cloned().collect(),
        }
    }
}

/// The queue between the coordinator and the applier thread.
#[derive(Debug, Default)]
pub(super) struct Applier {
    state: Mutex<State>,
    /// The applier waits here for items.
    work: Condvar,
    /// Reads wait here for items to be applied.
    progress: Condvar,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Applier {
    /// Queues `item` of entry `seq` (`bytes` of batches); past `max_bytes`
    /// drops the backlog (the module's documentation).
    pub(super) fn push(&self, seq: u64, bytes: usize, item: Item, max_bytes: usize) {
        let mut st = self.state.lock();
        if st.stopped {
            return;
        }
        let seq = seq.max(st.newest);
        st.newest = seq;
        if matches!(item, Item::Parts { .. }) && st.bytes.saturating_add(bytes) > max_bytes {
            let oldest = st.items.front().map_or(seq, |q| q.seq);
            let mut lost = HashSet::new();
            let mut kept = VecDeque::new();
            let mut dropped = 0u64;
            let queued = std::mem::take(&mut st.items);
            for q in queued.into_iter().chain([Queued { seq, bytes, item }]) {
                match q.item {
                    Item::Parts { db, parts } => {
                        dropped += 1;
                        lost.extend(parts.into_iter().map(|(m, _, _)| (db.clone(), m)));
                    }
                    Item::Lost(keys) => lost.extend(keys),
                    // Permanent whatever the order: kept, after the marker.
                    forget @ Item::Forget(_) => kept.push_back(Queued { item: forget, ..q }),
                }
            }
            tracing::warn!(
                dropped,
                measurements = lost.len(),
                max_backlog = max_bytes,
                "hot store: the applier fell behind by more than [hot] max_backlog; \
                 its backlog is dropped and those measurements are refilled"
            );
            metrics::counter!(HOT_BACKLOG_DROPPED).increment(dropped);
            st.dropped_at = Some(Instant::now());
            kept.push_front(Queued {
                seq: oldest,
                bytes: 0,
                item: Item::Lost(lost),
            });
            st.items = kept;
            st.bytes = 0;
        } else {
            st.items.push_back(Queued { seq, bytes, item });
            st.bytes += bytes;
        }
        metrics::gauge!(HOT_BACKLOG_BYTES).set(st.bytes as f64);
        self.work.notify_one();
    }

    /// Whether a backlog was dropped less than [`QUIET`] ago: the writes
    /// outran the applier, and a refill now would likely be lost again.
    pub(super) fn dropping(&self) -> bool {
        let st = self.state.lock();
        st.dropped_at.is_some_and(|t| t.elapsed() < QUIET)
    }

    /// The newest sequence queued.
    pub(super) fn newest(&self) -> u64 {
        self.state.lock().newest
    }

    /// Waits until every item with a sequence at or below `seq` is applied,
    /// at most `timeout`; false if not by then.
    #[cfg(test)]
    pub(super) fn wait_applied(&self, seq: u64, timeout: Duration) -> bool {
        self.wait_until(timeout, |st| st.applied(seq))
    }

    /// Waits until every item with a sequence at or below `seq` that touches
    /// `key` is applied, at most `timeout`; false if not by then.
    pub(super) fn wait_applied_for(&self, seq: u64, key: &Key, timeout: Duration) -> bool {
        self.wait_until(timeout, |st| st.applied_for(seq, key))
    }

    fn wait_until(&self, timeout: Duration, done: impl Fn(&State) -> bool) -> bool {
        let mut st = self.state.lock();
        if done(&st) {
            return true;
        }
        let deadline = Instant::now() + timeout;
        while !done(&st) {
            if self.progress.wait_until(&mut st, deadline).timed_out() {
                return done(&st);
            }
        }
        true
    }

    /// Starts the thread (once) applying to `store`.
    pub(super) fn start(self: &Arc<Self>, store: Weak<HotStore>) {
        let mut thread = self.thread.lock();
        if thread.is_some() || self.state.lock().stopped {
            return;
        }
        let me = self.clone();
        let weak = store.clone();
        let spawned = std::thread::Builder::new()
            .name("hot-apply".into())
            .spawn(move || me.run(&weak));
        match spawned {
            Ok(handle) => *thread = Some(handle),
            Err(e) => {
                tracing::error!(error = %e, "hot store: cannot start its applier; nothing is held or served");
                drop(thread);
                self.stop();
                if let Some(s) = store.upgrade() {
                    s.forget_all();
                }
            }
        }
    }

    /// Stops the thread (what is queued is not applied) and joins it.
    pub(super) fn stop(&self) {
        {
            let mut st = self.state.lock();
            st.stopped = true;
            st.items.clear();
            st.bytes = 0;
        }
        self.work.notify_all();
        self.progress.notify_all();
        let handle = self.thread.lock().take();
        if let Some(h) = handle {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }

    /// Holds (true) or releases the applier: tests build a backlog with it.
    #[cfg(test)]
    pub(super) fn pause(&self, paused: bool) {
        self.state.lock().paused = paused;
        self.work.notify_all();
    }

    fn run(&self, store: &Weak<HotStore>) {
        lowest_priority();
        loop {
            let item = {
                let mut st = self.state.lock();
                loop {
                    if st.stopped {
                        return;
                    }
                    if !st.paused {
                        if let Some(q) = st.items.pop_front() {
                            st.bytes -= q.bytes;
                            st.running = Some(q.seq);
                            st.running_keys = q.item.keys();
                            metrics::gauge!(HOT_BACKLOG_BYTES).set(st.bytes as f64);
                            break q.item;
                        }
                    }
                    self.work.wait(&mut st);
                }
            };
            match store.upgrade() {
                Some(s) => s.apply(item),
                None => return,
            }
            {
                let mut st = self.state.lock();
                st.running = None;
                st.running_keys.clear();
            }
            self.progress.notify_all();
        }
    }
}

/// Puts the calling thread in `SCHED_IDLE` (Linux; elsewhere the lowest
/// priority of its normal policy). Through `thread-priority`: `unsafe` lives
/// only in the engine's FFI modules, and this is not one.
pub(super) fn lowest_priority() {
    use thread_priority::{
        set_thread_priority_and_policy, thread_native_id, NormalThreadSchedulePolicy,
        ThreadPriority, ThreadSchedulePolicy,
    };
    #[cfg(target_os = "linux")]
    let policy = NormalThreadSchedulePolicy::Idle;
    #[cfg(not(target_os = "linux"))]
    let policy = NormalThreadSchedulePolicy::Other;
    let set = set_thread_priority_and_policy(
        thread_native_id(),
        ThreadPriority::Min,
        ThreadSchedulePolicy::Normal(policy),
    );
    if let Err(e) = set {
        tracing::warn!(error = ?e,
            "hot store: cannot lower its applier's priority; it runs at normal priority");
    }
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;
