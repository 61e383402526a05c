//! The seam between HTTP and storage: the ONLY module that touches the
//! ingest, wal and flush crates (in [`chdb`]). Handlers see the [`Pipeline`]
//! trait, so the HTTP layer is tested with an in-memory double and storage
//! API changes stay local to this module.

use std::future::Future;
use std::pin::Pin;

#[cfg(feature = "storage")]
pub mod chdb;
#[cfg(test)]
pub(crate) mod mem;

/// A boxed future, as the trait's async methods return.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Timestamp precision of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// Nanoseconds (default).
    Nanoseconds,
    /// Microseconds (`u` / `us`).
    Microseconds,
    /// Milliseconds.
    Milliseconds,
    /// Seconds.
    Seconds,
    /// Minutes.
    Minutes,
    /// Hours.
    Hours,
}

/// Body format, chosen by `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// InfluxDB line protocol (the default for any other content type).
    LineProtocol,
    /// msgpack array of point maps.
    MsgpackRows,
    /// Columnar msgpack.
    MsgpackColumnar,
}

/// A write to prepare.
#[derive(Debug)]
pub struct WriteRequest<'a> {
    /// Target database (known to exist).
    pub db: &'a str,
    /// The decompressed body.
    pub body: &'a [u8],
    /// Body format.
    pub format: Format,
    /// Timestamp precision.
    pub precision: Precision,
    /// The request's receive time, for points without a timestamp.
    pub now_ns: i64,
}

/// Why some of a request's points were not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RejectionKind {
    /// Lines did not parse or types conflicted: 400.
    Invalid,
    /// Schema limits (series, measurements, tag values): 422.
    Limit,
}

/// Points not accepted, with the ingest crate's message (InfluxDB's text).
#[derive(Debug, Clone)]
pub struct Rejection {
    /// 400 or 422.
    pub kind: RejectionKind,
    /// The client-facing message.
    pub message: String,
    /// Lines that did not parse.
    pub lines: u64,
    /// Points dropped after parsing (type conflicts, limits).
    pub dropped: u64,
}

/// A parsed, encoded write ready for the WAL.
pub struct Prepared {
    /// Points that will be written.
    pub points: u64,
    /// Encoded payload size, for metrics.
    pub payload_bytes: u64,
    /// Points or lines that were not accepted.
    pub rejection: Option<Rejection>,
    /// The implementation's state (encoded WAL entry, batches).
    #[cfg_attr(not(any(test, feature = "storage")), allow(dead_code))]
    pub(crate) inner: Box<dyn std::any::Any + Send>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("points", &self.points)
            .field("rejection", &self.rejection)
            .finish_non_exhaustive()
    }
}

/// A field's type as InfluxQL names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// float
    Float,
    /// integer
    Integer,
    /// unsigned
    Unsigned,
    /// string
    String,
    /// boolean
    Boolean,
}

impl FieldType {
    /// The InfluxQL name.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldType::Float => "float",
            FieldType::Integer => "integer",
            FieldType::Unsigned => "unsigned",
            FieldType::String => "string",
            FieldType::Boolean => "boolean",
        }
    }
}

/// One measurement's schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeasurementSchema {
    /// Name.
    pub name: String,
    /// Tag keys, sorted.
    pub tag_keys: Vec<String>,
    /// Fields and their types, sorted by name.
    pub fields: Vec<(String, FieldType)>,
}

/// SQL output formats.
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

/// Load and lag, for back-pressure and `/health`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PipelineStats {
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
    /// Failed inserts since the last success (retried forever).
    pub flush_consecutive_failures: u64,
    /// The last insert failure, cleared by a success.
    pub flush_last_error: Option<String>,
}

/// What can go wrong below HTTP.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PipelineError {
    /// The body could not be parsed at all (msgpack structure, encoding).
    #[error("{0}")]
    Invalid(String),
    /// The database does not exist.
    #[error("database not found: \"{0}\"")]
    DatabaseNotFound(String),
    /// The WAL queue is full: back off.
    #[error("the WAL queue is full")]
    QueueFull,
    /// Shutting down or broken.
    #[error("{0}")]
    Unavailable(String),
    /// The engine rejected a statement (its message).
    #[error("{0}")]
    Query(String),
    /// Anything else; hidden from clients.
    #[error("{0}")]
    Internal(String),
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

/// Storage as the HTTP layer sees it. Blocking methods are called from the
/// blocking pool, never on the reactor.
pub trait Pipeline: Send + Sync + 'static {
    /// Parses and encodes a write (CPU-bound, blocking).
    fn prepare(&self, req: WriteRequest<'_>) -> Result<Prepared, PipelineError>;
    /// Submits to the WAL; resolves once the entry is durable. Fails at once
    /// with [`PipelineError::QueueFull`] when the WAL queue is full.
    fn commit(&self, prepared: Prepared) -> BoxFuture<Result<(), PipelineError>>;
    /// Whether `db` exists.
    fn database_exists(&self, db: &str) -> bool;
    /// Creates `db` (idempotent; blocking until durable), keeping its data for
    /// `retention_secs` when given (0 = forever). Re-creating an existing
    /// database with a different retention is an error, as in InfluxDB.
    fn create_database(&self, db: &str, retention_secs: Option<u64>) -> Result<(), PipelineError>;
    /// `db`'s retention in seconds (0 = forever).
    fn retention_secs(&self, _db: &str) -> u64 {
        0
    }
    /// Drops `db` and its data (idempotent; blocking).
    fn drop_database(&self, db: &str) -> Result<(), PipelineError>;
    /// All databases, sorted.
    fn databases(&self) -> Vec<String>;
    /// The measurements of `db` with their schema, sorted by name.
    fn schema(&self, db: &str) -> Result<Vec<MeasurementSchema>, PipelineError>;
    /// Series keys (`m,k=v,...`) of `db`, optionally of one measurement (blocking).
    fn series(&self, db: &str, measurement: Option<&str>) -> Result<Vec<String>, PipelineError>;
    /// Distinct non-empty values of `keys` (tag keys of `measurement`), as
    /// sorted (key, value) pairs (blocking).
    fn tag_values(
        &self,
        db: &str,
        measurement: &str,
        keys: &[String],
    ) -> Result<Vec<(String, String)>, PipelineError>;
    /// Runs SQL on the engine (blocking).
    fn sql(&self, sql: &str, format: SqlFormat) -> Result<Vec<u8>, PipelineError>;
    /// Series per database (for the `chingest_series` gauge).
    fn series_cardinality(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
    /// The engine's own state: parts, merges, rows (blocking; `None` when
    /// there is no engine).
    fn engine_stats(&self) -> Option<EngineStats> {
        None
    }
    /// Current load and lag.
    fn stats(&self) -> PipelineStats;
    /// Commits the WAL, flushes everything to the engine and closes it (blocking).
    fn shutdown(&self) -> Result<(), PipelineError>;
}
