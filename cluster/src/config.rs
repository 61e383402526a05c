//! [`ClusterConfig`]: where the cluster is and who this node is (built by
//! storage from its `[storage.clickhouse]` section).

use std::time::Duration;

/// Where the cluster is and who this node is (`Debug` shows no password).
#[derive(Clone)]
pub struct ClusterConfig {
    /// Each shard's replicas' HTTP endpoints (`http://host:8123`; one when its tables are
    /// not replicated), in shard order.
    pub shards: Vec<Vec<String>>,
    /// Where in ZooKeeper the shards' replicated tables live (`None`: tables are
    /// `MergeTree`, one endpoint per shard): [`crate::schema::zookeeper_path`].
    pub zookeeper_path: Option<String>,
    /// How many replicas of a shard must hold an insert before the shard confirms it
    /// (`insert_quorum`; 0 or 1: one).
    pub insert_quorum: u32,
    /// The user (ClickHouse's `default` when `None`).
    pub user: Option<String>,
    /// The user's password.
    pub password: Option<String>,
    /// This ingest node's name (two nodes must not share one): its rows' `__node`, with
    /// [`incarnation`](Self::incarnation).
    pub node: String,
    /// The incarnation of this node's data directory: made with the directory, so a node
    /// started again under the same name on a fresh one (its WAL's sequences from 1 again)
    /// has rows the shards know apart from those of its earlier life, which a retried
    /// delivery would otherwise take as already held. Empty: a directory made before
    /// incarnations (its rows' `__node` is the name alone, as it always was).
    pub incarnation: String,
    /// Limit of one HTTP request (a statement, an insert).
    pub timeout: Duration,
    /// The cluster's name in the servers' `remote_servers`, when chingest keeps a
    /// `Distributed` table over each measurement's shard tables (`__shard_<db>`.`<m>`) on
    /// every shard as `<db>`.`<m>`: the whole cluster's rows, for SQL (users' own, and
    /// `/api/v1/sql`).
    pub distributed: Option<String>,
    /// How long a `DELETE` waits for the other ingest nodes to deliver the writes they
    /// acknowledged before it ([`crate::nodes`]).
    pub delete_wait: Duration,
    /// The shards' users that read one database each: a non-admin's `/api/v1/sql` runs as
    /// the one of the database it reads ([`crate::sql`]).
    pub readers: Vec<ShardReader>,
}

impl ClusterConfig {
    /// What this node's rows carry as `__node`, and a retried delivery asks a shard for:
    /// `<node>@<incarnation>`, or the name alone for a directory older than incarnations.
    pub fn row_node(&self) -> String {
        if self.incarnation.is_empty() {
            self.node.clone()
        } else {
            format!("{}@{}", self.node, self.incarnation)
        }
    }
}

/// A user on every shard that may read one database (its `allow_databases` in the
/// servers' `users.xml`: `<db>` and `__shard_<db>`); `Debug` shows no password.
#[derive(Clone, PartialEq, Eq)]
pub struct ShardReader {
    /// The database it reads.
    pub database: String,
    /// Its name on the shards.
    pub user: String,
    /// Its password.
    pub password: Option<String>,
}

impl std::fmt::Debug for ShardReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardReader")
            .field("database", &self.database)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "[REDACTED]"))
            .finish()
    }
}

impl std::fmt::Debug for ClusterConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterConfig")
            .field("shards", &self.shards)
            .field("zookeeper_path", &self.zookeeper_path)
            .field("insert_quorum", &self.insert_quorum)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "[REDACTED]"))
            .field("node", &self.node)
            .field("incarnation", &self.incarnation)
            .field("timeout", &self.timeout)
            .field("distributed", &self.distributed)
            .field("delete_wait", &self.delete_wait)
            .field("readers", &self.readers)
            .finish()
    }
}
