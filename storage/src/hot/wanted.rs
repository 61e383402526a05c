//! Which measurements the hot store holds (issue #44, `[hot] hold = "read"`).
//!
//! Holding every measurement costs the write path its insert for every point
//! (about 0.5 µs each: on 2 cores a fifth of the sustainable rate), while a
//! dashboard reads a few measurements. So a measurement is held only once a
//! statement the evaluator could answer reads it (`HotStore::want`, called at
//! planning time: a read lock and a hash lookup, an atomic store of the time),
//! and until then the coordinator does not even queue its batches (a hash
//! lookup per part). A measurement not read for `[hot] idle` is dropped again.
//!
//! Why a newly wanted measurement is served only with every point. `want`
//! makes it *pending* (a new spell, `Tables::pending`) and *held* (a new
//! epoch, `Tables::held`) under the tables' lock, all while holding this set's
//! write lock, and only then is it in this set; the coordinator reads this set
//! (read lock) before it queues a part, tagging the part with the epoch it
//! found. So a write either
//! - was looked up after the measurement was in the set: queued with the
//!   epoch, and inserted (in sequence order, as for any held measurement), or
//! - was looked up before: then the coordinator held it (its sequence at or
//!   below the WAL's last acknowledged one, which the WAL publishes before it
//!   hands an entry over) before `want` returned, so the refill, which starts
//!   after `want` and reads only once the coordinator has received every
//!   acknowledged write (`influxql/refill.rs`), sees it in the engine or in the
//!   unflushed rows, and merges it where no queued write filled the slot
//!   (`refill.rs`'s argument: a slot with no queued write has its newest write
//!   among those the read saw).
//!
//! The pending measurement is served only once that refill ended.
//!
//! Dropping. A measurement dropped for idleness leaves this set first (no new
//! part is queued for it), then the tables (table, held epoch, pending spell).
//! Parts queued before carry the old epoch: the applier skips a part whose
//! epoch is not the measurement's held one, so a part queued before the drop
//! and applied after a later `want` cannot overwrite what that want's refill
//! merged (the refill saw newer writes than such a part).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::RwLock;

use super::{publish, HotStore, Key};

/// Measurements first read (made wanted).
pub(crate) const HOT_WANTS: &str = "chingest_hot_wants_total";
/// Measurements dropped after `[hot] idle` without a read.
pub(crate) const HOT_IDLE_DROPS: &str = "chingest_hot_idle_drops_total";
/// 1 while a measurement is wanted (held or being refilled), 0 after it was dropped.
pub(crate) const HOT_WANTED: &str = "chingest_hot_wanted";

/// The epoch of a measurement that may never be served (until restart): its
/// parts are not queued at all.
pub(super) const NEVER: u64 = u64::MAX;

#[derive(Debug)]
struct Entry {
    /// [`NEVER`] once the measurement may never be served (a `DELETE`, a
    /// `DROP`: `HotStore::forget`), so its parts stop being queued.
    epoch: AtomicU64,
    /// Milliseconds since [`Wanted::born`] of the last read.
    read_ms: AtomicU64,
}

/// The wanted measurements: database, then measurement (looked up by `&str`,
/// no allocation per lookup).
#[derive(Debug)]
pub(super) struct Wanted {
    map: RwLock<HashMap<String, HashMap<String, Entry>>>,
    born: Instant,
}

impl Default for Wanted {
    fn default() -> Self {
        Wanted {
            map: RwLock::default(),
            born: Instant::now(),
        }
    }
}

impl Wanted {
    fn now_ms(&self) -> u64 {
        self.born.elapsed().as_millis() as u64
    }

    /// The epoch to queue a part of `db`.`measurement` with, if it is wanted
    /// (the coordinator, per part).
    pub(super) fn epoch(&self, db: &str, measurement: &str) -> Option<u64> {
        let map = self.map.read();
        let e = map.get(db)?.get(measurement)?.epoch.load(Ordering::Acquire);
        (e != NEVER).then_some(e)
    }

    /// Notes a read of `db`.`measurement`; false when it is not wanted.
    fn touch(&self, db: &str, measurement: &str) -> bool {
        let map = self.map.read();
        match map.get(db).and_then(|m| m.get(measurement)) {
            Some(e) => {
                e.read_ms.store(self.now_ms(), Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// `db`.`measurement` (all of `db` without one) will never be served
    /// (until restart): its parts are not queued any more.
    pub(super) fn never(&self, db: &str, measurement: Option<&str>) {
        let map = self.map.read();
        let Some(ms) = map.get(db) else { return };
        for (m, e) in ms {
            if measurement.is_none_or(|x| x == m) {
                e.epoch.store(NEVER, Ordering::Release);
            }
        }
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.map.read().values().map(HashMap::len).sum()
    }

    pub(super) fn clear(&self) {
        let mut map = self.map.write();
        map.clear();
        publish_wanted(&map);
    }
}

/// `chingest_hot_measurements{state="wanted"}`: the measurements reads asked
/// for (held, pending or never served).
fn publish_wanted(map: &HashMap<String, HashMap<String, Entry>>) {
    let n: usize = map.values().map(HashMap::len).sum();
    metrics::gauge!(super::HOT_MEASUREMENTS, "state" => "wanted").set(n as f64);
}

impl HotStore {
    /// [`HotStore::want`] where it takes no lock (the measurement is wanted
    /// already, or everything is held): false where it would, for a
    /// statement run inline (`influxql/inline.rs`), which then hands off.
    pub(crate) fn wanted_already(&self, db: &str, measurement: &str) -> bool {
        !self.enabled() || self.holds_all() || self.wanted.touch(db, measurement)
    }

    /// A statement the store could answer reads `db`.`measurement`: with
    /// `[hot] hold = "read"` a measurement not held yet becomes held and
    /// pending, and its refill is started (the module's documentation).
    pub(crate) fn want(&self, db: &str, measurement: &str) {
        if !self.enabled() || self.holds_all() || self.wanted.touch(db, measurement) {
            return;
        }
        let key: Key = (db.to_string(), measurement.to_string());
        if self.backoff.waiting(&key) {
            // Its last refill was given up a moment ago (`backoff.rs`).
            return;
        }
        let mut map = self.wanted.map.write();
        if map.get(db).is_some_and(|m| m.contains_key(measurement)) {
            // Another read made it wanted meanwhile.
            return;
        }
        let epoch = self.spells.fetch_add(1, Ordering::Relaxed);
        let servable = {
            let mut t = self.tables.write();
            let servable = !t.never.contains(&key) && !t.never_db.contains(db);
            if servable {
                if let Some(old) = t.tables.remove(&key) {
                    t.bytes = t.bytes.saturating_sub(old.bytes);
                }
                t.held.insert(key.clone(), epoch);
                t.pending.insert(key.clone(), epoch);
                publish(&t);
            }
            servable
        };
        let entry = Entry {
            epoch: AtomicU64::new(if servable { epoch } else { NEVER }),
            read_ms: AtomicU64::new(self.wanted.now_ms()),
        };
        map.entry(key.0.clone())
            .or_default()
            .insert(key.1.clone(), entry);
        publish_wanted(&map);
        drop(map);
        if !servable {
            // Remembered so that its reads stop here: nothing is queued or refilled.
            return;
        }
        metrics::counter!(HOT_WANTS).increment(1);
        metrics::gauge!(HOT_WANTED, "db" => key.0.clone(), "measurement" => key.1.clone()).set(1.0);
        tracing::debug!(
            db,
            measurement,
            "hot store: measurement first read; refilling it"
        );
        self.kick_refill();
    }

    /// Drops the measurements not read for `[hot] idle` (`hold = "read"`).
    pub(crate) fn drop_idle(&self) {
        if self.holds_all() {
            return;
        }
        let idle_ms = (self.config.read().idle / 1_000_000).max(1) as u64;
        let now = self.wanted.now_ms();
        self.drop_wanted(
            |e| now.saturating_sub(e.read_ms.load(Ordering::Relaxed)) >= idle_ms,
            "hot store: measurement not read for [hot] idle; dropped from the store",
        );
    }

    /// Drops `key` as if it had not been read (`hold = "read"`): its refill
    /// failed for a while, and a read once its backoff passed (`backoff.rs`)
    /// starts another; the wait is returned.
    pub(crate) fn unwant(&self, key: &Key) -> std::time::Duration {
        let wait = self.backoff.gave_up(key);
        self.drop_wanted_key(key);
        wait
    }

    /// A refill of `key` ended served: its backoff starts again (`backoff.rs`).
    pub(crate) fn refill_served(&self, key: &Key) {
        self.backoff.served(key);
    }

    /// Drops `key` from the wanted set and the tables.
    fn drop_wanted_key(&self, key: &Key) {
        let mut map = self.wanted.map.write();
        let Some(e) = map.get_mut(&key.0).and_then(|ms| ms.remove(&key.1)) else {
            return;
        };
        map.retain(|_, ms| !ms.is_empty());
        self.drop_from_tables(&mut map, vec![(key.clone(), e.epoch.into_inner())], None);
    }

    /// Drops the wanted measurements `gone` says, logging `why`.
    fn drop_wanted(&self, gone: impl Fn(&Entry) -> bool, why: &'static str) {
        let mut map = self.wanted.map.write();
        let mut dropped: Vec<(Key, u64)> = Vec::new();
        for (db, ms) in map.iter_mut() {
            ms.retain(|m, e| {
                let drop = gone(e);
                if drop {
                    dropped.push(((db.clone(), m.clone()), e.epoch.load(Ordering::Acquire)));
                }
                !drop
            });
        }
        map.retain(|_, ms| !ms.is_empty());
        if !dropped.is_empty() {
            self.drop_from_tables(&mut map, dropped, Some(why));
        }
    }

    /// Removes `dropped` (already out of the wanted set `map`, whose write
    /// lock the caller holds) from the tables.
    fn drop_from_tables(
        &self,
        map: &mut HashMap<String, HashMap<String, Entry>>,
        dropped: Vec<(Key, u64)>,
        idle: Option<&'static str>,
    ) {
        publish_wanted(map);
        let mut t = self.tables.write();
        for (key, epoch) in &dropped {
            if epoch == &NEVER {
                continue;
            }
            if let Some(table) = t.tables.remove(key) {
                t.bytes = t.bytes.saturating_sub(table.bytes);
            }
            t.held.remove(key);
            t.pending.remove(key);
            metrics::gauge!(HOT_WANTED, "db" => key.0.clone(), "measurement" => key.1.clone())
                .set(0.0);
            if let Some(why) = idle {
                metrics::counter!(HOT_IDLE_DROPS).increment(1);
                tracing::info!(db = %key.0, measurement = %key.1, "{why}");
            }
        }
        publish(&t);
    }

    /// Whether `[hot] hold = "all"`.
    pub(crate) fn holds_all(&self) -> bool {
        self.hold_all.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use flush::PartsObserver;

    use super::*;
    use crate::hot::refill::Merge;
    use crate::hot::testing::{batch, floats};
    use crate::HotConfig;

    fn store(idle: &str) -> std::sync::Arc<HotStore> {
        let s = std::sync::Arc::new(HotStore::new([("d".to_string(), "old".to_string())]));
        s.configure(HotConfig {
            enabled: true,
            window: "1h".into(),
            idle: idle.into(),
            ..HotConfig::default()
        })
        .unwrap();
        s.start();
        s
    }

    fn key(m: &str) -> Key {
        ("d".to_string(), m.to_string())
    }

    fn applied(s: &HotStore, seq: u64) {
        assert!(s.applier.wait_applied(seq, Duration::from_secs(60)));
    }

    #[test]
    fn a_measurement_not_read_is_neither_queued_nor_held() {
        let s = store("1h");
        // What existed at start waits for a read too, not for a refill.
        assert!(s.pending().is_empty());
        s.received("d", 1, &[("m", &batch(&[(1, 10, 1.0)]))]);
        s.received("d", 2, &[("old", &batch(&[(1, 10, 1.0)]))]);
        assert!(s.applier.wait_applied(2, Duration::ZERO), "queued");
        let t = s.read();
        assert!(t.tables.is_empty() && t.bytes == 0);
    }

    /// The write/want race of the module's documentation, each side of it: a
    /// write looked up before `want` is not queued and is the refill's; one
    /// after is queued and wins over what the refill read.
    #[test]
    fn a_write_on_either_side_of_the_first_read_is_served() {
        let s = store("1h");
        // Acknowledged and received before the read: not queued.
        s.received("d", 1, &[("m", &batch(&[(1, 10, 1.0), (1, 20, 2.0)]))]);
        s.want("d", "m");
        assert!(s.read().get("d", "m").is_none(), "served before its refill");
        let spell = s.spell(&key("m")).expect("pending");
        // Received after: queued and applied (a rewrite of 20, a new point at 30).
        s.received("d", 2, &[("m", &batch(&[(1, 20, -2.0), (1, 30, 3.0)]))]);
        applied(&s, 2);
        assert!(s.read().get("d", "m").is_none(), "served before its refill");
        // The refill's read sees both writes (engine and unflushed rows).
        let seen = batch(&[(1, 10, 1.0), (1, 20, -2.0), (1, 30, 3.0)]);
        assert_eq!(s.refill_merge(&key("m"), spell, &seen), Merge::Merged(3));
        assert!(s.refill_done(&key("m"), spell, 0, false));
        assert_eq!(
            floats(&s, "m"),
            Some(vec![(10, 1.0), (20, -2.0), (30, 3.0)])
        );
        // A second read is a lookup: no new spell.
        s.want("d", "m");
        assert!(s.spell(&key("m")).is_none());
    }

    #[test]
    fn an_idle_measurement_is_dropped_and_its_old_queued_writes_skipped() {
        let s = store("1s");
        s.want("d", "m");
        let spell = s.spell(&key("m")).unwrap();
        s.received("d", 1, &[("m", &batch(&[(1, 10, 1.0)]))]);
        applied(&s, 1);
        assert!(s.refill_done(&key("m"), spell, 0, false));
        assert!(floats(&s, "m").is_some());
        // A write queued, not applied yet, when the measurement is dropped.
        s.applier.pause(true);
        s.received("d", 2, &[("m", &batch(&[(1, 20, 2.0)]))]);
        std::thread::sleep(Duration::from_millis(1100));
        s.drop_idle();
        assert!(s.read().tables.is_empty() && s.read().bytes == 0);
        assert_eq!(s.wanted.len(), 0);
        // Not wanted: not queued.
        s.received("d", 3, &[("m", &batch(&[(1, 20, 3.0)]))]);
        // Read again: the refill sees 20 = 3.0; the write queued at 2 (older)
        // must not overwrite it.
        s.want("d", "m");
        let spell = s.spell(&key("m")).unwrap();
        let seen = batch(&[(1, 10, 1.0), (1, 20, 3.0)]);
        assert_eq!(s.refill_merge(&key("m"), spell, &seen), Merge::Merged(2));
        s.applier.pause(false);
        applied(&s, 3);
        assert!(s.refill_done(&key("m"), spell, 0, false));
        assert_eq!(floats(&s, "m"), Some(vec![(10, 1.0), (20, 3.0)]));
        // Read within `idle`: kept.
        s.want("d", "m");
        s.drop_idle();
        assert!(floats(&s, "m").is_some());
        // A refill given up: dropped, and a read after its backoff starts another.
        s.unwant(&key("m"));
        assert!(s.read().tables.is_empty() && s.wanted.len() == 0);
        s.backoff.advance(crate::hot::backoff::FIRST);
        s.want("d", "m");
        assert!(s.spell(&key("m")).is_some());
    }

    /// A measurement read constantly whose refill always fails: each give-up
    /// makes its reads wait longer before the next refill starts (issue #44).
    #[test]
    fn a_refill_given_up_again_and_again_waits_longer_each_time() {
        use crate::hot::backoff::{delay, CAP, FIRST};
        let s = store("1h");
        let kicks = s.kick.count();
        for gave_up in 1..=12u32 {
            s.want("d", "m");
            let spell = s
                .spell(&key("m"))
                .expect("a read after the backoff refills");
            // The injected failure: the refill thread gives it up.
            let wait = s.unwant(&key("m"));
            assert_eq!(wait, delay(gave_up));
            assert!(!s.refill_done(&key("m"), spell, 0, false), "dropped");
            // Reads within the wait start no refill and hold nothing.
            s.backoff.advance(wait - Duration::from_millis(1));
            for _ in 0..3 {
                s.want("d", "m");
                assert!(s.spell(&key("m")).is_none(), "refilled during the backoff");
                assert_eq!(s.wanted.len(), 0);
            }
            s.backoff.advance(Duration::from_millis(1));
        }
        assert_eq!(delay(12), CAP);
        assert_eq!(s.kick.count() - kicks, 12, "one refill per backoff passed");
        // A refill that ends served starts the count again.
        s.want("d", "m");
        let spell = s.spell(&key("m")).unwrap();
        assert!(s.refill_done(&key("m"), spell, 0, false));
        s.refill_served(&key("m"));
        s.drop_wanted(|_| true, "test");
        assert_eq!(s.unwant(&key("m")), FIRST);
    }

    #[test]
    fn a_forgotten_measurement_is_not_held_when_read() {
        let s = store("1h");
        s.forget("d", "m");
        s.want("d", "m");
        assert!(s.pending().is_empty());
        assert_eq!(s.wanted.epoch("d", "m"), None);
        s.received("d", 1, &[("m", &batch(&[(1, 10, 1.0)]))]);
        assert!(s.applier.wait_applied(1, Duration::ZERO), "queued");
    }

    #[test]
    fn a_measurement_forgotten_while_held_is_no_longer_queued() {
        let s = store("1h");
        s.want("d", "m");
        s.want("x", "m");
        assert!(s.wanted.epoch("d", "m").is_some());
        s.forget("d", "m");
        s.forget_database("x");
        assert_eq!(s.wanted.epoch("d", "m"), None);
        assert_eq!(s.wanted.epoch("x", "m"), None);
        s.received("d", 1, &[("m", &batch(&[(1, 10, 1.0)]))]);
        assert!(s.applier.wait_applied(1, Duration::ZERO), "queued");
        // Read again: still not held, nothing refilled.
        s.want("d", "m");
        assert!(s.pending().is_empty());
    }

    #[test]
    fn holding_all_queues_every_write_and_wants_nothing() {
        let s = std::sync::Arc::new(HotStore::new([]));
        s.configure(HotConfig {
            enabled: true,
            hold: crate::hot::config::Hold::All,
            ..HotConfig::default()
        })
        .unwrap();
        s.start();
        s.want("d", "m");
        assert_eq!(s.wanted.len(), 0);
        s.received("d", 1, &[("m", &batch(&[(1, 10, 1.0)]))]);
        applied(&s, 1);
        assert_eq!(floats(&s, "m"), Some(vec![(10, 1.0)]));
    }
}
