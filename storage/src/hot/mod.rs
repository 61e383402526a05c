//! The hot store (issue #44): the recent points of every series in memory, so
//! that a dashboard statement over a few series (one engine statement costs 3–4 ms
//! of planning however small: docs/influxql.md) is answered in Rust
//! (`influxql/hot/`).
//!
//! Fed by the flusher's coordinator (`flush::PartsObserver`), in WAL sequence
//! order, with the very parts reads of unflushed points see: the coordinator
//! only queues them, before the entry counts as received, and a thread at idle
//! priority inserts them (`apply.rs`). A read that waits until the coordinator
//! received the WAL's last acknowledged sequence (as every read does), and then
//! until the applier applied everything up to it (a few ms at most, else the
//! engine answers), finds every acknowledged point here, and a write the WAL
//! refused is never here. Sequence order makes the last write win, field by
//! field, as the engine's point merge does.
//!
//! Which measurements (`wanted.rs`): with `[hot] hold = "read"` (the default)
//! only those a statement the store could answer has read, from that first read
//! on, until one goes unread for `[hot] idle`; the coordinator does not even
//! queue the others' writes. With `hold = "all"` every measurement written.
//!
//! What it holds completely, per measurement: every point with a time at or after
//! `Table::complete_from`. With `hold = "all"` a measurement first written after
//! start-up is complete from the beginning of time; eviction by window (relative
//! to each series' newest point, not the wall clock) or by memory only raises
//! that bound. Measurements that existed when the process started (`"all"`), and
//! those first read (`"read"`), are *pending*: the coordinator feeds their
//! tables as any other, but they are not served until the background refill
//! (`refill.rs`) has merged in their points from their newest point − `window`
//! on, read through the normal read path (engine and unflushed WAL rows),
//! filling only what the table's own newer writes left empty; then they are
//! complete from that cutoff. Measurements whose writes the applier had to
//! drop (its backlog past `[hot] max_backlog`) are emptied and become pending
//! likewise. One whose refill fails or does not fit in
//! `max_memory`, one of a database with a retention (the evaluator refuses
//! those), and those a `DELETE`, `DROP SERIES`, `DROP MEASUREMENT`, `DROP
//! DATABASE`, a dead letter or an admin's SQL write touched (before, during or
//! after the refill) are never served until the next start: reads go to the
//! engine there.

mod apply;
mod backoff;
mod chunk;
mod codec;
mod column;
mod config;
#[cfg(test)]
mod cost;
#[cfg(test)]
mod decode_timing;
mod observe;
mod refill;
mod refiller;
mod series;
pub(crate) mod table;
pub(crate) mod tag_index;
#[cfg(test)]
mod testing;
mod trim;
mod wanted;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use engine::arrow::array::RecordBatch;
use parking_lot::{RwLock, RwLockReadGuard};

use apply::{Applier, Item, SLICE_ROWS};
use backoff::Backoff;

pub use config::{Hold, HotConfig};
pub(crate) use observe::AdminWrites;
use refiller::Kick;
use table::Table;
use wanted::Wanted;

/// Bytes the hot store holds.
pub(crate) const HOT_BYTES: &str = "chingest_hot_bytes";
/// Values (times and field values) the hot store holds.
pub(crate) const HOT_VALUES: &str = "chingest_hot_values";
/// Measurements the store emptied because it held more than `max_memory`.
pub(crate) const HOT_EVICTIONS: &str = "chingest_hot_memory_evictions_total";
/// Measurements that existed at start and wait for their refill (`refill.rs`).
pub(crate) const HOT_REFILL_PENDING: &str = "chingest_hot_refill_pending";
/// How long the refill after start took (0 until it ended).
pub(crate) const HOT_REFILL_SECONDS: &str = "chingest_hot_refill_seconds";
/// Points the refill merged into the store.
pub(crate) const HOT_REFILL_POINTS: &str = "chingest_hot_refill_points_total";
/// Measurements by state: `wanted` (read with `[hot] hold = "read"`: held
/// from then on), `pending` (held, waiting for their refill) or `served`.
pub(crate) const HOT_MEASUREMENTS: &str = "chingest_hot_measurements";
/// Reads the store could have answered that went to the engine, by reason:
/// `behind` (the applier had not applied every acknowledged write within
/// `[hot] apply_wait_ms`), `locked` (the tables' lock was not free by then).
pub(crate) const HOT_FALLBACKS: &str = "chingest_hot_fallbacks_total";

type Key = (String, String);

/// The held points of every measurement, and what may never be served.
#[derive(Debug, Default)]
pub(crate) struct Tables {
    pub(crate) tables: HashMap<Key, Table>,
    /// Measurements whose points are not all here (something removed points
    /// the store cannot tell, or their refill failed or did not fit).
    never: HashSet<Key>,
    /// Measurements that existed at start, or lost writes to a dropped
    /// backlog (`apply.rs`): held (from the writes applied since) but not
    /// served until their refill merged the older points in (`refill.rs`).
    /// The value is the pending spell's number: a refill merges into the
    /// spell it started in only.
    pending: HashMap<Key, u64>,
    /// With `[hot] hold = "read"`: the measurements held, with the epoch
    /// they were wanted in (`wanted.rs`): a queued part of another epoch is
    /// not applied.
    held: HashMap<Key, u64>,
    /// Databases of which no measurement is served (dropped).
    never_db: HashSet<String>,
    bytes: usize,
}

impl Tables {
    /// The table of `db`.`measurement` if the store may answer from it.
    pub(crate) fn get(&self, db: &str, measurement: &str) -> Option<&Table> {
        let key = (db.to_string(), measurement.to_string());
        if self.pending.contains_key(&key) {
            return None;
        }
        self.tables.get(&key)
    }
}

/// See the module's documentation.
pub(crate) struct HotStore {
    enabled: AtomicBool,
    /// The refill after start was started (`refill.rs`).
    refill_started: AtomicBool,
    /// `[hot] hold = "all"`.
    hold_all: AtomicBool,
    /// `[hot]`, its window and idle time in ns.
    config: RwLock<Limits>,
    tables: RwLock<Tables>,
    /// Numbers the pending spells (`Tables::pending`) and the held epochs
    /// (`Tables::held`).
    spells: AtomicU64,
    /// The queue to the applier thread (`apply.rs`).
    applier: Arc<Applier>,
    /// The measurements reads asked for (`wanted.rs`).
    wanted: Wanted,
    /// Wakes the refill thread (`refill.rs`).
    kick: Kick,
    /// Measurements whose last refills were given up (`backoff.rs`).
    backoff: Backoff,
}

/// `[hot]` and what is parsed from it.
#[derive(Debug)]
struct Limits {
    config: HotConfig,
    window: i64,
    idle: i64,
}

impl std::fmt::Debug for HotStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HotStore")
            .field("enabled", &self.enabled())
            .finish_non_exhaustive()
    }
}

impl Drop for HotStore {
    fn drop(&mut self) {
        self.applier.stop();
    }
}

impl HotStore {
    /// An empty store; `existing` are the measurements (database, name) the
    /// catalog knows at start: their older points are in the engine only, so
    /// they are served only once refilled.
    pub(crate) fn new(existing: impl IntoIterator<Item = (String, String)>) -> HotStore {
        let config = HotConfig::default();
        let window = config.window_ns().unwrap_or(i64::MAX);
        let idle = config.idle_ns().unwrap_or(i64::MAX);
        metrics::gauge!(HOT_BYTES).set(0.0);
        metrics::gauge!(HOT_VALUES).set(0.0);
        metrics::counter!(HOT_EVICTIONS).increment(0);
        metrics::gauge!(HOT_REFILL_SECONDS).set(0.0);
        metrics::counter!(HOT_REFILL_POINTS).increment(0);
        metrics::counter!(refill::HOT_REFILLS_STARTED).increment(0);
        for outcome in ["served", "unserved"] {
            metrics::counter!(refill::HOT_REFILLS_FINISHED, "outcome" => outcome).increment(0);
        }
        metrics::counter!(wanted::HOT_WANTS).increment(0);
        metrics::counter!(wanted::HOT_IDLE_DROPS).increment(0);
        metrics::counter!(backoff::HOT_REFILL_BACKOFFS).increment(0);
        metrics::counter!(backoff::HOT_REFILL_BACKOFF_READS).increment(0);
        metrics::gauge!(HOT_MEASUREMENTS, "state" => "wanted").set(0.0);
        metrics::counter!(apply::HOT_BACKLOG_DROPPED).increment(0);
        metrics::gauge!(apply::HOT_BACKLOG_BYTES).set(0.0);
        for reason in ["behind", "locked"] {
            metrics::counter!(HOT_FALLBACKS, "reason" => reason).increment(0);
        }
        let store = HotStore {
            // Off until `configure` (through `Storage::configure_hot`, which
            // also starts the applier): on by default, but nothing may be
            // queued before a thread applies it.
            enabled: AtomicBool::new(false),
            refill_started: AtomicBool::new(false),
            hold_all: AtomicBool::new(config.hold == Hold::All),
            config: RwLock::new(Limits {
                config,
                window,
                idle,
            }),
            tables: RwLock::new(Tables::default()),
            spells: AtomicU64::new(0),
            applier: Arc::default(),
            wanted: Wanted::default(),
            kick: Kick::default(),
            backoff: Backoff::default(),
        };
        store.existed(existing);
        store
    }

    /// `existing` are the measurements (database, name) the catalog knows at
    /// start: their older points are in the engine only, so they are served
    /// only once refilled.
    pub(crate) fn existed(&self, existing: impl IntoIterator<Item = (String, String)>) {
        let spell = self.spells.fetch_add(1, Ordering::Relaxed);
        let mut t = self.tables.write();
        t.pending.extend(existing.into_iter().map(|k| (k, spell)));
        publish(&t);
    }

    /// Starts the applier thread (when on).
    pub(crate) fn start(self: &Arc<Self>) {
        if self.enabled() {
            self.applier.start(Arc::downgrade(self));
        }
    }

    /// Stops the applier thread (storage's shutdown): nothing is served after.
    pub(crate) fn stop(&self) {
        self.enabled.store(false, Ordering::Release);
        self.applier.stop();
        self.kick_refill();
    }

    /// Applies `[hot]` (before the first write: a store switched off forgets all).
    pub(crate) fn configure(&self, config: HotConfig) -> Result<(), String> {
        let window = config.window_ns()?;
        let idle = config.idle_ns()?;
        self.enabled.store(config.enabled, Ordering::Release);
        self.hold_all
            .store(config.hold == Hold::All, Ordering::Release);
        if !config.enabled {
            self.forget_all();
        } else if config.hold == Hold::Read {
            // Nothing is held until read: what existed at start waits for its
            // first read, not for a refill now.
            let mut t = self.tables.write();
            t.pending.clear();
            publish(&t);
        }
        *self.config.write() = Limits {
            config,
            window,
            idle,
        };
        Ok(())
    }

    /// `[hot] apply_wait_ms`.
    pub(crate) fn apply_wait(&self) -> Duration {
        self.config.read().config.apply_wait()
    }

    /// Whether every write up to `seq` to measurement `m` of `db` is applied,
    /// waiting at most `[hot] apply_wait_ms` for it (counted as `behind` if
    /// not). Writes to other measurements are not waited for.
    pub(crate) fn wait_applied(&self, seq: u64, db: &str, m: &str) -> bool {
        let key = (db.to_string(), m.to_string());
        let applied = self.applier.wait_applied_for(seq, &key, self.apply_wait());
        if !applied {
            metrics::counter!(HOT_FALLBACKS, "reason" => "behind").increment(1);
        }
        applied
    }

    /// Whether every write up to `seq` is applied now (no wait: a statement
    /// run inline, `influxql/inline.rs`, is refused rather than counted).
    pub(crate) fn applied_now(&self, seq: u64, db: &str, m: &str) -> bool {
        let key = (db.to_string(), m.to_string());
        self.applier.wait_applied_for(seq, &key, Duration::ZERO)
    }

    /// The held tables, read-locked, if the lock is free now (inline).
    pub(crate) fn try_read_now(&self) -> Option<RwLockReadGuard<'_, Tables>> {
        self.tables.try_read()
    }

    /// The held tables, read-locked, unless the lock is not free within
    /// `[hot] apply_wait_ms` (counted as `locked`): the applier holding it may
    /// be descheduled at its idle priority.
    pub(crate) fn try_read(&self) -> Option<RwLockReadGuard<'_, Tables>> {
        let guard = self.tables.try_read_for(self.apply_wait());
        if guard.is_none() {
            metrics::counter!(HOT_FALLBACKS, "reason" => "locked").increment(1);
        }
        guard
    }

    /// `(window in ns, max_memory)`.
    fn limits(&self) -> (i64, usize) {
        let c = self.config.read();
        (
            c.window,
            usize::try_from(c.config.max_memory).unwrap_or(usize::MAX),
        )
    }

    /// Whether reads may be answered here at all.
    pub(crate) fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// `[hot] max_series`.
    pub(crate) fn max_series(&self) -> usize {
        self.config.read().config.max_series
    }

    /// The held tables, read-locked (writes wait: keep it short).
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Tables> {
        self.tables.read()
    }

    /// Never serve `db`.`measurement` again (until restart).
    pub(crate) fn forget(&self, db: &str, measurement: &str) {
        let mut t = self.tables.write();
        let key = (db.to_string(), measurement.to_string());
        if let Some(table) = t.tables.remove(&key) {
            t.bytes = t.bytes.saturating_sub(table.bytes);
        }
        t.pending.remove(&key);
        t.held.remove(&key);
        t.never.insert(key);
        publish(&t);
        drop(t);
        self.wanted.never(db, Some(measurement));
    }

    /// Never serve a measurement of `db` again (until restart).
    pub(crate) fn forget_database(&self, db: &str) {
        let mut t = self.tables.write();
        t.never_db.insert(db.to_string());
        let gone: Vec<Key> = t.tables.keys().filter(|k| k.0 == db).cloned().collect();
        for k in gone {
            if let Some(table) = t.tables.remove(&k) {
                t.bytes = t.bytes.saturating_sub(table.bytes);
            }
        }
        t.pending.retain(|k, _| k.0 != db);
        t.held.retain(|k, _| k.0 != db);
        publish(&t);
        drop(t);
        self.wanted.never(db, None);
    }

    /// Serve nothing again (until restart): an admin's SQL may have changed any table.
    pub(crate) fn forget_all(&self) {
        self.enabled.store(false, Ordering::Release);
        let mut t = self.tables.write();
        t.tables.clear();
        t.pending.clear();
        t.held.clear();
        t.bytes = 0;
        publish(&t);
        drop(t);
        self.wanted.clear();
        self.backoff.clear();
    }

    /// Inserts `parts` of `db` (measurement, epoch it was queued in, batch),
    /// at most [`SLICE_ROWS`] rows per hold of the write lock (`apply.rs`).
    fn add(&self, db: &str, parts: &[(&str, u64, &RecordBatch)]) {
        for (m, epoch, batch) in parts {
            let key = (db.to_string(), m.to_string());
            let rows = batch.num_rows();
            for offset in (0..rows).step_by(SLICE_ROWS) {
                let len = SLICE_ROWS.min(rows - offset);
                if !self.add_slice(&key, *epoch, &batch.slice(offset, len)) {
                    break;
                }
            }
        }
    }

    /// Inserts one slice of `key`'s batch, queued in `epoch`; false when the
    /// measurement is not held (any more, or not in that epoch: `wanted.rs`).
    fn add_slice(&self, key: &Key, epoch: u64, slice: &RecordBatch) -> bool {
        if !self.enabled() {
            return false;
        }
        let all = self.holds_all();
        let (window, max_memory) = self.limits();
        let mut guard = self.tables.write();
        let t = &mut *guard;
        if t.never_db.contains(&key.0)
            || t.never.contains(key)
            || (!all && t.held.get(key) != Some(&epoch))
        {
            return false;
        }
        let table = t.tables.entry(key.clone()).or_insert_with(Table::new);
        let before = table.bytes;
        if !table.insert(slice, window) {
            tracing::warn!(db = %key.0, measurement = %key.1, "hot store: a batch not in ingest's layout; the measurement is read from the engine");
            t.tables.remove(key);
            t.never.insert(key.clone());
            t.bytes = t.bytes.saturating_sub(before);
            publish(t);
            return false;
        }
        t.bytes = (t.bytes + table.bytes).saturating_sub(before);
        if t.bytes > max_memory {
            shrink(t, max_memory);
        }
        publish(t);
        true
    }

    /// Applies one queued item (on the applier thread).
    fn apply(&self, item: Item) {
        match item {
            Item::Parts { db, parts } => {
                let parts: Vec<(&str, u64, &RecordBatch)> =
                    parts.iter().map(|(m, e, b)| (m.as_str(), *e, b)).collect();
                self.add(&db, &parts);
            }
            Item::Forget(key) => self.forget(&key.0, &key.1),
            Item::Lost(keys) => {
                if self.lost(keys) {
                    self.kick_refill();
                }
            }
        }
    }

    /// Empties `keys` (their writes were dropped from the backlog) and makes
    /// them pending; true when one became pending.
    fn lost(&self, keys: HashSet<Key>) -> bool {
        if !self.enabled() {
            return false;
        }
        let spell = self.spells.fetch_add(1, Ordering::Relaxed);
        let all = self.holds_all();
        let mut t = self.tables.write();
        let mut any = false;
        for key in keys {
            if t.never.contains(&key)
                || t.never_db.contains(&key.0)
                || (!all && !t.held.contains_key(&key))
            {
                // Not held (dropped for idleness meanwhile): nothing to refill.
                continue;
            }
            if let Some(table) = t.tables.remove(&key) {
                t.bytes = t.bytes.saturating_sub(table.bytes);
            }
            t.pending.insert(key, spell);
            any = true;
        }
        publish(&t);
        any
    }
}

/// Empties the largest tables until the store holds at most 3/4 of `max_memory`
/// (so it does not empty one per write at the bound).
fn shrink(t: &mut Tables, max_memory: usize) {
    let target = max_memory / 4 * 3;
    let mut sizes: Vec<(usize, Key)> = t
        .tables
        .iter()
        .map(|(k, table)| (table.bytes, k.clone()))
        .collect();
    sizes.sort_unstable_by(|a, b| b.cmp(a));
    for (bytes, key) in sizes {
        if t.bytes <= target {
            break;
        }
        if let Some(table) = t.tables.get_mut(&key) {
            table.empty();
            t.bytes = t.bytes.saturating_sub(bytes);
            metrics::counter!(HOT_EVICTIONS).increment(1);
            tracing::debug!(db = %key.0, measurement = %key.1, bytes,
                "hot store over max_memory: measurement emptied");
        }
    }
}

fn publish(t: &Tables) {
    metrics::gauge!(HOT_REFILL_PENDING).set(t.pending.len() as f64);
    metrics::gauge!(HOT_MEASUREMENTS, "state" => "pending").set(t.pending.len() as f64);
    let served = t
        .tables
        .keys()
        .filter(|k| !t.pending.contains_key(*k))
        .count();
    metrics::gauge!(HOT_MEASUREMENTS, "state" => "served").set(served as f64);
    metrics::gauge!(HOT_BYTES).set(t.bytes as f64);
    metrics::gauge!(HOT_VALUES).set(t.tables.values().map(|t| t.values).sum::<usize>() as f64);
}
