//! The server's configuration: a TOML file, then `CHINGEST_<SECTION>__<KEY>`
//! environment overrides, then [`Config::validate`].
//!
//! Every field has a documented default that works on a laptop; an empty file
//! (or no file) is a valid configuration.

use std::net::SocketAddr;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The whole configuration.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// HTTP front door.
    pub server: ServerConfig,
    /// Where data lives.
    pub storage: storage::StorageConfig,
    /// Write-ahead log (the `wal` crate's own config).
    pub wal: storage::WalConfig,
    /// Flushing to the engine (the `flush` crate's own config).
    pub flush: storage::FlushConfig,
    /// Limits of `/api/v1/sql` statements (the engine's SQL sandbox).
    pub sql: storage::SqlConfig,
    /// The hot store: recent points in memory for small reads (issue #44).
    pub hot: storage::HotConfig,
    /// Back-pressure and schema limits.
    pub limits: LimitsConfig,
    /// Authentication and authorization.
    pub auth: AuthConfig,
    /// Log format and colour (`[log]`; the filter is `server.log`).
    #[serde(default)]
    pub log: crate::logging::LogConfig,
}

/// `[server]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Address to listen on. Default: `127.0.0.1:8086`.
    pub listen: String,
    /// Largest request body accepted, compressed and again decompressed
    /// (HTTP 413 beyond). Default: 33554432 (32 MiB).
    pub max_body_bytes: u64,
    /// Whole-request deadline (a write answers 503/429 after it). Default: 30.
    pub request_timeout_secs: u64,
    /// Time a client has to send its request headers; also how long an idle
    /// keep-alive connection is kept. Default: 30.
    pub header_read_timeout_secs: u64,
    /// Time a client has to send its whole body (HTTP 408 after). Default: 30.
    pub body_read_timeout_secs: u64,
    /// Writes to an unknown database create it instead of answering 404.
    /// Default: false (as InfluxDB).
    pub auto_create_databases: bool,
    /// Bound of a graceful shutdown, in seconds: in-flight requests, then
    /// flushing to the engine, whatever the flusher's state (what it cannot
    /// flush in time stays in the WAL and replays on the next start; the WAL
    /// commit and the engine close get at least 2 s more). Default: 30.
    pub shutdown_grace_secs: u64,
    /// Log filter (tracing `EnvFilter` syntax); `RUST_LOG` wins when set.
    /// Default: `info`.
    pub log: String,
    /// Open client connections at once; one more is answered `503` with
    /// `Retry-After` and closed at once (its request is not read). Keep it
    /// below the open-file limit (`ulimit -n`) less what the WAL and the
    /// engine hold. Default: 1024.
    pub max_connections: usize,
    /// The web console at `/` (docs/console.md). Its files hold no data and every
    /// request it makes is checked like any client's; off, `/` answers as any unknown
    /// path does. Default: true.
    pub console: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8086".into(),
            max_body_bytes: 32 << 20,
            request_timeout_secs: 30,
            header_read_timeout_secs: 30,
            body_read_timeout_secs: 30,
            auto_create_databases: false,
            shutdown_grace_secs: 30,
            log: "info".into(),
            max_connections: 1024,
            console: true,
        }
    }
}

/// `[limits]`: back-pressure budgets and schema limits (0 = unlimited where noted).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Request body bytes (raw plus decompressed) held in memory at once by
    /// in-flight writes; beyond it writes answer 503 (v1) / 429 (v2) at once.
    /// Default: 268435456 (256 MiB).
    pub max_inflight_bytes: u64,
    /// Points parsed but not yet acknowledged, across requests; same answer
    /// beyond it. Default: 5000000.
    pub max_inflight_points: u64,
    /// WAL queue depth (entries) beyond which writes are refused; 0 = only the
    /// WAL's own bound. Default: 64.
    pub max_wal_queue_depth: u64,
    /// Points committed to the WAL but not yet in the engine beyond which
    /// writes are refused; 0 = unlimited. Default: 20000000.
    pub max_unflushed_points: u64,
    /// Bytes committed but not yet in the engine beyond which writes are
    /// refused with 503 (v1) / 429 (v2) and `Retry-After`: per WAL entry the
    /// larger of its payload and the memory its decoded batches hold (the
    /// flusher holds them in memory: points alone do not bound it, a gzip
    /// body of 1 MiB strings is a few KiB on the wire, and an LZ4 payload
    /// of them not much more); 0 = unlimited.
    /// Default: 1073741824 (1 GiB).
    pub max_unflushed_bytes: u64,
    /// Age of the oldest unflushed WAL entry beyond which writes are refused;
    /// 0 = unlimited. Default: 120.
    pub max_flush_lag_secs: u64,
    /// `Retry-After` sent with 503/429. Default: 1.
    pub retry_after_secs: u64,
    /// Threads that parse and encode; 0 = one per core. Default: 0.
    pub cpu_workers: usize,
    /// The wait for a parse/encode thread a write should not exceed, in
    /// milliseconds; 0 = no bound. Writes are refused with 503 (v1) / 429
    /// (v2) before their body is read while the oldest write waiting for a
    /// thread has waited past it (the queue is late), or when the writes
    /// already admitted book the threads past it (a burst).
    /// An admitted write is served however long it waits
    /// (`server.request_timeout_secs` bounds it): this is what keeps
    /// refusals under overload at milliseconds, with no body read for
    /// nothing. Default: 100.
    pub max_cpu_wait_ms: u64,
    /// Series per database; 0 = unlimited. Default: 0.
    pub max_series_per_database: u64,
    /// Measurements per database; 0 = unlimited. Default: 0.
    pub max_measurements_per_database: u64,
    /// Distinct values per tag key; 0 = unlimited. Default: 0.
    pub max_tag_values_per_key: u64,
    /// Columns (tag keys plus fields) per measurement; a point that would add
    /// one more is dropped with 400, as are names the engine cannot hold
    /// (whatever this says, a measurement's column names stay within the
    /// engine's statement size). 1..=5000. Default: 1000.
    pub max_columns_per_measurement: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_inflight_bytes: 256 << 20,
            max_inflight_points: 5_000_000,
            max_wal_queue_depth: 64,
            max_unflushed_points: 20_000_000,
            max_unflushed_bytes: 1 << 30,
            max_flush_lag_secs: 120,
            retry_after_secs: 1,
            cpu_workers: 0,
            max_cpu_wait_ms: 100,
            max_series_per_database: 0,
            max_measurements_per_database: 0,
            max_tag_values_per_key: 0,
            max_columns_per_measurement: 1000,
        }
    }
}

impl LimitsConfig {
    /// The catalog's schema limits.
    pub fn schema_limits(&self) -> ingest::Limits {
        ingest::Limits {
            max_series_per_database: self.max_series_per_database,
            max_measurements_per_database: self.max_measurements_per_database,
            max_values_per_tag: self.max_tag_values_per_key,
            max_columns_per_measurement: self.max_columns_per_measurement,
        }
    }

    /// The CPU pool size this resolves to.
    pub fn cpu_workers(&self) -> usize {
        if self.cpu_workers == 0 {
            std::thread::available_parallelism().map_or(2, |n| n.get())
        } else {
            self.cpu_workers
        }
    }
}

/// `[auth]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// Require credentials on every endpoint but `/ping` and `/health`.
    /// Default: false.
    pub enabled: bool,
    /// Whether `/metrics` needs credentials too when auth is on. Default: false.
    pub metrics_require_auth: bool,
    /// The users (`[[auth.users]]`).
    pub users: Vec<UserConfig>,
}

/// One `[[auth.users]]` entry.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct UserConfig {
    /// User name.
    pub name: String,
    /// `sha256$<salt hex>$<digest hex>` as printed by `chingest hash-password`;
    /// empty = no password login.
    pub password_hash: String,
    /// Token digests (`sha256$$<digest hex>` or salted as above) accepted as
    /// `Authorization: Token <token>`.
    pub token_hashes: Vec<String>,
    /// Admin users may create/drop databases and run any SQL.
    pub admin: bool,
    /// Databases the user may read (`*` = all).
    pub read: Vec<String>,
    /// Databases the user may write (`*` = all).
    pub write: Vec<String>,
}

/// A configuration problem found by [`Config::load`] or [`Config::validate`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The TOML (or an environment override) did not parse or match.
    #[error("invalid configuration{}: {message}", origin.as_deref().map(|o| format!(" in {o}")).unwrap_or_default())]
    Parse {
        /// The file or variable.
        origin: Option<String>,
        /// The parser's message.
        message: String,
    },
    /// A value is out of range.
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// The prefix of environment overrides: `CHINGEST_SERVER__LISTEN=0.0.0.0:8086`.
pub const ENV_PREFIX: &str = "CHINGEST_";

impl Config {
    /// Reads `path` (if any), applies environment overrides from `env`, validates.
    pub fn load(
        path: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let text = match path {
            Some(p) => std::fs::read_to_string(p).map_err(|source| ConfigError::Read {
                path: p.display().to_string(),
                source,
            })?,
            None => String::new(),
        };
        let origin = path.map(|p| p.display().to_string());
        let mut table: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| ConfigError::Parse {
                    origin: origin.clone(),
                    message: e.to_string(),
                })?;
        apply_env(&mut table, env)?;
        let config: Config =
            toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| ConfigError::Parse {
                    origin,
                    message: e.to_string(),
                })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks ranges and cross-field rules.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        if self.server.listen.parse::<SocketAddr>().is_err() {
            return bad(format!(
                "server.listen = {:?} is not an address like 127.0.0.1:8086",
                self.server.listen
            ));
        }
        if self.server.max_body_bytes == 0 {
            return bad("server.max_body_bytes must be > 0".into());
        }
        if self.server.request_timeout_secs == 0 || self.server.body_read_timeout_secs == 0 {
            return bad("server timeouts must be > 0".into());
        }
        if self.server.header_read_timeout_secs == 0 {
            return bad("server.header_read_timeout_secs must be > 0".into());
        }
        self.wal
            .validate()
            .map_err(|e| ConfigError::Invalid(format!("wal: {e}")))?;
        self.flush
            .validate()
            .map_err(|e| ConfigError::Invalid(format!("flush: {e}")))?;
        self.sql.validate().map_err(|e| {
            ConfigError::Invalid(format!("sql.{} = {}: {}", e.key, e.value, e.reason))
        })?;
        if self.limits.max_inflight_bytes < self.server.max_body_bytes {
            return bad(format!(
                "limits.max_inflight_bytes ({}) must be >= server.max_body_bytes ({}) or no maximal request could ever run",
                self.limits.max_inflight_bytes, self.server.max_body_bytes
            ));
        }
        if self.limits.max_inflight_points == 0 {
            return bad("limits.max_inflight_points must be > 0".into());
        }
        if !(1..=5000).contains(&self.limits.max_columns_per_measurement) {
            return bad(format!(
                "limits.max_columns_per_measurement = {} must be in 1..=5000 (each insert names every column; 9,000 columns take 1.6 s per insert)",
                self.limits.max_columns_per_measurement
            ));
        }
        if self.server.max_connections == 0 {
            return bad("server.max_connections must be > 0".into());
        }
        if self.storage.data_dir.as_os_str().is_empty() {
            return bad("storage.data_dir must not be empty".into());
        }
        if let Err(e) = self.hot.window_ns() {
            return bad(e);
        }
        let mut seen = std::collections::HashSet::new();
        for u in &self.auth.users {
            if u.name.is_empty() {
                return bad("auth.users: a user has an empty name".into());
            }
            if !seen.insert(&u.name) {
                return bad(format!("auth.users: user {:?} is listed twice", u.name));
            }
            let not_a_hash = |h: &String| {
                bad(format!(
                    "auth.users {:?}: {:?} is not a hash from `chingest hash-password` (or bcrypt, for a password)",
                    u.name, h
                ))
            };
            if !u.password_hash.is_empty()
                && crate::auth::PasswordHash::parse(&u.password_hash).is_none()
            {
                return not_a_hash(&u.password_hash);
            }
            if let Some(h) = u
                .token_hashes
                .iter()
                .find(|h| crate::auth::SecretHash::parse(h).is_none())
            {
                return not_a_hash(h);
            }
        }
        // `enabled` with no `[[auth.users]]` is valid: users come from InfluxQL (the first
        // admin is created with `CREATE USER … WITH ALL PRIVILEGES`, as in InfluxDB 1.x).
        Ok(())
    }

    /// The default configuration as annotated TOML (`chingest config --print-default`).
    pub fn default_toml() -> String {
        format!("{DEFAULT_TOML}\n{}", crate::logging::DEFAULT_TOML)
    }
}

/// Applies `CHINGEST_<SECTION>__<KEY>=value` overrides. The value is read as
/// a TOML value when it parses as one (numbers, booleans, arrays), else as a string.
fn apply_env(
    table: &mut toml::Table,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<(), ConfigError> {
    for (name, raw) in env {
        let Some(rest) = name.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        // Variables without a section separator (CHINGEST_CACHE_DIR, ...) belong to tools.
        let Some((section, key)) = rest.split_once("__") else {
            continue;
        };
        let (section, key) = (section.to_ascii_lowercase(), key.to_ascii_lowercase());
        if section.is_empty() || key.is_empty() {
            continue;
        }
        let value = format!("v = {raw}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(raw.clone()));
        let entry = table
            .entry(section.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        match entry {
            toml::Value::Table(t) => {
                t.insert(key, value);
            }
            _ => {
                return Err(ConfigError::Parse {
                    origin: Some(name.clone()),
                    message: format!("[{section}] is not a table"),
                })
            }
        }
    }
    Ok(())
}

const DEFAULT_TOML: &str = r#"# chingest configuration. Every key is optional; shown are the defaults.
# Environment overrides: CHINGEST_<SECTION>__<KEY>=value, e.g.
#   CHINGEST_SERVER__LISTEN=0.0.0.0:8086  CHINGEST_AUTH__ENABLED=true

[server]
# Address to listen on.
listen = "127.0.0.1:8086"
# Largest request body, compressed and again decompressed (413 beyond). 32 MiB.
max_body_bytes = 33554432
# Whole-request deadline in seconds.
request_timeout_secs = 30
# Seconds a client has to send its request headers (slow clients are cut off);
# idle keep-alive connections are closed after it too.
header_read_timeout_secs = 30
# Seconds a client has to send its whole body (408 after).
body_read_timeout_secs = 30
# Create unknown databases on write instead of answering 404 (InfluxDB: false).
auto_create_databases = false
# Bound of a graceful stop in seconds: in-flight requests, then the flush to the
# engine; what is not flushed by then stays in the WAL and replays on the next start.
shutdown_grace_secs = 30
# Log filter (tracing EnvFilter syntax); RUST_LOG wins when set.
log = "info"
# Open client connections at once; one more gets 503 + Retry-After and is closed.
# Keep it below the open-file limit (ulimit -n) less what the WAL and engine hold.
max_connections = 1024
# The web console at / (docs/console.md); false: / answers 404 (401 with [auth] on).
console = true

[storage]
# Root of all data: WAL in <data_dir>/wal, engine in <data_dir>/chdb.
data_dir = "data"
# WAL payloads: "lz4" (LZ4-framed Arrow buffers: about a third of the bytes written to
# disk per point of "none", no more CPU) or "none". Entries of either kind replay; a
# release older than this setting cannot read lz4 ones (stop cleanly before going back).
wal_compression = "lz4"
# Where flushed points go: "embedded" (this process's engine) or "clickhouse" (the shards
# of a ClickHouse cluster below: InfluxQL reads them back; DELETE, DROP SERIES, DROP
# MEASUREMENT, DROP DATABASE, retention and retention policies work there, agreed by every
# node. docs/architecture.md, "ClickHouse cluster").
engine = "embedded"

[storage.clickhouse]
# Each shard's HTTP endpoint, in shard order (a series' shard is jumpConsistentHash(series_id,
# shards): only ever append). Every shard gets every table and column. A shard with
# replicas lists their endpoints, the first preferred (needs zookeeper_path):
# shards = [["http://a1:8123", "http://a2:8123"], ["http://b1:8123", "http://b2:8123"]]
shards = []
# Where in the servers' ZooKeeper chingest's replicated tables live, e.g.
# "/clickhouse/chingest", one per cluster sharing a ZooKeeper (each server configures
# <zookeeper> and <macros><replica> naming it within its shard). Empty: plain MergeTree, one endpoint per shard. Chosen when the
# cluster is made: tables keep the engine they were made with.
zookeeper_path = ""
# How many replicas of a shard must hold a delivery before it leaves the WAL (ClickHouse's
# insert_quorum; 0 or 1: one, the others copy it within the replication delay). N >= 2:
# fewer than N replicas answering makes the shard's deliveries wait (18.16 runs one quorum
# insert per table at a time: fewer rows per second).
insert_quorum = 0
# User and password on every shard (empty: ClickHouse's default user); the password is
# better given as CHINGEST_CLICKHOUSE_PASSWORD.
user = ""
password = ""
# This node's name on the rows it delivers (unique per node, stable across restarts);
# empty: the host name.
node = ""
# Limit of one request to a shard, seconds.
timeout_secs = 30
# The shards' cluster name in their remote_servers: <db>.<measurement> on every shard is then
# a Distributed table over all of them (SQL on the whole cluster; /api/v1/sql needs it).
distributed = ""
# How long a DELETE, DROP SERIES or DROP MEASUREMENT waits for the other ingest nodes to
# deliver the writes they acknowledged before it (a node down with writes in its WAL: 503,
# nothing deleted), and DROP DATABASE for every node to apply it.
delete_wait_secs = 60
# The shards' users that read one database each, for non-admins' /api/v1/sql (?db=<db>):
# each must be allowed, in every server's users.xml, <db> and __shard_<db> only
# (<allow_databases>; docs/security.md). None: only admins (and everyone with auth off)
# run SQL on the cluster. One table per database:
# [[storage.clickhouse.readers]]
# database = "telegraf"
# user = "chingest_read_telegraf"
# password = ""
readers = []

[wal]
# "fsync": an acknowledged write survives power loss; "buffered": survives a process crash.
durability = "fsync"
# Entries the WAL writer may have queued (a full queue answers 503 v1 / 429 v2).
queue_capacity = 1024
# Free bytes the WAL's file system must keep: below it writes get 503 (nothing is
# acknowledged, nothing poisoned) and resume by themselves when space is freed. 256 MiB.
min_free_bytes = 268435456

[flush]
# Engine connections; 0 = one per core.
connections = 0
# Rows buffered per (database, measurement) before an insert.
max_points_per_batch = 200000
# Longest a buffered row waits before an insert, in milliseconds.
max_age_ms = 1000
# Engine threads per insert; 0 = one per core (1 keeps inserts from starving parsing).
insert_threads = 1
# An unclassified flush error repeated this many times is treated as deterministic:
# the refused points are quarantined (GET /api/v1/quarantine), never dropped.
quarantine_after_failures = 5

[sql]
# /api/v1/sql statements running at once (each on an engine connection of its
# own, never the flusher's); one more is answered 503 + Retry-After at once.
max_concurrent_queries = 2
# The engine stops a statement after this many seconds (keep it below
# server.request_timeout_secs, so the client reads the statement's own error).
max_execution_secs = 20
# A result larger than this fails the statement: rows, and bytes (256 MiB).
max_result_rows = 1000000
max_result_bytes = 268435456
# Memory one statement may use in the engine. 1 GiB. A GROUP BY or ORDER BY
# spills to the data dir past half of it (at most 4x it on disk).
max_memory_bytes = 1073741824
# Engine threads per statement. 0 adapts: the cores the write path left idle
# over the last second or two (all of them on an idle server), at least 1.
max_threads = 0

[hot]
# Keep each series' recent points in memory and answer small InfluxQL aggregates
# (a few series, the range held completely) from them instead of an engine statement.
# Only with [storage] engine = "embedded". With hold = "read" only the measurements read
# are held, so writes nobody reads cost a lookup per batch (test_results/history/
# ab_stop49_hold_read.md: the same sustainable rate with the store off and on).
enabled = true
# How far back from each series' newest point (not the wall clock) points are held.
window = "24h"
# Bytes the held points may take (2 GiB); past it the largest measurements are emptied.
max_memory = 2147483648
# Statements leaving more series than this per measurement go to the engine.
max_series = 1000
# Bytes of received writes that may wait for the hot store's idle-priority applier
# (256 MiB); past it they are dropped and their measurements refilled from the engine.
max_backlog = 268435456
# A read waits at most this long (ms) for the applier to catch up with the writes
# acknowledged before it, then goes to the engine (the engine's floor is 3-4 ms).
apply_wait_ms = 3
# Which measurements are held: "read" (from the first statement the store could answer
# that reads one, which goes to the engine and starts its refill; the others' writes cost
# a lookup) or "all" (every measurement written: every write pays the insert).
hold = "read"
# With hold = "read": a measurement not read for this long is dropped from the store.
idle = "1h"

[limits]
# Body bytes (raw + decompressed) in memory across in-flight writes. 256 MiB.
max_inflight_bytes = 268435456
# Parsed, not yet acknowledged points across in-flight writes.
max_inflight_points = 5000000
# Refuse writes while the WAL queue holds more entries than this (0 = WAL's own bound).
max_wal_queue_depth = 64
# Refuse writes while more points than this wait to reach the engine (0 = unlimited).
max_unflushed_points = 20000000
# Refuse writes while more bytes than this wait to reach the engine (0 = unlimited). 1 GiB.
# Per WAL entry the larger of its payload and the memory its decoded batches hold.
max_unflushed_bytes = 1073741824
# Refuse writes while the oldest unflushed entry is older than this, seconds (0 = unlimited).
max_flush_lag_secs = 120
# Retry-After (seconds) sent with 503/429.
retry_after_secs = 1
# Parse/encode threads; 0 = one per core.
cpu_workers = 0
# Wait for a parse/encode thread not to exceed, milliseconds (0 = no bound): new writes
# get 503/429 before their body is read while the oldest waiting write has waited past
# it, or when the writes admitted book the threads past it; an admitted write is served.
max_cpu_wait_ms = 100
# Schema limits; 0 = unlimited. Exceeding one answers 422.
max_series_per_database = 0
max_measurements_per_database = 0
max_tag_values_per_key = 0
# Columns (tag keys + fields) per measurement, 1..=5000: a point adding one more
# is dropped with 400 (the engine names every column in every insert).
max_columns_per_measurement = 1000

[auth]
# Require credentials everywhere but /ping and /health. Users come from the list
# below and from InfluxQL (`CREATE USER`, `GRANT`; kept in <data_dir>/users.json). With
# no user at all, the server only lets `/query` create the first admin:
# `CREATE USER <name> WITH PASSWORD '<password>' WITH ALL PRIVILEGES` (as InfluxDB 1.x).
enabled = false
# Whether /metrics needs credentials when auth is on.
metrics_require_auth = false
# Config file users (InfluxQL cannot change them); hashes come from
# `chingest hash-password <secret>` (a bcrypt hash is accepted for a password too).
# [[auth.users]]
# name = "admin"
# password_hash = "sha256$<salt>$<digest>"
# token_hashes = ["sha256$<salt>$<digest>"]
# admin = true
# read = ["*"]
# write = ["*"]
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_are_documented_values() {
        let c = Config::default();
        assert_eq!(c.server.listen, "127.0.0.1:8086");
        assert_eq!(c.server.max_body_bytes, 32 << 20);
        assert!(!c.server.auto_create_databases);
        assert_eq!(c.storage.data_dir, PathBuf::from("data"));
        assert_eq!(c.storage.wal_dir(), PathBuf::from("data/wal"));
        assert_eq!(c.storage.engine_dir(), PathBuf::from("data/chdb"));
        assert_eq!(c.wal.durability, storage::Durability::Fsync);
        assert_eq!(c.flush.engine.connections, 0);
        assert_eq!(c.flush.max_points_per_batch, 200_000);
        assert_eq!(c.flush.max_age_ms, 1000);
        assert!(!c.auth.enabled);
        c.validate().unwrap();
    }

    #[test]
    fn printed_default_parses_back_to_default() {
        let parsed: Config = toml::from_str(&Config::default_toml()).unwrap();
        assert_eq!(parsed, Config::default());
    }

    #[test]
    fn env_overrides_win_over_file_and_parse_types() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.toml");
        std::fs::write(
            &f,
            "[server]\nlisten = \"127.0.0.1:1\"\nmax_body_bytes = 5000000000\n",
        )
        .unwrap();
        let c = Config::load(
            Some(&f),
            env(&[
                ("CHINGEST_SERVER__LISTEN", "0.0.0.0:9999"),
                ("CHINGEST_SERVER__AUTO_CREATE_DATABASES", "true"),
                ("CHINGEST_STORAGE__DATA_DIR", "/tmp/x y"),
                ("CHINGEST_LIMITS__MAX_INFLIGHT_BYTES", "6000000000"),
                ("CHINGEST_CACHE_DIR", "/ignored"),
                ("OTHER__X", "1"),
            ]),
        )
        .unwrap();
        assert_eq!(c.server.listen, "0.0.0.0:9999");
        assert!(c.server.auto_create_databases);
        assert_eq!(c.server.max_body_bytes, 5_000_000_000);
        assert_eq!(c.storage.data_dir, PathBuf::from("/tmp/x y"));
        assert_eq!(c.limits.max_inflight_bytes, 6_000_000_000);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_rejected_with_context() {
        let e = Config::load(None, env(&[("CHINGEST_SERVER__LISTN", "x")])).unwrap_err();
        assert!(e.to_string().contains("listn"), "{e}");
        let e = Config::load(None, env(&[("CHINGEST_SERVER__LISTEN", "nope")])).unwrap_err();
        assert!(e.to_string().contains("server.listen"), "{e}");
        let e = Config::load(None, env(&[("CHINGEST_WAL__DURABILITY", "sometimes")])).unwrap_err();
        assert!(e.to_string().contains("wal.durability"), "{e}");
        // Auth on with no config users: the first admin comes through InfluxQL.
        Config::load(None, env(&[("CHINGEST_AUTH__ENABLED", "true")])).unwrap();
        let e = Config::load(Some(Path::new("/nonexistent/c.toml")), env(&[])).unwrap_err();
        assert!(matches!(e, ConfigError::Read { .. }), "{e}");
    }
}
