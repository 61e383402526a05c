//! Delivery of flushed batches to a ClickHouse cluster (issue #25): the shard map, the
//! tables on each shard, and exactly-once inserts through the embedded engine.
//!
//! The embedded engine is the cluster's client: a batch in the embedded layout is handed to
//! it as an Arrow scan and written to each shard with `INSERT INTO FUNCTION url(…, 'Native',
//! …) SELECT … WHERE jumpConsistentHash(series_id, N) = k`, over the shard's HTTP interface
//! (the only one a 26.x engine shares with older servers such as Debian's 18.16: its native
//! `remote()` cannot talk to them). DDL and the delivery checks go over the same HTTP
//! interface from Rust ([`http`]).
//!
//! Exactly once without `insert_deduplication_token` (22.2+): every row carries the writing
//! node and its write's sequence (`__node`, `__seq`), and one shard's rows of one job go in
//! one insert that the shard stores as one block, hence one part, atomically (the insert
//! settings in the URL). A job that may have reached a shard before (an earlier attempt
//! failed after, or during, its insert) first asks that shard which of its sequences it
//! holds and sends only the others ([`Cluster::deliver`]; an insert whose rows span
//! partitions is stored as one part per partition, so a shard may hold a write in part:
//! [`held`]).

mod catalog;
mod databases;
mod delete;
mod deliver;
mod held;
mod http;
mod nodes;
mod read;
mod replicas;
mod retention;
mod schema;
pub mod shard;
mod sql;
mod tables;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

pub use catalog::ClusterCatalog;
pub use databases::{DatabaseLives, DROP_DONE};
use engine::quote_string;
use engine::table::ColumnKind;
pub use read::RowSelection;
pub use retention::{Expired, RetentionSetting};
pub use shard::ShardMap;

/// Where the cluster is and who this node is (`Debug` shows no password).
#[derive(Clone)]
pub struct ClusterConfig {
    /// Each shard's replicas' HTTP endpoints (`http://host:8123`; one when its tables are
    /// not replicated), in shard order.
    pub shards: Vec<Vec<String>>,
    /// Where in ZooKeeper the shards' replicated tables live (`None`: tables are
    /// `MergeTree`, one endpoint per shard): [`schema::zookeeper_path`].
    pub zookeeper_path: Option<String>,
    /// How many replicas of a shard must hold an insert before the shard confirms it
    /// (`insert_quorum`; 0 or 1: one).
    pub insert_quorum: u32,
    /// The user (ClickHouse's `default` when `None`).
    pub user: Option<String>,
    /// The user's password.
    pub password: Option<String>,
    /// This ingest node's name: its rows' `__node` (two nodes must not share one).
    pub node: String,
    /// Limit of one HTTP request (a statement, an insert).
    pub timeout: Duration,
    /// The cluster's name in the servers' `remote_servers`, when chingest keeps a
    /// `Distributed` table over each measurement's shard tables (`__shard_<db>`.`<m>`) on
    /// every shard as `<db>`.`<m>`: the whole cluster's rows, for SQL (users' own, and
    /// `/api/v1/sql`).
    pub distributed: Option<String>,
    /// How long a `DELETE` waits for the other ingest nodes to deliver the writes they
    /// acknowledged before it ([`nodes`]).
    pub delete_wait: Duration,
    /// The shards' users that read one database each: a non-admin's `/api/v1/sql` runs as
    /// the one of the database it reads ([`sql`]).
    pub readers: Vec<ShardReader>,
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
            .field("timeout", &self.timeout)
            .field("distributed", &self.distributed)
            .field("delete_wait", &self.delete_wait)
            .field("readers", &self.readers)
            .finish()
    }
}

/// Why a delivery or a statement on a shard failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The shard could not be reached, or did not answer in time.
    #[error("shard {shard} ({endpoint}) unreachable: {message}")]
    Unreachable {
        /// The shard's index.
        shard: usize,
        /// Its endpoint.
        endpoint: String,
        /// What the client saw.
        message: String,
    },
    /// The shard answered with an error.
    #[error("shard {shard} ({endpoint}) refused `{statement}`: {message}")]
    Refused {
        /// The shard's index.
        shard: usize,
        /// Its endpoint.
        endpoint: String,
        /// The statement, cut to a readable length.
        statement: String,
        /// The server's error text.
        message: String,
    },
    /// A column has another type on the shard than in the batch.
    #[error("column {column:?} of {table} is {on_shard} on shard {shard}, not {wanted}")]
    TypeConflict {
        /// The shard's index.
        shard: usize,
        /// `db.measurement`.
        table: String,
        /// The column.
        column: String,
        /// Its type on the shard.
        on_shard: String,
        /// The type the batch needs.
        wanted: String,
    },
    /// The embedded engine failed to send the rows.
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    /// The configuration cannot work.
    #[error("invalid cluster configuration: {0}")]
    Config(String),
    /// A read would hold more rows than it may.
    #[error("more than {max_rows} rows of the cluster in one read ([sql] max_result_rows)")]
    TooManyRows {
        /// The bound.
        max_rows: u64,
    },
}

impl ClusterError {
    /// Whether the shard (or the replica asked) could not serve now: it did not answer, or
    /// its replicated tables cannot take writes (their ZooKeeper is gone). Retried, never a
    /// refusal.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, ClusterError::Unreachable { .. })
    }

    /// Whether a shard refused because a table or database does not exist there
    /// (18.16's codes 60 and 81, as the server's text or the engine's relay of it; 390 is
    /// its `SHOW CREATE TABLE` of a table missing from an existing database).
    pub fn is_missing_table(&self) -> bool {
        match self {
            ClusterError::Refused { message, .. } => {
                message.contains("UNKNOWN_TABLE")
                    || message.contains("UNKNOWN_DATABASE")
                    || message.contains("Code: 60,")
                    || message.contains("Code: 81,")
                    || message.contains("Code: 390,")
                    || message.contains("doesn't exist")
            }
            _ => false,
        }
    }

    /// The error as the flusher's coordinator classifies it (`classify.rs`): a shard that
    /// cannot be reached is transient (retried until it is back, the WAL holding the rows), a
    /// column of another type deterministic (quarantined), a refusal by its server's words.
    pub fn into_engine_error(self) -> engine::EngineError {
        let (statement, name) = match &self {
            ClusterError::Unreachable { .. } => ("cluster delivery", Some("CLUSTER_UNREACHABLE")),
            ClusterError::TypeConflict { .. } => ("cluster delivery", Some("TYPE_MISMATCH")),
            ClusterError::Config(_) => ("cluster delivery", Some("BAD_ARGUMENTS")),
            ClusterError::TooManyRows { .. } => ("cluster read", Some("TOO_MANY_ROWS")),
            ClusterError::Refused { .. } => ("cluster delivery", None),
            ClusterError::Engine(_) => ("", None),
        };
        match (self, name) {
            (ClusterError::Engine(e), _) => e,
            (e, Some(name)) => engine::EngineError::Query {
                statement: statement.into(),
                message: format!("{e} ({name})"),
            },
            (e, None) => engine::EngineError::Query {
                statement: statement.into(),
                message: e.to_string(),
            },
        }
    }
}

/// One replica of a shard as its last request showed it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaStatus {
    /// Its endpoint.
    pub endpoint: String,
    /// Whether it answered its last request (`None`: not asked yet).
    pub up: Option<bool>,
    /// Its last error (password redacted), cleared by a success.
    pub last_error: Option<String>,
    /// Its replication lag at its last probe (every 2 s), seconds: how old the oldest
    /// insert it has not fetched from another replica is (0: none; `None`: not probed, or it
    /// did not answer).
    pub delay_secs: Option<u64>,
}

/// One shard as its last request showed it.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardStatus {
    /// The endpoint its statements go to first (its replica that last answered).
    pub endpoint: String,
    /// Its replicas (one entry when it has one endpoint).
    pub replicas: Vec<ReplicaStatus>,
    /// Whether it answered its last request (`None`: not asked yet).
    pub up: Option<bool>,
    /// Its last error (password redacted), cleared by a success.
    pub last_error: Option<String>,
    /// Seconds since it last confirmed a delivery.
    pub confirmed_secs_ago: Option<f64>,
    /// Writes (WAL entries, per table) with rows for it that it has not confirmed (a
    /// shard that does not answer holds them; they wait in the WAL).
    pub waiting_deliveries: usize,
    /// The rows of those writes that are the shard's: how much it lacks.
    pub waiting_rows: u64,
    /// Seconds since this process first tried the oldest of them (0 when none): how far
    /// behind the shard is. A restart starts the clock again (replay tries them anew).
    pub oldest_waiting_secs: f64,
}

/// What one delivery did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// Rows sent, per shard.
    pub rows: Vec<u64>,
    /// Rows not sent because the shard held their write already (an earlier attempt).
    pub already_held: u64,
}

/// A write's rows of one table a shard has not confirmed: (`db`, `measurement`, `__seq`).
type Waiting = (String, String, u64);

/// One shard's `Distributed` tables: (`db`, `measurement`) → their user columns, or when
/// making one last failed.
type DistributedTables = HashMap<(String, String), Result<usize, Instant>>;

/// One shard's tables this node has checked: (`db`, `measurement`) → user columns.
type ShardTables = HashMap<(String, String), HashMap<String, ColumnKind>>;

/// A connected cluster.
pub struct Cluster {
    config: ClusterConfig,
    map: ShardMap,
    http: http::Client,
    /// Per shard, the user columns known on each table.
    known: Mutex<Vec<ShardTables>>,
    /// Per shard, the writes with rows for it that it has not confirmed yet: (`db`,
    /// `measurement`, `__seq`) → when this process first tried (`/health`'s per-shard lag).
    waiting: Mutex<Vec<HashMap<Waiting, (Instant, u64)>>>,
    /// Each shard's `version()` (`None`: it did not answer at connect).
    versions: Vec<Option<String>>,
    /// Per shard, the `Distributed` tables made and how many user columns each has, or
    /// when making one last failed (tried again 30 s later, not on every delivery).
    distributed_known: Mutex<Vec<DistributedTables>>,
    /// The shard the next `/api/v1/sql` statement goes to first.
    next_sql_shard: std::sync::atomic::AtomicUsize,
    /// Each database's retention (seconds) as this node knows it: the partition span of
    /// the tables it makes ([`retention`]).
    retention: Mutex<HashMap<String, u64>>,
}

/// Each shard that answered at connect must know `name` in its `remote_servers` with as
/// many shards as chingest has (a `Distributed` table over fewer would miss rows).
fn check_cluster_name(
    http: &http::Client,
    name: &str,
    shards: usize,
    versions: &[Option<String>],
) -> Result<(), ClusterError> {
    for (k, _) in versions.iter().enumerate().filter(|(_, v)| v.is_some()) {
        let answer = http.statement(
            k,
            &format!(
                "SELECT uniqExact(shard_num) FROM system.clusters WHERE cluster = {} FORMAT TabSeparated",
                quote_string(name)
            ),
        )?;
        let have: usize = answer.trim().parse().unwrap_or(0);
        if have != shards {
            return Err(ClusterError::Config(format!(
                "[storage.clickhouse] distributed = {name:?}: shard {k} ({}) has {have} shards \
                 under that name in its remote_servers, chingest lists {shards}",
                http.endpoint(k)
            )));
        }
    }
    Ok(())
}

/// chingest's tables on a server that are not replicated (`db.table` rows).
const UNREPLICATED_TABLES: &str = "SELECT concat(database, '.', name) FROM system.tables \
     WHERE (database = '__chingest' OR startsWith(database, '__shard_')) \
     AND engine LIKE '%MergeTree' AND engine NOT LIKE 'Replicated%' LIMIT 1 FORMAT TabSeparated";

/// Replicas need replicated tables: a ZooKeeper path (a plain one: it becomes part of
/// every table's definition), and on every replica that answers a `replica` macro unique
/// within its shard, and no chingest table of its own (made before: the replicas would
/// diverge). ZooKeeper itself not answering is not an error (writes wait in the
/// WAL until it does).
fn check_replicas(http: &http::Client, config: &ClusterConfig) -> Result<(), ClusterError> {
    let quorum = config.insert_quorum as usize;
    if let Some(k) = config.shards.iter().position(|r| quorum > r.len()) {
        return Err(ClusterError::Config(format!(
            "insert_quorum = {quorum}, but shard {k} has {} replica(s)",
            config.shards[k].len()
        )));
    }
    if quorum > 1 && config.zookeeper_path.is_none() {
        return Err(ClusterError::Config(format!(
            "insert_quorum = {quorum} needs replicated tables ([storage.clickhouse] zookeeper_path)"
        )));
    }
    let Some(path) = &config.zookeeper_path else {
        return match config.shards.iter().position(|r| r.len() > 1) {
            Some(k) => Err(ClusterError::Config(format!(
                "shard {k} lists {} endpoints: replicas need replicated tables \
                 ([storage.clickhouse] zookeeper_path)",
                config.shards[k].len()
            ))),
            None => Ok(()),
        };
    };
    schema::check_zookeeper_path(path).map_err(ClusterError::Config)?;
    for k in 0..config.shards.len() {
        let mut names: Vec<(String, String)> = Vec::new();
        for r in 0..http.replicas(k) {
            let endpoint = http.replica_endpoint(k, r);
            let name = match http.statement_on(
                k,
                r,
                "SELECT substitution FROM system.macros WHERE macro = 'replica' \
                 FORMAT TabSeparated",
            ) {
                Ok(name) => engine::unescape_tsv(name.trim_end_matches('\n')),
                Err(e) if e.is_unavailable() => continue,
                Err(e) => return Err(e),
            };
            if name.is_empty() {
                return Err(ClusterError::Config(format!(
                    "{endpoint} has no <macros><replica> in its config: each replica of a \
                     shard names itself there"
                )));
            }
            if let Some((other, _)) = names.iter().find(|(_, n)| *n == name) {
                return Err(ClusterError::Config(format!(
                    "{endpoint} and {other} (shard {k}) both name themselves replica {name:?}"
                )));
            }
            if http.replicas(k) > 1 {
                let unreplicated = http.statement_on(k, r, UNREPLICATED_TABLES)?;
                if let Some(table) = unreplicated.lines().next() {
                    return Err(ClusterError::Config(format!(
                        "{endpoint} holds chingest's table {} as a table of its own, not \
                         replicated (made before zookeeper_path was set): a shard's replicas \
                         would each keep rows the others lack. Replicas need a cluster whose \
                         tables were made with zookeeper_path",
                        engine::unescape_tsv(table)
                    )));
                }
            }
            if let Err(e) = http.statement_on(
                k,
                r,
                "SELECT count() FROM system.zookeeper WHERE path = '/' FORMAT TabSeparated",
            ) {
                if e.to_string().contains("Code: 225,") {
                    return Err(ClusterError::Config(format!(
                        "{endpoint} has no <zookeeper> in its config: replicated tables need one"
                    )));
                }
                tracing::warn!(%endpoint, error = %e,
                    "a replica cannot reach its ZooKeeper: its shard's writes wait in the WAL \
                     until one can");
            }
            names.push((endpoint, name));
        }
    }
    Ok(())
}

impl Cluster {
    /// Checks the configuration and asks every shard its version. A shard that does not
    /// answer is not an error (its rows wait in the WAL until it does: a node must start,
    /// and take writes, while a shard is down); its version is `None`.
    pub fn connect(config: ClusterConfig) -> Result<Cluster, ClusterError> {
        if config.shards.is_empty() {
            return Err(ClusterError::Config("no shard".into()));
        }
        if config.node.is_empty() {
            return Err(ClusterError::Config("the node needs a name".into()));
        }
        let http = http::Client::new(&config)?;
        let mut versions = Vec::with_capacity(config.shards.len());
        for k in 0..config.shards.len() {
            versions.push(match http.statement(k, "SELECT version()") {
                Ok(v) => Some(v.trim().to_string()),
                Err(e @ ClusterError::Unreachable { .. }) => {
                    tracing::warn!(error = %e, "a shard does not answer: its rows wait in the WAL");
                    None
                }
                Err(e) => return Err(e),
            });
        }
        if let Some(name) = &config.distributed {
            check_cluster_name(&http, name, config.shards.len(), &versions)?;
        }
        check_replicas(&http, &config)?;
        Ok(Cluster {
            map: ShardMap::new(config.shards.len() as u32),
            distributed_known: Mutex::new(vec![HashMap::new(); config.shards.len()]),
            next_sql_shard: std::sync::atomic::AtomicUsize::new(0),
            retention: Mutex::new(HashMap::new()),
            known: Mutex::new(vec![HashMap::new(); config.shards.len()]),
            waiting: Mutex::new(vec![HashMap::new(); config.shards.len()]),
            versions,
            http,
            config,
        })
    }

    /// How long a `DELETE` waits for the other nodes' deliveries.
    pub fn delete_wait(&self) -> Duration {
        self.config.delete_wait
    }

    /// This ingest node's name (its rows' `__node`).
    pub fn node(&self) -> &str {
        &self.config.node
    }

    /// The cluster's name for its `Distributed` tables, when configured.
    pub fn distributed(&self) -> Option<&str> {
        self.config.distributed.as_deref()
    }

    /// The shard map in use.
    pub fn map(&self) -> ShardMap {
        self.map
    }

    /// What each shard's last request showed, in shard order (`/health`).
    pub fn shard_statuses(&self) -> Vec<ShardStatus> {
        let waiting = self.waiting.lock();
        let replicas = self.http.replicas_seen.lock().clone();
        self.http
            .seen
            .lock()
            .iter()
            .enumerate()
            .zip(waiting.iter())
            .map(|((k, s), waiting)| ShardStatus {
                endpoint: self.http.endpoint(k),
                replicas: replicas[k]
                    .iter()
                    .enumerate()
                    .map(|(r, seen)| ReplicaStatus {
                        endpoint: self.http.replica_endpoint(k, r),
                        up: seen.up,
                        last_error: seen.last_error.clone(),
                        delay_secs: seen.delay_secs,
                    })
                    .collect(),
                up: s.up,
                last_error: s.last_error.clone(),
                confirmed_secs_ago: s.confirmed.map(|t| t.elapsed().as_secs_f64()),
                waiting_deliveries: waiting.len(),
                waiting_rows: waiting.values().map(|(_, rows)| rows).sum(),
                oldest_waiting_secs: waiting
                    .values()
                    .map(|(t, _)| t)
                    .min()
                    .map_or(0.0, |t| t.elapsed().as_secs_f64()),
            })
            .collect()
    }

    /// Each shard's server version at connect, in shard order (`None`: it did not answer).
    pub fn versions(&self) -> &[Option<String>] {
        &self.versions
    }

    /// Runs a statement on one shard; its text answer.
    pub fn statement(&self, shard: usize, sql: &str) -> Result<String, ClusterError> {
        self.http.statement(shard, sql)
    }
}
