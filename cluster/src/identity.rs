//! Which series of a shard table may hold a point written more than once (issue #43): what
//! a pushed-down aggregate needs to group by `(series_id, time)` — point identity — and what
//! it may read as it is, one row a point. The shard-side equivalent of the embedded
//! flusher's index (`flush/src/identity`), for tables that several nodes write.
//!
//! No node sees every delivery, so the index is not fed by deliveries: it is the shard
//! table's own account, read from the shard. A MergeTree stores each insert as parts named
//! `<partition>_<min block>_<max block>_<level>`; a part never changes under its name, a
//! merge or a mutation makes a part whose block range is the union of its sources' (its
//! rows a subset of theirs), and an insert takes block numbers no part had. Per shard table
//! the node keeps:
//! - `checked`: per partition, the block numbers whose rows were compared with every row
//!   of the table visible then;
//! - `rewritten`: the series with two rows at one time among the checked rows (found at
//!   the first touch by grouping the whole table, later by grouping only the rows at the
//!   `(series_id, time)` of the rows of blocks not yet checked);
//! - an `epoch`, a new one when `rewritten` grows or the index is reset: unique over every
//!   index of the process, so a read checked against an index made since its snapshot (the
//!   table forgotten while it ran: dropped, made again) never matches it by coincidence.
//!
//! A read ([`Cluster::read_partials`], through `Cluster::read_identified`) groups only the
//! rows of `rewritten`'s series as the index stands and reads every other row as a point;
//! after the read the node lists the table's active parts (`system.parts`; the listing rides
//! in the read's own statement, `crate::folded`, taken after the read's parts) and checks the
//! blocks of those outside `checked`, so every part listed is checked, and the read stands
//! if `rewritten` is as the read used it. A row the read saw is, by then, in a part the
//! listing holds (merges keep it in a part covering its block; a part holding an unchecked
//! block is checked whole), so a rewrite among the rows read — landed before the read began
//! or while it ran — is found and the shard read again, then with the new rewritten series,
//! the third time with every row grouped. [`Cluster::identity_snapshots`] and
//! [`Cluster::identity_still_valid`] do the same in two steps, the listing before as well.
//!
//! Reset (reloaded whole at the next use): the table's metadata time changed (made again,
//! or a column added), or a part listed under a name already seen has other rows or another
//! modification time (a table dropped and made again under its old part names); forgotten
//! when this node drops the table or its database, or learns another node dropped it. Not used
//! (every row grouped): a shard with replicas (their part times differ), more than
//! [`MAX_REWRITTEN_SERIES`] rewritten series, or `CHINGEST_CLUSTER_IDENTITY_INDEX=0`.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use engine::quote_string;
use engine::table::ColumnKind;
use parking_lot::Mutex;

use crate::{schema, Cluster, ClusterError};

/// Rewritten series a read lists before it groups every row instead (each is written in
/// the shard's statement).
pub const MAX_REWRITTEN_SERIES: usize = 2_000;

/// What a read of one shard table may skip grouping, as of one state of its index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentitySnapshot {
    epoch: u64,
    /// The series that may hold a point written more than once, sorted: only their rows
    /// need grouping by `(series_id, time)`.
    pub rewritten: Vec<u64>,
}

/// One active part of a shard table, as `system.parts` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Part {
    pub(crate) name: String,
    pub(crate) partition: String,
    pub(crate) min_block: i64,
    pub(crate) max_block: i64,
    pub(crate) rows: u64,
    pub(crate) modified: u64,
}

/// Per partition id, the block numbers whose rows a node has looked at: sorted, disjoint,
/// non-adjacent ranges. A part whose blocks all lie in one range holds no row it has not
/// looked at (a merge or mutation of parts seen); any other holds an insert's new rows.
#[derive(Debug, Default)]
pub(crate) struct CheckedBlocks(HashMap<String, Vec<(i64, i64)>>);

impl CheckedBlocks {
    /// Whether every block of `p` was looked at.
    pub(crate) fn covers(&self, p: &Part) -> bool {
        self.0.get(&p.partition).is_some_and(|ranges| {
            ranges
                .iter()
                .any(|(a, b)| *a <= p.min_block && p.max_block <= *b)
        })
    }

    /// The blocks of `p` were looked at.
    pub(crate) fn add(&mut self, p: &Part) {
        let ranges = self.0.entry(p.partition.clone()).or_default();
        ranges.push((p.min_block, p.max_block));
        ranges.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
        for &(a, b) in ranges.iter() {
            match merged.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        *ranges = merged;
    }
}

/// A new epoch: never one any index of this process had.
fn next_epoch() -> u64 {
    static EPOCHS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    EPOCHS.fetch_add(1, Ordering::Relaxed) + 1
}

/// One shard table's index.
#[derive(Debug, Default)]
pub(crate) struct TableIndex {
    loaded: bool,
    /// The table's `metadata_modification_time` when loaded.
    metadata: u64,
    checked: CheckedBlocks,
    /// The parts listed last: name → (rows, modification time).
    parts: HashMap<String, (u64, u64)>,
    rewritten: BTreeSet<u64>,
    /// More rewritten series than [`MAX_REWRITTEN_SERIES`]: every read groups all rows.
    overflow: bool,
    epoch: u64,
}

impl TableIndex {
    fn reset(&mut self) {
        *self = TableIndex {
            epoch: next_epoch(),
            ..TableIndex::default()
        };
    }

    fn covered(&self, p: &Part) -> bool {
        self.checked.covers(p)
    }

    fn check(&mut self, p: &Part) {
        self.checked.add(p);
    }

    fn add_rewritten(&mut self, series: impl IntoIterator<Item = u64>) {
        let before = self.rewritten.len();
        self.rewritten.extend(series);
        if self.rewritten.len() != before {
            self.epoch = next_epoch();
        }
        if self.rewritten.len() > MAX_REWRITTEN_SERIES {
            self.overflow = true;
        }
    }

    fn snapshot(&self) -> Option<IdentitySnapshot> {
        (!self.overflow).then(|| IdentitySnapshot {
            epoch: self.epoch,
            rewritten: self.rewritten.iter().copied().collect(),
        })
    }
}

/// One shard table's index, and whether this node sent it rows since a read last brought
/// the index up to date before reading.
#[derive(Debug, Default)]
pub(crate) struct Entry {
    index: Mutex<TableIndex>,
    /// Set after each of this node's inserts into the table (outside the index's lock: a
    /// delivery never waits for a read's listing): the next read lists the parts before it
    /// reads, so a rewrite this node just wrote is grouped at once rather than found after
    /// the read and read again. Only a hint: the check after the read is what is exact.
    delivered: AtomicBool,
}

/// Per (shard, database, measurement), its shard table's index.
pub(crate) type Indexes = Mutex<HashMap<(usize, String, String), Arc<Entry>>>;

/// Whether reads use the index (`CHINGEST_CLUSTER_IDENTITY_INDEX=0`: every row grouped, as
/// before it existed; for comparisons).
pub(crate) fn enabled() -> bool {
    std::env::var("CHINGEST_CLUSTER_IDENTITY_INDEX").as_deref() != Ok("0")
}

/// The SQL of the series with two rows at one time among the rows of `table` that `rows`
/// selects (all of them: `None`), at most `limit` of them.
fn rewritten_sql(table: &str, rows: Option<&str>, limit: usize) -> String {
    let candidates = match rows {
        Some(cond) => format!(
            " WHERE (`series_id`, `time`) IN (SELECT `series_id`, `time` FROM {table} WHERE {cond})"
        ),
        None => String::new(),
    };
    format!(
        "SELECT DISTINCT `series_id` FROM (SELECT `series_id`, `time` FROM {table}{candidates} \
         GROUP BY `series_id`, `time` HAVING count() > 1) LIMIT {limit}"
    )
}

/// A condition on `_part` selecting the rows of every part that holds a block of `parts`
/// (a part of them, or a merge or mutation of it).
pub(crate) fn blocks_of(parts: &[&Part]) -> String {
    let one: Vec<String> = parts
        .iter()
        .map(|p| {
            format!(
                "(splitByChar('_', _part)[1] = {} AND toInt64(splitByChar('_', _part)[2]) <= {} \
                 AND toInt64(splitByChar('_', _part)[3]) >= {})",
                quote_string(&p.partition),
                p.max_block,
                p.min_block
            )
        })
        .collect();
    one.join(" OR ")
}

fn parse_series(text: &str) -> Result<Vec<u64>, String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.parse().map_err(|_| format!("unexpected series id {l:?}")))
        .collect()
}

impl Cluster {
    /// Shard `k`'s answer `text` to `sql` did not read as expected.
    pub(crate) fn unexpected(&self, k: usize, sql: &str, message: String) -> ClusterError {
        ClusterError::Refused {
            shard: k,
            endpoint: self.http.endpoint(k),
            statement: sql.to_string(),
            message: format!("unexpected answer: {message}"),
            code: None,
        }
    }

    fn index(&self, k: usize, db: &str, measurement: &str) -> Arc<Entry> {
        let key = (k, db.to_string(), measurement.to_string());
        self.identity.lock().entry(key).or_default().clone()
    }

    /// This node sent rows to shard `k`'s table of `db`.`measurement` ([`Entry::delivered`]).
    pub(crate) fn identity_delivered(&self, k: usize, db: &str, measurement: &str) {
        let key = (k, db.to_string(), measurement.to_string());
        if let Some(entry) = self.identity.lock().get(&key) {
            entry.delivered.store(true, Ordering::Relaxed);
        }
        self.tag_maps.delivered(k, db, measurement);
    }

    /// Forgets every shard's index of `db`.`measurement` (`None`: of every measurement of
    /// `db`): dropped, here or by another node, or made again. The next read loads it whole.
    pub fn forget_identity(&self, db: &str, measurement: Option<&str>) {
        self.identity
            .lock()
            .retain(|(_, d, m), _| d != db || measurement.is_some_and(|x| x != m));
        self.last_points.forget(db, measurement);
        self.tag_maps.forget(db, measurement);
    }

    /// Brings shard `k`'s index of the table up to what the shard holds now: every part
    /// it lists checked. `listed`: the listing's answer already in hand (folded into a
    /// read, taken after the read's parts were), else it is asked for.
    fn refresh(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        index: &mut TableIndex,
        listed: Option<&str>,
    ) -> Result<(), ClusterError> {
        let table = schema::table(db, measurement);
        let (metadata, parts) = self.listing(k, db, measurement, listed)?;
        let renamed = parts.iter().any(|p| {
            index
                .parts
                .get(&p.name)
                .is_some_and(|seen| *seen != (p.rows, p.modified))
        });
        if index.loaded && (index.metadata != metadata || renamed) {
            tracing::info!(shard = k, %table, "shard table changed under its names: its rewrites are loaded again");
            index.reset();
        }
        if !index.loaded {
            let sql = rewritten_sql(&table, None, MAX_REWRITTEN_SERIES + 1);
            let answer = self.http.statement(k, &sql)?;
            let series = parse_series(&answer).map_err(|m| self.unexpected(k, &sql, m))?;
            index.epoch = next_epoch();
            index.loaded = true;
            index.metadata = metadata;
            index.add_rewritten(series);
        } else {
            let new: Vec<&Part> = parts.iter().filter(|p| !index.covered(p)).collect();
            if !new.is_empty() {
                let sql = rewritten_sql(&table, Some(&blocks_of(&new)), MAX_REWRITTEN_SERIES + 1);
                let answer = self.http.statement(k, &sql)?;
                let series = parse_series(&answer).map_err(|m| self.unexpected(k, &sql, m))?;
                index.add_rewritten(series);
            }
        }
        for p in &parts {
            index.check(p);
        }
        index.parts = parts
            .into_iter()
            .map(|p| (p.name, (p.rows, p.modified)))
            .collect();
        Ok(())
    }

    /// Per shard, what a read of `db`.`measurement` may skip grouping (`None`: group every
    /// row), each shard's index brought up to date first (the table and `columns` made
    /// where they are missing).
    pub fn identity_snapshots(
        &self,
        db: &str,
        measurement: &str,
        columns: &[(String, ColumnKind)],
    ) -> Result<Vec<Option<IdentitySnapshot>>, ClusterError> {
        let on = enabled();
        self.read_table_everywhere(db, measurement, columns, |k| {
            if !on || self.http.replicas(k) > 1 {
                return Ok(None);
            }
            let entry = self.index(k, db, measurement);
            let mut index = entry.index.lock();
            self.refresh(k, db, measurement, &mut index, None)?;
            Ok(index.snapshot())
        })
    }

    /// Whether a read that used `snapshots` (from [`Cluster::identity_snapshots`]) grouped
    /// every point written more than once it may have seen: each shard's index brought up to
    /// date again, no rewrite found since.
    pub fn identity_still_valid(
        &self,
        db: &str,
        measurement: &str,
        columns: &[(String, ColumnKind)],
        snapshots: &[Option<IdentitySnapshot>],
    ) -> Result<bool, ClusterError> {
        let valid = self.read_table_everywhere(db, measurement, columns, |k| {
            let Some(snapshot) = &snapshots[k] else {
                return Ok(true);
            };
            let entry = self.index(k, db, measurement);
            let mut index = entry.index.lock();
            self.refresh(k, db, measurement, &mut index, None)?;
            Ok(index.epoch == snapshot.epoch && !index.overflow)
        })?;
        Ok(valid.into_iter().all(|v| v))
    }
}

impl Cluster {
    /// Shard `k`'s index of the table as it stands, loaded whole at its first use, brought
    /// up to date only when this node delivered to it since ([`Entry::delivered`]): the
    /// check after the read (`Cluster::read_identified`) is what makes a read exact, so a
    /// listing before it would mostly cost a round trip. `None`: group every row.
    pub(crate) fn current_snapshot(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
    ) -> Result<Option<IdentitySnapshot>, ClusterError> {
        if !enabled() || self.http.replicas(k) > 1 {
            return Ok(None);
        }
        let entry = self.index(k, db, measurement);
        let mut index = entry.index.lock();
        if !index.loaded || entry.delivered.swap(false, Ordering::Relaxed) {
            self.refresh(k, db, measurement, &mut index, None)?;
        }
        Ok(index.snapshot())
    }

    /// Whether shard `k`'s read with `snapshot` grouped every point written more than once
    /// it may have seen: its index brought up to date after the read, no rewrite found
    /// since the snapshot was taken. `listed`: the listing the read's own statement
    /// returned (`listing.rs`'s `listing_lines_sql`), else it is asked for now.
    pub(crate) fn still_valid_on(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        snapshot: &IdentitySnapshot,
        listed: Option<&str>,
    ) -> Result<bool, ClusterError> {
        let entry = self.index(k, db, measurement);
        let mut index = entry.index.lock();
        self.refresh(k, db, measurement, &mut index, listed)?;
        Ok(index.epoch == snapshot.epoch && !index.overflow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(partition: &str, min_block: i64, max_block: i64) -> Part {
        Part {
            name: format!("{partition}_{min_block}_{max_block}_0"),
            partition: partition.into(),
            min_block,
            max_block,
            rows: 1,
            modified: 0,
        }
    }

    #[test]
    fn a_part_is_covered_only_by_checked_blocks_of_its_partition_without_a_gap() {
        let mut index = TableIndex::default();
        for p in [
            part("1", 1, 1),
            part("1", 2, 3),
            part("1", 5, 5),
            part("2", 4, 4),
        ] {
            index.check(&p);
        }
        assert_eq!(index.checked.0["1"], vec![(1, 3), (5, 5)]);
        assert!(index.covered(&part("1", 1, 3)), "a merge of checked parts");
        assert!(index.covered(&part("1", 2, 2)));
        assert!(
            !index.covered(&part("1", 3, 5)),
            "block 4 of partition 1 is new"
        );
        assert!(!index.covered(&part("2", 1, 1)));
        assert!(!index.covered(&part("3", 4, 4)));
    }

    #[test]
    fn a_new_rewritten_series_moves_the_epoch_and_too_many_turn_the_index_off() {
        let mut index = TableIndex::default();
        index.add_rewritten([7, 8]);
        let e = index.epoch;
        index.add_rewritten([8]);
        assert_eq!(index.epoch, e, "nothing new");
        index.add_rewritten([9]);
        assert_ne!(index.epoch, e);
        let e = index.epoch;
        assert_eq!(index.snapshot().unwrap().rewritten, vec![7, 8, 9]);
        index.add_rewritten(100..(100 + MAX_REWRITTEN_SERIES as u64));
        assert_eq!(index.snapshot(), None);
        index.reset();
        assert!(index.epoch != e && index.snapshot().unwrap().rewritten.is_empty());
    }

    #[test]
    fn two_indexes_never_share_an_epoch() {
        // A read's snapshot from an index forgotten while it ran, checked against the index
        // made since (the table dropped and made again): other rewritten series, so the
        // epochs must differ whatever each index went through.
        let (mut old, mut new) = (TableIndex::default(), TableIndex::default());
        old.add_rewritten([5]);
        new.add_rewritten([7]);
        assert_ne!(old.snapshot().unwrap().epoch, new.snapshot().unwrap().epoch);
    }

    #[test]
    fn the_check_of_new_blocks_groups_the_rows_at_their_points() {
        let (a, b) = (part("202611", 4, 4), part("x", 9, 12));
        let sql = rewritten_sql("`__shard_d`.`m`", Some(&blocks_of(&[&a, &b])), 3);
        assert_eq!(
            sql,
            "SELECT DISTINCT `series_id` FROM (SELECT `series_id`, `time` FROM `__shard_d`.`m` \
             WHERE (`series_id`, `time`) IN (SELECT `series_id`, `time` FROM `__shard_d`.`m` \
             WHERE (splitByChar('_', _part)[1] = '202611' AND toInt64(splitByChar('_', _part)[2]) <= 4 \
             AND toInt64(splitByChar('_', _part)[3]) >= 4) OR (splitByChar('_', _part)[1] = 'x' \
             AND toInt64(splitByChar('_', _part)[2]) <= 12 AND toInt64(splitByChar('_', _part)[3]) >= 9)) \
             GROUP BY `series_id`, `time` HAVING count() > 1) LIMIT 3"
        );
    }
}
