//! A database's life on the cluster (issue #25): created and dropped by any node, and seen
//! the same way by every node.
//!
//! The listings are dated (ms, the listing node's clock; node clocks are assumed NTP-close,
//! as for the delivery fence):
//! - `CREATE DATABASE` lists `(name, at)` in `__chingest.created` (and the name in
//!   `__chingest.databases`, as before);
//! - `DROP DATABASE` lists `(db, '', at)` in `__chingest.drops` (a measurement is never
//!   named `''`, so the row cannot be a measurement's drop);
//! - each node, once it has applied a drop (its undelivered writes of the database gone,
//!   new ones refused), lists `(node, db, at)` in `__chingest.drops_applied`; the dropping
//!   node, once every node has and the shards' tables are gone, lists `('', db, at)`: the
//!   drop is done.
//!
//! A database exists for chingest when its newest creation is newer than its newest drop;
//! one never dropped also when it only holds chingest tables (databases listed before the
//! dates were). The tables of a dropped database are invisible from the moment its drop
//! is listed, even before they are gone.

use std::collections::{BTreeMap, BTreeSet};

use engine::{quote_string, unescape_tsv};

use crate::meta::META_DATABASE;
use crate::{schema, Cluster, ClusterError};

/// Where creations are listed with their time.
const CREATED_TABLE: &str = "__chingest.created";
/// Where nodes confirm the database drops they applied.
const APPLIED_TABLE: &str = "__chingest.drops_applied";
/// Where each database's retention policies are listed, as a dated document.
const POLICIES_TABLE: &str = "__chingest.policies";
/// The node name of a drop's "done" row in [`APPLIED_TABLE`] (no node is named `''`:
/// `[storage.clickhouse] node` is validated non-empty).
pub const DROP_DONE: &str = "";

/// What the shards say of databases' lives, merged over the shards that answered.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DatabaseLives {
    /// The newest dated creation of each database.
    pub created: BTreeMap<String, u64>,
    /// The newest drop of each database.
    pub dropped: BTreeMap<String, u64>,
    /// Each `(node, db)`'s newest applied drop ([`DROP_DONE`]: the drop finished).
    pub applied: BTreeMap<(String, String), u64>,
}

impl DatabaseLives {
    /// Whether `db`, listed or holding tables, exists: created after its newest drop, or
    /// never dropped.
    pub fn alive(&self, db: &str) -> bool {
        match self.dropped.get(db) {
            None => true,
            Some(dropped) => self.created.get(db).is_some_and(|c| c > dropped),
        }
    }

    /// Whether `node` applied `db`'s drops through `at`.
    pub fn has_applied(&self, node: &str, db: &str, at: u64) -> bool {
        self.applied
            .get(&(node.to_string(), db.to_string()))
            .is_some_and(|a| *a >= at)
    }

    /// `db`'s newest drop, unless it is done (`None`: none, or done).
    pub fn unfinished_drop(&self, db: &str) -> Option<u64> {
        let at = *self.dropped.get(db)?;
        (!self.has_applied(DROP_DONE, db, at)).then_some(at)
    }

    pub(crate) fn merge(&mut self, other: DatabaseLives) {
        fn newest<K: Ord>(into: &mut BTreeMap<K, u64>, from: BTreeMap<K, u64>) {
            for (k, at) in from {
                let e = into.entry(k).or_insert(at);
                *e = (*e).max(at);
            }
        }
        newest(&mut self.created, other.created);
        newest(&mut self.dropped, other.dropped);
        newest(&mut self.applied, other.applied);
    }
}

/// The `CREATE TABLE IF NOT EXISTS` of [`CREATED_TABLE`].
pub(super) fn create_created_table() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {CREATED_TABLE} (name String, at UInt64) \
         ENGINE = MergeTree ORDER BY name"
    )
}

/// The `CREATE TABLE IF NOT EXISTS` of [`APPLIED_TABLE`].
pub(super) fn create_applied_table() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {APPLIED_TABLE} (node String, db String, \
         at UInt64) ENGINE = MergeTree ORDER BY (db, node)"
    )
}

/// The `CREATE TABLE IF NOT EXISTS` of [`POLICIES_TABLE`].
pub(super) fn create_policies_table() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {POLICIES_TABLE} (db String, doc String, at UInt64) \
         ENGINE = MergeTree ORDER BY db"
    )
}

/// `key\tat` lines, the newest `at` per key.
fn dated<K: Ord>(answer: &str, key: impl Fn(&[&str]) -> Option<K>) -> BTreeMap<K, u64> {
    let mut out = BTreeMap::new();
    for line in answer.lines() {
        let cells: Vec<&str> = line.split('\t').collect();
        let Some((at, rest)) = cells.split_last() else {
            continue;
        };
        let (Ok(at), Some(k)) = (at.trim().parse::<u64>(), key(rest)) else {
            continue;
        };
        let e = out.entry(k).or_insert(at);
        *e = (*e).max(at);
    }
    out
}

impl Cluster {
    /// The newest retention-policy document of each database listed on shard `k`: `db` →
    /// (document, ms).
    pub(crate) fn policy_documents(
        &self,
        k: usize,
    ) -> Result<BTreeMap<String, (String, u64)>, ClusterError> {
        let answer = self.read_meta(
            k,
            &format!(
                "SELECT db, argMax(doc, at), max(at) FROM {POLICIES_TABLE} GROUP BY db \
                 FORMAT TabSeparated"
            ),
        )?;
        let mut out = BTreeMap::new();
        for line in answer.lines() {
            let cells: Vec<&str> = line.split('\t').collect();
            let [db, doc, at] = cells[..] else {
                continue;
            };
            if let Ok(at) = at.parse() {
                out.insert(unescape_tsv(db), (unescape_tsv(doc), at));
            }
        }
        Ok(out)
    }

    /// Lists `db`'s retention-policy document `doc` (`""`: none), changed at `at` (ms, this
    /// node's clock), on every shard that answers (none: an error); the newest wins.
    pub fn list_policies(&self, db: &str, doc: &str, at: u64) -> Result<usize, ClusterError> {
        self.list_meta_somewhere(
            &create_policies_table(),
            &format!(
                "INSERT INTO {POLICIES_TABLE} (db, doc, at) VALUES ({}, {}, {at})",
                quote_string(db),
                quote_string(doc)
            ),
        )
    }

    /// The lives of the databases listed on shard `k`.
    pub(crate) fn database_lives(&self, k: usize) -> Result<DatabaseLives, ClusterError> {
        let created = self.read_meta(
            k,
            &format!("SELECT name, max(at) FROM {CREATED_TABLE} GROUP BY name FORMAT TabSeparated"),
        )?;
        let dropped = self.read_meta(
            k,
            &format!(
                "SELECT db, max(at) FROM {META_DATABASE}.drops WHERE measurement = '' \
                 GROUP BY db FORMAT TabSeparated"
            ),
        )?;
        let applied = self.read_meta(
            k,
            &format!(
                "SELECT node, db, max(at) FROM {APPLIED_TABLE} GROUP BY node, db \
                 FORMAT TabSeparated"
            ),
        )?;
        let one = |c: &[&str]| match c {
            [name] => Some(unescape_tsv(name)),
            _ => None,
        };
        Ok(DatabaseLives {
            created: dated(&created, one),
            dropped: dated(&dropped, one),
            applied: dated(&applied, |c| match c {
                [node, db] => Some((unescape_tsv(node), unescape_tsv(db))),
                _ => None,
            }),
        })
    }

    /// [`database_lives`](Self::database_lives) over every shard that answers (none: an
    /// error).
    pub fn all_database_lives(&self) -> Result<DatabaseLives, ClusterError> {
        let mut out = DatabaseLives::default();
        let mut down = None;
        let mut answered = 0;
        for k in 0..self.config.shards.len() {
            match self.database_lives(k) {
                Ok(lives) => {
                    answered += 1;
                    out.merge(lives);
                }
                Err(e @ ClusterError::Unreachable { .. }) => down = Some(e),
                Err(e) => return Err(e),
            }
        }
        match (answered, down) {
            (0, Some(e)) => Err(e),
            _ => Ok(out),
        }
    }

    /// The creation row of `db` at `at`, with its `CREATE TABLE`.
    pub(crate) fn created_statements(db: &str, at: u64) -> [String; 2] {
        [
            create_created_table(),
            format!(
                "INSERT INTO {CREATED_TABLE} (name, at) VALUES ({}, {at})",
                quote_string(db)
            ),
        ]
    }

    /// Lists `db`'s drop begun at `at` on every shard that answers (none: an error): from
    /// here on the database is gone for every node that reads it.
    pub fn list_database_drop(&self, db: &str, at: u64) -> Result<usize, ClusterError> {
        self.list_drop(db, "", at)
    }

    /// Lists on every shard that answers that `node` applied `db`'s drops through `at`
    /// ([`DROP_DONE`]: the drop is done); how many shards took it.
    pub fn confirm_database_drop(
        &self,
        node: &str,
        db: &str,
        at: u64,
    ) -> Result<usize, ClusterError> {
        self.list_meta_somewhere(
            &create_applied_table(),
            &format!(
                "INSERT INTO {APPLIED_TABLE} (node, db, at) VALUES ({}, {}, {at})",
                quote_string(node),
                quote_string(db)
            ),
        )
    }

    /// Drops `db`'s chingest tables on every shard and replica (each must answer): each shard
    /// table and the `Distributed` table over it, then the shard database. Other tables a
    /// database of that name may hold on the servers are not chingest's and stay.
    pub fn drop_database_tables(&self, db: &str) -> Result<(), ClusterError> {
        let shard_db = schema::shard_database(db);
        let mut measurements = BTreeSet::new();
        let list = format!(
            "SELECT name FROM system.tables WHERE database = {} FORMAT TabSeparated",
            quote_string(&shard_db)
        );
        for k in 0..self.config.shards.len() {
            for r in 0..self.http.replicas(k) {
                let answer = self.http.statement_on(k, r, &list)?;
                measurements.extend(answer.lines().map(unescape_tsv));
            }
        }
        for m in &measurements {
            self.drop_table(db, m)?;
        }
        for k in 0..self.config.shards.len() {
            self.http
                .all_replicas(k, |v| schema::drop_database(&shard_db, v))?;
        }
        self.forget_database(db);
        Ok(())
    }

    /// Forgets what this node knew of `db`'s tables and retention.
    pub fn forget_database(&self, db: &str) {
        for known in self.known.lock().iter_mut() {
            known.retain(|(d, _), _| d != db);
        }
        for made in self.distributed_known.lock().iter_mut() {
            made.retain(|(d, _), _| d != db);
        }
        self.retention.lock().remove(db);
        self.forget_identity(db, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_lives_when_created_after_its_newest_drop() {
        let mut lives = DatabaseLives::default();
        assert!(lives.alive("a"), "never dropped");
        lives.dropped.insert("a".into(), 100);
        assert!(!lives.alive("a"), "dropped, never created with a date");
        lives.created.insert("a".into(), 100);
        assert!(
            !lives.alive("a"),
            "created at the drop's instant: the drop wins"
        );
        lives.created.insert("a".into(), 101);
        assert!(lives.alive("a"));
        assert_eq!(lives.unfinished_drop("a"), Some(100));
        lives.applied.insert((DROP_DONE.into(), "a".into()), 100);
        assert_eq!(lives.unfinished_drop("a"), None);
        assert!(!lives.has_applied("n1", "a", 100));
        lives.applied.insert(("n1".into(), "a".into()), 150);
        assert!(
            lives.has_applied("n1", "a", 100),
            "a newer drop applied covers it"
        );
    }

    #[test]
    fn dated_rows_keep_the_newest_per_key_and_skip_junk() {
        let rows = "a\t5\nb\t7\na\t9\nbad\nc\tx\n";
        let got = dated(rows, |c| match c {
            [name] => Some(name.to_string()),
            _ => None,
        });
        assert_eq!(
            got,
            BTreeMap::from([("a".to_string(), 9), ("b".to_string(), 7)])
        );
    }
}
