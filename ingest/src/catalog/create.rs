//! The slow path of [`Catalog::resolve`]: series new to the registry. Serialised per database
//! (under its `slow` lock) so limit checks are exact under concurrency.

use std::sync::atomic::Ordering;

use xxhash_rust::xxh3::xxh3_64;

use super::record::{measurement_record, series_record, tag_record, tag_value_record};
use super::resolve::{lossy, Drops, Resolution};
use super::rules::{columns_exceeded, series_names_refused};
use super::state::{shard_of, DbCatalog, SlowState};
use super::{Catalog, Limits};
use crate::error::DropKind;
use crate::names::column_cost;
use crate::point::{ParsedBatch, PointEntry};
use crate::series::write_series_key;

impl Catalog {
    /// Registers the series of the points `misses` (checking names and limits first), or drops
    /// the points that storage cannot hold or that would exceed a limit.
    pub(super) fn create_series<'b>(
        &self,
        db: &DbCatalog,
        batch: &'b ParsedBatch<'_>,
        misses: &[usize],
        ok: &mut [bool],
        drops: &mut Drops,
        res: &mut Resolution<'b>,
    ) {
        let mut slow = db.slow.lock();
        for &pi in misses {
            let p = &batch.points[pi];
            if db.series[shard_of(p.series_id)]
                .read()
                .contains(&p.series_id)
            {
                continue; // created earlier in this request or by a concurrent one
            }
            let mname: &[u8] = batch.measurement(p);
            // Slow path (a series new to the registry): materialise the pairs once.
            let tags: Vec<(&[u8], &[u8])> = batch.tags_of(p).collect();
            let refused = {
                let schema = db.schema.read();
                let known = schema.get(mname);
                let tag_known = |k: &[u8]| known.is_some_and(|m| m.tag_keys.contains(k));
                series_names_refused(&db.name, mname, known.is_some(), tag_known, &tags)
            };
            if let Some(reason) = refused {
                drops.add(DropKind::InvalidName, reason);
                ok[pi] = false;
                continue;
            }
            if let Some(reason) = limit_exceeded(self.limits, db, &slow, mname, &tags) {
                drops.add(DropKind::Limit, reason);
                ok[pi] = false;
                continue;
            }
            if let Err(reason) = register_series(self.limits, db, &mut slow, p, mname, &tags, res) {
                drops.add(DropKind::TooManyColumns, reason);
                ok[pi] = false;
            }
        }
    }
}

/// InfluxDB's text for the first limit the new series (`mname`, `tags`) would exceed.
fn limit_exceeded(
    limits: Limits,
    db: &DbCatalog,
    slow: &SlowState,
    mname: &[u8],
    tags: &[(&[u8], &[u8])],
) -> Option<String> {
    let (meas_known, mcount) = {
        let schema = db.schema.read();
        (schema.contains_key(mname), schema.len() as u64)
    };
    let max = limits.max_measurements_per_database;
    if !meas_known && max > 0 && mcount >= max {
        return Some(format!(
            "max-measurements-per-database limit exceeded: ({max}) database=\"{}\" measurement=\"{}\"",
            db.name,
            lossy(mname)
        ));
    }
    let max = limits.max_series_per_database;
    if max > 0 && db.series_count.load(Ordering::Relaxed) >= max {
        return Some(format!("max-series-per-database limit exceeded: ({max})"));
    }
    let max = limits.max_values_per_tag;
    if max == 0 {
        return None;
    }
    for (k, v) in tags {
        let set = slow.tag_values.get(&(mname.to_vec(), k.to_vec()));
        let have = set.map_or(0, |s| s.len() as u64);
        let new = !set.is_some_and(|s| s.contains(&xxh3_64(v)));
        if new && have >= max {
            return Some(format!(
                "max-values-per-tag limit exceeded ({have}/{max}): measurement=\"{}\" tag=\"{}\" value=\"{}\"",
                lossy(mname),
                lossy(k),
                lossy(v)
            ));
        }
    }
    None
}

/// Registers the measurement, tag keys, tag values and series of `p`, recording what is new;
/// refuses (changing nothing) when its new tag keys would pass the column limits (checked
/// under the schema's write lock, so exactly, also against concurrent field registrations).
#[allow(clippy::too_many_arguments)]
fn register_series(
    limits: Limits,
    db: &DbCatalog,
    slow: &mut SlowState,
    p: &PointEntry,
    mname: &[u8],
    tags: &[(&[u8], &[u8])],
    res: &mut Resolution<'_>,
) -> Result<(), String> {
    {
        let mut schema = db.schema.write();
        let known = schema.get(mname);
        let (have, bytes) = known.map_or((0, 0), |m| (m.columns(), m.column_bytes));
        let new_keys = tags
            .iter()
            .filter(|(k, _)| !known.is_some_and(|m| m.tag_keys.contains(*k)));
        let (add, add_bytes) = new_keys.fold((0, 0), |(n, b), (k, _)| (n + 1, b + column_cost(k)));
        if add > 0 {
            if let Some(why) = columns_exceeded(limits, mname, have, bytes, add, add_bytes) {
                return Err(why);
            }
        }
        let m = match schema.get_mut(mname) {
            Some(m) => m,
            None => {
                res.meta.push(measurement_record(&db.name, mname));
                schema.entry(mname.to_vec()).or_default()
            }
        };
        for (k, _) in tags {
            if m.add_tag_key(k) {
                res.meta.push(tag_record(&db.name, mname, k));
            }
        }
    }
    for (k, v) in tags {
        let values = slow.tag_values.entry((mname.to_vec(), k.to_vec()));
        if values.or_default().insert(xxh3_64(v)) {
            res.meta.push(tag_value_record(&db.name, mname, k, v));
        }
    }
    let mut canonical = Vec::new();
    write_series_key(&mut canonical, mname, tags);
    db.series[shard_of(p.series_id)].write().insert(p.series_id);
    db.series_count.fetch_add(1, Ordering::Relaxed);
    res.meta
        .push(series_record(&db.name, p.series_id, canonical));
    res.new_series += 1;
    Ok(())
}
