//! User SQL (`/api/v1/sql`): connections of its own, engine-enforced limits,
//! the engine's own classification, streaming, cancellation.
//!
//! Brief overview (docs/security.md has the threat model):
//! - **Separate connections.** User SQL never runs on the flusher's pool. Each
//!   statement borrows a *sandbox* connection: for non-admins one opened with
//!   `readonly=1` and the limits of [`SqlConfig`] as connection settings, which
//!   a statement cannot lift (`readonly=1` refuses `SET` and `SETTINGS`); every
//!   setting is read back with `getSetting` after connecting, because the
//!   engine ignores an argument it does not know. Admin statements get a fresh
//!   connection with the same limits but without readonly, closed afterwards.
//!   Statements chingest generates (InfluxQL) get reader connections of
//!   their own with `readonly=2` (`Readonly::Generated`).
//! - **At most [`SqlConfig::max_concurrent_queries`] at once**: beyond it
//!   [`SqlError::Busy`] at once, never a queue.
//! - **The engine classifies** ([`chdb_rust::admin`], `chdb_classify_query_n`,
//!   on the same connection): exactly one statement, of class READ_ONLY for
//!   non-admins. Then the engine's own parse (`EXPLAIN AST`, safe because
//!   there is exactly one statement) is checked by [`crate::sql_gate`].
//! - **Per-database permissions are the engine's**: a non-admin statement runs
//!   after `SET ROLE <the role of its read scope>` ([`crate::access`]).
//! - **Streaming**: the statement runs through the streaming API; each block
//!   goes to the caller's sink as it comes (bounded memory). A failed, timed
//!   out or cancelled statement's connection is closed, never reused.
//! - **Cancellation**: a watchdog thread kills (`KILL QUERY WHERE
//!   Settings['log_comment'] = '<the connection's own comment>'`, from a
//!   control connection) a statement whose caller cancelled (client gone) or
//!   that outlived its time limit while blocked inside the engine.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use chdb_rust::admin::QueryClass;
use chdb_rust::connection::Connection;
use chdb_rust::format::OutputFormat;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::access::{EngineAccess, ReadScope};
use crate::error::{cut, FlushConfigError};
use crate::identity::IdentityIndex;
use crate::sql_format::Stitcher;
use crate::sql_gate;

/// The `[sql]` section: limits of user SQL. Defaults suit a small box (2 cores,
/// a few GB of RAM) that must keep ingesting while someone queries.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SqlConfig {
    /// Statements running at once (each holds one engine connection); one more
    /// is answered 503 with Retry-After at once. Default: 2.
    pub max_concurrent_queries: usize,
    /// A statement is stopped by the engine after this long (and the HTTP
    /// response ends with an error). Below the server's 30 s request deadline, so a
    /// runaway statement is answered with its own error, not a request timeout.
    /// Default: 20 s.
    pub max_execution_secs: u64,
    /// Rows a result may have; more fails the statement. Default: 1,000,000.
    pub max_result_rows: u64,
    /// Bytes (uncompressed, in the engine) a result may have; more fails the
    /// statement. Default: 256 MiB.
    pub max_result_bytes: u64,
    /// Memory one statement may use in the engine; a `GROUP BY` or `ORDER
    /// BY` spills to disk past half of it (at most 4× it on disk). Default: 1 GiB.
    pub max_memory_bytes: u64,
    /// Engine threads per statement; 0 (the default) adapts: the cores the
    /// write path left idle over the last second or two, at least one
    /// ([`crate::ingest_load`]), chosen when the statement starts.
    pub max_threads: u64,
    /// Series whose last point InfluxQL keeps in memory, over all tables
    /// (`ORDER BY time DESC LIMIT 1` answered without an engine statement;
    /// about 60 bytes per column per series); a table that would pass it is
    /// read from the engine. 0: none. Default: 100,000.
    pub last_point_cache_series: usize,
}

impl Default for SqlConfig {
    fn default() -> Self {
        Self {
            max_concurrent_queries: 2,
            max_execution_secs: 20,
            max_result_rows: 1_000_000,
            max_result_bytes: 256 << 20,
            max_memory_bytes: 1 << 30,
            max_threads: 0,
            last_point_cache_series: 100_000,
        }
    }
}

impl SqlConfig {
    /// Checks the settings make sense. A limit of 0 would mean "none" to the
    /// engine, so it is refused rather than silently unlimited.
    pub fn validate(&self) -> Result<(), FlushConfigError> {
        let positive: [(&'static str, u64); 5] = [
            ("max_concurrent_queries", self.max_concurrent_queries as u64),
            ("max_execution_secs", self.max_execution_secs),
            ("max_result_rows", self.max_result_rows),
            ("max_result_bytes", self.max_result_bytes),
            ("max_memory_bytes", self.max_memory_bytes),
        ];
        for (key, v) in positive {
            if v == 0 {
                return Err(FlushConfigError::new(
                    key,
                    0,
                    "must be at least 1 ([sql] limits cannot be switched off)",
                ));
            }
        }
        Ok(())
    }

    /// Engine threads for a statement starting now.
    pub fn threads_now(&self) -> u64 {
        if self.max_threads > 0 {
            return self.max_threads;
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
        crate::ingest_load::idle_cores(cores, crate::ingest_load::INGEST_LOAD.busy_cores())
    }

    /// The limits as settings of a statement sent to a ClickHouse server of a cluster
    /// (those every supported version knows, 18.16 included: no `max_threads`, which the
    /// server's own configuration sets, nor settings newer than it), `readonly=1` first.
    pub(crate) fn shard_settings(&self) -> Vec<(&'static str, String)> {
        let known = [
            "max_execution_time",
            "timeout_overflow_mode",
            "max_result_rows",
            "max_result_bytes",
            "result_overflow_mode",
            "max_memory_usage",
            "max_bytes_before_external_group_by",
            "max_bytes_before_external_sort",
        ];
        let mut out = vec![("readonly", "1".to_string())];
        out.extend(
            self.limit_args(1)
                .into_iter()
                .filter(|(k, _)| known.contains(k)),
        );
        out
    }

    /// The limits as connection arguments (all query-level settings the
    /// engine applies to that connection's session only), `threads` engine
    /// threads per statement.
    fn limit_args(&self, threads: u64) -> Vec<(&'static str, String)> {
        vec![
            ("max_execution_time", self.max_execution_secs.to_string()),
            ("timeout_overflow_mode", "throw".into()),
            ("max_result_rows", self.max_result_rows.to_string()),
            ("max_result_bytes", self.max_result_bytes.to_string()),
            ("result_overflow_mode", "throw".into()),
            ("max_memory_usage", self.max_memory_bytes.to_string()),
            // A GROUP BY or ORDER BY past half the memory cap spills to disk
            // rather than failing (the point merge of a day of a thousand
            // hosts groups 10M rows), within 4× the cap of temporary data.
            (
                "max_bytes_before_external_group_by",
                (self.max_memory_bytes / 2).to_string(),
            ),
            (
                "max_bytes_before_external_sort",
                (self.max_memory_bytes / 2).to_string(),
            ),
            (
                "max_temporary_data_on_disk_size_for_query",
                self.max_memory_bytes.saturating_mul(4).to_string(),
            ),
            ("max_threads", threads.to_string()),
            ("allow_introspection_functions", "0".into()),
        ]
    }
}

/// Who runs a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqlAccess {
    /// Any statement but `SYSTEM …` and database lifecycle (`CREATE/DROP
    /// DATABASE` go through `/query`, so the catalog follows); still one
    /// statement, on a sandbox connection with the limits.
    Admin,
    /// One read-only statement, reading what the scope's role may read.
    Read(ReadScope),
}

/// Set by the caller to stop a statement (the client went away). Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct SqlCancel(Arc<AtomicBool>);

impl SqlCancel {
    /// A fresh, unset token.
    pub fn new() -> SqlCancel {
        SqlCancel::default()
    }
    /// Asks the statement to stop (idempotent).
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }
    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// What a streamed statement produced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SqlSummary {
    /// Blocks handed to the sink.
    pub chunks: u64,
    /// Bytes handed to the sink.
    pub bytes: u64,
}

/// Why a statement did not run, or stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SqlError {
    /// Every sandbox slot is busy: retry later.
    #[error(
        "{limit} SQL statements are already running ([sql] max_concurrent_queries); retry later"
    )]
    Busy {
        /// The configured bound.
        limit: usize,
    },
    /// Not permitted to this caller (the statement's class, a table or a
    /// function, or the engine's own access check).
    #[error("{0}")]
    Forbidden(String),
    /// Not one statement, not parsable, or refused by the engine as invalid.
    #[error("{0}")]
    Invalid(String),
    /// The statement hit a configured limit (time, result size, memory).
    #[error("{0}")]
    LimitExceeded(String),
    /// The caller cancelled (the client went away).
    #[error("the statement was cancelled")]
    Cancelled,
    /// The engine is shut down or cannot open a connection.
    #[error("{0}")]
    Unavailable(String),
}

/// Engine error codes the sandbox maps (ClickHouse `ErrorCodes`).
mod code {
    pub(super) const TOO_MANY_ROWS: u32 = 158;
    pub(super) const TIMEOUT_EXCEEDED: u32 = 159;
    pub(super) const READONLY: u32 = 164;
    pub(super) const MEMORY_LIMIT_EXCEEDED: u32 = 241;
    pub(super) const QUERY_WAS_CANCELLED: u32 = 394;
    pub(super) const TOO_MANY_ROWS_OR_BYTES: u32 = 396;
    pub(super) const ACCESS_DENIED: u32 = 497;
    /// A ClickHouse server's user without access to a database (before 20.4's RBAC).
    pub(super) const DATABASE_ACCESS_DENIED: u32 = 291;
}

/// The `Code: N.` of an engine message.
pub(crate) fn engine_code(message: &str) -> Option<u32> {
    let rest = &message[message.find("Code: ")? + 6..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A statement's failure as the caller is told it, from the engine's (or a ClickHouse
/// server's: the same codes) message under the limits `c`.
pub(crate) fn engine_sql_error(c: &SqlConfig, message: &str, cancel: &SqlCancel) -> SqlError {
    if cancel.is_cancelled() {
        return SqlError::Cancelled;
    }
    match engine_code(message) {
        Some(code::ACCESS_DENIED | code::DATABASE_ACCESS_DENIED | code::READONLY) => {
            SqlError::Forbidden(message.to_string())
        }
        Some(code::TIMEOUT_EXCEEDED) => SqlError::LimitExceeded(format!(
            "the statement ran longer than the limit of {} s ([sql] max_execution_secs): {message}",
            c.max_execution_secs
        )),
        Some(code::QUERY_WAS_CANCELLED) => SqlError::LimitExceeded(format!(
            "the statement was stopped: it outlived the limit of {} s ([sql] \
                 max_execution_secs), or was killed: {message}",
            c.max_execution_secs
        )),
        Some(code::TOO_MANY_ROWS) | Some(code::TOO_MANY_ROWS_OR_BYTES) => {
            SqlError::LimitExceeded(format!(
                "the result is larger than the limit of {} rows / {} bytes ([sql] \
                     max_result_rows, max_result_bytes): {message}",
                c.max_result_rows, c.max_result_bytes
            ))
        }
        Some(code::MEMORY_LIMIT_EXCEEDED) => SqlError::LimitExceeded(format!(
            "the statement needs more than {} bytes of memory ([sql] max_memory_bytes): {message}",
            c.max_memory_bytes
        )),
        _ => SqlError::Invalid(message.to_string()),
    }
}

fn engine_message(e: chdb_rust::error::Error) -> String {
    match e {
        chdb_rust::error::Error::QueryError(m) => m.trim().to_string(),
        other => other.to_string(),
    }
}

/// A watched statement: what the watchdog kills, and when.
struct Watch {
    comment: String,
    cancel: SqlCancel,
    deadline: Instant,
    killed: bool,
}

/// The sandbox: its connections, its bound, its watchdog.
pub(crate) struct Sandbox {
    path_arg: String,
    config: SqlConfig,
    access: EngineAccess,
    /// Reader connections, with their comment and the role they have set.
    idle: Mutex<Vec<Idle>>,
    in_flight: Mutex<usize>,
    next_id: AtomicU64,
    control: Mutex<Option<Connection>>,
    stats: Mutex<Option<Connection>>,
    watches: Mutex<HashMap<u64, Watch>>,
    closed: AtomicBool,
    /// Told while an admin statement that may change data runs: it may
    /// insert rows the flusher never saw.
    identity: Arc<IdentityIndex>,
}

/// An admin statement that may change data, running (see [`IdentityIndex::admin_write_started`]).
struct AdminWrite<'a>(&'a IdentityIndex);

impl Drop for AdminWrite<'_> {
    fn drop(&mut self) {
        self.0.admin_write_done();
    }
}

/// A slot of the concurrency bound, released on drop.
struct Slot<'a>(&'a Sandbox);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.in_flight.lock() -= 1;
    }
}

/// A connection used by one statement; closed on drop unless given back.
struct Lease {
    conn: Option<Connection>,
    comment: String,
    /// The engine role the connection has set (reader connections).
    role: Option<String>,
    /// Its engine threads per statement (reader connections).
    threads: u64,
    /// Its `readonly` level (reader connections).
    readonly: Readonly,
}

/// A reader connection waiting for its next statement.
struct Idle {
    conn: Connection,
    comment: String,
    role: Option<String>,
    threads: u64,
    readonly: Readonly,
}

/// The `readonly` level of a reader connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Readonly {
    /// `readonly=1`: user SQL. No writes, no DDL, no settings, no table
    /// function but the generators.
    Strict,
    /// `readonly=2`: statements chingest generates (InfluxQL), which may
    /// read an Arrow batch it registered (`ArrowStream`, a table function
    /// `readonly=1` refuses). Still no writes and no DDL; the settings a
    /// statement could change are never in its text.
    Generated,
}

impl Readonly {
    fn setting(self) -> &'static str {
        match self {
            Readonly::Strict => "1",
            Readonly::Generated => "2",
        }
    }
}

impl Sandbox {
    pub(crate) fn start(
        path_arg: String,
        config: SqlConfig,
        access: EngineAccess,
        identity: Arc<IdentityIndex>,
    ) -> Arc<Sandbox> {
        let sandbox = Arc::new(Sandbox {
            path_arg,
            config,
            access,
            identity,
            idle: Mutex::new(Vec::new()),
            in_flight: Mutex::new(0),
            next_id: AtomicU64::new(0),
            control: Mutex::new(None),
            stats: Mutex::new(None),
            watches: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
        });
        let weak = Arc::downgrade(&sandbox);
        let spawned = std::thread::Builder::new()
            .name("chingest-sql-watchdog".into())
            .spawn(move || watchdog(weak));
        if let Err(e) = spawned {
            tracing::error!("cannot start the SQL watchdog thread: {e}");
        }
        sandbox
    }

    /// Whether the engine booted with a role for `scope` (roles exist only if they were
    /// in the engine's users file at boot: `crate::access`).
    pub(crate) fn has_role(&self, scope: &ReadScope) -> bool {
        self.access.role(scope).is_some()
    }

    pub(crate) fn config(&self) -> &SqlConfig {
        &self.config
    }

    /// Opens a connection with `settings` and reads each back.
    fn open(&self, settings: &[(&'static str, String)]) -> Result<Connection, SqlError> {
        let args: Vec<String> = std::iter::once(self.path_arg.clone())
            .chain(settings.iter().map(|(k, v)| format!("--{k}={v}")))
            .collect();
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let conn = Connection::open(&argv).map_err(|e| {
            SqlError::Unavailable(format!("cannot open an engine connection for SQL: {e}"))
        })?;
        verify_settings(&conn, settings).map_err(SqlError::Unavailable)?;
        Ok(conn)
    }

    fn new_comment(&self, kind: &str) -> String {
        format!(
            "chingest-{kind}-{}",
            self.next_id.fetch_add(1, Ordering::Relaxed)
        )
    }

    fn reader_settings(
        &self,
        comment: &str,
        threads: u64,
        readonly: Readonly,
    ) -> Vec<(&'static str, String)> {
        let mut s = vec![("readonly", readonly.setting().to_string())];
        s.extend(self.config.limit_args(threads));
        if readonly == Readonly::Generated {
            // InfluxQL reads come back as Arrow within this process: LZ4 would cost the
            // engine a compression and chingest a decompression of every answer (~2 % of a
            // large answer's CPU each side), for bytes that never leave memory.
            s.push(("output_format_arrow_compression_method", "none".to_string()));
        }
        s.push(("log_comment", comment.to_string()));
        s
    }

    fn admin_settings(&self, comment: &str) -> Vec<(&'static str, String)> {
        let mut s = self.config.limit_args(self.config.threads_now());
        s.push(("log_comment", comment.to_string()));
        s
    }

    fn lease(&self, access: &SqlAccess, readonly: Readonly) -> Result<Lease, SqlError> {
        if let SqlAccess::Read(_) = access {
            // A reader connection's threads are fixed when it opens
            // (`readonly=1` cannot change settings): one with the threads
            // wanted now, or a new one.
            let threads = self.config.threads_now();
            let reused = {
                let mut idle = self.idle.lock();
                let at = idle
                    .iter()
                    .rposition(|i| i.threads == threads && i.readonly == readonly);
                at.map(|i| idle.swap_remove(i))
            };
            if let Some(i) = reused {
                return Ok(Lease {
                    conn: Some(i.conn),
                    comment: i.comment,
                    role: i.role,
                    threads,
                    readonly,
                });
            }
            let comment = self.new_comment("sql");
            let conn = self.open(&self.reader_settings(&comment, threads, readonly))?;
            return Ok(Lease {
                conn: Some(conn),
                comment,
                role: None,
                threads,
                readonly,
            });
        }
        let comment = self.new_comment("admin-sql");
        let conn = self.open(&self.admin_settings(&comment))?;
        Ok(Lease {
            conn: Some(conn),
            comment,
            role: None,
            threads: 0,
            readonly: Readonly::Strict,
        })
    }

    /// Runs one statement, handing each block of output to `sink` as it
    /// comes; `sink` returns false to stop (the client went away). Blocking.
    ///
    /// Nothing reached the sink when this fails before the first block; after
    /// it, an error means the output stopped part-way.
    pub(crate) fn run(
        &self,
        sql: &str,
        format: OutputFormat,
        access: &SqlAccess,
        cancel: &SqlCancel,
        sink: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<SqlSummary, SqlError> {
        let _slot = self.slot()?;
        let mut lease = self.lease(access, Readonly::Strict)?;
        let conn = lease
            .conn
            .as_mut()
            .expect("a new lease holds its connection");

        // 1. The engine's classification (parse only, nothing executes).
        let analysis = conn.classify_query(sql, None).map_err(|e| {
            SqlError::Unavailable(format!("the engine could not classify the statement: {e}"))
        })?;
        match analysis.statement_count {
            0 => return Err(parse_error(conn, sql)),
            1 => {}
            n => {
                return Err(SqlError::Invalid(format!(
                    "one statement per request: the engine parsed {n}"
                )))
            }
        }
        match (access, analysis.class) {
            (_, QueryClass::Unknown) => {
                return Err(SqlError::Invalid(
                    "the engine could not classify the statement".into(),
                ))
            }
            (SqlAccess::Read(_), QueryClass::ReadOnly) => {}
            (SqlAccess::Read(_), class) => {
                return Err(SqlError::Forbidden(format!(
                    "read-only users may only run statements that change nothing; the engine \
                     classifies this one as {} ({})",
                    class.as_str(),
                    class_hint(class)
                )))
            }
            (SqlAccess::Admin, _) if analysis.changes_database_lifecycle => {
                return Err(SqlError::Forbidden(
                    "create and drop databases with CREATE/DROP DATABASE on /query (POST), so \
                     chingest's catalog follows"
                        .into(),
                ))
            }
            (SqlAccess::Admin, _) => {}
        }

        // 2. The engine's parse of that one statement.
        let ast = match conn.query(&format!("EXPLAIN AST {sql}"), OutputFormat::TabSeparatedRaw) {
            Ok(r) => r.data_utf8_lossy().into_owned(),
            Err(e) => {
                // A failed buffered call can leave output behind: never reuse.
                let message = engine_message(e);
                return Err(self.map_engine_error(&message, cancel));
            }
        };
        let nodes = sql_gate::parse_tree(&ast).ok_or_else(|| {
            SqlError::Invalid(format!(
                "the engine's parse of the statement has an unexpected shape: {}",
                cut(&ast, 200)
            ))
        })?;
        if let Some(f) = sql_gate::format_clause(&nodes) {
            lease_back(self, &mut lease);
            return Err(SqlError::Invalid(format!(
                "the statement chooses its output format (FORMAT {f}); choose it with the format \
                 parameter (json, jsoneachrow, csv, arrow) or Accept instead"
            )));
        }
        let violation = match access {
            SqlAccess::Read(_) => sql_gate::reader_violation(&nodes),
            SqlAccess::Admin => sql_gate::admin_violation(&nodes),
        };
        if let Some(why) = violation {
            lease_back(self, &mut lease);
            return Err(SqlError::Forbidden(why));
        }

        // 3. The caller's permissions, as an engine role.
        if let SqlAccess::Read(scope) = access {
            self.set_role(&mut lease, scope)?;
        }

        let _admin_write = (matches!(access, SqlAccess::Admin)
            && !matches!(analysis.class, QueryClass::ReadOnly))
        .then(|| {
            self.identity.admin_write_started();
            AdminWrite(&self.identity)
        });

        // 4. Run: SELECTs stream; the engine streams nothing else (SHOW,
        // DESCRIBE, EXPLAIN, DDL), whose small answers come whole.
        let streamable = matches!(
            nodes[0].kind.as_str(),
            "SelectWithUnionQuery" | "SelectIntersectExceptQuery"
        );
        self.execute(lease, sql, format, streamable, cancel, sink)
    }

    /// Runs a `SELECT` chingest wrote itself (InfluxQL's plans: every name
    /// and literal quoted by `quote_ident`/`quote_string`, nothing of the
    /// request pasted): on a reader connection (`readonly=2`, which lets it
    /// read an Arrow batch chingest registered; the limits, the watchdog)
    /// under the engine role of the caller's read scope (an
    /// admin's: every database), as user SQL runs, without the gate that
    /// guards against what a user could write (the engine's classification
    /// and `EXPLAIN AST`: two engine round trips per statement). The role is
    /// set only when the connection does not have it already.
    pub(crate) fn run_generated(
        &self,
        sql: &str,
        format: OutputFormat,
        access: &SqlAccess,
        cancel: &SqlCancel,
        sink: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<SqlSummary, SqlError> {
        let _slot = self.slot()?;
        let scope = match access {
            SqlAccess::Read(scope) => scope.clone(),
            SqlAccess::Admin => ReadScope::All,
        };
        let mut lease = self.lease(&SqlAccess::Read(scope.clone()), Readonly::Generated)?;
        self.set_role(&mut lease, &scope)?;
        self.execute(lease, sql, format, true, cancel, sink)
    }

    /// Runs `f` (a statement that runs elsewhere: on a cluster's shard) within the
    /// concurrency bound of user SQL, with the limits.
    pub(crate) fn run_elsewhere<T>(
        &self,
        f: impl FnOnce(&SqlConfig) -> Result<T, SqlError>,
    ) -> Result<T, SqlError> {
        let _slot = self.slot()?;
        f(&self.config)
    }

    /// A slot of the concurrency bound, or `Busy` at once (`Unavailable`
    /// once shutting down).
    fn slot(&self) -> Result<Slot<'_>, SqlError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(SqlError::Unavailable("the engine is shutting down".into()));
        }
        let mut n = self.in_flight.lock();
        if *n >= self.config.max_concurrent_queries {
            return Err(SqlError::Busy {
                limit: self.config.max_concurrent_queries,
            });
        }
        *n += 1;
        Ok(Slot(self))
    }

    /// Sets the engine role of `scope` on a reader connection, unless it has it.
    fn set_role(&self, lease: &mut Lease, scope: &ReadScope) -> Result<(), SqlError> {
        let role = self.access.role(scope).ok_or_else(|| {
            SqlError::Forbidden(
                "this user's read permissions have no engine role (they changed since the \
                 server started?); restart the server"
                    .into(),
            )
        })?;
        if lease.role.as_deref() == Some(role) {
            return Ok(());
        }
        lease.role = None;
        let conn = lease.conn.as_mut().expect("held");
        conn.query(&format!("SET ROLE {role}"), OutputFormat::TabSeparated)
            .map_err(|e| {
                SqlError::Unavailable(format!("cannot set the engine role: {}", engine_message(e)))
            })?;
        lease.role = Some(role.to_string());
        Ok(())
    }

    /// Runs the statement on its connection, watched: streamed block by
    /// block, or whole. The connection goes back to the idle ones after a
    /// success that was not killed; otherwise it closes.
    fn execute(
        &self,
        mut lease: Lease,
        sql: &str,
        format: OutputFormat,
        streamable: bool,
        cancel: &SqlCancel,
        sink: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<SqlSummary, SqlError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.watches.lock().insert(
            id,
            Watch {
                comment: lease.comment.clone(),
                cancel: cancel.clone(),
                deadline: Instant::now() + Duration::from_secs(self.config.max_execution_secs + 1),
                killed: false,
            },
        );
        let outcome = if streamable {
            self.stream(&mut lease, sql, format, cancel, sink)
        } else {
            self.buffered(&mut lease, sql, format, cancel, sink)
        };
        let killed = self.watches.lock().remove(&id).is_some_and(|w| w.killed);
        if outcome.is_ok() && !killed {
            lease_back(self, &mut lease);
        }
        // Otherwise the lease closes its connection on drop.
        outcome
    }

    fn buffered(
        &self,
        lease: &mut Lease,
        sql: &str,
        format: OutputFormat,
        cancel: &SqlCancel,
        sink: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<SqlSummary, SqlError> {
        let conn = lease.conn.as_mut().expect("held");
        let result = conn
            .query(sql, format)
            .map_err(|e| self.map_engine_error(&engine_message(e), cancel))?;
        let data = result.data_ref();
        if data.is_empty() {
            return Ok(SqlSummary::default());
        }
        if cancel.is_cancelled() || !sink(data) {
            return Err(SqlError::Cancelled);
        }
        Ok(SqlSummary {
            chunks: 1,
            bytes: data.len() as u64,
        })
    }

    fn stream(
        &self,
        lease: &mut Lease,
        sql: &str,
        format: OutputFormat,
        cancel: &SqlCancel,
        sink: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<SqlSummary, SqlError> {
        let conn = lease.conn.as_mut().expect("held");
        let mut summary = SqlSummary::default();
        let mut stitcher = Stitcher::new(format);
        let mut out = Vec::new();
        let mut stream = conn
            .query_stream(sql, format)
            .map_err(|e| self.map_engine_error(&engine_message(e), cancel))?;
        let mut send = |out: &mut Vec<u8>, summary: &mut SqlSummary| {
            if out.is_empty() {
                return true;
            }
            summary.chunks += 1;
            summary.bytes += out.len() as u64;
            let go_on = !cancel.is_cancelled() && sink(out);
            out.clear();
            go_on
        };
        loop {
            match stream.next_chunk() {
                Ok(Some(chunk)) => {
                    stitcher.push(chunk.data_ref(), &mut out).map_err(|e| {
                        SqlError::Invalid(format!("cannot join the engine's output blocks: {e}"))
                    })?;
                    drop(chunk);
                    if !send(&mut out, &mut summary) {
                        stream.cancel();
                        return Err(SqlError::Cancelled);
                    }
                }
                Ok(None) => {
                    stitcher.finish(&mut out).map_err(|e| {
                        SqlError::Invalid(format!("cannot join the engine's output blocks: {e}"))
                    })?;
                    if !send(&mut out, &mut summary) {
                        return Err(SqlError::Cancelled);
                    }
                    return Ok(summary);
                }
                Err(e) => {
                    let message = engine_message(e);
                    return Err(self.map_engine_error(&message, cancel));
                }
            }
        }
    }

    fn map_engine_error(&self, message: &str, cancel: &SqlCancel) -> SqlError {
        engine_sql_error(&self.config, message, cancel)
    }

    /// Runs an operator query (engine stats) on the stats connection, unless
    /// it is busy (then `None` at once: the caller serves its last answer).
    pub(crate) fn stats_text(&self, sql: &str) -> Option<String> {
        let mut guard = self.stats.try_lock()?;
        if self.closed.load(Ordering::Acquire) {
            return None;
        }
        if guard.is_none() {
            let comment = self.new_comment("stats");
            let settings = vec![
                ("readonly", "1".to_string()),
                ("max_execution_time", "1".to_string()),
                ("timeout_overflow_mode", "throw".to_string()),
                ("max_threads", "1".to_string()),
                ("log_comment", comment),
            ];
            *guard = self.open(&settings).ok();
        }
        let conn = guard.as_ref()?;
        match conn.query(sql, OutputFormat::TabSeparated) {
            Ok(r) => Some(r.data_utf8_lossy().into_owned()),
            Err(e) => {
                tracing::debug!("engine stats query failed: {}", engine_message(e));
                // A failed buffered call can leave output behind: reopen next time.
                *guard = None;
                None
            }
        }
    }

    /// Kills the statement running on the connection with `comment`.
    fn kill(&self, comment: &str) {
        let mut guard = self.control.lock();
        if guard.is_none() {
            let settings = vec![
                ("readonly", "1".to_string()),
                ("max_execution_time", "5".to_string()),
                ("log_comment", self.new_comment("control")),
            ];
            match self.open(&settings) {
                Ok(c) => *guard = Some(c),
                Err(e) => {
                    tracing::warn!("cannot open the SQL control connection: {e}");
                    return;
                }
            }
        }
        let conn = guard.as_ref().expect("opened above");
        // Asynchronous (no SYNC): it signals the statement and returns.
        let sql = format!(
            "KILL QUERY WHERE Settings['log_comment'] = {}",
            crate::engine::quote_string(comment)
        );
        if let Err(e) = conn.query(&sql, OutputFormat::TabSeparated) {
            tracing::warn!("KILL QUERY failed: {}", engine_message(e));
            *guard = None;
        }
    }

    /// Stops accepting statements, kills the running ones, closes idle connections.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let running: Vec<String> = self
            .watches
            .lock()
            .values()
            .map(|w| w.comment.clone())
            .collect();
        for c in running {
            self.kill(&c);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while *self.in_flight.lock() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.idle.lock().clear();
        *self.control.lock() = None;
        *self.stats.lock() = None;
    }
}

/// A reader connection whose statement succeeded goes back to the pool.
fn lease_back(sandbox: &Sandbox, lease: &mut Lease) {
    // Admin connections are never reused: an admin may SET anything.
    let Some(conn) = lease.conn.take() else {
        return;
    };
    if lease.comment.starts_with("chingest-sql-") && !sandbox.closed.load(Ordering::Acquire) {
        let mut idle = sandbox.idle.lock();
        if idle.len() >= sandbox.config.max_concurrent_queries {
            // Keep the newest: the oldest may have threads no longer wanted.
            idle.remove(0);
        }
        idle.push(Idle {
            conn,
            comment: lease.comment.clone(),
            role: lease.role.take(),
            threads: lease.threads,
            readonly: lease.readonly,
        });
    }
}

/// Why the engine could not parse `sql`, in the engine's words. The text is
/// handed to the engine's parser as a *value* (`formatQuery` of a bound
/// parameter, which parses one statement and executes nothing), never run.
fn parse_error(conn: &Connection, sql: &str) -> SqlError {
    let message = match conn.query_with_params(
        "SELECT formatQuery({statement:String})",
        OutputFormat::TabSeparatedRaw,
        [("statement", sql)],
    ) {
        Err(e) => engine_message(e),
        Ok(_) => "only comments or whitespace".to_string(),
    };
    SqlError::Invalid(format!(
        "the engine could not parse the statement: {message}"
    ))
}

/// Reads every setting back: the engine silently ignores an argument it does
/// not know, so a misspelt limit would otherwise be no limit.
fn verify_settings(conn: &Connection, expected: &[(&'static str, String)]) -> Result<(), String> {
    let select: Vec<String> = expected
        .iter()
        .map(|(k, _)| format!("toString(getSetting('{k}'))"))
        .collect();
    let sql = format!("SELECT {}", select.join(", "));
    let out = conn
        .query(&sql, OutputFormat::TabSeparatedRaw)
        .map_err(|e| {
            format!(
                "cannot read the connection's settings back: {}",
                engine_message(e)
            )
        })?;
    let text = out.data_utf8_lossy();
    let got: Vec<&str> = text.trim_end_matches('\n').split('\t').collect();
    if got.len() != expected.len() {
        return Err(format!("unexpected settings read-back: {text:?}"));
    }
    for ((key, want), got) in expected.iter().zip(got) {
        let number = |s: &str| match s {
            "false" => Some(0.0),
            "true" => Some(1.0),
            _ => s.parse::<f64>().ok(),
        };
        let same =
            got == want || matches!((number(got), number(want)), (Some(a), Some(b)) if a == b);
        if !same {
            return Err(format!(
                "the engine did not apply the connection setting {key}={want} (it reads {got:?})"
            ));
        }
    }
    Ok(())
}

fn class_hint(class: QueryClass) -> &'static str {
    match class {
        QueryClass::Mutating => "it would change a database",
        QueryClass::MutatingGlobal => "it would change users, functions or other global state",
        QueryClass::Control => {
            "SET, USE, KILL, SYSTEM, or output outside the engine such as INTO OUTFILE"
        }
        _ => "not read-only",
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // A connection not given back (failure, cancel, kill, admin) closes here.
        self.conn.take();
    }
}

/// Kills statements whose caller cancelled or whose time is up; polls every 50 ms.
fn watchdog(sandbox: Weak<Sandbox>) {
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let Some(s) = sandbox.upgrade() else {
            return;
        };
        if s.closed.load(Ordering::Acquire) {
            return;
        }
        let now = Instant::now();
        // The lock is held while killing, so a statement that just ended cannot
        // give its connection back (and start another) under the KILL.
        let mut watches = s.watches.lock();
        for w in watches.values_mut() {
            if !w.killed && (w.cancel.is_cancelled() || now >= w.deadline) {
                w.killed = true;
                tracing::debug!(
                    connection = %w.comment,
                    cancelled = w.cancel.is_cancelled(),
                    "killing an SQL statement"
                );
                s.kill(&w.comment);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_read_from_engine_messages() {
        assert_eq!(engine_code("Code: 497. DB::Exception: x"), Some(497));
        assert_eq!(engine_code("Code: 159. DB::Exception: Timeout"), Some(159));
        assert_eq!(engine_code("no code"), None);
    }

    #[test]
    fn limits_cannot_be_zero() {
        SqlConfig::default().validate().unwrap();
        let c = SqlConfig {
            max_execution_secs: 0,
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap_err().key, "max_execution_secs");
        let c = SqlConfig {
            max_concurrent_queries: 0,
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap_err().key, "max_concurrent_queries");
    }
}
