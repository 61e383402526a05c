//! The refill (issue #44): a pending measurement (first read with `[hot]
//! hold = "read"`, `wanted.rs`; existing at start with `"all"`; emptied by a
//! dropped backlog, `apply.rs`) has its older points in the engine only. A
//! background thread reads each one's recent points through the storage's normal read
//! path (`influxql/refill.rs`: table and unflushed rows, merged into points)
//! and merges them into its table; the table is served only once that is
//! done, complete from the refill's cutoff. Until then reads go to the engine.
//!
//! Order and bounds: measurements newest first (by their newest point), each
//! from its newest point − `window` on (the cutoff), read in slices of series
//! ids (the table's sort order: a slice reads only its own granules; each
//! series arrives whole, in time order, at the end of its columns), a slice
//! sized to about [`SLICE_ROWS`] rows (smaller again when the engine's `[sql]`
//! result limits refuse it). Before a slice is merged the store checks it fits in 3/4 of
//! `max_memory` (what `shrink` empties down to): one that does not leaves the
//! measurement unserved (logged), never emptying a served one. Measurements
//! of a database with a retention are skipped: the evaluator refuses those.
//!
//! Why a refilled table answers as the engine does. While a measurement is
//! pending the coordinator keeps inserting its writes into the table (in WAL
//! order, overwriting field by field) exactly as for a served one, so for
//! every time at or after the table's `complete_from` the table holds every
//! write received since the store was switched on (eviction raises
//! `complete_from` past what it drops). A slice is read only after the
//! coordinator has received every write the WAL acknowledged (as every read
//! waits), so the read sees every write before start and any number of later
//! ones; whatever it sees was received before it could be seen (the
//! coordinator hands a part to the store before reads find it unflushed or
//! flushed). It is then merged with "fill only slots without a value"
//! ([`super::table::Table::fill`]), under the store's lock, after the read:
//! - a slot (series, time, field) the table holds a value for got it from the
//!   newest write received to it so far, at least as new as any the read saw
//!   for that slot: the table's value is right, and stays;
//! - a slot without a value had no write queued since start, or since the
//!   measurement became held (a value is never unset but by a `DELETE`/`DROP`,
//!   which forget the measurement), so its newest write is one from before,
//!   which the read saw (`wanted.rs`: a write not queued was received before
//!   the read began): filling it from the read is right;
//! - a time below the table's `complete_from` is skipped (an emptied or
//!   evicted span is the engine's).
//!
//! Later writes go on overwriting. When every slice is merged the table is
//! complete from `max(complete_from, cutoff)` and served. A `DELETE`, `DROP`
//! or admin SQL at any moment forgets the measurement (it stays unserved until
//! the next start), and a merge or the completion of a forgotten one does
//! nothing.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use engine::arrow::array::RecordBatch;

use super::table::Table;
use super::{publish, shrink, HotStore, Key, HOT_REFILL_POINTS, HOT_REFILL_SECONDS};
use crate::influxql::refill::Refilled;
use crate::Storage;

/// Rows one refill read aims at (the engine's answer and its batches are in
/// memory at once: about 100 bytes a row for ten fields).
const SLICE_ROWS: u128 = 100_000;
/// The first slice's share of the series ids (`refill_one`): about 135,000
/// rows of TSBS's 1,000 hosts × 24 h, a few rows of a small measurement
/// (whose slices then grow 8× each).
const FIRST_SLICES: u128 = 64;
/// Slices merged between two `malloc_trim`s (`trim.rs`): the peak of a
/// refill's resident memory, at a few ms per trim.
const TRIM_EVERY: usize = 8;
/// How long a refill read waits for the engine's background lane (one
/// statement at a time, outside `[sql] max_concurrent_queries`:
/// `engine::Lane::Background`) before the measurement is given up.
const BUSY_WAIT: Duration = Duration::from_secs(60);
/// How often the refill looks again while backlogs are being dropped.
pub(super) const AGAIN_AFTER: Duration = Duration::from_secs(1);

/// Refills of one measurement started.
pub(crate) const HOT_REFILLS_STARTED: &str = "chingest_hot_refills_started_total";
/// Refills of one measurement ended, by outcome: `served` (the measurement is
/// served from then on) or `unserved` (forgotten, over the memory budget,
/// failed, dropped or emptied again meanwhile).
pub(crate) const HOT_REFILLS_FINISHED: &str = "chingest_hot_refills_finished_total";

/// What a refill merge came to.
#[derive(Debug, PartialEq)]
pub(crate) enum Merge {
    /// Merged, this many points.
    Merged(usize),
    /// The measurement was forgotten meanwhile (or the store switched off).
    Gone,
    /// It would not fit in the store's memory: now forgotten.
    OverBudget,
}

impl HotStore {
    /// The measurements waiting for their refill.
    pub(crate) fn pending(&self) -> Vec<Key> {
        self.tables.read().pending.keys().cloned().collect()
    }

    /// The pending spell of `key` (`Tables::pending`), if it is pending.
    pub(crate) fn spell(&self, key: &Key) -> Option<u64> {
        self.tables.read().pending.get(key).copied()
    }

    /// The newest time `key`'s table holds (writes since start).
    pub(crate) fn held_newest(&self, key: &Key) -> Option<i64> {
        let t = self.tables.read();
        t.tables
            .get(key)
            .map(|table| table.newest)
            .filter(|&n| n != i64::MIN)
    }

    /// Merges `batch` (ingest's layout) into pending `key`'s table, filling
    /// only slots without a value (the module's documentation), if it is
    /// still in the pending `spell` the refill started in.
    pub(crate) fn refill_merge(&self, key: &Key, spell: u64, batch: &RecordBatch) -> Merge {
        if !self.enabled() {
            return Merge::Gone;
        }
        let (window, max_memory) = self.limits();
        let mut guard = self.tables.write();
        let t = &mut *guard;
        if t.pending.get(key) != Some(&spell)
            || t.never.contains(key)
            || t.never_db.contains(&key.0)
        {
            return Merge::Gone;
        }
        // At most this much more (a point the table holds adds less). Fields
        // are the nullable columns (ingest's layout).
        let fields = batch
            .schema()
            .fields()
            .iter()
            .filter(|f| f.is_nullable())
            .count();
        let more =
            batch.num_rows() * (super::table::TIME_BYTES + super::table::VALUE_BYTES * fields);
        if t.bytes + more > max_memory / 4 * 3 {
            drop(guard);
            self.forget(&key.0, &key.1);
            return Merge::OverBudget;
        }
        let table = t.tables.entry(key.clone()).or_insert_with(Table::new);
        let before = table.bytes;
        if !table.fill(batch, window) {
            drop(guard);
            tracing::warn!(db = %key.0, measurement = %key.1,
                "hot store refill: a batch not in ingest's layout; the measurement is read from the engine");
            self.forget(&key.0, &key.1);
            return Merge::Gone;
        }
        t.bytes = (t.bytes + table.bytes).saturating_sub(before);
        if t.bytes > max_memory {
            shrink(t, max_memory);
        }
        publish(t);
        Merge::Merged(batch.num_rows())
    }

    /// Adds the series of `batch` (ingest's layout; its points are not
    /// read) that `key`'s table lacks, with their tags and no point: series
    /// with points before the refill's cutoff only (`seed_older_series`).
    /// False when `key` is no longer in the pending `spell`.
    pub(crate) fn refill_seed(&self, key: &Key, spell: u64, batch: &RecordBatch) -> bool {
        let mut t = self.tables.write();
        if !self.enabled() || t.pending.get(key) != Some(&spell) {
            return false;
        }
        let table = t.tables.entry(key.clone()).or_insert_with(Table::new);
        let before = table.bytes;
        let seeded = table.seed_series(batch);
        let after = table.bytes;
        // The seeded series' tags count against `[hot] max_memory` like
        // points, and past the share a refill may fill (`merge`) the
        // measurement is read from the engine instead.
        t.bytes = (t.bytes + after).saturating_sub(before);
        let (_, max_memory) = self.limits();
        if t.bytes > max_memory / 4 * 3 {
            drop(t);
            self.forget(&key.0, &key.1);
            return false;
        }
        publish(&t);
        seeded
    }

    /// `key`'s refill merged everything from `cutoff` on: served from now,
    /// complete from `cutoff` (or later). `every_series`: the table holds
    /// every series of the measurement (those with older points only
    /// seeded, `refill_seed`). False when it was forgotten meanwhile.
    pub(crate) fn refill_done(
        &self,
        key: &Key,
        spell: u64,
        cutoff: i64,
        every_series: bool,
    ) -> bool {
        if !self.enabled() {
            return false;
        }
        let mut t = self.tables.write();
        if t.pending.get(key) != Some(&spell) {
            // Forgotten, or emptied again (a dropped backlog): a later pass.
            return false;
        }
        t.pending.remove(key);
        if t.never.contains(key) || t.never_db.contains(&key.0) {
            publish(&t);
            return false;
        }
        let table = t.tables.entry(key.clone()).or_insert_with(Table::new);
        table.complete_from = table.complete_from.max(cutoff);
        // Series with points before `cutoff` only are seeded, or else in
        // the engine alone; an emptied table (`shrink`) lost some for good.
        table.every_series &= every_series;
        publish(&t);
        true
    }
}

/// Counts of one refill, for its log line.
#[derive(Default)]
struct Tally {
    served: usize,
    unserved: usize,
    points: usize,
}

impl Tally {
    fn served(&mut self, points: usize) {
        self.served += 1;
        self.points += points;
        metrics::counter!(HOT_REFILLS_FINISHED, "outcome" => "served").increment(1);
    }

    fn unserved(&mut self) {
        self.unserved += 1;
        metrics::counter!(HOT_REFILLS_FINISHED, "outcome" => "unserved").increment(1);
    }
}

/// Failed refills per measurement since its last success.
pub(super) type Retries = HashMap<Key, u32>;

/// Passes a measurement's refill may fail with an error that may pass (the
/// engine busy or shutting down a connection, rewrites landing under every
/// attempt of a read) and be tried again, at least [`AGAIN_AFTER`] apart.
const TRIES: u32 = 5;

/// A refill of `key` failed with `e`: it stays pending for another pass
/// (true) while the error may pass and it has tries left; else it is given up:
/// forgotten (`hold = "all"`: read from the engine until restart) or dropped
/// (`"read"`: its next read starts a refill again).
fn failed(
    s: &Storage,
    key: &Key,
    e: &crate::InfluxqlError,
    retries: &mut Retries,
    tally: &mut Tally,
) -> bool {
    let passing = matches!(
        e,
        crate::InfluxqlError::Sql(engine::SqlError::Unavailable(_) | engine::SqlError::Busy { .. })
    );
    let tries = retries.entry(key.clone()).or_default();
    *tries += 1;
    if passing && *tries < TRIES {
        tracing::info!(db = %key.0, measurement = %key.1, error = %e, tries = *tries,
            "hot store refill failed; tried again shortly, read from the engine meanwhile");
        return true;
    }
    retries.remove(key);
    tally.unserved();
    if s.hot.holds_all() {
        tracing::warn!(db = %key.0, measurement = %key.1, error = %e,
            "hot store refill failed; the measurement is read from the engine");
        s.hot.forget(&key.0, &key.1);
    } else {
        let wait = s.hot.unwant(key);
        tracing::warn!(db = %key.0, measurement = %key.1, error = %e, retry_after_s = wait.as_secs_f64(),
            "hot store refill failed; the measurement is read from the engine until a read after the backoff");
    }
    false
}

/// One pass over the pending measurements (`first`: the one after start);
/// true when one failed and waits for another pass.
pub(super) fn refill_all(storage: &Weak<Storage>, first: bool, retries: &mut Retries) -> bool {
    let mut again = false;
    let started = Instant::now();
    let mut tally = Tally::default();
    // Newest first: the measurements dashboards read now are served first.
    let mut order: Vec<(Option<i64>, Key)> = Vec::new();
    let Some(pending) = storage.upgrade().map(|s| s.hot.pending()) else {
        return false;
    };
    metrics::counter!(HOT_REFILLS_STARTED).increment(pending.len() as u64);
    for key in pending {
        let Some(s) = live(storage) else { break };
        if s.catalog.retention_secs(&key.0) > 0 {
            // The evaluator refuses them: nothing to hold.
            s.hot.forget(&key.0, &key.1);
            tally.unserved();
            continue;
        }
        match busy_retry(|| s.newest_point(&key.0, &key.1)) {
            Ok(newest) => order.push((newest.max(s.hot.held_newest(&key)), key)),
            Err(e) => again |= failed(&s, &key, &e, retries, &mut tally),
        }
    }
    order.sort_by_key(|o| std::cmp::Reverse(o.0));
    for (newest, key) in order {
        let Some(s) = live(storage) else { break };
        match refill_one(&s, &key, newest) {
            Ok(Some(points)) => {
                retries.remove(&key);
                s.hot.refill_served(&key);
                tally.served(points);
            }
            Ok(None) => {
                retries.remove(&key);
                tally.unserved();
            }
            Err(e) => again |= failed(&s, &key, &e, retries, &mut tally),
        }
    }
    let took = started.elapsed();
    if tally.points > 0 {
        // What the slices took is free now: give it back (`trim.rs`).
        super::trim::release_freed_memory();
    }
    if !first {
        tracing::info!(
            served = tally.served,
            unserved = tally.unserved,
            points = tally.points,
            seconds = took.as_secs_f64(),
            "hot store refilled measurements after a dropped backlog or a first read"
        );
        return again;
    }
    metrics::gauge!(HOT_REFILL_SECONDS).set(took.as_secs_f64());
    if let Some(s) = storage.upgrade() {
        let bytes = s.hot.read().bytes;
        tracing::info!(
            served = tally.served,
            unserved = tally.unserved,
            points = tally.points,
            bytes,
            seconds = took.as_secs_f64(),
            "hot store refilled after start"
        );
    }
    again
}

/// The storage, unless it is gone, shutting down or its hot store switched
/// off (an admin's SQL write: nothing is served until restart).
pub(super) fn live(storage: &Weak<Storage>) -> Option<Arc<Storage>> {
    storage
        .upgrade()
        .filter(|s| !s.closed.load(Ordering::Acquire) && s.hot.enabled())
}

/// `f`, again while the SQL sandbox is busy with other statements (at most [`BUSY_WAIT`]).
fn busy_retry<T>(
    mut f: impl FnMut() -> Result<T, crate::InfluxqlError>,
) -> Result<T, crate::InfluxqlError> {
    let deadline = Instant::now() + BUSY_WAIT;
    loop {
        match f() {
            Err(crate::InfluxqlError::Sql(engine::SqlError::Busy { .. }))
                if Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

/// Merges a refill read's `batches` into `key`'s table: the rows merged, or
/// `None` when the refill ends unserved (forgotten, over the memory budget).
fn merge(s: &Storage, key: &Key, spell: u64, batches: &[RecordBatch]) -> Option<usize> {
    let mut rows = 0;
    for b in batches {
        match s.hot.refill_merge(key, spell, b) {
            Merge::Merged(n) => rows += n,
            Merge::Gone => return None,
            Merge::OverBudget => {
                tracing::warn!(db = %key.0, measurement = %key.1, max_memory = s.hot.limits().1,
                    "hot store refill: the measurement's window does not fit in 3/4 of [hot] max_memory; read from the engine");
                return None;
            }
        }
    }
    Some(rows)
}

/// Refills series `sid` of `key` from `cutoff` on in time slices (its window
/// alone exceeds the `[sql]` result limits): the rows merged, or `None` when
/// the refill ends unserved.
fn one_series(
    s: &Storage,
    key: &Key,
    spell: u64,
    schema: &ingest::MeasurementSchema,
    sid: u64,
    cutoff: i64,
    newest: i64,
) -> Result<Option<usize>, crate::InfluxqlError> {
    let mut step: i128 = ((i128::from(newest) - i128::from(cutoff)) / 16).max(1);
    let (mut from, mut points) = (cutoff, 0);
    loop {
        if s.closed.load(Ordering::Acquire) {
            return Ok(None);
        }
        let end = i128::from(from) + step - 1;
        // The last slice: whatever is newer too (written meanwhile).
        let to = if end >= i128::from(newest) {
            i64::MAX
        } else {
            end as i64
        };
        let batches = match busy_retry(|| s.refill_points(&key.0, schema, (from, to), (sid, sid)))?
        {
            Refilled::Points(b) => b,
            Refilled::TooLarge if step > 1 => {
                step = (step / 4).max(1);
                continue;
            }
            Refilled::TooLarge => {
                tracing::warn!(db = %key.0, measurement = %key.1,
                    "hot store refill: one instant's points exceed the [sql] result limits; read from the engine");
                s.hot.forget(&key.0, &key.1);
                return Ok(None);
            }
        };
        let Some(rows) = merge(s, key, spell, &batches) else {
            return Ok(None);
        };
        points += rows;
        if to == i64::MAX {
            return Ok(Some(points));
        }
        from = to + 1;
        let want = step * SLICE_ROWS as i128 / (rows as i128).max(1);
        step = want.clamp((step / 8).max(1), step.saturating_mul(8));
    }
}

/// Adds to `key`'s table the series with points before `cutoff` only, tags
/// and no point, so that it holds every series (`SHOW TAG VALUES` from the
/// store: `influxql/hot/tag_values.rs` lists every series with a point at
/// any time, as the engine path does). False when it could not (the read too
/// large for `[sql]`'s limits): the engine answers those statements then.
fn seed_older_series(
    s: &Storage,
    key: &Key,
    spell: u64,
    schema: &ingest::MeasurementSchema,
    cutoff: i64,
) -> Result<bool, crate::InfluxqlError> {
    if cutoff == i64::MIN {
        return Ok(true);
    }
    let batches = match busy_retry(|| s.refill_series_before(&key.0, schema, cutoff))? {
        Refilled::Points(b) => b,
        Refilled::TooLarge => return Ok(false),
    };
    for b in &batches {
        if !s.hot.refill_seed(key, spell, b) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Refills `key` from its newest point − `window` on: the points merged, or
/// `None` when it ends unserved (forgotten meanwhile, over the memory budget).
fn refill_one(
    s: &Storage,
    key: &Key,
    newest: Option<i64>,
) -> Result<Option<usize>, crate::InfluxqlError> {
    let (db, name) = (&key.0, &key.1);
    let (window, _) = s.hot.limits();
    let Some(spell) = s.hot.spell(key) else {
        return Ok(None);
    };
    let Some(newest) = newest else {
        // No point at all: complete from the beginning of time.
        return Ok(s.hot.refill_done(key, spell, i64::MIN, true).then_some(0));
    };
    let Some(schema) = s.catalog.schema(db).into_iter().find(|m| &m.name == name) else {
        s.hot.forget(db, name);
        return Ok(None);
    };
    let cutoff = newest.saturating_sub(window);
    let started = Instant::now();
    // Where the time goes (the refill's log line): the engine's read
    // (statement and Arrow decoding) or the store's merge.
    let (mut reading, mut merging) = (Duration::ZERO, Duration::ZERO);
    // Slices of series ids (`Storage::refill_points`: the table's sort
    // order), every point of a slice's series from `cutoff` on, so each
    // series arrives whole and in time order. Ids are hashes, spread evenly
    // over `u64`: a slice of ids is about that share of the points.
    const IDS: u128 = u64::MAX as u128 + 1;
    let mut step: u128 = IDS / FIRST_SLICES;
    let mut from: u128 = 0;
    let mut points = 0;
    let mut slices = 0;
    loop {
        if s.closed.load(Ordering::Acquire) {
            return Ok(None);
        }
        let to = (from + step - 1).min(IDS - 1);
        let read_at = Instant::now();
        let sids = (from as u64, to as u64);
        let rows = match busy_retry(|| s.refill_points(db, &schema, (cutoff, i64::MAX), sids))? {
            Refilled::Points(batches) => {
                let merge_at = Instant::now();
                reading += merge_at - read_at;
                let Some(rows) = merge(s, key, spell, &batches) else {
                    return Ok(None);
                };
                merging += merge_at.elapsed();
                rows
            }
            Refilled::TooLarge if step > 1 => {
                step = (step / 4).max(1);
                continue;
            }
            // One series' window past the limits: that series in time slices.
            Refilled::TooLarge => match one_series(s, key, spell, &schema, sids.0, cutoff, newest)?
            {
                Some(rows) => rows,
                None => return Ok(None),
            },
        };
        points += rows;
        metrics::counter!(HOT_REFILL_POINTS).increment(rows as u64);
        slices += 1;
        if slices % TRIM_EVERY == 0 {
            // The slices' freed pages, before they pile up (`trim.rs`).
            super::trim::release_freed_memory();
        }
        if to == IDS - 1 {
            break;
        }
        from = to + 1;
        // About SLICE_ROWS rows next time, changing by at most 8× per slice.
        let want = step.saturating_mul(SLICE_ROWS) / (rows as u128).max(1);
        step = want.clamp((step / 8).max(1), step.saturating_mul(8));
    }
    let every_series = seed_older_series(s, key, spell, &schema, cutoff)?;
    if !s.hot.refill_done(key, spell, cutoff, every_series) {
        return Ok(None);
    }
    // Info: with `[hot] hold = "read"` one per first read of a measurement,
    // and how long its readers went to the engine.
    tracing::info!(
        db,
        measurement = name,
        points,
        cutoff,
        seconds = started.elapsed().as_secs_f64(),
        read_seconds = reading.as_secs_f64(),
        merge_seconds = merging.as_secs_f64(),
        "hot store: measurement refilled"
    );
    Ok(Some(points))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hot::table::Values;
    use crate::hot::testing::batch;
    use crate::HotConfig;

    fn store(max_memory: u64) -> HotStore {
        let s = HotStore::new([("d".to_string(), "m".to_string())]);
        s.configure(HotConfig {
            enabled: true,
            window: "1h".into(),
            max_memory,
            max_series: 64,
            hold: crate::hot::Hold::All,
            ..HotConfig::default()
        })
        .unwrap();
        s
    }

    fn key() -> Key {
        ("d".to_string(), "m".to_string())
    }

    fn floats(s: &HotStore) -> Vec<(i64, f64)> {
        let t = s.read();
        let table = t.get("d", "m").expect("served");
        let series = table.series[&1].all();
        let Some(Some(c)) = series.columns.first() else {
            panic!("no f")
        };
        let Values::Float(v) = &c.values else {
            panic!("not floats")
        };
        series
            .times
            .iter()
            .copied()
            .zip(v.iter().copied())
            .collect()
    }

    #[test]
    fn a_pending_measurement_is_served_only_once_refilled_and_newer_writes_win() {
        let s = store(1 << 30);
        assert!(s.read().get("d", "m").is_none());
        assert_eq!(s.pending(), vec![key()]);
        // A write arriving during the refill: newer than the refill's snapshot.
        s.add("d", &[("m", 0, &batch(&[(1, 20, 2.0), (1, 40, 4.0)]))]);
        assert!(s.read().get("d", "m").is_none(), "served before its refill");
        assert_eq!(s.held_newest(&key()), Some(40));
        // The snapshot saw the older value at 20, and points before.
        assert_eq!(
            s.refill_merge(
                &key(),
                0,
                &batch(&[(1, 10, 1.0), (1, 20, -2.0), (1, 30, 3.0)])
            ),
            Merge::Merged(3)
        );
        assert!(s.read().get("d", "m").is_none());
        assert!(s.refill_done(&key(), 0, 5, false));
        assert!(s.pending().is_empty());
        assert_eq!(s.read().get("d", "m").unwrap().complete_from, 5);
        assert_eq!(floats(&s), vec![(10, 1.0), (20, 2.0), (30, 3.0), (40, 4.0)]);
        // Later writes overwrite as usual.
        s.add("d", &[("m", 0, &batch(&[(1, 10, 9.0)]))]);
        assert_eq!(floats(&s)[0], (10, 9.0));
    }

    #[test]
    fn a_delete_during_the_refill_leaves_the_measurement_unserved() {
        let s = store(1 << 30);
        assert_eq!(
            s.refill_merge(&key(), 0, &batch(&[(1, 10, 1.0)])),
            Merge::Merged(1)
        );
        s.forget("d", "m");
        assert_eq!(
            s.refill_merge(&key(), 0, &batch(&[(1, 20, 1.0)])),
            Merge::Gone
        );
        assert!(!s.refill_done(&key(), 0, 0, false));
        s.add("d", &[("m", 0, &batch(&[(1, 30, 3.0)]))]);
        assert!(s.read().get("d", "m").is_none());
        // And a dropped database likewise.
        let s = store(1 << 30);
        s.forget_database("d");
        assert!(!s.refill_done(&key(), 0, 0, false));
        assert!(s.read().get("d", "m").is_none());
    }

    #[test]
    fn a_refill_over_the_memory_budget_leaves_the_measurement_unserved() {
        let s = store(1000);
        let rows: Vec<_> = (0..100).map(|k| (1, k, k as f64)).collect();
        assert_eq!(s.refill_merge(&key(), 0, &batch(&rows)), Merge::OverBudget);
        assert!(!s.refill_done(&key(), 0, 0, false));
        assert!(s.read().get("d", "m").is_none());
        assert_eq!(s.read().bytes, 0);
    }

    #[test]
    fn seeded_series_count_against_the_memory_budget() {
        // Each seeded series takes its tags' bytes ("host" = "h<id>" and two
        // `String` headers, about 60): 100 of them fit 1 MB, 100,000 do not.
        let s = store(1 << 20);
        let few: Vec<_> = (0..100).map(|k| (k, 1, 0.0)).collect();
        assert!(s.refill_seed(&key(), 0, &batch(&few)));
        let held = s.read().bytes;
        assert!((100 * 50..100 * 80).contains(&held), "{held} bytes");
        let many: Vec<_> = (0..100_000).map(|k| (k, 1, 0.0)).collect();
        assert!(!s.refill_seed(&key(), 0, &batch(&many)), "over the budget");
        assert!(!s.refill_done(&key(), 0, 0, true));
        assert!(s.read().get("d", "m").is_none());
        assert_eq!(s.read().bytes, 0);
    }
}
