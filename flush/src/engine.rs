//! The one chDB engine of this process and its pool of connections.
//!
//! chDB binds one data path per process and, unless told otherwise, installs
//! process-wide signal handlers. [`Engine::open`] therefore disables the
//! handlers before the first connect (so the server's own SIGTERM handling
//! works) and refuses a second data path with [`EngineError::PathConflict`].
//! Tests share one engine per process and isolate themselves by database.
//!
//! The engine boots with a configuration chingest writes into its data
//! directory ([`crate::access`]): `--config-file` on the first connection, so
//! a `config.xml` in the working directory is never read, and a failure there
//! is fatal (a later connect would otherwise boot the engine with defaults).
//!
//! A connection whose statement failed is closed and replaced, never handed
//! out again: the buffered API keeps a failed statement's partial output and
//! returns it with the next statement on that connection.
//!
//! User SQL never runs on this pool: [`Engine::sql`] runs it on the
//! [`crate::sandbox`]'s own connections.
//!
//! All `unsafe` of this crate lives in this module: handing an Arrow batch to
//! the engine through the C Data Interface.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{Array, RecordBatch, StructArray};
use arrow::ffi::{to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use chdb_rust::arrow_stream::{arrow_stream_table_sql, ArrowArray, ArrowSchema};
use chdb_rust::connection::Connection;
use chdb_rust::format::OutputFormat;
use parking_lot::{Condvar, Mutex};

use crate::access::{EngineAccess, ADMIN_ROLE, CONFIG_FILE, USERS_FILE};
use crate::config::EngineConfig;
use crate::error::{EngineError, Result};
use crate::identity::IdentityIndex;
use crate::sandbox::{Sandbox, SqlAccess, SqlCancel, SqlConfig, SqlError, SqlSummary};
use crate::unflushed::Unflushed;

/// The engine of this process: a data path and a pool of connections to it.
/// Cheap to clone; the engine closes when the last clone and every borrowed
/// connection are gone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    data_dir: PathBuf,
    /// `--path=<data_dir>`: every connection names the same path.
    path_arg: String,
    pool: Mutex<Pool>,
    returned: Condvar,
    sandbox: Arc<Sandbox>,
    identity: Arc<IdentityIndex>,
    unflushed: Arc<Unflushed>,
    /// Registers batches reads scan (`ArrowScan`): the engine's Arrow
    /// registry is process-wide, a registration only needs a live
    /// connection, and this one never waits behind an insert.
    scan_conn: Mutex<Option<Connection>>,
}

/// The flusher's pool: idle connections, and how many exist in all.
struct Pool {
    idle: Vec<Connection>,
    size: usize,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("data_dir", &self.inner.data_dir)
            .field("connections", &self.inner.pool.lock().size)
            .finish()
    }
}

/// What an INSERT reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InsertStats {
    /// Rows the engine wrote.
    pub rows_written: u64,
    /// Bytes the engine wrote.
    pub bytes_written: u64,
}

impl Engine {
    /// Opens the engine on `config.data_dir` (created if missing) with a pool of
    /// `config.pool_size()` connections, the default SQL limits and no reader
    /// roles beyond "all" and "none"; see [`Engine::open_with`].
    pub fn open(config: &EngineConfig) -> Result<Engine> {
        Engine::open_with(config, &EngineAccess::new([]), SqlConfig::default())
    }

    /// Opens the engine on `config.data_dir` with a pool of
    /// `config.pool_size()` connections, booting it with chingest's own
    /// configuration (`access`: one engine role per read scope) and the SQL
    /// sandbox's limits.
    pub fn open_with(
        config: &EngineConfig,
        access: &EngineAccess,
        sql: SqlConfig,
    ) -> Result<Engine> {
        let open_err = |message: String| EngineError::Open {
            path: config.data_dir.display().to_string(),
            message,
        };
        std::fs::create_dir_all(&config.data_dir).map_err(|e| open_err(e.to_string()))?;
        let data_dir = config
            .data_dir
            .canonicalize()
            .map_err(|e| open_err(e.to_string()))?;
        let config_file = write_engine_config(&data_dir, access).map_err(open_err)?;
        // Before the first connect: the host process owns SIGINT/SIGTERM.
        chdb_rust::runtime::signal_handlers(false);

        let path_arg = format!("--path={}", data_dir.display());
        let config_arg = format!("--config-file={}", config_file.display());
        let size = config.pool_size().max(1);
        let mut conns = Vec::with_capacity(size);
        for i in 0..size {
            // Only the connection that boots the engine reads server options;
            // the others share its engine.
            let args: &[&str] = if i == 0 {
                &[path_arg.as_str(), config_arg.as_str()]
            } else {
                &[path_arg.as_str()]
            };
            let conn = Connection::open(args).map_err(|e| match e {
                chdb_rust::error::Error::PathConflict { active, requested } => {
                    EngineError::PathConflict { active, requested }
                }
                chdb_rust::error::Error::EngineShutDown => EngineError::ShutDown,
                other => open_err(format!(
                    "{other} (booting with {}; the engine prints the reason on stderr)",
                    config_file.display()
                )),
            })?;
            if i == 0 {
                verify_boot(&conn, access).map_err(open_err)?;
            }
            conns.push(conn);
        }
        tracing::info!(path = %data_dir.display(), connections = size, "chDB engine open");
        let scan_conn = Connection::open(&[path_arg.as_str()])
            .map_err(|e| open_err(format!("opening the scan connection: {e}")))?;
        let identity = Arc::new(IdentityIndex::new(sql.last_point_cache_series));
        let sandbox = Sandbox::start(path_arg.clone(), sql, access.clone(), identity.clone());
        let inner = Arc::new(Inner {
            data_dir,
            path_arg,
            pool: Mutex::new(Pool { idle: conns, size }),
            returned: Condvar::new(),
            sandbox,
            identity,
            unflushed: Arc::new(Unflushed::default()),
            scan_conn: Mutex::new(Some(scan_conn)),
        });
        crate::exit::arm();
        Ok(Engine { inner })
    }

    /// Runs one user SQL statement on the SQL sandbox (never on this pool),
    /// handing each block of output to `sink` as the engine produces it;
    /// `sink` returns false to stop. Blocking. See [`crate::sandbox`].
    pub fn sql(
        &self,
        sql: &str,
        format: OutputFormat,
        access: &SqlAccess,
        cancel: &SqlCancel,
        sink: &mut dyn FnMut(&[u8]) -> bool,
    ) -> std::result::Result<SqlSummary, SqlError> {
        self.inner.sandbox.run(sql, format, access, cancel, sink)
    }

    /// Runs one user SQL statement on a ClickHouse cluster (`/api/v1/sql` with
    /// `[storage] engine = "clickhouse"`: [`Cluster::sql`](crate::cluster::Cluster::sql)),
    /// within the sandbox's concurrency bound and limits. Blocking.
    pub fn cluster_sql(
        &self,
        cluster: &crate::cluster::Cluster,
        sql: &str,
        format: &str,
        cancel: &SqlCancel,
        sink: &mut dyn FnMut(&[u8]) -> bool,
        reader: Option<&str>,
    ) -> std::result::Result<SqlSummary, SqlError> {
        self.inner
            .sandbox
            .run_elsewhere(|limits| cluster.sql(sql, format, limits, cancel, sink, reader))
    }

    /// Which points of each table may have several rows
    /// ([`crate::identity`]): the flusher records, reads ask.
    pub fn identity(&self) -> &IdentityIndex {
        &self.inner.identity
    }

    /// Acknowledged points the engine does not hold yet ([`crate::unflushed`]):
    /// the flusher adds and removes, reads ask.
    pub fn unflushed(&self) -> &Unflushed {
        &self.inner.unflushed
    }

    pub(crate) fn unflushed_handle(&self) -> Arc<Unflushed> {
        self.inner.unflushed.clone()
    }

    /// `batch`, readable by this engine's statements as the table
    /// expressions [`ArrowScan::table_sql`] names once they are registered
    /// ([`ArrowScan::register`]); unregistered when the scan drops.
    pub fn arrow_scan(&self, batch: RecordBatch) -> Result<ArrowScan> {
        let struct_array = StructArray::from(batch);
        let (array, schema) =
            to_ffi(&struct_array.to_data()).map_err(|e| EngineError::Arrow(e.to_string()))?;
        Ok(ArrowScan {
            engine: self.inner.clone(),
            array: Box::new(array),
            schema: Box::new(schema),
            base: format!(
                "chingest_scan_{}",
                ARROW_TABLE_SEQ.fetch_add(1, Ordering::Relaxed)
            ),
            registered: AtomicUsize::new(0),
        })
    }

    /// Runs a `SELECT` chingest generated (InfluxQL plans) on the SQL
    /// sandbox: its connections, `readonly=1`, limits and the caller's
    /// engine role, without the user-SQL gate. See [`Sandbox::run_generated`](crate::sandbox).
    pub fn sql_generated(
        &self,
        sql: &str,
        format: OutputFormat,
        access: &SqlAccess,
        cancel: &SqlCancel,
        sink: &mut dyn FnMut(&[u8]) -> bool,
    ) -> std::result::Result<SqlSummary, SqlError> {
        self.inner
            .sandbox
            .run_generated(sql, format, access, cancel, sink)
    }

    /// Whether the SQL sandbox has an engine role for `scope` (one the engine booted with).
    pub fn has_read_role(&self, scope: &crate::ReadScope) -> bool {
        self.inner.sandbox.has_role(scope)
    }

    /// The SQL sandbox's limits.
    pub fn sql_config(&self) -> &SqlConfig {
        self.inner.sandbox.config()
    }

    /// Runs an operator query (engine stats, TabSeparated) on a connection of
    /// its own with a 1 s limit; `None` at once if that connection is busy or
    /// the query fails, so a caller never waits behind inserts or user SQL.
    pub fn stats_text(&self, sql: &str) -> Option<String> {
        self.inner.sandbox.stats_text(sql)
    }

    /// The (canonical) data directory.
    pub fn data_dir(&self) -> &Path {
        &self.inner.data_dir
    }

    /// Connections in the pool.
    pub fn pool_size(&self) -> usize {
        self.inner.pool.lock().size
    }

    /// Connections idle right now.
    pub fn idle_connections(&self) -> usize {
        self.inner.pool.lock().idle.len()
    }

    /// Borrows a connection, waiting for one to be returned if all are busy.
    pub fn connection(&self) -> PooledConnection {
        let mut pool = self.inner.pool.lock();
        loop {
            if let Some(conn) = pool.idle.pop() {
                return PooledConnection {
                    conn: Some(conn),
                    engine: self.inner.clone(),
                    failed: AtomicBool::new(false),
                };
            }
            self.inner.returned.wait(&mut pool);
        }
    }

    /// Runs a statement and returns its output in `format`.
    pub fn query(&self, sql: &str, format: OutputFormat) -> Result<Vec<u8>> {
        self.connection().query(sql, format)
    }

    /// Runs a statement and returns its output as text (TabSeparated unless
    /// the statement says otherwise).
    pub fn query_text(&self, sql: &str) -> Result<String> {
        let out = self.query(sql, OutputFormat::TabSeparated)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Runs a statement for its effect.
    pub fn execute(&self, sql: &str) -> Result<()> {
        self.connection().execute(sql)
    }

    /// Inserts one batch into `table` (a quoted, possibly database-qualified
    /// name); see [`PooledConnection::insert_batch`].
    pub fn insert_batch(
        &self,
        table: &str,
        batch: RecordBatch,
        settings: &[(&str, String)],
    ) -> Result<InsertStats> {
        self.connection().insert_batch(table, batch, settings)
    }

    /// Closes every connection and stops the engine (waiting up to 30 s for
    /// borrowed connections to come back). The engine can not be reopened in
    /// this process afterwards. If another clone of this engine is still
    /// alive, only the connections are closed.
    pub fn shutdown(self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        self.inner.sandbox.close();
        *self.inner.scan_conn.lock() = None;
        {
            let mut pool = self.inner.pool.lock();
            while pool.idle.len() < pool.size && Instant::now() < deadline {
                self.inner
                    .returned
                    .wait_for(&mut pool, Duration::from_millis(100));
            }
            pool.idle.clear();
        }
        if Arc::strong_count(&self.inner) > 1 {
            // Another clone is alive: closing the engine under it would break it.
            return Ok(());
        }
        match chdb_rust::runtime::shutdown() {
            Ok(()) => Ok(()),
            // The engine is closed for the process either way; "unknown" means
            // some of its threads (background pools of a persistent engine)
            // did not stop, which process exit then reaps. Seen on every
            // shutdown of a data path with MergeTree tables.
            Err(chdb_rust::error::Error::Unknown) => {
                tracing::debug!("chDB closed; some engine threads are left to process exit");
                Ok(())
            }
            Err(e) => Err(EngineError::Open {
                path: self.inner.data_dir.display().to_string(),
                message: format!("shutdown: {e}"),
            }),
        }
    }
}

/// A connection borrowed from the pool; returned on drop, or replaced by a
/// fresh one if a statement on it failed.
pub struct PooledConnection {
    conn: Option<Connection>,
    engine: Arc<Inner>,
    failed: AtomicBool,
}

impl Drop for PooledConnection {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        if self.failed.load(Ordering::Acquire) {
            // The buffered API keeps a failed statement's partial output and
            // hands it to the next statement on the same connection: close it.
            drop(conn);
            match Connection::open(&[self.engine.path_arg.as_str()]) {
                Ok(fresh) => conn = fresh,
                Err(e) => {
                    tracing::warn!("cannot replace a failed engine connection: {e}");
                    self.engine.pool.lock().size -= 1;
                    self.engine.returned.notify_all();
                    return;
                }
            }
        }
        self.engine.pool.lock().idle.push(conn);
        self.engine.returned.notify_one();
    }
}

static ARROW_TABLE_SEQ: AtomicU64 = AtomicU64::new(0);

/// One Arrow batch registered with the engine under one name per reference
/// of a statement (the engine reads a registration once). The FFI structs
/// stay here, boxed, until every name is unregistered: the engine copies the
/// array struct at each read and never releases its buffers.
pub struct ArrowScan {
    engine: Arc<Inner>,
    array: Box<FFI_ArrowArray>,
    schema: Box<FFI_ArrowSchema>,
    base: String,
    registered: AtomicUsize,
}

impl ArrowScan {
    /// The table expression of reference `k` (`0..` the count registered).
    pub fn table_sql(&self, k: usize) -> String {
        arrow_stream_table_sql(&format!("{}_{k}", self.base))
    }

    /// Registers references `0..count` (those not registered yet).
    pub fn register(&self, count: usize) -> Result<()> {
        let guard = self.engine.scan_conn.lock();
        let conn = guard.as_ref().ok_or(EngineError::ShutDown)?;
        while self.registered.load(Ordering::Acquire) < count {
            // SAFETY: both pointers refer to the boxed FFI structs, which
            // outlive every registration (unregistered in `drop` first).
            let (schema, array) = unsafe {
                (
                    ArrowSchema::from_raw(&*self.schema as *const _ as *mut _),
                    ArrowArray::from_raw(&*self.array as *const _ as *mut _),
                )
            };
            let name = format!("{}_{}", self.base, self.registered.load(Ordering::Acquire));
            conn.register_arrow_array(&name, &schema, &array)
                .map_err(|e| EngineError::Arrow(e.to_string()))?;
            self.registered.fetch_add(1, Ordering::AcqRel);
        }
        Ok(())
    }
}

impl Drop for ArrowScan {
    fn drop(&mut self) {
        let guard = self.engine.scan_conn.lock();
        let Some(conn) = guard.as_ref() else {
            // Shut down: nothing reads the registry any more.
            return;
        };
        for k in 0..*self.registered.get_mut() {
            let name = format!("{}_{k}", self.base);
            if let Err(e) = conn.unregister_arrow_table(&name) {
                tracing::warn!(name, error = %e, "cannot unregister an Arrow scan");
            }
        }
    }
}

impl PooledConnection {
    fn conn(&self) -> &Connection {
        self.conn.as_ref().expect("connection present until drop")
    }

    fn failed(&self, sql: &str, e: chdb_rust::error::Error) -> EngineError {
        self.failed.store(true, Ordering::Release);
        EngineError::query(sql, e)
    }

    /// Runs a statement and returns its output in `format`.
    pub fn query(&self, sql: &str, format: OutputFormat) -> Result<Vec<u8>> {
        let result = self
            .conn()
            .query(sql, format)
            .map_err(|e| self.failed(sql, e))?;
        Ok(result.data_ref().to_vec())
    }

    /// Runs a statement for its effect.
    pub fn execute(&self, sql: &str) -> Result<()> {
        self.conn()
            .query(sql, OutputFormat::Null)
            .map(|_| ())
            .map_err(|e| self.failed(sql, e))
    }

    /// Inserts `batch` into `table` through the Arrow C Data Interface: the
    /// batch is registered as an `ArrowStream` table function and read by one
    /// `INSERT … SELECT`, with columns matched by name and `settings` appended
    /// as a `SETTINGS` clause (e.g. `insert_deduplication_token`).
    pub fn insert_batch(
        &self,
        table: &str,
        batch: RecordBatch,
        settings: &[(&str, String)],
    ) -> Result<InsertStats> {
        if batch.num_rows() == 0 {
            return Ok(InsertStats {
                rows_written: 0,
                bytes_written: 0,
            });
        }
        let columns = batch
            .schema()
            .fields()
            .iter()
            .map(|f| quote_ident(f.name()))
            .collect::<Vec<_>>()
            .join(", ");
        let struct_array = StructArray::from(batch);
        let (ffi_array, ffi_schema): (FFI_ArrowArray, FFI_ArrowSchema) =
            to_ffi(&struct_array.to_data()).map_err(|e| EngineError::Arrow(e.to_string()))?;
        // SAFETY: both pointers refer to the FFI structs above, which outlive
        // the registration: the table function is unregistered before they drop.
        let (schema, array) = unsafe {
            (
                ArrowSchema::from_raw(&ffi_schema as *const _ as *mut _),
                ArrowArray::from_raw(&ffi_array as *const _ as *mut _),
            )
        };
        let name = format!(
            "chingest_batch_{}",
            ARROW_TABLE_SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let conn = self.conn();
        conn.register_arrow_array(&name, &schema, &array)
            .map_err(|e| EngineError::Arrow(e.to_string()))?;
        let mut sql = format!(
            "INSERT INTO {table} ({columns}) SELECT * FROM {}",
            arrow_stream_table_sql(&name)
        );
        if !settings.is_empty() {
            sql.push_str(" SETTINGS ");
            let parts: Vec<String> = settings.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            sql.push_str(&parts.join(", "));
        }
        let outcome = conn.query(&sql, OutputFormat::Null);
        let unregistered = conn.unregister_arrow_table(&name);
        drop(ffi_array);
        drop(ffi_schema);
        let result = outcome.map_err(|e| self.failed(&sql, e))?;
        unregistered.map_err(|e| {
            self.failed.store(true, Ordering::Release);
            EngineError::Arrow(e.to_string())
        })?;
        Ok(InsertStats {
            rows_written: result.rows_written(),
            bytes_written: result.bytes_written(),
        })
    }
}

/// Writes chingest's engine configuration into the data directory (each file
/// replaced atomically) and returns the path of the one to boot with.
fn write_engine_config(
    data_dir: &Path,
    access: &EngineAccess,
) -> std::result::Result<PathBuf, String> {
    let users = data_dir.join(USERS_FILE);
    let config = data_dir.join(CONFIG_FILE);
    let write = |path: &Path, text: &str| {
        let tmp = path.with_extension("xml.tmp");
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(|e| format!("writing {}: {e}", path.display()))
    };
    write(&users, &access.users_xml())?;
    write(&config, &access.config_xml(&users.display().to_string()))?;
    Ok(config)
}

/// Checks the engine booted with chingest's configuration: every role exists
/// and the admin role is active in the session (a config that failed to apply
/// would leave the engine on its defaults, with no access control at all).
/// Every granted role is active until a session sets its own; reader
/// sessions always do (`SET ROLE`).
fn verify_boot(conn: &Connection, access: &EngineAccess) -> std::result::Result<(), String> {
    let out = conn
        .query(
            "SELECT name FROM system.roles ORDER BY name FORMAT TabSeparatedRaw",
            OutputFormat::TabSeparatedRaw,
        )
        .map_err(|e| format!("the engine's access control is not configured: {e}"))?;
    let text = out.data_utf8_lossy();
    let present: Vec<&str> = text.lines().collect();
    for role in access.role_names() {
        if !present.contains(&role) {
            return Err(format!(
                "the engine booted without chingest's role {role} (its roles: {present:?}); \
                 is another configuration overriding {CONFIG_FILE}?"
            ));
        }
    }
    let current = conn
        .query(
            "SELECT arrayStringConcat(currentRoles(), ',')",
            OutputFormat::TabSeparatedRaw,
        )
        .map_err(|e| format!("cannot read the session's roles: {e}"))?;
    let current = current.data_utf8_lossy();
    if !current.trim().split(',').any(|r| r == ADMIN_ROLE) {
        return Err(format!(
            "the engine session's roles are {:?}, without {ADMIN_ROLE}",
            current.trim()
        ));
    }
    Ok(())
}

/// `name` as a ClickHouse identifier in backticks.
pub fn quote_ident(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('`');
    for c in name.chars() {
        match c {
            '`' => out.push_str("\\`"),
            '\\' => out.push_str("\\\\"),
            _ => out.push(c),
        }
    }
    out.push('`');
    out
}

/// `value` as a ClickHouse string literal in single quotes.
pub fn quote_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        match c {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            _ => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A field of the engine's (or any ClickHouse server's) `TabSeparated` output as text: its
/// escapes (`\t`, `\n`, `\\`, …) undone.
pub fn unescape_tsv(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_and_strings_are_escaped() {
        assert_eq!(quote_ident("cpu"), "`cpu`");
        assert_eq!(quote_ident("a`b\\c"), "`a\\`b\\\\c`");
        assert_eq!(quote_string("it's"), "'it\\'s'");
        assert_eq!(quote_string("a\\b"), "'a\\\\b'");
    }
}
