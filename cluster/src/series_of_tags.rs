//! Which series of a shard table hold a tag's values, kept by the node so that a statement
//! naming a tag's values (`hostname = 'host_3'`, `OR`s of those) asks each shard only for
//! those series (issue #43). A shard table's sort key is `(series_id, time)`: the tag
//! condition alone makes every 18.16 shard scan about a third of its table for one host
//! (no data-skipping indexes there), `series_id IN (…)` lets the primary key skip the rest
//! (a shard's read of TSBS `single-groupby-1-1-1` 31.7 → 10.6 ms,
//! `test_results/latest/cluster_floor.md`). The tag condition stays in the statement: the
//! ids only narrow the rows it reads, so ids of more series than match cost nothing but
//! reading them.
//!
//! Per (shard, table, tag) the node keeps each value's series, read from the shard
//! (`SELECT DISTINCT series_id, <tag>`): a series' tags are part of its key, so a series
//! holds one value of a tag for all its rows. What the map covers follows the identity
//! index's rules (`identity.rs`): the blocks whose rows it looked at (a part listed before
//! the look, so a part inserted meanwhile is not taken as seen), reset when the table's
//! metadata time changes or a known part name comes back with other rows or another time
//! (made again), forgotten when this node drops the table or learns another node did.
//!
//! Exact: after each read the listing of the table's parts the read carries (taken after
//! the read's parts, `identified.rs`) is checked against the map: the blocks of parts
//! outside its coverage — an insert from any node, this one or another — are looked up
//! (`_part`'s block range), and if the statement's values now name a series the read did
//! not ask for, the shard is read again with them. A merge keeps rows in blocks already
//! covered; a `DELETE` (a mutation) or a partition dropped only remove rows, so the ids
//! still name every series left (a superset). A shard holding none of the values is asked
//! with `0` in place of the ids: its read is empty and it still answers the listing, so
//! a series written there meanwhile is found and the shard read again.
//!
//! Bounded: at most [`MAX_MAP_BYTES`] per map (past it that table is read unpruned until it
//! is forgotten: `chingest_cluster_series_pruning_total{outcome="unpruned"}`),
//! [`MAX_MAPS`] maps (the least recently used forgotten), and [`MAX_PRUNED_SERIES`] ids in a
//! statement. Off with replicas (their parts differ) and with
//! `CHINGEST_CLUSTER_SERIES_PRUNING=0` (for comparisons).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use engine::quote_ident;
use parking_lot::Mutex;

use crate::identity::{blocks_of, CheckedBlocks, Part};
use crate::row_binary::RowBinary;
use crate::{schema, Cluster, ClusterError};

/// Maps kept; the least recently used is forgotten beyond.
pub(crate) const MAX_MAPS: usize = 64;

/// The most bytes one map holds (its values and ids, each series' value, with the sets'
/// overhead): about 45,000 series of TSBS `cpu`'s `hostname` (132 bytes each; 4 MiB held
/// as many before each series' value was kept too).
pub const MAX_MAP_BYTES: usize = 6 << 20;

/// The most series ids a statement names on one shard (each written in its SQL): past it
/// the shard is read unpruned.
pub const MAX_PRUNED_SERIES: usize = 10_000;

/// What one value and one id cost a map beyond their bytes (the map's and set's nodes).
const VALUE_OVERHEAD: usize = 64;
const ID_OVERHEAD: usize = 16;

/// The values of one tag a statement's condition confines its rows to: every row it
/// reads has one of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagValues {
    /// The tag's column.
    pub tag: String,
    /// Its values.
    pub values: Vec<String>,
}

/// How one shard of a statement with [`TagValues`] was read (the label of
/// `chingest_cluster_series_pruning_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pruning {
    /// Only the series holding the values.
    Pruned,
    /// None of the values on the shard: no rows asked for, only the listing.
    None,
    /// A series of the values appeared during the read: read again.
    Again,
    /// Every series (the map over its bound, too many ids, replicas, off).
    Unpruned,
}

impl Pruning {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Pruning::Pruned => "pruned",
            Pruning::None => "none",
            Pruning::Again => "again",
            Pruning::Unpruned => "unpruned",
        }
    }

    pub(crate) fn count(self) {
        metrics::counter!("chingest_cluster_series_pruning_total", "outcome" => self.label())
            .increment(1);
    }
}

/// The condition on `series_id` a read pruned to `ids` adds: `0` for none (the shard
/// reads nothing).
pub fn series_in(ids: &[u64]) -> String {
    if ids.is_empty() {
        return "0".to_string();
    }
    let list: Vec<String> = ids.iter().map(u64::to_string).collect();
    format!("`series_id` IN ({})", list.join(","))
}

/// One shard table's tag values and the parts they hold for.
#[derive(Debug, Default)]
struct TagMap {
    loaded: bool,
    metadata: u64,
    checked: CheckedBlocks,
    /// The parts listed last: name → (rows, modification time).
    parts: HashMap<String, (u64, u64)>,
    series: HashMap<String, BTreeSet<u64>>,
    /// Each series' value: what a read grouped by series maps its ids back to
    /// (`crate::series_tags`).
    tags: HashMap<u64, String>,
    bytes: usize,
    /// Past [`MAX_MAP_BYTES`]: not kept, reads unpruned.
    oversized: bool,
    used: u64,
}

impl TagMap {
    fn add(&mut self, value: &str, id: u64) {
        if !self.series.contains_key(value) {
            self.bytes += value.len() + VALUE_OVERHEAD;
        }
        if self.series.entry(value.to_string()).or_default().insert(id) {
            self.bytes += 8 + ID_OVERHEAD;
        }
        // A series holds one value of a tag (its key); only the first is kept.
        if let std::collections::hash_map::Entry::Vacant(e) = self.tags.entry(id) {
            self.bytes += 8 + value.len() + ID_OVERHEAD;
            e.insert(value.to_string());
        }
    }

    /// The series holding any of `values`, sorted; `None`: not known (over the bound).
    fn ids(&self, values: &[String]) -> Option<Vec<u64>> {
        if self.oversized || !self.loaded {
            return None;
        }
        let mut ids: Vec<u64> = values
            .iter()
            .filter_map(|v| self.series.get(v))
            .flatten()
            .copied()
            .collect();
        ids.sort_unstable();
        ids.dedup();
        (ids.len() <= MAX_PRUNED_SERIES).then_some(ids)
    }
}

/// One map, and whether this node sent the table rows since a read last brought it up to
/// date before reading (as `identity::Entry::delivered`: only a hint, so that this node's
/// own new series are asked for at once rather than found after the read).
#[derive(Debug, Default)]
struct Entry {
    map: Mutex<TagMap>,
    delivered: AtomicBool,
}

/// (shard, database, measurement, tag).
type Key = (usize, String, String, String);

/// Every shard table's maps.
#[derive(Debug, Default)]
pub(crate) struct TagMaps {
    entries: Mutex<HashMap<Key, Arc<Entry>>>,
    clock: AtomicU64,
}

impl TagMaps {
    /// Forgets the maps of `db`.`measurement` (`None`: of all of `db`).
    pub(crate) fn forget(&self, db: &str, measurement: Option<&str>) {
        self.entries
            .lock()
            .retain(|(_, d, m, _), _| d != db || measurement.is_some_and(|x| x != m));
    }

    /// This node sent rows to shard `k`'s table of `db`.`measurement`.
    pub(crate) fn delivered(&self, k: usize, db: &str, measurement: &str) {
        for ((s, d, m, _), e) in self.entries.lock().iter() {
            if (*s, d.as_str(), m.as_str()) == (k, db, measurement) {
                e.delivered.store(true, Ordering::Relaxed);
            }
        }
    }

    fn entry(&self, key: Key) -> Arc<Entry> {
        let mut entries = self.entries.lock();
        if !entries.contains_key(&key) && entries.len() >= MAX_MAPS {
            let oldest = entries
                .iter()
                .min_by_key(|(_, e)| e.map.try_lock().map_or(u64::MAX, |m| m.used))
                .map(|(k, _)| k.clone());
            oldest.map(|k| entries.remove(&k));
        }
        let entry = entries.entry(key).or_default().clone();
        if let Some(mut map) = entry.map.try_lock() {
            map.used = self.clock.fetch_add(1, Ordering::Relaxed);
        }
        entry
    }
}

/// Whether reads are pruned (`CHINGEST_CLUSTER_SERIES_PRUNING=0`: every shard reads every
/// series the tag condition matches, as before; for comparisons).
fn enabled() -> bool {
    std::env::var("CHINGEST_CLUSTER_SERIES_PRUNING").as_deref() != Ok("0")
}

impl Cluster {
    /// The series of shard `k`'s table of `db`.`measurement` holding one of `values`, as
    /// the map stands (loaded at its first use, brought up to date first when this node
    /// delivered to the table since); `None`: read every series.
    pub(crate) fn pruned_series(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        values: &TagValues,
    ) -> Result<Option<Vec<u64>>, ClusterError> {
        if !enabled() || self.http.replicas(k) > 1 {
            return Ok(None);
        }
        let key = (k, db.into(), measurement.into(), values.tag.clone());
        let entry = self.tag_maps.entry(key);
        let mut map = entry.map.lock();
        // Over the bound: read unpruned, without a listing to keep a map that is not kept.
        if map.oversized {
            return Ok(None);
        }
        if !map.loaded || entry.delivered.swap(false, Ordering::Relaxed) {
            self.refresh_tag_map(k, db, measurement, &values.tag, &mut map, None)?;
        }
        Ok(map.ids(&values.values))
    }

    /// Whether shard `k`'s read of the series `used` read every series holding one of
    /// `values` that it may have seen: the map brought up to date with the listing taken
    /// after the read (`listed`, else asked for now), no other series of the values in it.
    pub(crate) fn pruned_still_valid(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        values: &TagValues,
        used: &[u64],
        listed: Option<&str>,
    ) -> Result<bool, ClusterError> {
        let key = (k, db.into(), measurement.into(), values.tag.clone());
        let entry = self.tag_maps.entry(key);
        let mut map = entry.map.lock();
        self.refresh_tag_map(k, db, measurement, &values.tag, &mut map, listed)?;
        Ok(map
            .ids(&values.values)
            .is_some_and(|now| now.iter().all(|id| used.binary_search(id).is_ok())))
    }

    /// How many series and how many values of `tag` shard `k`'s table of `db`.`measurement`
    /// holds, as its map stands (loaded at its first use, not brought up to date: only a
    /// hint); `None` where no map is kept (off, replicas, over the bound).
    pub(crate) fn series_and_values(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        tag: &str,
    ) -> Result<Option<(usize, usize)>, ClusterError> {
        if !enabled() || self.http.replicas(k) > 1 {
            return Ok(None);
        }
        let entry = self
            .tag_maps
            .entry((k, db.into(), measurement.into(), tag.into()));
        let mut map = entry.map.lock();
        if !map.loaded && !map.oversized {
            self.refresh_tag_map(k, db, measurement, tag, &mut map, None)?;
        }
        Ok((map.loaded && !map.oversized).then(|| (map.tags.len(), map.series.len())))
    }

    /// The value of `tag` of each series of `ids` on shard `k`: the map as it stands, brought
    /// up to date with the listing `listed` (taken after the read that answered `ids`, else
    /// asked for now) when it lacks one; `None` when a series is still unknown or no map is
    /// kept (the caller reads the shard otherwise).
    pub(crate) fn values_of_series(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        tag: &str,
        ids: &BTreeSet<u64>,
        listed: Option<&str>,
    ) -> Result<Option<HashMap<u64, String>>, ClusterError> {
        let entry = self
            .tag_maps
            .entry((k, db.into(), measurement.into(), tag.into()));
        let mut map = entry.map.lock();
        let known = |map: &TagMap| -> Option<HashMap<u64, String>> {
            if !map.loaded || map.oversized {
                return None;
            }
            ids.iter()
                .map(|id| map.tags.get(id).map(|v| (*id, v.clone())))
                .collect()
        };
        if let Some(values) = known(&map) {
            return Ok(Some(values));
        }
        if map.oversized {
            return Ok(None);
        }
        self.refresh_tag_map(k, db, measurement, tag, &mut map, listed)?;
        Ok(known(&map))
    }

    /// Brings `map` up to what shard `k` holds as of the listing `listed` (else asked for
    /// now, before anything is looked up: a part inserted after it is not taken as seen).
    fn refresh_tag_map(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        tag: &str,
        map: &mut TagMap,
        listed: Option<&str>,
    ) -> Result<(), ClusterError> {
        let (metadata, parts) = self.listing(k, db, measurement, listed)?;
        let renamed = parts.iter().any(|p| {
            map.parts
                .get(&p.name)
                .is_some_and(|seen| *seen != (p.rows, p.modified))
        });
        if map.loaded && (map.metadata != metadata || renamed) {
            *map = TagMap {
                used: map.used,
                ..TagMap::default()
            };
        }
        if map.oversized {
            return Ok(());
        }
        let new: Vec<&Part> = parts.iter().filter(|p| !map.checked.covers(p)).collect();
        if !map.loaded || !new.is_empty() {
            let blocks = map.loaded.then(|| blocks_of(&new));
            self.look_up_series(k, db, measurement, tag, blocks.as_deref(), map)?;
            if map.oversized {
                return Ok(());
            }
        }
        for p in &parts {
            map.checked.add(p);
        }
        map.parts = parts
            .into_iter()
            .map(|p| (p.name, (p.rows, p.modified)))
            .collect();
        map.loaded = true;
        map.metadata = metadata;
        Ok(())
    }

    /// Adds each series of the rows `blocks` selects (`None`: every row) with its value of
    /// `tag` to `map`; past the bound the map is emptied and marked oversized.
    fn look_up_series(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        tag: &str,
        blocks: Option<&str>,
        map: &mut TagMap,
    ) -> Result<(), ClusterError> {
        let table = schema::table(db, measurement);
        let filter = blocks.map_or(String::new(), |b| format!(" WHERE {b}"));
        // Each row at least 8 bytes of the bound: more rows than this are over it anyway.
        let limit = MAX_MAP_BYTES / (8 + ID_OVERHEAD) + 1;
        let sql = format!(
            "SELECT DISTINCT `series_id`, CAST({} AS String) FROM {table}{filter} \
             LIMIT {limit} FORMAT RowBinary",
            quote_ident(tag)
        );
        let answer = self.http.statement_bytes(k, &sql)?;
        let mut r = RowBinary {
            bytes: &answer,
            at: 0,
        };
        while !r.done() {
            let id = r.u64().map_err(|m| self.unexpected(k, &sql, m))?;
            let value = r.string().map_err(|m| self.unexpected(k, &sql, m))?;
            map.add(value, id);
            if map.bytes > MAX_MAP_BYTES {
                tracing::info!(shard = k, %table, tag, "too many series to keep their tag values: read unpruned");
                *map = TagMap {
                    oversized: true,
                    used: map.used,
                    ..TagMap::default()
                };
                return Ok(());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded() -> TagMap {
        TagMap {
            loaded: true,
            ..TagMap::default()
        }
    }

    #[test]
    fn the_ids_of_values_are_sorted_once_each_and_none_when_not_known() {
        let mut m = loaded();
        m.add("h1", 9);
        m.add("h1", 3);
        m.add("h2", 3);
        m.add("h3", 5);
        let values = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(m.ids(&values(&["h1", "h2"])), Some(vec![3, 9]));
        assert_eq!(m.ids(&values(&["nowhere"])), Some(vec![]));
        assert_eq!(TagMap::default().ids(&values(&["h1"])), None, "not loaded");
        m.oversized = true;
        assert_eq!(m.ids(&values(&["h1"])), None);
    }

    #[test]
    fn bytes_count_each_value_and_id_once() {
        let mut m = loaded();
        m.add("ab", 1);
        m.add("ab", 1);
        m.add("ab", 2);
        // Each series' value again in `tags`, once per series.
        let tags = 2 * (8 + 2 + ID_OVERHEAD);
        assert_eq!(m.bytes, 2 + VALUE_OVERHEAD + 2 * (8 + ID_OVERHEAD) + tags);
        assert_eq!(m.tags.get(&2).map(String::as_str), Some("ab"));
    }

    #[test]
    fn too_many_ids_are_not_pruned() {
        let mut m = loaded();
        for id in 0..=MAX_PRUNED_SERIES as u64 {
            m.add("h", id);
        }
        assert_eq!(m.ids(&["h".to_string()]), None);
    }

    #[test]
    fn no_series_reads_nothing() {
        assert_eq!(series_in(&[]), "0");
        assert_eq!(series_in(&[4, 7]), "`series_id` IN (4,7)");
    }
}
