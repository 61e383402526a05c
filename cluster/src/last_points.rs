//! Each series' last point on a shard, kept by the node between reads and validated by the
//! listing of the shard table's parts (issue #43: TSBS `lastpoint`, Grafana's current
//! value). Without it every such read asks each shard for each series' rows at its last
//! time, which scans about one granule of every column per series (76.6 ms p50 at 200
//! hosts on two 18.16 shards, against 20 ms wanted).
//!
//! A MergeTree part never changes under its name, so the last points of a set of parts hold
//! while the set holds. The node keeps, per shard table (and columns and tag condition), the
//! rows at each series' latest time among the rows of the parts it listed, and before each
//! read lists the parts again (one small request); against what it knew:
//! - a part it knows, unchanged: nothing to read;
//! - a new part whose rows are exactly those of known parts inside its block range (a
//!   merge; a merge keeps every row, no `TTL` is made on these tables, `retention.rs`):
//!   nothing to read;
//! - a new part with more rows than the known parts inside its range (an insert, or a
//!   merge with one): only its rows' last points are read (`_part`'s block range, as the
//!   identity index checks new blocks) and merged in — a later time replaces a series'
//!   rows, the same time adds to them (a rewrite: the engine merges a point's rows, the
//!   later write winning field by field, as it does for the plain read);
//! - anything else — the table made again (metadata time), a known name with other rows,
//!   a known part gone with no part covering it (a partition dropped), fewer rows than
//!   the parts it covers or another mutation version than theirs (`DELETE` is a mutation
//!   on every supported server) —: everything is read again.
//!
//! The listing is taken before the read, so what the node reads is at least what it
//! listed (a row read twice is one row: rows are kept once by their bytes). The read
//! itself has no time bounds: a statement's range is applied to the kept rows, and a
//! statement whose range ends before some series' last point is read as before. Bounded:
//! at most `max_rows` rows per entry (more fail the read, as they do the plain read), at
//! most [`MAX_ENTRY_BYTES`] per entry (past it the shard answers as before, nothing kept)
//! and [`MAX_ENTRIES`] entries: at most 256 MiB in all. Off with replicas (their parts differ) and with
//! `CHINGEST_CLUSTER_LAST_POINTS=0` (for comparisons).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::folded::{skip, Cell};
use crate::identity::{blocks_of, Part};
use crate::row_binary::RowBinary;
use crate::{Cluster, ClusterError};

/// Shard tables (× columns × condition) whose last points are kept; the least recently
/// used is forgotten beyond.
pub(crate) const MAX_ENTRIES: usize = 64;

/// The most bytes of rows one entry keeps (about 16,000 TSBS `cpu` rows): a table with
/// more series' last points is read from the shard each time instead.
pub(crate) const MAX_ENTRY_BYTES: usize = 4 << 20;

/// How a read of each series' last point was answered on one shard (the label of
/// `chingest_cluster_last_point_reads_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answered {
    /// From the kept rows: no part with new rows.
    Kept,
    /// The kept rows and the last points of the new parts' rows.
    NewParts,
    /// Read whole again (first use, or a change the kept rows cannot follow).
    Loaded,
    /// Read as before (a series' last point after the statement's range, replicas, off).
    Shard,
}

impl Answered {
    fn label(self) -> &'static str {
        match self {
            Answered::Kept => "kept",
            Answered::NewParts => "new_parts",
            Answered::Loaded => "loaded",
            Answered::Shard => "shard",
        }
    }
}

/// One series' rows at its latest time, each a `RowBinary` row of the read's columns.
#[derive(Debug, Default)]
struct Last {
    time: i64,
    rows: Vec<Box<[u8]>>,
}

/// One shard table's kept last points and the listing they hold for.
#[derive(Debug, Default)]
struct Kept {
    loaded: bool,
    metadata: u64,
    parts: HashMap<String, Part>,
    series: HashMap<u64, Last>,
    rows: u64,
    /// Bytes of the kept rows.
    bytes: usize,
    /// Its last points were more than an entry keeps (rows or bytes): every read asks the
    /// shard, rather than load them again each time only to give up.
    oversized: bool,
    used: u64,
}

/// What a listing asks of the kept rows.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// They hold.
    Current,
    /// They hold once these parts' last points are merged in.
    Read(Vec<Part>),
    /// Read everything again.
    Reload,
}

/// The mutation version in a part's name (`<partition>_<min>_<max>_<level>[_<version>]`;
/// 0 without one).
fn mutation(p: &Part) -> u64 {
    let rest = p.name.strip_prefix(&p.partition).unwrap_or(&p.name);
    rest.split('_')
        .filter(|s| !s.is_empty())
        .nth(3)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn inside(outer: &Part, inner: &Part) -> bool {
    outer.partition == inner.partition
        && outer.min_block <= inner.min_block
        && inner.max_block <= outer.max_block
}

impl Kept {
    /// What the listing (`metadata`, `parts`) asks of the kept rows.
    fn step(&self, metadata: u64, parts: &[Part]) -> Step {
        if !self.loaded || self.metadata != metadata {
            return Step::Reload;
        }
        let mut fresh = Vec::new();
        for p in parts {
            if let Some(seen) = self.parts.get(&p.name) {
                if (seen.rows, seen.modified) != (p.rows, p.modified) {
                    return Step::Reload;
                }
                continue;
            }
            let covered: Vec<&Part> = self.parts.values().filter(|k| inside(p, k)).collect();
            if covered.iter().any(|k| mutation(k) != mutation(p)) {
                return Step::Reload;
            }
            let known: u64 = covered.iter().map(|k| k.rows).sum();
            match p.rows.cmp(&known) {
                std::cmp::Ordering::Less => return Step::Reload,
                std::cmp::Ordering::Equal => {}
                std::cmp::Ordering::Greater => fresh.push(p.clone()),
            }
        }
        let gone_uncovered = self.parts.values().any(|k| {
            !parts.iter().any(|p| p.name == k.name) && !parts.iter().any(|p| inside(p, k))
        });
        match (gone_uncovered, fresh.is_empty()) {
            (true, _) => Step::Reload,
            (false, true) => Step::Current,
            (false, false) => Step::Read(fresh),
        }
    }

    /// Merges one row (`RowBinary` bytes) of series `id` at `time` in; whether it was new.
    fn merge(&mut self, id: u64, time: i64, row: &[u8]) -> bool {
        let last = self.series.entry(id).or_insert_with(|| Last {
            time,
            rows: Vec::new(),
        });
        if time < last.time || (time == last.time && last.rows.iter().any(|r| **r == *row)) {
            return false;
        }
        if time > last.time {
            self.rows -= last.rows.len() as u64;
            self.bytes -= last.rows.iter().map(|r| r.len()).sum::<usize>();
            last.rows.clear();
            last.time = time;
        }
        last.rows.push(row.into());
        self.rows += 1;
        self.bytes += row.len();
        true
    }

    /// The kept rows of series whose last time is at least `min`, as one `RowBinary`
    /// answer; `None` when some series' last time is after `max`.
    fn answer(&self, min: i64, max: i64) -> Option<Vec<u8>> {
        if self.series.values().any(|l| l.time > max) {
            return None;
        }
        let mut out = Vec::new();
        for last in self.series.values().filter(|l| l.time >= min) {
            last.rows.iter().for_each(|r| out.extend_from_slice(r));
        }
        Some(out)
    }
}

/// (shard, database, measurement, the read's columns and condition).
type Key = (usize, String, String, String);

/// Per [`Key`], its kept rows.
#[derive(Debug, Default)]
pub(crate) struct LastPoints {
    entries: Mutex<HashMap<Key, Arc<Mutex<Kept>>>>,
    clock: std::sync::atomic::AtomicU64,
}

impl LastPoints {
    /// Forgets the kept rows of `db`.`measurement` (`None`: of all of `db`).
    pub(crate) fn forget(&self, db: &str, measurement: Option<&str>) {
        self.entries
            .lock()
            .retain(|(_, d, m, _), _| d != db || measurement.is_some_and(|x| x != m));
    }

    fn entry(&self, key: Key) -> Arc<Mutex<Kept>> {
        let mut entries = self.entries.lock();
        if !entries.contains_key(&key) && entries.len() >= MAX_ENTRIES {
            let oldest = entries
                .iter()
                .min_by_key(|(_, e)| e.try_lock().map_or(u64::MAX, |e| e.used))
                .map(|(k, _)| k.clone());
            oldest.map(|k| entries.remove(&k));
        }
        entries.entry(key).or_default().clone()
    }
}

/// Whether reads keep last points (`CHINGEST_CLUSTER_LAST_POINTS=0`: every read asks the
/// shards, as before; for comparisons).
fn enabled() -> bool {
    std::env::var("CHINGEST_CLUSTER_LAST_POINTS").as_deref() != Ok("0")
}

/// What one shard's read of each series' last point needs.
pub(crate) struct LastPointRead<'a> {
    pub(crate) db: &'a str,
    pub(crate) measurement: &'a str,
    pub(crate) table: &'a str,
    /// The `SELECT` list: `time`, `series_id`, `__seq`, `__row`, then the columns cast.
    pub(crate) select: &'a str,
    /// How each row's cells are laid out in `RowBinary`.
    pub(crate) cells: &'a [Cell],
    /// The statement's condition on the shard's columns (tags only), if any.
    pub(crate) condition: Option<&'a str>,
    pub(crate) min: i64,
    pub(crate) max: i64,
    pub(crate) max_rows: u64,
}

impl Cluster {
    /// Shard `k`'s rows at each series' last time in `[read.min, read.max]` (what the plain
    /// read `plain` answers), from the kept rows where the listing allows.
    pub(crate) fn last_points_on(
        &self,
        k: usize,
        read: &LastPointRead<'_>,
        plain: impl FnOnce() -> Result<Vec<u8>, ClusterError>,
    ) -> Result<Vec<u8>, ClusterError> {
        let counted = |a: Answered| {
            metrics::counter!("chingest_cluster_last_point_reads_total", "answered" => a.label())
                .increment(1);
        };
        if !enabled() || self.http.replicas(k) > 1 {
            counted(Answered::Shard);
            return plain();
        }
        let key = (
            k,
            read.db.to_string(),
            read.measurement.to_string(),
            format!("{}\n{:?}", read.select, read.condition),
        );
        let entry = self.last_points.entry(key);
        let mut kept = entry.lock();
        kept.used = self
            .last_points
            .clock
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if kept.oversized {
            counted(Answered::Shard);
            return plain();
        }
        let (metadata, parts) = self.listing(k, read.db, read.measurement, None)?;
        let merged = match kept.step(metadata, &parts) {
            Step::Current => Ok(Answered::Kept),
            Step::Read(fresh) => {
                let fresh: Vec<&Part> = fresh.iter().collect();
                self.merge_last_points(k, read, Some(&blocks_of(&fresh)), &mut kept)
                    .map(|()| Answered::NewParts)
            }
            Step::Reload => {
                *kept = Kept {
                    used: kept.used,
                    ..Kept::default()
                };
                let loaded = self.merge_last_points(k, read, None, &mut kept);
                kept.metadata = metadata;
                loaded.map(|()| Answered::Loaded)
            }
        };
        let answered = match merged {
            // More series than a read may answer over the whole table (the statement's own
            // range may hold fewer: the plain read is bounded by it, so it decides), or more
            // bytes than an entry keeps: not kept, now or later.
            Err(ClusterError::TooManyRows { .. }) => None,
            Ok(_) if kept.bytes > MAX_ENTRY_BYTES => None,
            Ok(answered) => Some(answered),
            Err(e) => return Err(e),
        };
        let Some(answered) = answered else {
            *kept = Kept {
                oversized: true,
                ..Kept::default()
            };
            counted(Answered::Shard);
            return plain();
        };
        kept.parts = parts.into_iter().map(|p| (p.name.clone(), p)).collect();
        match kept.answer(read.min, read.max) {
            Some(answer) => {
                counted(answered);
                Ok(answer)
            }
            None => {
                counted(Answered::Shard);
                plain()
            }
        }
    }

    /// Reads shard `k`'s rows at each series' last time among the rows `blocks` selects
    /// (`None`: all) and merges them into `kept`. On an error `kept` is left to be read
    /// whole again.
    fn merge_last_points(
        &self,
        k: usize,
        read: &LastPointRead<'_>,
        blocks: Option<&str>,
        kept: &mut Kept,
    ) -> Result<(), ClusterError> {
        let mut filter: Vec<String> = Vec::new();
        filter.extend(read.condition.map(|c| format!("({c})")));
        filter.extend(blocks.map(|b| format!("({b})")));
        let filter = match filter.is_empty() {
            true => "1".to_string(),
            false => filter.join(" AND "),
        };
        let table = read.table;
        let sql = format!(
            "SELECT {} FROM {table} WHERE {filter} AND (`series_id`, `time`) IN \
             (SELECT `series_id`, max(`time`) FROM {table} WHERE {filter} GROUP BY `series_id`) \
             LIMIT {} FORMAT RowBinary",
            read.select,
            read.max_rows.saturating_add(1)
        );
        kept.loaded = false;
        let answer = self.http.statement_bytes(k, &sql)?;
        let mut r = RowBinary {
            bytes: &answer,
            at: 0,
        };
        while !r.done() {
            let start = r.at;
            let (time, id) = (r.i64(), r.u64());
            r.at = start;
            let (time, id) = time
                .and_then(|t| Ok((t, id?)))
                .map_err(|m| self.unexpected(k, &sql, m))?;
            for cell in read.cells {
                skip(&mut r, *cell).map_err(|m| self.unexpected(k, &sql, m))?;
            }
            kept.merge(id, time, &answer[start..r.at]);
            if kept.rows > read.max_rows {
                *kept = Kept::default();
                return Err(ClusterError::TooManyRows {
                    max_rows: read.max_rows,
                });
            }
        }
        kept.loaded = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(name: &str, rows: u64) -> Part {
        let f: Vec<&str> = name.split('_').collect();
        Part {
            name: name.into(),
            partition: f[0].into(),
            min_block: f[1].parse().unwrap(),
            max_block: f[2].parse().unwrap(),
            rows,
            modified: 7,
        }
    }

    fn kept(parts: &[Part]) -> Kept {
        Kept {
            loaded: true,
            metadata: 1,
            parts: parts.iter().map(|p| (p.name.clone(), p.clone())).collect(),
            ..Kept::default()
        }
    }

    #[test]
    fn merges_keep_the_rows_inserts_are_read_and_anything_else_reloads() {
        let (a, b, c) = (part("p_1_1_0", 10), part("p_2_2_0", 5), part("q_3_3_0", 4));
        let k = kept(&[a.clone(), b.clone(), c.clone()]);
        assert_eq!(k.step(1, &[a.clone(), b.clone(), c.clone()]), Step::Current);
        assert_eq!(k.step(2, &[a.clone(), b.clone(), c.clone()]), Step::Reload);
        assert_eq!(Kept::default().step(0, &[]), Step::Reload, "never loaded");
        // A merge of a and b (their 15 rows): nothing new.
        let ab = part("p_1_2_1", 15);
        assert_eq!(k.step(1, &[ab.clone(), c.clone()]), Step::Current);
        // An insert, and a merge with a part never listed: read.
        let d = part("p_4_4_0", 3);
        assert_eq!(
            k.step(1, &[a.clone(), b.clone(), c.clone(), d.clone()]),
            Step::Read(vec![d])
        );
        let abx = part("p_1_5_1", 16);
        assert_eq!(k.step(1, &[abx.clone(), c.clone()]), Step::Read(vec![abx]));
        // Rows deleted by a mutation (a new version), fewer rows, a partition dropped, a
        // known name with other rows: read whole again.
        let mut a2 = part("p_1_1_0", 8);
        a2.name = "p_1_1_0_6".into();
        assert_eq!(k.step(1, &[a2, b.clone(), c.clone()]), Step::Reload);
        let mut same_rows = part("p_1_1_0", 10);
        same_rows.name = "p_1_1_0_6".into();
        assert_eq!(
            k.step(1, &[same_rows, b.clone(), c.clone()]),
            Step::Reload,
            "a mutation may change values too"
        );
        assert_eq!(k.step(1, &[part("p_1_2_1", 14), c.clone()]), Step::Reload);
        assert_eq!(k.step(1, &[a.clone(), b.clone()]), Step::Reload);
        assert_eq!(k.step(1, &[part("p_1_1_0", 11), b, c]), Step::Reload);
    }

    #[test]
    fn a_later_time_replaces_a_series_rows_the_same_time_adds_once() {
        let mut k = Kept::default();
        assert!(k.merge(1, 10, b"a"));
        assert!(k.merge(1, 10, b"b"), "a rewrite of the point");
        assert!(!k.merge(1, 10, b"a"), "the same row read twice");
        assert!(!k.merge(1, 9, b"c"), "an earlier point");
        assert!(k.merge(2, 5, b"d"));
        assert_eq!(k.rows, 3);
        let mut answer = k.answer(0, 10).unwrap();
        answer.sort_unstable();
        assert_eq!(answer, b"abd");
        assert_eq!(
            k.answer(6, 10).unwrap().len(),
            2,
            "series 2 has no point after 6"
        );
        assert!(
            k.answer(0, 9).is_none(),
            "series 1's last point is after the range"
        );
        assert!(k.merge(1, 11, b"e"));
        assert_eq!(k.rows, 2);
    }

    #[test]
    fn kept_bytes_follow_the_rows_kept() {
        let mut k = Kept::default();
        assert!(k.merge(1, 10, &[1, 2, 3]));
        assert!(k.merge(1, 10, &[4, 5]));
        assert!(k.merge(2, 10, &[6]));
        assert_eq!((k.rows, k.bytes), (3, 6));
        // A later time replaces series 1's two rows.
        assert!(k.merge(1, 20, &[7]));
        assert_eq!((k.rows, k.bytes), (2, 2));
    }

    #[test]
    fn the_mutation_version_is_read_from_the_name() {
        assert_eq!(mutation(&part("p_1_2_1", 1)), 0);
        let mut p = part("202611_1_2_1", 1);
        p.name = "202611_1_2_1_9".into();
        assert_eq!(mutation(&p), 9);
    }
}
