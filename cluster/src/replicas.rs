//! A shard's replicas (issue #25): servers that share the shard's tables as
//! `ReplicatedMergeTree`s through their ZooKeeper ([`crate::schema::engine`]).
//!
//! What the replicas share (rows, columns, mutations, partitions) goes to one of them
//! ([`crate::http::Client::on_some_replica`]); what each server keeps for itself — its
//! databases, its replica of each table, the `Distributed` tables — is made on each. A
//! replicated table's replicas must agree with its definition in ZooKeeper, so a replica
//! that lacks a table gets the definition another replica has, not the one this node
//! would write ([`Cluster::make_table`]); a replica that answers again after not answering
//! (or at start) gets every table made meanwhile ([`Cluster::repair_replicas`]), and then
//! fetches their rows from the others by itself.

use std::collections::{BTreeMap, BTreeSet};

use engine::{quote_ident, unescape_tsv};

use crate::{Cluster, ClusterError};

/// chingest's tables on a server: its metadata, its shard tables and the `Distributed`
/// tables over them, as (database, table) rows.
const CHINGEST_TABLES: &str = "SELECT database, name FROM system.tables \
     WHERE database = '__chingest' OR startsWith(database, '__shard_') \
     OR (engine = 'Distributed' AND concat('__shard_', database) IN \
         (SELECT name FROM system.databases)) FORMAT TabSeparated";

impl Cluster {
    /// Makes `database`.`table` (`create`: its `CREATE TABLE IF NOT EXISTS`) and its
    /// database on every replica of shard `k` that answers: `create` where no replica has
    /// the table, else the definition one has. A replica that does not answer misses it
    /// until [`repair_replicas`](Self::repair_replicas).
    pub(crate) fn make_table(
        &self,
        k: usize,
        database: &str,
        table: &str,
        create: &str,
    ) -> Result<(), ClusterError> {
        let create_database = format!("CREATE DATABASE IF NOT EXISTS {}", quote_ident(database));
        if self.http.replicas(k) == 1 {
            self.http.statement(k, &create_database)?;
            return self.http.statement(k, create).map(drop);
        }
        let (definition, lacking) = self.definition(k, database, table)?;
        let had = definition.is_some();
        let definition = definition.unwrap_or_else(|| create.to_string());
        let mut made = false;
        let mut last = None;
        for r in lacking {
            let done = self
                .http
                .statement_on(k, r, &create_database)
                .and_then(|_| self.http.statement_on(k, r, &definition));
            match done {
                Ok(_) => made = true,
                Err(e) if e.is_unavailable() => last = Some(e),
                // ZooKeeper knows the table with other columns than `create`'s: only its
                // replicas that do not answer have it. Waits for them.
                Err(e @ ClusterError::Refused { .. })
                    if e.code() == Some(crate::code::INCOMPATIBLE_COLUMNS) =>
                {
                    return Err(ClusterError::Unreachable {
                        shard: k,
                        endpoint: self.http.replica_endpoint(k, r),
                        message: format!(
                            "the replicas that have {database}.{table} do not answer: {e}"
                        ),
                    })
                }
                Err(e) => return Err(e),
            }
        }
        match last {
            Some(e) if !had && !made => Err(e),
            _ => Ok(()),
        }
    }

    /// The definition of `database`.`table` on a replica of shard `k` that has it (as a
    /// `CREATE TABLE IF NOT EXISTS`), and the replicas that answer without it. No replica
    /// answering is the last one's error.
    fn definition(
        &self,
        k: usize,
        database: &str,
        table: &str,
    ) -> Result<(Option<String>, Vec<usize>), ClusterError> {
        let show = format!(
            "SHOW CREATE TABLE {}.{} FORMAT TabSeparated",
            quote_ident(database),
            quote_ident(table)
        );
        let mut have = None;
        let mut lacking = Vec::new();
        let mut last = None;
        for r in 0..self.http.replicas(k) {
            match self.http.statement_on(k, r, &show) {
                Ok(text) => have = Some(if_not_exists(&unescape_tsv(text.trim_end_matches('\n')))),
                Err(e) if e.is_missing_table() => lacking.push(r),
                Err(e) if e.is_unavailable() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        match last {
            Some(e) if have.is_none() && lacking.is_empty() => Err(e),
            _ => Ok((have, lacking)),
        }
    }

    /// Asks every replica whether it answers, and makes on each replica back (and, once,
    /// on every replica at start) the tables of chingest another replica
    /// of its shard has and it lacks. Best effort, logged: tried again on the next call
    /// while a replica is down or a table cannot be made.
    pub fn repair_replicas(&self) {
        self.http.probe_replicas();
        for k in 0..self.config.shards.len() {
            if self.http.replicas(k) == 1 || !self.http.take_returned(k) {
                continue;
            }
            match self.repair_shard(k) {
                Ok(0) => {}
                Ok(made) => tracing::info!(
                    shard = k,
                    made,
                    "tables made on a shard's replica that lacked them"
                ),
                Err(e) => {
                    tracing::warn!(shard = k, error = %e, "a shard's replicas could not be repaired (tried again)");
                    self.http.mark_returned(k);
                }
            }
        }
    }

    /// [`repair_replicas`](Self::repair_replicas) of shard `k`'s replicas that answer (one
    /// that does not is repaired once it does): how many tables it made.
    fn repair_shard(&self, k: usize) -> Result<usize, ClusterError> {
        // Per replica that answers: (replica, its tables).
        let mut tables: Vec<(usize, BTreeSet<(String, String)>)> = Vec::new();
        for r in 0..self.http.replicas(k) {
            let answer = match self.http.statement_on(k, r, CHINGEST_TABLES) {
                Ok(answer) => answer,
                Err(e) if e.is_unavailable() => continue,
                Err(e) => return Err(e),
            };
            tables.push((
                r,
                answer
                    .lines()
                    .filter_map(|l| l.split_once('\t'))
                    .map(|(d, t)| (unescape_tsv(d), unescape_tsv(t)))
                    .collect(),
            ));
        }
        let every: BTreeSet<&(String, String)> = tables.iter().flat_map(|(_, have)| have).collect();
        // Shard tables and metadata before the `Distributed` tables over them.
        let mut missing: BTreeMap<(bool, &(String, String)), Vec<usize>> = BTreeMap::new();
        for t in every {
            for (r, have) in &tables {
                let r = *r;
                if !have.contains(t) {
                    let distributed = !t.0.starts_with("__");
                    missing.entry((distributed, t)).or_default().push(r);
                }
            }
        }
        let mut made = 0;
        for ((_, (database, table)), lacking) in missing {
            let (Some(definition), _) = self.definition(k, database, table)? else {
                continue;
            };
            let create_database =
                format!("CREATE DATABASE IF NOT EXISTS {}", quote_ident(database));
            for r in lacking {
                self.http.statement_on(k, r, &create_database)?;
                self.http.statement_on(k, r, &definition)?;
                made += 1;
            }
        }
        Ok(made)
    }
}

/// `definition` (`CREATE TABLE …`, as `SHOW CREATE TABLE` gives it) as a `CREATE TABLE IF
/// NOT EXISTS`.
fn if_not_exists(definition: &str) -> String {
    match definition.strip_prefix("CREATE TABLE ") {
        Some(rest) if !rest.starts_with("IF NOT EXISTS ") => {
            format!("CREATE TABLE IF NOT EXISTS {rest}")
        }
        _ => definition.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_is_made_only_where_missing() {
        assert_eq!(
            if_not_exists("CREATE TABLE `__shard_a`.`m` (x UInt8) ENGINE = Memory"),
            "CREATE TABLE IF NOT EXISTS `__shard_a`.`m` (x UInt8) ENGINE = Memory"
        );
        assert_eq!(
            if_not_exists("CREATE TABLE IF NOT EXISTS a.b (x UInt8) ENGINE = Memory"),
            "CREATE TABLE IF NOT EXISTS a.b (x UInt8) ENGINE = Memory"
        );
    }
}
