//! [`Store`]: what the HTTP server asks of storage, and the types it trades in.
//!
//! [`Storage`](crate::Storage) is the real implementation; the server's handler tests use
//! an in-memory double. Blocking methods are called from a blocking pool, never on the
//! reactor.

use std::future::Future;
use std::pin::Pin;

/// A boxed future, as [`Store::commit`] returns.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A write to prepare.
#[derive(Debug)]
pub struct WriteRequest<'a> {
    /// Target database (known to exist).
    pub db: &'a str,
    /// The decompressed body.
    pub body: &'a [u8],
    /// Body format.
    pub format: ingest::Format,
    /// Timestamp precision.
    pub precision: ingest::Precision,
    /// The request's receive time, for points without a timestamp.
    pub now_ns: i64,
}

/// Points of a write that were not accepted, with InfluxDB's text.
#[derive(Debug, Clone)]
pub struct Rejection {
    /// The outcome (decides 400 or 422).
    pub outcome: ingest::WriteOutcome,
    /// The client-facing message.
    pub message: String,
    /// Lines that did not parse.
    pub lines: u64,
    /// Points dropped after parsing (type conflicts, limits).
    pub dropped: u64,
}

/// A parsed, encoded write ready to commit; `W` is the implementation's payload.
#[derive(Debug)]
pub struct Prepared<W> {
    /// Points that will be written.
    pub points: u64,
    /// Encoded payload size, for metrics.
    pub payload_bytes: u64,
    /// Points or lines that were not accepted.
    pub rejection: Option<Rejection>,
    /// What [`Store::commit`] commits.
    pub write: W,
}

/// SQL output formats of `/api/v1/sql`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlFormat {
    /// ClickHouse `JSON` (meta, data, rows, statistics).
    Json,
    /// `JSONEachRow`: one object per line.
    JsonEachRow,
    /// `CSVWithNames`.
    Csv,
    /// Arrow IPC stream (`ArrowStream`).
    Arrow,
}

impl SqlFormat {
    /// The `Content-Type` of the answer.
    pub fn content_type(self) -> &'static str {
        match self {
            SqlFormat::Json => "application/json",
            SqlFormat::JsonEachRow => "application/x-ndjson",
            SqlFormat::Csv => "text/csv; charset=utf-8",
            SqlFormat::Arrow => "application/vnd.apache.arrow.stream",
        }
    }
}

/// One `/api/v1/sql` statement.
#[derive(Debug)]
pub struct SqlRequest<'a> {
    /// The statement, as the client sent it.
    pub sql: &'a str,
    /// Output format.
    pub format: SqlFormat,
    /// Who runs it: an admin, or a reader with the databases it may read.
    pub access: SqlAccess,
    /// The database the client named (`db`): on a ClickHouse cluster, the one whose
    /// shard reader runs a non-admin's statement (the embedded engine ignores it: its
    /// engine roles cover every database the caller may read).
    pub db: Option<&'a str>,
    /// Set by the caller when the client goes away.
    pub cancel: SqlCancel,
}

/// Load and lag, for back-pressure and `/health`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StorageStats {
    /// Entries waiting for the WAL writer.
    pub wal_queue_depth: u64,
    /// The WAL's own queue bound.
    pub wal_queue_capacity: u64,
    /// Last committed sequence.
    pub last_seq: u64,
    /// Last sequence known to be in the engine.
    pub flushed_seq: u64,
    /// Points committed but not yet in the engine.
    pub unflushed_points: u64,
    /// Bytes committed but not yet in the engine.
    pub unflushed_bytes: u64,
    /// Age of the oldest unflushed entry, seconds.
    pub oldest_unflushed_secs: f64,
    /// `None` when writes can be accepted, else why not.
    pub unavailable: Option<String>,
    /// Points buffered in the flusher or being inserted.
    pub flush_pending_points: u64,
    /// Failed inserts since the last success (retried).
    pub flush_consecutive_failures: u64,
    /// The last insert failure, cleared by a success.
    pub flush_last_error: Option<String>,
    /// With the points on a ClickHouse cluster: each shard as its last request showed it.
    pub cluster: Vec<cluster::ShardStatus>,
    /// With the points on a ClickHouse cluster: every ingest node listed on the shards, and
    /// how long ago the time before which it delivered everything it acknowledged is (by
    /// this node's clock), as the last catalog refresh read it. A cluster `DELETE` or `DROP
    /// MEASUREMENT` waits until every node's is younger than the statement.
    pub cluster_nodes: Vec<(String, f64)>,
}

/// The engine's MergeTree state, for operators: background merges are the
/// engine's largest cost under sustained ingest, and too many active parts
/// per table make it refuse inserts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineStats {
    /// Active parts per database (user databases only).
    pub active_parts: Vec<(String, u64)>,
    /// The most active parts of any one table.
    pub max_parts_per_table: u64,
    /// Merges running now.
    pub merges_running: u64,
    /// Rows inserted since the engine started.
    pub inserted_rows: u64,
    /// Rows written by merges since the engine started (÷ inserted rows = the
    /// merges' write amplification).
    pub merged_rows: u64,
}

/// One quarantined table: dead letters the engine refused (issue #15), kept durably until
/// an operator retries or discards them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuarantinedTable {
    /// Database.
    pub db: String,
    /// Measurement (table).
    pub measurement: String,
    /// Dead letters (one per request part).
    pub entries: u64,
    /// Points they hold.
    pub points: u64,
    /// The engine's latest error for the table.
    pub error: String,
    /// Seconds since the oldest dead letter of the table was set aside.
    pub quarantined_secs: f64,
}

/// What an operator's retry or discard of quarantined data did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuarantineAction {
    /// Dead letters considered.
    pub entries: u64,
    /// Their points.
    pub points: u64,
    /// Points inserted by a retry.
    pub inserted_points: u64,
    /// Points a retry found already in the engine (by `__seq`; not inserted again).
    pub already_in_engine_points: u64,
    /// Points a retry could not insert (they stay quarantined).
    pub failed_points: u64,
    /// Why, per dead letter that failed again.
    pub errors: Vec<String>,
}

/// Storage as the HTTP layer sees it.
pub trait Store: Send + Sync + 'static {
    /// What a prepared write carries to [`commit`](Store::commit).
    type Write: Send + 'static;

    /// Parses and encodes a write (CPU-bound, blocking).
    fn prepare(&self, req: WriteRequest<'_>) -> Result<Prepared<Self::Write>, StorageError>;
    /// Submits to the WAL; resolves once the entry is durable. Fails at once
    /// with [`StorageError::QueueFull`] when the WAL queue is full.
    fn commit(&self, prepared: Prepared<Self::Write>) -> BoxFuture<Result<(), StorageError>>;
    /// Whether `db` exists.
    fn database_exists(&self, db: &str) -> bool;
    /// Brings what this node knows of databases and schema up to date before a statement
    /// is answered (with the points on a ClickHouse cluster, other nodes write too).
    /// Blocking; a no-op where this node is the only writer.
    fn refresh_catalog(&self) {}
    /// Creates `db` (idempotent; blocking until durable), keeping its data for
    /// `retention_secs` when given (0 = forever). Re-creating an existing
    /// database with a different retention is an error, as in InfluxDB.
    fn create_database(&self, db: &str, retention_secs: Option<u64>) -> Result<(), StorageError>;
    /// `db`'s retention in seconds (0 = forever).
    fn retention_secs(&self, db: &str) -> u64;
    /// Changes how long `db` keeps points (0 = forever), for its existing tables too.
    fn set_retention(&self, db: &str, retention_secs: u64) -> Result<(), StorageError>;
    /// Creates the database of a retention policy ([`crate::POLICY_DATABASE_PREFIX`] and a
    /// number), keeping points `retention_secs` (0 = forever).
    fn create_policy_database(&self, db: &str, retention_secs: u64) -> Result<(), StorageError>;
    /// With the points on a ClickHouse cluster, the newest retention-policy document of
    /// each database listed there (`db` → (document, ms)): the policies every node agrees
    /// on, as the last catalog refresh read them. `None`: this node is the only writer.
    fn cluster_policies(&self) -> Option<std::collections::BTreeMap<String, (String, u64)>> {
        None
    }
    /// With the points on a ClickHouse cluster, removes ingest node `node` (never this one)
    /// from the nodes every cluster-wide delete and drop waits for; whether it was listed.
    fn forget_cluster_node(&self, _node: &str) -> Result<bool, StorageError> {
        Err(StorageError::NotOnCluster)
    }
    /// Lists `db`'s retention-policy document (`""`: it has none any more), changed at
    /// `at` (ms), on the cluster's shards for every node; a no-op without a cluster.
    fn publish_policies(&self, _db: &str, _doc: &str, _at: u64) -> Result<(), StorageError> {
        Ok(())
    }
    /// Drops `db` and its data (idempotent; blocking).
    fn drop_database(&self, db: &str) -> Result<(), StorageError>;
    /// Whether [`Store::drop_database`] can run here at all, asked before anything above
    /// storage (grants, retention policies) forgets the database: a refused drop costs
    /// nothing else.
    fn can_drop_database(&self) -> Result<(), StorageError> {
        Ok(())
    }
    /// Drops measurement `measurement` of `db` and its data, what is still on its way to
    /// the engine included (blocking; writes wait meanwhile). False if `db` has no such
    /// measurement; `DatabaseNotFound` if `db` does not exist.
    fn drop_measurement(&self, db: &str, measurement: &str) -> Result<bool, StorageError>;
    /// All databases, sorted.
    fn databases(&self) -> Vec<String>;
    /// The measurements of `db` with their schema, sorted by name.
    fn schema(&self, db: &str) -> Result<Vec<ingest::MeasurementSchema>, StorageError>;
    /// Series keys (`m,k=v,...`) of `db`, optionally of one measurement, sorted (blocking).
    fn series(&self, db: &str, measurement: Option<&str>) -> Result<Vec<String>, StorageError>;
    /// Distinct non-empty values of `keys` (tag keys of `measurement`), as
    /// sorted (key, value) pairs (blocking).
    fn tag_values(
        &self,
        db: &str,
        measurement: &str,
        keys: &[String],
    ) -> Result<Vec<(String, String)>, StorageError>;
    /// Runs one user SQL statement in the engine's SQL sandbox (its own
    /// connections, limits, classification and roles: `engine::sandbox`),
    /// handing each block of output to `sink` as it comes; `sink` returns false
    /// to stop. Blocking. Nothing reached `sink` if this fails before the
    /// first block.
    fn sql(
        &self,
        req: SqlRequest<'_>,
        sink: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<SqlSummary, SqlError>;
    /// How many values of `key` the series of `measurement` in `db` have now (0: no series
    /// has the key any more, after `DROP SERIES`/`DELETE`). Implementations without a
    /// catalog answer 1.
    fn tag_value_count(&self, db: &str, measurement: &str, key: &str) -> usize {
        let _ = (db, measurement, key);
        1
    }
    /// Whether the engine has a role for `scope` (the engine's roles are fixed at boot:
    /// a user whose grants changed since has a scope without one). Implementations
    /// without engine roles answer true.
    fn has_read_role(&self, scope: &ReadScope) -> bool {
        let _ = scope;
        true
    }
    /// Answers one InfluxQL `SELECT` (blocking): planned against `db`'s catalog,
    /// run in the engine's SQL sandbox with `req.access`, over merged points
    /// (a point written twice reads as one, last write wins field by field).
    fn influxql(&self, req: InfluxqlRequest<'_>) -> Result<StatementResult, InfluxqlError>;
    /// Whether a `SELECT` may be tried on the caller's async worker inside
    /// [`crate::influxql::inline::run`] (which refuses whatever would block,
    /// so the caller runs it again on a blocking thread). Implementations whose
    /// reads may block without refusing answer false.
    fn answers_inline(&self) -> bool {
        false
    }
    /// Series per database (for the `chingest_series` gauge).
    fn series_cardinality(&self) -> Vec<(String, u64)>;
    /// The engine's own state: parts, merges, rows (blocking; `None` when
    /// there is no engine).
    fn engine_stats(&self) -> Option<EngineStats>;
    /// Current load and lag.
    fn stats(&self) -> StorageStats;
    /// Commits the WAL, flushes everything to the engine and closes it (blocking).
    fn shutdown(&self) -> Result<(), StorageError>;
    /// [`Store::shutdown`], returning within about `grace` whatever the flusher's
    /// state: what it could not flush by then stays in the WAL and replays on the
    /// next start.
    fn shutdown_within(&self, grace: std::time::Duration) -> Result<(), StorageError> {
        let _ = grace;
        self.shutdown()
    }
    /// Quarantined tables, sorted (none unless the implementation quarantines).
    fn quarantine(&self) -> Vec<QuarantinedTable> {
        Vec::new()
    }
    /// Retries the quarantined data of `db` (or one measurement) (blocking).
    fn retry_quarantine(
        &self,
        db: &str,
        measurement: Option<&str>,
    ) -> Result<QuarantineAction, StorageError> {
        let _ = (db, measurement);
        Ok(QuarantineAction::default())
    }
    /// Deletes the quarantined data of `db` (or one measurement) (blocking).
    fn discard_quarantine(
        &self,
        db: &str,
        measurement: Option<&str>,
    ) -> Result<QuarantineAction, StorageError> {
        let _ = (db, measurement);
        Ok(QuarantineAction::default())
    }
}

use crate::influxql::{InfluxqlError, InfluxqlRequest, StatementResult};
use crate::StorageError;
pub use engine::{ReadScope, SqlAccess, SqlCancel, SqlConfig, SqlError, SqlSummary};
