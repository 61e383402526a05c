//! Acknowledged points the engine does not hold yet, for reads.
//!
//! InfluxDB answers a query with every point acknowledged before it
//! started. chingest acknowledges a write once the WAL has it and inserts it
//! into the engine up to `flush.max_age_ms` later, so a read also looks here:
//! the coordinator adds every part it receives *before* it counts the entry
//! as received, and removes a part only *after* its INSERT has ended (or it
//! became a dead letter, or its database was dropped). A reader that waits
//! until the coordinator has received the WAL's last acknowledged sequence
//! ([`Unflushed::wait_received`]), then takes the parts here, then reads the
//! table, sees every acknowledged point at least once: a part missing here
//! was inserted before the snapshot, so the table read after it holds it. A
//! part can be in both (its INSERT ended between the two): the reader groups
//! the snapshot's time range into points, so a row seen twice is one point.
//!
//! Memory: the batches are the ones the flusher buffers anyway (`Arc`ed
//! columns), plus a few words per part.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arrow::array::{AsArray, BooleanArray, RecordBatch};
use arrow::datatypes::Int64Type;
use engine::table::{align, engine_schema, ColumnKind, TIME};
use engine::{EngineError, Result};
use parking_lot::{Condvar, Mutex, RwLock};

use crate::buffer::Key;

/// One request's rows of one table, with the span of their times.
#[derive(Debug, Clone)]
pub struct UnflushedPart {
    /// The WAL sequence of the request.
    pub seq: u64,
    /// Ingest's batch (layout: docs/architecture.md).
    pub batch: RecordBatch,
    /// The smallest `time` of the batch (ns).
    pub min_time: i64,
    /// The largest `time` of the batch (ns).
    pub max_time: i64,
}

/// The acknowledged parts not yet in the engine, per table.
#[derive(Default)]
pub struct Unflushed {
    parts: RwLock<HashMap<Key, BTreeMap<u64, UnflushedPart>>>,
    /// Every entry up to this sequence has been received (its parts added).
    received: AtomicU64,
    progress: Mutex<()>,
    moved: Condvar,
    /// Tables a read waits to see in the engine: flushed without waiting
    /// for `max_age_ms`.
    hurried: Mutex<HashSet<Key>>,
    /// Told of every part added and set aside (storage's hot store).
    observer: std::sync::OnceLock<std::sync::Arc<dyn PartsObserver>>,
}

/// Who else keeps the acknowledged parts the coordinator receives (storage's
/// hot store, `storage/src/hot/`): told in sequence order, before the entry
/// counts as received, of the same parts reads find here, and of a part set
/// aside (a dead letter: no read of the engine shows it any more).
pub trait PartsObserver: Send + Sync {
    /// The kept parts of entry `seq` of `db` (a dropped table's are left out).
    fn received(&self, db: &str, seq: u64, parts: &[(&str, &RecordBatch)]);
    /// A part of `db`.`measurement` was set aside as a dead letter.
    fn set_aside(&self, db: &str, measurement: &str);
}

impl std::fmt::Debug for Unflushed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unflushed")
            .field("received", &self.received.load(Ordering::Relaxed))
            .field("tables", &self.parts.read().len())
            .finish_non_exhaustive()
    }
}

impl Unflushed {
    /// Adds the parts of entry `seq` (measurement, batch), all of `db`.
    pub(crate) fn add<'a>(
        &self,
        db: &str,
        seq: u64,
        parts: impl IntoIterator<Item = (&'a str, &'a RecordBatch)>,
    ) {
        let parts: Vec<_> = parts
            .into_iter()
            .filter_map(|(m, batch)| {
                let (min_time, max_time) = time_span(batch)?;
                Some((
                    m,
                    UnflushedPart {
                        seq,
                        batch: batch.clone(),
                        min_time,
                        max_time,
                    },
                ))
            })
            .collect();
        if parts.is_empty() {
            return;
        }
        if let Some(o) = self.observer.get() {
            let seen: Vec<(&str, &RecordBatch)> =
                parts.iter().map(|(m, p)| (*m, &p.batch)).collect();
            o.received(db, seq, &seen);
        }
        let mut all = self.parts.write();
        for (m, part) in parts {
            all.entry((db.to_string(), m.to_string()))
                .or_default()
                .insert(seq, part);
        }
    }

    /// Tells `observer` of every part added from now on (once; a second is ignored).
    pub fn observe(&self, observer: std::sync::Arc<dyn PartsObserver>) {
        let _ = self.observer.set(observer);
    }

    /// A part of `key` became a dead letter: the observer forgets the table.
    pub(crate) fn set_aside(&self, key: &Key) {
        if let Some(o) = self.observer.get() {
            o.set_aside(&key.0, &key.1);
        }
    }

    /// Every entry up to `seq` has been added (or had nothing to add).
    pub fn mark_received(&self, seq: u64) {
        if self.received.fetch_max(seq, Ordering::AcqRel) < seq {
            let _guard = self.progress.lock();
            self.moved.notify_all();
        }
    }

    /// Forgets the parts `seqs` of `key`: they are in the engine (or set aside).
    pub(crate) fn remove(&self, key: &Key, seqs: impl IntoIterator<Item = u64>) {
        let mut all = self.parts.write();
        if let Some(table) = all.get_mut(key) {
            for s in seqs {
                table.remove(&s);
            }
            if table.is_empty() {
                all.remove(key);
            }
        }
    }

    /// Forgets the parts `scope` covers up to their fence (`fence_over`: a dropped
    /// database or measurement).
    pub(crate) fn remove_dropped(
        &self,
        scope: &crate::fence::DropScope,
        fence_over: impl Fn(&str, &str) -> Option<u64>,
    ) {
        let mut all = self.parts.write();
        all.retain(|(d, m), table| {
            if scope.covers(d, m) {
                if let Some(up_to) = fence_over(d, m) {
                    table.retain(|s, _| *s > up_to);
                }
            }
            !table.is_empty()
        });
    }

    /// The highest sequence every entry up to which has been received.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Acquire)
    }

    /// Waits until every entry up to `seq` has been received, at most
    /// `timeout`; false if it has not by then.
    pub fn wait_received(&self, seq: u64, timeout: Duration) -> bool {
        if self.received() >= seq {
            return true;
        }
        let deadline = Instant::now() + timeout;
        let mut guard = self.progress.lock();
        while self.received() < seq {
            if self.moved.wait_until(&mut guard, deadline).timed_out() {
                return self.received() >= seq;
            }
        }
        true
    }

    /// The parts of `db`.`measurement` with a row inside `[min, max]` (ns,
    /// inclusive), in sequence order.
    pub fn parts(&self, db: &str, measurement: &str, min: i64, max: i64) -> Vec<UnflushedPart> {
        let all = self.parts.read();
        let Some(table) = all.get(&(db.to_string(), measurement.to_string())) else {
            return Vec::new();
        };
        table
            .values()
            .filter(|p| p.max_time >= min && p.min_time <= max)
            .cloned()
            .collect()
    }

    /// Asks the flusher to insert what `db`.`measurement` buffers now (a
    /// read needs the table or a column that only its unflushed points have).
    pub fn hurry(&self, db: &str, measurement: &str) {
        self.hurried
            .lock()
            .insert((db.to_string(), measurement.to_string()));
    }

    /// Asks the flusher to insert what every table buffers now (a delete waits for it).
    pub fn hurry_all(&self) {
        let tables: Vec<Key> = self.parts.read().keys().cloned().collect();
        self.hurried.lock().extend(tables);
    }

    /// The tables reads asked to flush now, forgotten once taken.
    pub(crate) fn take_hurried(&self) -> HashSet<Key> {
        std::mem::take(&mut *self.hurried.lock())
    }

    /// Whether `db`.`measurement` still has a part at or below `seq`.
    pub fn holds_up_to(&self, db: &str, measurement: &str, seq: u64) -> bool {
        self.parts
            .read()
            .get(&(db.to_string(), measurement.to_string()))
            .and_then(|t| t.keys().next())
            .is_some_and(|first| *first <= seq)
    }
}

/// The rows of `parts` with a `time` inside `[min, max]` (ns, inclusive) as
/// one batch in the engine's layout for `columns` (what the table would hold
/// once they are inserted: `__seq` the request's, `__row` the row's index in
/// it); `None` when no row is inside.
pub fn rows_in(
    parts: &[UnflushedPart],
    columns: &[(String, ColumnKind)],
    min: i64,
    max: i64,
) -> Result<Option<RecordBatch>> {
    let arrow_err = |e: arrow::error::ArrowError| EngineError::Arrow(e.to_string());
    let schema = engine_schema(columns);
    let mut kept = Vec::with_capacity(parts.len());
    for p in parts {
        if p.max_time < min || p.min_time > max {
            continue;
        }
        let aligned = align(&p.batch, p.seq, &schema, columns)?;
        if p.min_time >= min && p.max_time <= max {
            kept.push(aligned);
            continue;
        }
        let time = p
            .batch
            .column_by_name(TIME)
            .and_then(|t| t.as_primitive_opt::<Int64Type>())
            .ok_or_else(|| EngineError::Arrow("batch has no Int64 time column".into()))?;
        let inside: BooleanArray = time
            .iter()
            .map(|t| Some(t.is_some_and(|t| t >= min && t <= max)))
            .collect();
        let filtered = arrow::compute::filter_record_batch(&aligned, &inside).map_err(arrow_err)?;
        if filtered.num_rows() > 0 {
            kept.push(filtered);
        }
    }
    if kept.is_empty() {
        return Ok(None);
    }
    arrow::compute::concat_batches(&schema, &kept)
        .map(Some)
        .map_err(arrow_err)
}

/// The smallest and largest `time` of an ingest batch (`None` when empty).
fn time_span(batch: &RecordBatch) -> Option<(i64, i64)> {
    let time = batch.column_by_name(TIME)?;
    let time = time.as_primitive_opt::<Int64Type>()?;
    if time.is_empty() {
        return None;
    }
    let min = arrow::compute::min(time)?;
    let max = arrow::compute::max(time)?;
    Some((min, max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int64Array, UInt64Array};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    fn batch(times: &[i64]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new(TIME, DataType::Int64, false),
            Field::new(engine::table::SERIES_ID, DataType::UInt64, false),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(times.to_vec())),
                Arc::new(UInt64Array::from(vec![1; times.len()])),
            ],
        )
        .unwrap()
    }

    #[test]
    fn parts_are_found_by_their_time_span_until_removed() {
        let u = Unflushed::default();
        let (a, b) = (batch(&[10, 20]), batch(&[30, 40]));
        u.add("db", 1, [("m", &a)]);
        u.add("db", 2, [("m", &b)]);
        u.mark_received(2);
        let seqs =
            |min, max| -> Vec<u64> { u.parts("db", "m", min, max).iter().map(|p| p.seq).collect() };
        assert_eq!(seqs(i64::MIN, i64::MAX), vec![1, 2]);
        assert_eq!(seqs(21, 29), Vec::<u64>::new());
        assert_eq!(seqs(20, 30), vec![1, 2]);
        assert_eq!(seqs(35, 100), vec![2]);
        assert!(u.parts("db", "other", 0, 100).is_empty());
        assert!(u.holds_up_to("db", "m", 1));
        u.remove(&("db".into(), "m".into()), [1]);
        assert_eq!(seqs(0, 100), vec![2]);
        assert!(!u.holds_up_to("db", "m", 1));
        u.add("db", 3, [("m", &a), ("keep", &b)]);
        u.add("db", 4, [("m", &b)]);
        // A dropped measurement: its parts up to the fence go, later ones and other tables stay.
        let scope = crate::fence::DropScope::measurement("db", "m");
        u.remove_dropped(&scope, |_, m| (m == "m").then_some(3));
        assert_eq!(seqs(0, 100), vec![4]);
        assert_eq!(u.parts("db", "keep", 0, 100).len(), 1);
        // A dropped database: everything of it up to the fence.
        let scope = crate::fence::DropScope::database("db");
        u.remove_dropped(&scope, |_, _| Some(4));
        assert!(u.parts("db", "m", 0, 100).is_empty());
        assert!(u.parts("db", "keep", 0, 100).is_empty());
    }

    #[test]
    fn a_reader_waits_for_the_sequence_it_needs() {
        let u = Arc::new(Unflushed::default());
        u.mark_received(3);
        assert!(u.wait_received(3, Duration::ZERO));
        assert!(!u.wait_received(4, Duration::from_millis(10)));
        let w = u.clone();
        let t = std::thread::spawn(move || w.wait_received(5, Duration::from_secs(30)));
        std::thread::sleep(Duration::from_millis(20));
        u.mark_received(5);
        assert!(t.join().unwrap());
        // Never backwards.
        u.mark_received(1);
        assert_eq!(u.received(), 5);
    }
}
