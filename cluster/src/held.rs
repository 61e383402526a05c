//! What a shard already holds of a delivery that may have reached it before (an earlier
//! attempt failed during or after its insert), so a retry sends exactly the rest.
//!
//! One shard's rows of one delivery go in one insert, which a shard stores as one part
//! per partition it touches ([`crate::schema::partition_span_secs`]): atomic within a
//! partition, not across them. So a write (`__seq`) is held whole, not at all, or — when
//! the server failed between two partitions' parts — in part; only then are its rows
//! (`__row`) asked for one by one.

use std::collections::{HashMap, HashSet};

use engine::quote_string;

use crate::{schema, Cluster, ClusterError};

/// This node's rows of some writes that a shard holds.
#[derive(Debug, Default)]
pub(crate) struct Held {
    /// Writes whose rows for the shard it holds entirely.
    whole: HashSet<u64>,
    /// The rows it holds of writes it holds in part: (`__seq`, `__row`).
    some: Vec<(u64, u64)>,
    /// How many of the delivery's rows for the shard it holds.
    pub(crate) rows: u64,
}

impl Held {
    /// The condition that keeps a delivery's rows the shard does not hold (`None`: it
    /// holds none).
    pub(crate) fn not_held_sql(&self) -> Option<String> {
        let mut out = Vec::new();
        if !self.whole.is_empty() {
            let list: Vec<String> = self.whole.iter().map(u64::to_string).collect();
            out.push(format!("`__seq` NOT IN ({})", list.join(", ")));
        }
        if !self.some.is_empty() {
            let mut list: Vec<String> = self
                .some
                .iter()
                .map(|(seq, row)| format!("({seq}, {row})"))
                .collect();
            // `(a, b) NOT IN ((1, 2))` would read as a set of two numbers.
            if list.len() == 1 {
                list.push(list[0].clone());
            }
            out.push(format!("(`__seq`, `__row`) NOT IN ({})", list.join(", ")));
        }
        (!out.is_empty()).then(|| out.join(" AND "))
    }
}

impl Cluster {
    /// [`held`](Self::held) on a replica of shard `k` that has every part of the table
    /// ZooKeeper lists ([`caught_up`](Self::caught_up)): that replica, and what it holds.
    /// None has (the replica that took an earlier attempt may be the only one with its
    /// rows, and it does not answer): unavailable, the delivery waits for it. With an
    /// insert quorum of N, N replicas must have every part (replicas that have every part
    /// hold the same rows, so what one holds is then on N): else a write an earlier attempt
    /// left on fewer would count as delivered.
    pub(crate) fn held_somewhere(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        suspects: &[u64],
        expected: &HashMap<u64, u64>,
    ) -> Result<(usize, Held), ClusterError> {
        let quorum = self.config.insert_quorum as usize;
        if quorum > 1 {
            let caught_up = (0..self.http.replicas(k))
                .filter(|r| self.caught_up(k, *r, db, measurement).is_ok())
                .count();
            if caught_up < quorum {
                return Err(ClusterError::Unreachable {
                    shard: k,
                    endpoint: self.http.endpoint(k),
                    message: format!(
                        "{caught_up} of its replicas have every part of {db}.{measurement}, \
                         the insert quorum is {quorum}: a retried delivery waits for more"
                    ),
                });
            }
        }
        self.http.on_some_replica(k, |r| {
            self.caught_up(k, r, db, measurement)?;
            Ok((r, self.held(k, r, db, measurement, suspects, expected)?))
        })
    }

    /// Whether replica `r` of shard `k` has every part of `db`.`measurement` its shard's
    /// replication log lists, and only those: it read the log to its end and fetched every
    /// insert in it, its ZooKeeper answers (else what it holds says nothing of what another
    /// replica took), and it has no part waiting to be checked — an insert whose commit to
    /// ZooKeeper it could not confirm (18.16 keeps such a part, readable, until a check finds
    /// it missing from ZooKeeper and detaches it: rows counted from it could vanish after the
    /// WAL let them go). A table that is not replicated has nothing to catch up with.
    fn caught_up(
        &self,
        k: usize,
        r: usize,
        db: &str,
        measurement: &str,
    ) -> Result<(), ClusterError> {
        if self.http.replicas(k) == 1 && self.config.zookeeper_path.is_none() {
            return Ok(());
        }
        let (database, table) = (
            quote_string(&schema::shard_database(db)),
            quote_string(measurement),
        );
        // A replicated table without its row in `system.replicas` is not ready: not caught
        // up. A missing table is (the read of what it holds says so). A replica that read no
        // entry of the log yet (`log_pointer` 0) has read it to its end only if the log has
        // none (a table no insert reached yet: its first delivery failed before ZooKeeper,
        // as a quorum refused for too few replicas does), which only ZooKeeper says.
        let answer = self.http.statement_on(
            k,
            r,
            &format!(
                "SELECT (SELECT count() FROM system.replicas WHERE database = {database} \
                 AND table = {table} AND log_pointer > log_max_index AND inserts_in_queue = 0 \
                 AND parts_to_check = 0 AND is_readonly = 0) > 0 \
                 OR (SELECT count() FROM system.tables WHERE database = {database} \
                 AND name = {table} AND engine LIKE 'Replicated%') = 0, \
                 (SELECT any(zookeeper_path) FROM system.replicas WHERE database = {database} \
                 AND table = {table} AND log_pointer = 0 AND log_max_index = 0 \
                 AND inserts_in_queue = 0 AND parts_to_check = 0 AND is_readonly = 0) \
                 FORMAT TabSeparated"
            ),
        )?;
        let (done, unread) = answer
            .trim_end_matches(['\n', '\r'])
            .split_once('\t')
            .unwrap_or(("", ""));
        let caught_up = match (done, unread) {
            ("1", _) => true,
            (_, "") => false,
            (_, zookeeper_path) => {
                let log = format!("{}/log", engine::unescape_tsv(zookeeper_path));
                let entries = self.http.statement_on(
                    k,
                    r,
                    &format!(
                        "SELECT count() FROM system.zookeeper WHERE path = {} \
                         FORMAT TabSeparated",
                        quote_string(&log)
                    ),
                )?;
                entries.trim() == "0"
            }
        };
        if caught_up {
            return Ok(());
        }
        Err(ClusterError::Unreachable {
            shard: k,
            endpoint: self.http.replica_endpoint(k, r),
            message: format!(
                "lacks parts of {db}.{measurement} another replica took (fetching them, \
                 or that replica does not answer): what it holds of a retried delivery \
                 is not known yet"
            ),
        })
    }

    /// What replica `r` of shard `k` holds of this node's rows of `suspects` in
    /// `db`.`measurement`, given `expected`: how many rows of each write the delivery has
    /// for it.
    pub(crate) fn held(
        &self,
        k: usize,
        r: usize,
        db: &str,
        measurement: &str,
        suspects: &[u64],
        expected: &HashMap<u64, u64>,
    ) -> Result<Held, ClusterError> {
        let table = schema::table(db, measurement);
        let node = quote_string(&self.config.row_node());
        let list: Vec<String> = suspects.iter().map(u64::to_string).collect();
        let counts = self.http.statement_on(
            k,
            r,
            &format!(
                "SELECT __seq, count() FROM {table} WHERE __node = {node} AND __seq IN ({}) \
                 GROUP BY __seq FORMAT TabSeparated",
                list.join(", ")
            ),
        )?;
        let mut out = Held::default();
        let mut partial = Vec::new();
        for (seq, count) in counts.lines().filter_map(pair) {
            let want = expected.get(&seq).copied().unwrap_or(0);
            if want == 0 {
                continue;
            }
            if count >= want {
                out.whole.insert(seq);
                out.rows += want;
            } else {
                partial.push(seq.to_string());
            }
        }
        if !partial.is_empty() {
            let rows = self.http.statement_on(
                k,
                r,
                &format!(
                    "SELECT DISTINCT __seq, __row FROM {table} WHERE __node = {node} \
                     AND __seq IN ({}) FORMAT TabSeparated",
                    partial.join(", ")
                ),
            )?;
            out.some = rows.lines().filter_map(pair).collect();
            out.rows += out.some.len() as u64;
        }
        Ok(out)
    }
}

/// Two tab-separated numbers.
fn pair(line: &str) -> Option<(u64, u64)> {
    let (a, b) = line.trim().split_once('\t')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}
