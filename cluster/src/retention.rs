//! Retention on a cluster (issue #25): how long each database keeps points, agreed by
//! every ingest node through the shards, and enforced on the shards by dropping whole
//! partitions, as InfluxDB drops whole shard groups.
//!
//! - **Agreed**: a node that sets a database's retention lists it on every shard that
//!   answers, in `__chingest.retention` (`name`, `secs`, `set_at`: the setting node's
//!   clock, ms); every node's catalog reads the newest setting of each database from all
//!   shards ([`crate::ClusterCatalog::retention`]) and refuses points older than it at the
//!   door, as on one node. A shard that missed the setting (it was down) is given it
//!   again by the next refresh that finds it behind ([`Cluster::relist_retention`]).
//! - **Enforced**: Debian's 18.16 has no `TTL`, and a row-by-row delete rewrites whole
//!   parts, so shard tables are partitioned by spans of time chosen from the retention
//!   when the table is made ([`schema::partition_span_secs`]) and [`Cluster::expire`]
//!   drops every partition that ends at or before `now - retention`: a point is gone at
//!   most one span after it expired, and nothing is rewritten. Every node runs it
//!   (dropping a partition twice is a no-op), so it does not depend on any one node.
//! - **Not by `TTL`, on any version** (issue #43: servers since 19.6 have it): the
//!   partition drops stay the one mechanism, and no table is made with a `TTL` as a backup
//!   either. A retention changes (`ALTER RETENTION POLICY`), and the drops read it from
//!   the agreed settings each time they run, so a longer retention keeps every point it
//!   should; a `TTL` is fixed in each table's definition, and would need a `MODIFY TTL` on
//!   every table of every shard — one down then, or a table made by a node that had not
//!   yet read the new setting, would go on deleting at the old, shorter retention: points
//!   lost that the user asked to keep. Row-level `TTL` rewrites parts in its merges, and
//!   it takes `DateTime` (seconds from 1970), not the table's `Int64` nanoseconds. Reads
//!   do not filter by retention (nor does InfluxDB, whose expired points stay readable
//!   until their shard group is dropped): a point is gone when its partition is.

use std::collections::{BTreeMap, HashMap};

use engine::{quote_ident, quote_string, unescape_tsv};

use crate::{schema, Cluster, ClusterError};

/// Where the retention settings are listed, on every shard.
const RETENTION_TABLE: &str = "__chingest.retention";

/// A database's retention as one shard lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionSetting {
    /// Seconds points are kept (0: forever).
    pub secs: u64,
    /// When it was set, by the setting node's clock (ms since the epoch): the newest wins.
    pub set_at: u64,
}

/// What one [`Cluster::expire`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Expired {
    /// Partitions dropped, over every shard.
    pub partitions: usize,
    /// Shards that did not answer (their partitions wait for the next run).
    pub unreachable: Vec<usize>,
    /// Shard tables whose partition key chingest did not write (never expired here).
    pub unpartitioned: Vec<String>,
}

impl Cluster {
    /// Lists `db`'s retention as `secs` (0: forever), set now, on every shard that
    /// answers, and uses its partition span for the tables this node makes from now on.
    /// `Ok(n)`: how many shards took it (0: none answered; the caller fails the statement).
    pub fn set_retention(&self, db: &str, secs: u64) -> Result<usize, ClusterError> {
        let setting = RetentionSetting {
            secs,
            set_at: now_ms(),
        };
        let (create, insert) = retention_row(db, setting);
        let took = self.list_meta_somewhere(&create, &insert)?;
        self.note_retention(db, secs);
        Ok(took)
    }

    /// Lists `setting` for `db` on shard `k` (a shard found behind the others).
    pub fn relist_retention(
        &self,
        k: usize,
        db: &str,
        setting: RetentionSetting,
    ) -> Result<(), ClusterError> {
        let (create, insert) = retention_row(db, setting);
        self.list_meta_on(k, &create, &insert)
    }

    /// Remembers `db`'s retention for the partition span of the tables this node makes.
    pub fn note_retention(&self, db: &str, secs: u64) {
        self.retention.lock().insert(db.to_string(), secs);
    }

    /// The partition span of a table of `db` made now.
    pub(crate) fn partition_span_secs(&self, db: &str) -> u64 {
        schema::partition_span_secs(self.retention.lock().get(db).copied().unwrap_or(0))
    }

    /// Each database's newest retention setting on shard `k`.
    pub(crate) fn retention_settings(
        &self,
        k: usize,
    ) -> Result<BTreeMap<String, RetentionSetting>, ClusterError> {
        let answer = self.read_meta(
            k,
            &format!(
                "SELECT name, argMax(secs, set_at), max(set_at) FROM {RETENTION_TABLE} \
                 GROUP BY name FORMAT TabSeparated"
            ),
        )?;
        let mut out = BTreeMap::new();
        for line in answer.lines() {
            let cells: Vec<&str> = line.split('\t').collect();
            let [name, secs, set_at] = cells[..] else {
                continue;
            };
            let (Ok(secs), Ok(set_at)) = (secs.parse(), set_at.parse()) else {
                continue;
            };
            out.insert(unescape_tsv(name), RetentionSetting { secs, set_at });
        }
        Ok(out)
    }

    /// Drops, on every shard that answers, each partition of `db`'s shard tables that ends
    /// at or before `now_ns - retention_secs` (module doc). `retention_secs` 0: nothing.
    pub fn expire(
        &self,
        db: &str,
        retention_secs: u64,
        now_ns: i64,
    ) -> Result<Expired, ClusterError> {
        let mut out = Expired::default();
        if retention_secs == 0 {
            return Ok(out);
        }
        let cutoff = now_ns.saturating_sub(
            i64::try_from(retention_secs)
                .unwrap_or(i64::MAX)
                .saturating_mul(1_000_000_000),
        );
        let shard_db = schema::shard_database(db);
        for k in 0..self.config.shards.len() {
            match self.expire_on(k, &shard_db, cutoff, &mut out) {
                Ok(()) => {}
                Err(ClusterError::Unreachable { .. }) => out.unreachable.push(k),
                Err(e) => return Err(e),
            }
        }
        if out.partitions > 0 {
            tracing::info!(
                db,
                partitions = out.partitions,
                "expired partitions dropped"
            );
        }
        Ok(out)
    }

    fn expire_on(
        &self,
        k: usize,
        shard_db: &str,
        cutoff_ns: i64,
        out: &mut Expired,
    ) -> Result<(), ClusterError> {
        let quoted_db = quote_string(shard_db);
        let tables = self.http.statement(
            k,
            &format!(
                "SELECT name, partition_key FROM system.tables \
                 WHERE database = {quoted_db} \
                 AND engine IN ('MergeTree', 'ReplicatedMergeTree') FORMAT TabSeparated"
            ),
        )?;
        let mut spans = HashMap::new();
        for line in tables.lines() {
            let Some((name, key)) = line.split_once('\t') else {
                continue;
            };
            let name = unescape_tsv(name);
            match schema::partition_span_ns(&unescape_tsv(key)) {
                Some(span) => {
                    spans.insert(name, span);
                }
                None => out.unpartitioned.push(format!("{shard_db}.{name}")),
            }
        }
        if spans.is_empty() {
            return Ok(());
        }
        let parts = self.http.statement(
            k,
            &format!(
                "SELECT DISTINCT table, partition, partition_id FROM system.parts \
                 WHERE database = {quoted_db} AND active FORMAT TabSeparated"
            ),
        )?;
        for line in parts.lines() {
            let cells: Vec<&str> = line.split('\t').collect();
            let [table, partition, id] = cells[..] else {
                continue;
            };
            let table = unescape_tsv(table);
            let (Some(span), Ok(number)) = (spans.get(&table), partition.parse::<i64>()) else {
                continue;
            };
            // Every row of partition `number` is before the end of span `number` (`intDiv`
            // rounds toward zero, so a negative partition's rows are earlier still).
            let ends = number.saturating_add(1).saturating_mul(*span);
            if ends > cutoff_ns {
                continue;
            }
            self.http.statement(
                k,
                &format!(
                    "ALTER TABLE {}.{} DROP PARTITION ID {}",
                    quote_ident(shard_db),
                    quote_ident(&table),
                    quote_string(&unescape_tsv(id))
                ),
            )?;
            out.partitions += 1;
            metrics::counter!("chingest_cluster_expired_partitions_total", "shard" => k.to_string())
                .increment(1);
        }
        Ok(())
    }
}

/// The `CREATE TABLE IF NOT EXISTS` of [`RETENTION_TABLE`].
pub(super) fn create_retention_table() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {RETENTION_TABLE} \
         (name String, secs UInt64, set_at UInt64) ENGINE = MergeTree ORDER BY name"
    )
}

/// The statements that make [`RETENTION_TABLE`] and list `setting` of `db` in it.
fn retention_row(db: &str, setting: RetentionSetting) -> (String, String) {
    (
        create_retention_table(),
        format!(
            "INSERT INTO {RETENTION_TABLE} (name, secs, set_at) VALUES ({}, {}, {})",
            quote_string(db),
            setting.secs,
            setting.set_at
        ),
    )
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
