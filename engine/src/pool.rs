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
//! Arrow batches reach the engine through the C Data Interface in
//! [`crate::arrow_ffi`] (inserts, and scans reads register), the one module
//! of this crate besides [`crate::exit`] with `unsafe` code.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use chdb_rust::connection::Connection;
use chdb_rust::format::OutputFormat;
use parking_lot::{Condvar, Mutex};

use crate::access::{verify_boot, write_engine_config, EngineAccess, ReadScope};
use crate::config::EngineConfig;
use crate::error::{EngineError, Result};
use crate::sandbox::{
    AdminWriteObserver, Lane, Sandbox, SqlAccess, SqlCancel, SqlConfig, SqlError, SqlSummary,
};

/// The engine of this process: a data path and a pool of connections to it.
/// Cheap to clone; the engine closes when the last clone and every borrowed
/// connection are gone.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    data_dir: PathBuf,
    /// `--path=<data_dir>`: every connection names the same path.
    path_arg: String,
    pool: Mutex<Pool>,
    returned: Condvar,
    sandbox: Arc<Sandbox>,
    /// Registers batches reads scan (`ArrowScan`): the engine's Arrow
    /// registry is process-wide, a registration only needs a live
    /// connection, and this one never waits behind an insert.
    pub(crate) scan_conn: Mutex<Option<Connection>>,
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
    /// `config.pool_size()` connections, the default SQL limits, no reader
    /// roles beyond "all" and "none" and nobody told of admin writes; see
    /// [`Engine::open_with`].
    pub fn open(config: &EngineConfig) -> Result<Engine> {
        Engine::open_with(
            config,
            &EngineAccess::new([]),
            SqlConfig::default(),
            Arc::new(()),
        )
    }

    /// Opens the engine on `config.data_dir` with a pool of
    /// `config.pool_size()` connections, booting it with chingest's own
    /// configuration (`access`: one engine role per read scope) and the SQL
    /// sandbox's limits. `admin_writes` is told while an admin SQL statement
    /// that may change data runs (flush's identity index: such a statement
    /// may insert rows the flusher never saw).
    pub fn open_with(
        config: &EngineConfig,
        access: &EngineAccess,
        sql: SqlConfig,
        admin_writes: Arc<dyn AdminWriteObserver>,
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
        let sandbox = Sandbox::start(path_arg.clone(), sql, access.clone(), admin_writes);
        let inner = Arc::new(Inner {
            data_dir,
            path_arg,
            pool: Mutex::new(Pool { idle: conns, size }),
            returned: Condvar::new(),
            sandbox,
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

    /// Runs `statement` (one that runs elsewhere: user SQL on a ClickHouse
    /// cluster's shard) within the SQL sandbox's concurrency bound, handing it
    /// the sandbox's limits: a statement elsewhere counts against the same
    /// bound as one in the engine. Blocking.
    pub fn sql_elsewhere<T>(
        &self,
        statement: impl FnOnce(&SqlConfig) -> std::result::Result<T, SqlError>,
    ) -> std::result::Result<T, SqlError> {
        self.inner.sandbox.run_elsewhere(statement)
    }

    /// Runs a `SELECT` chingest generated (InfluxQL plans) on the SQL
    /// sandbox: its connections, `readonly=1`, limits and the caller's
    /// engine role, without the user-SQL gate, in `lane` (the clients' bound,
    /// or the server's own background reads beside it). See
    /// [`Sandbox::run_generated`](crate::sandbox).
    pub fn sql_generated(
        &self,
        lane: Lane,
        sql: &str,
        format: OutputFormat,
        access: &SqlAccess,
        cancel: &SqlCancel,
        sink: &mut dyn FnMut(&[u8]) -> bool,
    ) -> std::result::Result<SqlSummary, SqlError> {
        self.inner
            .sandbox
            .run_generated(lane, sql, format, access, cancel, sink)
    }

    /// Whether the SQL sandbox has an engine role for `scope` (one the engine booted with).
    pub fn has_read_role(&self, scope: &ReadScope) -> bool {
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
    pub(crate) failed: AtomicBool,
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

impl PooledConnection {
    pub(crate) fn conn(&self) -> &Connection {
        self.conn.as_ref().expect("connection present until drop")
    }

    pub(crate) fn failed(&self, sql: &str, e: chdb_rust::error::Error) -> EngineError {
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
}
