//! Deleting rows on every shard (issue #25): `DELETE` and `DROP SERIES` on a cluster, once
//! the fence ([`crate::nodes`]) says every node delivered what it acknowledged before; and
//! `DROP MEASUREMENT`'s tables, with the drop listed for every node's catalog.
//!
//! 18.16 deletes with a mutation (`ALTER TABLE … DELETE WHERE`), which rewrites the parts
//! that hold matching rows in the background; the statement returns at once. So each
//! shard's mutation is waited for (`system.mutations`, `is_done`) before the next shard's
//! begins and before the caller answers: the next query no longer sees the rows. Parts
//! inserted after a mutation began are not touched by it — the rows written after the
//! `DELETE` stay. Every shard must answer: a shard down fails the statement (the shards
//! already done stay done; running it again is harmless).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use engine::{quote_string, unescape_tsv};

use crate::{schema, Cluster, ClusterError};

/// Where the measurement drops are listed, on every shard, for every node's catalog.
const DROPS_TABLE: &str = "__chingest.drops";

/// How long one shard's mutation may take before the statement gives up waiting (it goes
/// on in the background; running the statement again waits for it anew).
const MUTATION_WAIT: Duration = Duration::from_secs(120);

/// The `CREATE TABLE IF NOT EXISTS` of [`DROPS_TABLE`].
pub(super) fn create_drops_table() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {DROPS_TABLE} (db String, measurement String, \
         at UInt64) ENGINE = MergeTree ORDER BY (db, measurement)"
    )
}

impl Cluster {
    /// Deletes the rows of `db`.`measurement` that meet `condition` (SQL over the shard
    /// table's columns: `time` as `Int64` nanoseconds, tags as `String`; `None`: every
    /// row) on every shard, and waits until each shard's mutation is done. `Ok(false)`: no
    /// shard has the table.
    pub fn delete_rows(
        &self,
        db: &str,
        measurement: &str,
        condition: Option<&str>,
    ) -> Result<bool, ClusterError> {
        let table = schema::table(db, measurement);
        let mut found = false;
        for k in 0..self.config.shards.len() {
            if !self.has_table_on(k, db, measurement)? {
                continue;
            }
            found = true;
            self.http.statement(
                k,
                &format!(
                    "ALTER TABLE {table} DELETE WHERE {}",
                    condition.unwrap_or("1")
                ),
            )?;
            self.wait_mutations(k, db, measurement)?;
        }
        Ok(found)
    }

    /// Drops `db`.`measurement`'s shard table (and its `Distributed` table) on every shard
    /// and every replica; each must answer (one down fails the drop: those done stay done,
    /// running it again is harmless). A delivery of rows written since makes it again.
    pub fn drop_table(&self, db: &str, measurement: &str) -> Result<(), ClusterError> {
        for k in 0..self.config.shards.len() {
            self.http.all_replicas(k, |v| {
                schema::drop_table(&schema::table(db, measurement), v)
            })?;
            if self.config.distributed.is_some() {
                self.http.all_replicas(k, |v| {
                    schema::drop_table(&schema::distributed_table(db, measurement), v)
                })?;
            }
        }
        self.forget_table(db, measurement);
        Ok(())
    }

    /// Whether any shard has `db`.`measurement`'s shard table (every shard must answer).
    pub fn has_table(&self, db: &str, measurement: &str) -> Result<bool, ClusterError> {
        for k in 0..self.config.shards.len() {
            if self.has_table_on(k, db, measurement)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether shard `k` has `db`.`measurement`'s shard table.
    fn has_table_on(&self, k: usize, db: &str, measurement: &str) -> Result<bool, ClusterError> {
        let answer = self.http.statement(
            k,
            &format!(
                "SELECT count() FROM system.tables WHERE database = {} AND name = {} \
                 FORMAT TabSeparated",
                quote_string(&schema::shard_database(db)),
                quote_string(measurement)
            ),
        )?;
        Ok(answer.trim() != "0")
    }

    /// Lists the drop of `db`.`measurement` begun at `at` (ms, this node's clock) on every
    /// shard that answers, for the other nodes to forget its fields and tags; `Ok(n)`: how
    /// many shards took it (none answering is an error).
    pub fn list_drop(&self, db: &str, measurement: &str, at: u64) -> Result<usize, ClusterError> {
        self.list_meta_somewhere(
            &create_drops_table(),
            &format!(
                "INSERT INTO {DROPS_TABLE} (db, measurement, at) VALUES ({}, {}, {at})",
                quote_string(db),
                quote_string(measurement)
            ),
        )
    }

    /// The newest drop of each (`db`, `measurement`) listed on shard `k` (ms).
    pub(crate) fn listed_drops(
        &self,
        k: usize,
    ) -> Result<BTreeMap<(String, String), u64>, ClusterError> {
        let answer = self.read_meta(
            k,
            &format!(
                "SELECT db, measurement, max(at) FROM {DROPS_TABLE} GROUP BY db, measurement \
                 FORMAT TabSeparated"
            ),
        )?;
        let mut out = BTreeMap::new();
        for line in answer.lines() {
            let cells: Vec<&str> = line.split('\t').collect();
            let [db, m, at] = cells[..] else {
                continue;
            };
            if let Ok(at) = at.parse() {
                out.insert((unescape_tsv(db), unescape_tsv(m)), at);
            }
        }
        Ok(out)
    }

    /// Waits until shard `k` has no unfinished mutation of `db`.`measurement`.
    fn wait_mutations(&self, k: usize, db: &str, measurement: &str) -> Result<(), ClusterError> {
        let deadline = Instant::now() + MUTATION_WAIT;
        let sql = format!(
            "SELECT count() FROM system.mutations WHERE database = {} AND table = {} \
             AND is_done = 0 FORMAT TabSeparated",
            quote_string(&schema::shard_database(db)),
            quote_string(measurement)
        );
        let mut pause = Duration::from_millis(10);
        loop {
            if self.http.statement(k, &sql)?.trim() == "0" {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(ClusterError::Refused {
                    shard: k,
                    endpoint: self.http.endpoint(k),
                    statement: "ALTER TABLE … DELETE".into(),
                    message: format!(
                        "the delete did not finish within {} s (it goes on on the shard; run \
                         the statement again to wait for it)",
                        MUTATION_WAIT.as_secs()
                    ),
                    code: None,
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }
}
