//! `[storage]`: where data lives. The WAL's and the flusher's own sections are their
//! crates' configs ([`wal::WalConfig`], [`flush::FlushConfig`]); the server's file nests
//! all three.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[storage]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// Root data directory: the WAL lives in `<data_dir>/wal`, the engine in
    /// `<data_dir>/chdb`. Default: `data`.
    pub data_dir: PathBuf,
    /// How a write's WAL payload is encoded: `lz4` (default: its Arrow
    /// buffers LZ4-framed on the parse threads, 44 instead of 93 bytes per
    /// point of the standard payload for ~75 ns more CPU per point,
    /// `ingest/examples/wire_size.rs`; the server then wrote 71–77 instead of
    /// 232–295 bytes to disk per point, WAL, RocksDB flushes and compactions
    /// included, at no more CPU per point: `test_results/history/ab_wal_lz4.md`) or
    /// `none`. `limits.max_unflushed_bytes` counts per entry the larger of
    /// its payload and the memory its decoded batches hold, so compressible
    /// values cannot hold more memory than it says. Entries of either kind
    /// replay; a release before this setting cannot read LZ4 entries.
    pub wal_compression: WalCompression,
    /// Where flushed points go: `embedded` (the default: the in-process engine's tables) or
    /// `clickhouse` (the shards of a ClickHouse cluster, `[storage.clickhouse]`; issue #25:
    /// everything the embedded engine does).
    pub engine: StorageEngine,
    /// `[storage.clickhouse]`: the cluster when `engine = "clickhouse"`.
    pub clickhouse: ClickHouseConfig,
}

/// `[storage] engine`.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StorageEngine {
    /// The in-process engine's tables.
    #[default]
    Embedded,
    /// A ClickHouse cluster's shards.
    Clickhouse,
}

/// `[storage.clickhouse]`. Its password never leaves the process: `Debug` and the serialized
/// form (`chingest config --check`) show `[REDACTED]` in its place.
#[derive(Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ClickHouseConfig {
    /// Each shard's HTTP endpoint (`http://host:8123`), or the endpoints of its replicas
    /// (`["http://a1:8123", "http://a2:8123"]`, with [`zookeeper_path`](Self::zookeeper_path)),
    /// in shard order: a series' shard is `jumpConsistentHash(series_id, len)`, so the list
    /// only ever grows at its end.
    pub shards: Vec<ShardEndpoints>,
    /// Where in the servers' ZooKeeper chingest's replicated tables live (every server
    /// configures `<zookeeper>` and a `<macros><replica>` naming it within its shard): each
    /// table is then a `ReplicatedMergeTree` the replicas of its shard share. Empty: plain
    /// `MergeTree`, one endpoint per shard. Chosen when the cluster is made: tables keep the
    /// engine they were made with.
    pub zookeeper_path: String,
    /// How many replicas of a shard must hold a delivery before it counts as delivered (and
    /// leaves the WAL): ClickHouse's `insert_quorum`. 0 or 1: one (the others copy it within
    /// the replication delay; a replica lost before then loses what only it had). N ≥ 2: N
    /// (fewer than N replicas answering: the shard's deliveries wait in the WAL); at most
    /// every shard's replica count.
    pub insert_quorum: u32,
    /// The user on every shard (ClickHouse's `default` when empty).
    pub user: String,
    /// The user's password (prefer `CHINGEST_CLICKHOUSE_PASSWORD` in the environment).
    #[serde(serialize_with = "redacted")]
    pub password: String,
    /// This ingest node's name, on every row it delivers (`__node`): unique per node and
    /// stable across restarts (its retries are recognised by it). Default: the host name.
    pub node: String,
    /// Limit of one request to a shard (a statement, one insert), seconds.
    pub timeout_secs: u64,
    /// The cluster's name in the shards' `remote_servers` (the same shards, in any
    /// order): chingest then keeps `<db>`.`<measurement>` on every shard as a `Distributed`
    /// table over each shard's `__shard_<db>`.`<measurement>`, for SQL on the whole cluster
    /// (`/api/v1/sql` needs it). Empty: none.
    pub distributed: String,
    /// How long a `DELETE`, `DROP SERIES` or `DROP MEASUREMENT` waits for the other ingest
    /// nodes to deliver the writes they acknowledged before it (a node down with writes in
    /// its WAL holds them back: the statement then answers 503, nothing deleted), seconds.
    pub delete_wait_secs: u64,
    /// The shards' users that read one database each (`[[storage.clickhouse.readers]]`):
    /// a non-admin's `/api/v1/sql` on the cluster runs as the one of its database.
    pub readers: Vec<ReaderConfig>,
}

/// One entry of `[storage.clickhouse] shards`: a shard's endpoint, or its replicas'.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum ShardEndpoints {
    /// One server.
    One(String),
    /// The shard's replicas, the first preferred.
    Replicas(Vec<String>),
}

impl ShardEndpoints {
    /// The endpoints, the first preferred.
    pub fn endpoints(&self) -> Vec<String> {
        match self {
            ShardEndpoints::One(e) => vec![e.clone()],
            ShardEndpoints::Replicas(r) => r.clone(),
        }
    }
}

/// `[[storage.clickhouse.readers]]`: a user on every shard whose `allow_databases` (the
/// servers' `users.xml`) are `database` and `__shard_<database>`.
#[derive(Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ReaderConfig {
    /// The database it may read.
    pub database: String,
    /// Its name on the shards.
    pub user: String,
    /// Its password.
    #[serde(serialize_with = "redacted")]
    pub password: String,
}

impl std::fmt::Debug for ReaderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReaderConfig")
            .field("database", &self.database)
            .field("user", &self.user)
            .field("password", &shown(&self.password))
            .finish()
    }
}

/// A secret as it may be shown: `[REDACTED]`, or empty when there is none.
fn shown(secret: &str) -> &'static str {
    if secret.is_empty() {
        ""
    } else {
        "[REDACTED]"
    }
}

/// [`shown`] as the serialized form.
fn redacted<S: serde::Serializer>(secret: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(shown(secret))
}

impl std::fmt::Debug for ClickHouseConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClickHouseConfig")
            .field("shards", &self.shards)
            .field("zookeeper_path", &self.zookeeper_path)
            .field("insert_quorum", &self.insert_quorum)
            .field("user", &self.user)
            .field("password", &shown(&self.password))
            .field("node", &self.node)
            .field("timeout_secs", &self.timeout_secs)
            .field("distributed", &self.distributed)
            .field("delete_wait_secs", &self.delete_wait_secs)
            .field("readers", &self.readers)
            .finish()
    }
}

impl Default for ClickHouseConfig {
    fn default() -> Self {
        Self {
            shards: Vec::new(),
            zookeeper_path: String::new(),
            insert_quorum: 0,
            user: String::new(),
            password: String::new(),
            node: String::new(),
            timeout_secs: 30,
            distributed: String::new(),
            delete_wait_secs: 60,
            readers: Vec::new(),
        }
    }
}

impl ClickHouseConfig {
    /// The cluster's connection settings: the password from `CHINGEST_CLICKHOUSE_PASSWORD`
    /// when set, the node's name from the host name when not configured.
    pub fn cluster(&self) -> cluster::ClusterConfig {
        let password = std::env::var("CHINGEST_CLICKHOUSE_PASSWORD")
            .ok()
            .filter(|p| !p.is_empty())
            .or_else(|| (!self.password.is_empty()).then(|| self.password.clone()));
        let node = if self.node.is_empty() {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default()
        } else {
            self.node.clone()
        };
        cluster::ClusterConfig {
            shards: self.shards.iter().map(ShardEndpoints::endpoints).collect(),
            zookeeper_path: (!self.zookeeper_path.is_empty()).then(|| self.zookeeper_path.clone()),
            insert_quorum: self.insert_quorum,
            user: (!self.user.is_empty()).then(|| self.user.clone()),
            password,
            node,
            // The data directory's, set where storage opens its WAL.
            incarnation: String::new(),
            timeout: std::time::Duration::from_secs(self.timeout_secs.max(1)),
            distributed: (!self.distributed.is_empty()).then(|| self.distributed.clone()),
            delete_wait: std::time::Duration::from_secs(self.delete_wait_secs),
            readers: self
                .readers
                .iter()
                .map(|r| cluster::ShardReader {
                    database: r.database.clone(),
                    user: r.user.clone(),
                    password: (!r.password.is_empty()).then(|| r.password.clone()),
                })
                .collect(),
        }
    }
}

/// The encoding of WAL payloads (`[storage] wal_compression`).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WalCompression {
    /// Arrow IPC as is.
    None,
    /// Arrow IPC with LZ4-framed buffers.
    #[default]
    Lz4,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("data"),
            wal_compression: WalCompression::Lz4,
            engine: StorageEngine::Embedded,
            clickhouse: ClickHouseConfig::default(),
        }
    }
}

impl StorageConfig {
    /// `<data_dir>/wal`.
    pub fn wal_dir(&self) -> PathBuf {
        self.data_dir.join("wal")
    }
    /// `<data_dir>/chdb`.
    pub fn engine_dir(&self) -> PathBuf {
        self.data_dir.join("chdb")
    }
}

#[cfg(test)]
mod tests {
    use super::{ClickHouseConfig, ReaderConfig, ShardEndpoints};

    #[test]
    fn a_shard_is_an_endpoint_or_its_replicas() {
        let c: ClickHouseConfig = toml::from_str(
            "shards = [\"http://a:8123\", [\"http://b1:8123\", \"http://b2:8123\"]]\n\
             zookeeper_path = \"/clickhouse/chingest\"\n",
        )
        .unwrap();
        assert_eq!(
            c.shards,
            [
                ShardEndpoints::One("http://a:8123".into()),
                ShardEndpoints::Replicas(vec!["http://b1:8123".into(), "http://b2:8123".into()]),
            ]
        );
        let cluster = c.cluster();
        assert_eq!(
            cluster.shards,
            [
                vec!["http://a:8123".to_string()],
                vec!["http://b1:8123".to_string(), "http://b2:8123".to_string()]
            ]
        );
        assert_eq!(
            cluster.zookeeper_path.as_deref(),
            Some("/clickhouse/chingest")
        );
        // Printed as read.
        let again: ClickHouseConfig = toml::from_str(&toml::to_string(&c).unwrap()).unwrap();
        assert_eq!(again.shards, c.shards);
        assert!(toml::from_str::<ClickHouseConfig>("shards = [1]").is_err());
        assert_eq!(ClickHouseConfig::default().cluster().zookeeper_path, None);
    }

    #[test]
    fn the_cluster_password_is_never_shown() {
        let c = ClickHouseConfig {
            password: "s3cret-pw".into(),
            readers: vec![ReaderConfig {
                database: "telegraf".into(),
                user: "reader".into(),
                password: "reader-s3cret".into(),
            }],
            ..ClickHouseConfig::default()
        };
        let shown = [
            format!("{c:?}"),
            format!("{:?}", c.cluster()),
            toml::to_string(&c).unwrap(),
            serde_json::to_string(&c).unwrap(),
        ];
        for s in &shown {
            assert!(
                !s.contains("s3cret") && s.contains("[REDACTED]") && s.contains("telegraf"),
                "{s}"
            );
        }
        // No password: nothing to redact, and the default config prints as it reads.
        let none = toml::to_string(&ClickHouseConfig::default()).unwrap();
        assert!(none.contains("password = \"\""), "{none}");
    }
}
