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
//! once every item up to `acked` is applied ([`Applier::wait_applied`]),
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
    /// The newest sequence queued.
    newest: u64,
    stopped: bool,
    /// Tests hold the applier to see what a backlog does.
    paused: bool,
    /// When a backlog was last dropped.
    dropped_at: Option<Instant>,
}

impl State {
    /// Whether every item with a sequence at or below `seq` is applied.
    fn applied(&self, seq: u64) -> bool {
        self.running.is_none_or(|s| s > seq) && self.items.front().is_none_or(|q| q.seq > seq)
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
    pub(super) fn wait_applied(&self, seq: u64, timeout: Duration) -> bool {
        let mut st = self.state.lock();
        if st.applied(seq) {
            return true;
        }
        let deadline = Instant::now() + timeout;
        while !st.applied(seq) {
            if self.progress.wait_until(&mut st, deadline).timed_out() {
                return st.applied(seq);
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
            self.state.lock().running = None;
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
mod tests {
    use engine::arrow::array::{ArrayRef, Int64Array, StringArray, UInt64Array};
    use engine::arrow::datatypes::{DataType, Field, Schema};
    use flush::PartsObserver;

    use super::*;
    use crate::hot::testing::{batch, floats};
    use crate::HotConfig;

    /// A store that is on, holding every measurement, its applier started
    /// (held), and how often it asked for a refill (`Kick::count`).
    fn store(max_backlog: u64) -> (Arc<HotStore>, impl Fn() -> usize) {
        let s = Arc::new(HotStore::new([]));
        s.configure(HotConfig {
            enabled: true,
            window: "1h".into(),
            max_backlog,
            hold: crate::hot::Hold::All,
            ..HotConfig::default()
        })
        .unwrap();
        s.start();
        s.applier.pause(true);
        let k = s.clone();
        (s, move || k.kick.count())
    }

    fn key(m: &str) -> Key {
        ("d".to_string(), m.to_string())
    }

    /// Waits (generously: the applier runs at idle priority) until everything up to `seq` is applied.
    fn applied(s: &HotStore, seq: u64) {
        assert!(
            s.applier.wait_applied(seq, Duration::from_secs(60)),
            "not applied"
        );
    }

    #[test]
    fn a_read_waits_for_the_applier_and_only_then_finds_the_write() {
        let (s, _) = store(1 << 30);
        s.received("d", 1, &[("m", &batch(&[(1, 10, 1.0), (1, 20, 2.0)]))]);
        // Queued, not applied: a read falls back (behind) rather than miss it.
        assert!(!s.wait_applied(1));
        assert!(s.read().get("d", "m").is_none());
        // A read that needs nothing newer than what is applied goes on.
        assert!(s.wait_applied(0));
        s.applier.pause(false);
        applied(&s, 1);
        assert!(s.wait_applied(1));
        assert_eq!(floats(&s, "m"), Some(vec![(10, 1.0), (20, 2.0)]));
        // More rows than one slice under the lock: all of them, in order.
        let rows: Vec<_> = (0..3000).map(|k| (1, 100 + k, k as f64)).collect();
        s.received("d", 2, &[("m", &batch(&rows))]);
        applied(&s, 2);
        assert_eq!(floats(&s, "m").unwrap().len(), 3002);
        s.stop();
        assert!(s.read().get("d", "m").is_some() && !s.enabled());
    }

    #[test]
    fn a_read_does_not_wait_long_for_a_held_lock() {
        let (s, _) = store(1 << 30);
        // As if the applier were descheduled holding the write lock.
        let held = s.tables.write();
        let started = Instant::now();
        assert!(s.try_read().is_none());
        assert!(started.elapsed() < Duration::from_secs(30));
        drop(held);
        assert!(s.try_read().is_some());
    }

    #[test]
    fn a_store_that_is_off_queues_nothing() {
        // Off until configured: no applier runs, so anything queued would stay for ever.
        let s = HotStore::new([]);
        s.received("d", 1, &[("m", &batch(&[(1, 10, 1.0)]))]);
        s.set_aside("d", "m");
        assert!(s.applier.wait_applied(u64::MAX, Duration::ZERO));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_applier_runs_at_idle_priority() {
        let (s, _) = store(1 << 30);
        let deadline = Instant::now() + Duration::from_secs(60);
        let policy = loop {
            let task = std::fs::read_dir("/proc/self/task").unwrap().find_map(|e| {
                let dir = e.ok()?.path();
                let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
                (comm.trim() == "hot-apply").then_some(dir)
            });
            // `policy` in /proc/<tid>/sched: 5 is SCHED_IDLE.
            let policy = task.and_then(|dir| {
                let sched = std::fs::read_to_string(dir.join("sched")).ok()?;
                sched.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    (k.trim() == "policy").then(|| v.trim().to_string())
                })
            });
            match policy {
                Some(p) if p == "5" || Instant::now() > deadline => break p,
                _ => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        assert_eq!(policy, "5");
        s.stop();
    }

    #[test]
    fn a_forget_is_not_undone_by_inserts_queued_before_or_after_it() {
        let (s, _) = store(1 << 30);
        let b = batch(&[(1, 10, 1.0)]);
        // A DELETE between two queued writes of `m`.
        s.received("d", 1, &[("m", &b)]);
        s.forget("d", "m");
        s.received("d", 2, &[("m", &b)]);
        // A dead letter of `l` (told on the coordinator's thread: queued) between two.
        s.received("d", 3, &[("l", &b)]);
        s.set_aside("d", "l");
        s.received("d", 4, &[("l", &b)]);
        // A dropped database between two.
        s.received("x", 5, &[("m", &b)]);
        s.forget_database("x");
        s.received("x", 6, &[("m", &b)]);
        s.received("d", 7, &[("n", &b)]);
        s.applier.pause(false);
        applied(&s, 7);
        let t = s.read();
        for (db, m) in [("d", "m"), ("d", "l"), ("x", "m")] {
            assert!(t.get(db, m).is_none(), "{db}.{m} served");
            assert!(
                !t.tables.contains_key(&(db.to_string(), m.to_string())),
                "{db}.{m} re-created"
            );
        }
        assert!(t.get("d", "n").is_some());
    }

    #[test]
    fn a_dropped_backlog_leaves_its_measurements_pending_until_refilled() {
        let b1 = batch(&[(1, 10, 1.0), (1, 20, 2.0)]);
        let (s, refills) = store(b1.get_array_memory_size() as u64 * 3 / 2);
        s.applier.pause(false);
        s.received("d", 1, &[("m", &b1)]);
        applied(&s, 1);
        s.received("d", 1, &[("o", &b1)]);
        applied(&s, 1);
        assert!(floats(&s, "m").is_some());
        s.applier.pause(true);
        // The second write does not fit beside the first: both dropped.
        s.received("d", 2, &[("m", &batch(&[(1, 20, -2.0), (1, 25, 2.5)]))]);
        s.received("d", 3, &[("m", &batch(&[(1, 30, 3.0), (1, 35, 3.5)]))]);
        // A read needing entry 2 waits for the marker, not past it.
        assert!(!s.wait_applied(2));
        assert_eq!(floats(&s, "m").unwrap().len(), 2, "applied early");
        s.applier.pause(false);
        applied(&s, 3);
        // Emptied and pending: not served, refill asked for; `o` untouched.
        assert_eq!(floats(&s, "m"), None);
        assert!(!s.read().tables.contains_key(&key("m")));
        assert!(floats(&s, "o").is_some());
        assert_eq!(refills(), 1);
        let spell = s.spell(&key("m")).expect("pending");
        // A write after the drop lands; the refill fills around it.
        s.received("d", 4, &[("m", &batch(&[(1, 40, 4.0)]))]);
        applied(&s, 4);
        // What the refill's read sees: every write, the one at 40 older than the table's.
        let seen = batch(&[(1, 10, 1.0), (1, 20, -2.0), (1, 30, 3.0), (1, 40, -4.0)]);
        assert_eq!(
            s.refill_merge(&key("m"), spell, &seen),
            super::super::refill::Merge::Merged(4)
        );
        assert!(s.refill_done(&key("m"), spell, 0, false));
        assert_eq!(
            floats(&s, "m"),
            Some(vec![(10, 1.0), (20, -2.0), (30, 3.0), (40, 4.0)])
        );
        // A refill begun before another drop cannot mark the new spell done.
        s.applier.pause(true);
        s.received("d", 5, &[("m", &b1)]);
        s.received("d", 6, &[("m", &b1)]);
        s.applier.pause(false);
        applied(&s, 6);
        assert!(!s.refill_done(&key("m"), spell, 0, false));
        assert_eq!(floats(&s, "m"), None);
        assert_eq!(refills(), 2);
    }

    /// `cargo test -p storage --release hot_received_cost -- --ignored --nocapture`:
    /// the coordinator's time per received batch (TSBS's shape: 200 hosts, 10
    /// integer fields, 2,000 rows) with the store off, on but the measurement
    /// not read (`hold = "read"`: a lookup), on (queued for the
    /// applier, which is held so only the coordinator's side is timed), and
    /// inserting synchronously as the coordinator did before the applier.
    #[test]
    #[ignore]
    fn hot_received_cost() {
        let fields = 10;
        let mut schema = vec![
            Field::new("time", DataType::Int64, false),
            Field::new("series_id", DataType::UInt64, false),
            Field::new("hostname", DataType::Utf8, false),
        ];
        for f in 0..fields {
            schema.push(Field::new(format!("usage_{f}"), DataType::Int64, true));
        }
        let schema = Arc::new(Schema::new(schema));
        let batches: Vec<RecordBatch> = (0..400)
            .map(|b| {
                let n = 2000usize;
                let time = Int64Array::from_iter_values(
                    (0..n).map(|r| (b * 10 + (r / 200) as i64) * 10_000_000_000),
                );
                let sid = UInt64Array::from_iter_values((0..n).map(|r| (r % 200) as u64));
                let host =
                    StringArray::from_iter_values((0..n).map(|r| format!("host_{}", r % 200)));
                let mut cols: Vec<ArrayRef> = vec![Arc::new(time), Arc::new(sid), Arc::new(host)];
                for f in 0..fields {
                    cols.push(Arc::new(Int64Array::from_iter_values(
                        (0..n).map(|r| (r as i64 * 7 + f) % 100),
                    )));
                }
                RecordBatch::try_new(schema.clone(), cols).unwrap()
            })
            .collect();
        let time = |s: &HotStore, sync: bool| {
            let started = Instant::now();
            for (k, b) in batches.iter().enumerate() {
                if sync {
                    s.add("d", &[("cpu", 0, b)]);
                } else {
                    s.received("d", k as u64 + 1, &[("cpu", b)]);
                }
            }
            started.elapsed().as_nanos() as f64 / batches.len() as f64 / 1000.0
        };
        let (on, _) = store(u64::MAX);
        let queued = time(&on, false);
        let (sync, _) = store(u64::MAX);
        let inserted = time(&sync, true);
        let off = HotStore::new([]);
        let nothing = time(&off, false);
        // `hold = "read"`, the measurement not read: a lookup, nothing queued.
        let unread = HotStore::new([]);
        unread
            .configure(HotConfig {
                enabled: true,
                ..HotConfig::default()
            })
            .unwrap();
        let skipped = time(&unread, false);
        println!(
            "µs per received batch of 2,000 rows: off {nothing:.2}, not read {skipped:.2}, \
             queued {queued:.2}, inserted synchronously {inserted:.1}"
        );
        on.stop();
        sync.stop();
    }
}
