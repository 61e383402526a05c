//! What every ingest node has delivered, as the cluster sees it: the fence a cluster-wide
//! `DELETE` waits on (issue #25).
//!
//! A node acknowledges a write once it is in its own WAL, and delivers it to the shards
//! later; a `DELETE` run on one node must also remove the points other nodes acknowledged
//! before it and still hold. So every node lists, on every shard that answers, a time
//! before which every write it acknowledged is on the shards (`__chingest.nodes`: `node`,
//! `delivered_through`, `at`, both ms by the node's clock; a `ReplacingMergeTree`, so the
//! table keeps about one row per node), and a `DELETE` begun at `T` waits until every node
//! listed has `delivered_through >= T` ([`Cluster::nodes_delivered`]). A node that is down
//! with writes still in its WAL holds every `DELETE` back until it is back (or an operator
//! forgets it, once it is gone for good: [`Cluster::forget_node`]); node clocks are assumed to agree to within
//! NTP's accuracy (a write acknowledged within that skew of a `DELETE` is concurrent with it).

use std::collections::BTreeMap;

use engine::{quote_string, unescape_tsv};

use crate::{Cluster, ClusterError};

/// Where the nodes list what they delivered, on every shard.
const NODES_TABLE: &str = "__chingest.nodes";

impl Cluster {
    /// Lists, on every shard that answers, that every write this node acknowledged before
    /// `delivered_through` (ms since the epoch, this node's clock) is on the shards.
    /// `Ok(n)`: how many shards took it.
    pub fn publish_delivered(&self, delivered_through: u64) -> Result<usize, ClusterError> {
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let (took, _) = self.list_meta(
            &format!(
                "CREATE TABLE IF NOT EXISTS {NODES_TABLE} (node String, \
                 delivered_through UInt64, at UInt64) ENGINE = ReplacingMergeTree(at) \
                 ORDER BY node"
            ),
            &format!(
                "INSERT INTO {NODES_TABLE} (node, delivered_through, at) VALUES ({}, {}, {})",
                quote_string(&self.config.node),
                delivered_through,
                at
            ),
        )?;
        Ok(took)
    }

    /// Removes `node` from the listing on every shard (every shard must answer: one that
    /// kept it would list it again): deletes and drops stop waiting for it. For a node gone
    /// for good with its WAL; false if no shard listed it. Waits for each shard's delete.
    pub fn forget_node(&self, node: &str) -> Result<bool, ClusterError> {
        let listed = self.nodes_delivered()?.contains_key(node);
        let quoted = quote_string(node);
        for k in 0..self.config.shards.len() {
            match self.http.statement(
                k,
                &format!("ALTER TABLE {NODES_TABLE} DELETE WHERE node = {quoted}"),
            ) {
                Ok(_) => {}
                Err(e) if e.is_missing_table() => continue,
                Err(e) => return Err(e),
            }
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            let pending = "SELECT count() FROM system.mutations WHERE database = '__chingest' \
                 AND table = 'nodes' AND is_done = 0 FORMAT TabSeparated";
            while self.http.statement(k, pending)?.trim() != "0" {
                if std::time::Instant::now() > deadline {
                    return Err(ClusterError::Refused {
                        shard: k,
                        endpoint: self.http.endpoint(k),
                        statement: "ALTER TABLE __chingest.nodes DELETE".into(),
                        message: "not done within 60 s (it goes on; ask again)".into(),
                        code: None,
                    });
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        Ok(listed)
    }

    /// Every node's newest `delivered_through` over the shards that answer (ms, that node's
    /// clock): the time before which its acknowledged writes are all on the shards.
    pub fn nodes_delivered(&self) -> Result<BTreeMap<String, u64>, ClusterError> {
        let mut out: BTreeMap<String, u64> = BTreeMap::new();
        let mut answered = 0;
        for k in 0..self.config.shards.len() {
            let answer = match self.read_meta(
                k,
                &format!(
                    "SELECT node, max(delivered_through) FROM {NODES_TABLE} GROUP BY node \
                     FORMAT TabSeparated"
                ),
            ) {
                Ok(answer) => answer,
                Err(ClusterError::Unreachable { .. }) => continue,
                Err(e) => return Err(e),
            };
            answered += 1;
            for line in answer.lines() {
                let Some((node, through)) = line.split_once('\t') else {
                    continue;
                };
                let Ok(through) = through.trim().parse::<u64>() else {
                    continue;
                };
                let newest = out.entry(unescape_tsv(node)).or_insert(through);
                *newest = (*newest).max(through);
            }
        }
        if answered == 0 {
            return Err(ClusterError::Unreachable {
                shard: 0,
                endpoint: self.http.endpoint(0),
                message: "no shard answers".into(),
            });
        }
        Ok(out)
    }
}
