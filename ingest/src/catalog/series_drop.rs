//! `DROP SERIES` and `DELETE`: forgetting the series of a measurement that have no point
//! left. Two steps, like `DROP MEASUREMENT`: [`Catalog::series_drop`] says which records to
//! delete (changing nothing), the caller deletes them durably, then
//! [`Catalog::forget_series`] forgets them in memory.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use xxhash_rust::xxh3::xxh3_64;

use super::record::{tag_value_record, MetaRecord, Record};
use super::state::shard_of;
use super::Catalog;

/// What forgetting some series of one measurement deletes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeriesDrop {
    /// The record keys to delete: the series' records, and the records of the tag values no
    /// remaining series of the measurement has (each an exact key; never a prefix of
    /// another record's).
    pub keys: Vec<Vec<u8>>,
    /// The ids of the series that go (those of the asked ones the catalog has).
    pub ids: Vec<u64>,
    /// (tag key, value) pairs no remaining series of the measurement has.
    values: Vec<(Vec<u8>, Vec<u8>)>,
    /// Whether no series of the measurement remains: the caller drops the measurement
    /// instead (its fields and tag keys go too, as in InfluxDB).
    pub emptied: bool,
}

impl Catalog {
    /// Which records forgetting the series `gone` of `measurement` deletes, from `db`'s
    /// series records as stored (a scan of [`series_prefix`](super::series_prefix)). Changes
    /// nothing.
    pub fn series_drop(
        db: &str,
        measurement: &[u8],
        gone: &HashSet<u64>,
        series_records: impl IntoIterator<Item = MetaRecord>,
    ) -> SeriesDrop {
        let mut out = SeriesDrop::default();
        let mut kept_values: HashSet<(Vec<u8>, Vec<u8>)> = HashSet::new();
        let mut gone_values: HashSet<(Vec<u8>, Vec<u8>)> = HashSet::new();
        let mut kept = 0usize;
        for (k, v) in series_records {
            let Ok(Some(Record::Series { id, key, .. })) = Record::decode(&k, &v) else {
                continue;
            };
            if key.measurement() != measurement {
                continue;
            }
            let values = key.tags().map(|(t, v)| (t.to_vec(), v.to_vec()));
            if gone.contains(&id) {
                out.ids.push(id);
                out.keys.push(k);
                gone_values.extend(values);
            } else {
                kept += 1;
                kept_values.extend(values);
            }
        }
        out.emptied = kept == 0 && !out.ids.is_empty();
        let mut values: Vec<_> = gone_values.difference(&kept_values).cloned().collect();
        values.sort();
        for (t, v) in &values {
            out.keys.push(tag_value_record(db, measurement, t, v).0);
        }
        out.values = values;
        out
    }

    /// Forgets in memory what [`Catalog::series_drop`] said (after its keys were deleted
    /// durably): the series, and the tag values no remaining series has.
    pub fn forget_series(&self, db: &str, measurement: &[u8], drop: &SeriesDrop) {
        let Some(d) = self.existing(db) else {
            return;
        };
        let mut removed = 0;
        for &id in &drop.ids {
            if d.series[shard_of(id)].write().remove(&id) {
                removed += 1;
            }
        }
        d.series_count.fetch_sub(removed, Ordering::Relaxed);
        let mut slow = d.slow.lock();
        for (t, v) in &drop.values {
            if let Some(set) = slow.tag_values.get_mut(&(measurement.to_vec(), t.clone())) {
                set.remove(&xxh3_64(v));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::SeriesKey;

    fn record(db: &str, m: &str, tags: &[(&str, &str)]) -> (u64, MetaRecord) {
        let key = SeriesKey::new(m.as_bytes(), tags);
        let id = key.id();
        let r = Record::Series {
            db: db.into(),
            id,
            key,
        };
        (id, r.encode())
    }

    #[test]
    fn tag_values_go_only_when_no_remaining_series_has_them() {
        let (a, ra) = record("db", "cpu", &[("host", "a"), ("region", "eu")]);
        let (b, rb) = record("db", "cpu", &[("host", "b"), ("region", "eu")]);
        let (_, rc) = record("db", "mem", &[("host", "a")]);
        let all = vec![ra.clone(), rb.clone(), rc];
        let d = Catalog::series_drop("db", b"cpu", &HashSet::from([a]), all.clone());
        assert_eq!(d.ids, vec![a]);
        assert!(!d.emptied);
        // The series record and host=a (region=eu stays: b has it; mem's host=a is another
        // measurement's).
        assert_eq!(d.keys.len(), 2);
        assert_eq!(d.keys[0], ra.0);
        assert_eq!(d.values, vec![(b"host".to_vec(), b"a".to_vec())]);
        let d = Catalog::series_drop("db", b"cpu", &HashSet::from([a, b]), all.clone());
        assert!(d.emptied);
        assert_eq!(d.ids.len(), 2);
        // An id the measurement does not have changes nothing.
        let d = Catalog::series_drop("db", b"cpu", &HashSet::from([42]), all);
        assert_eq!(d, SeriesDrop::default());
    }
}
