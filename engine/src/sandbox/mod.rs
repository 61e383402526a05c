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
//!   there is exactly one statement) is checked by `gate`.
//! - **Per-database permissions are the engine's**: a non-admin statement runs
//!   after `SET ROLE <the role of its read scope>` ([`crate::access`]).
//! - **Streaming**: the statement runs through the streaming API; each block
//!   goes to the caller's sink as it comes (bounded memory). A failed, timed
//!   out or cancelled statement's connection is closed, never reused.
//! - **Cancellation**: a watchdog thread kills (`KILL QUERY WHERE
//!   Settings['log_comment'] = '<the connection's own comment>'`, from a
//!   control connection) a statement whose caller cancelled (client gone) or
//!   that outlived its time limit while blocked inside the engine.

//!
//! Its parts: `config` (the `[sql]` limits), `request` (who runs a
//! statement, its cancel token, its summary), `error` (the engine's codes
//! as [`SqlError`]), `connections` (opened, leased, given back), `execute`
//! (streamed or whole), `watchdog` (kills), `gate` (the engine's parse
//! checked), `format` (streamed blocks joined into one answer).

mod config;
mod connections;
mod error;
mod execute;
mod format;
mod gate;
mod request;
mod watchdog;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chdb_rust::admin::QueryClass;
use chdb_rust::connection::Connection;
use chdb_rust::format::OutputFormat;
use parking_lot::Mutex;

pub use config::SqlConfig;
pub use error::{engine_code, engine_sql_error, SqlError};
pub use request::{SqlAccess, SqlCancel, SqlSummary};

use crate::access::{EngineAccess, ReadScope};
use crate::error::cut;
use connections::{lease_back, Idle, Readonly};
use error::engine_message;
use watchdog::{watchdog, Watch};

/// Told while an admin SQL statement that may change data runs: it may insert
/// rows anywhere, rows no other part of chingest saw (flush's identity index
/// groups every row meanwhile and reloads afterwards). Every start is followed
/// by one done, also when the statement fails.
pub trait AdminWriteObserver: Send + Sync {
    /// An admin statement that may change data starts.
    fn admin_write_started(&self);
    /// That statement ended, whatever its outcome.
    fn admin_write_done(&self);
}

/// Nobody to tell: an engine opened without an observer ([`crate::Engine::open`]).
impl AdminWriteObserver for () {
    fn admin_write_started(&self) {}
    fn admin_write_done(&self) {}
}

/// The sandbox: its connections, its bound, its watchdog.
pub(crate) struct Sandbox {
    path_arg: String,
    config: SqlConfig,
    access: EngineAccess,
    /// Reader connections, with their comment and the role they have set.
    idle: Mutex<Vec<Idle>>,
    /// Statements running: `.0` every one, `.1` of them the server's own
    /// background reads ([`run_background`](Self::run_background)), which
    /// the bound of client statements does not count.
    in_flight: Mutex<(usize, usize)>,
    next_id: AtomicU64,
    control: Mutex<Option<Connection>>,
    stats: Mutex<Option<Connection>>,
    watches: Mutex<HashMap<u64, Watch>>,
    closed: AtomicBool,
    /// Told while an admin statement that may change data runs: it may
    /// insert rows the flusher never saw.
    admin_writes: Arc<dyn AdminWriteObserver>,
}

/// An admin statement that may change data, running (see [`AdminWriteObserver`]).
struct AdminWrite<'a>(&'a dyn AdminWriteObserver);

impl Drop for AdminWrite<'_> {
    fn drop(&mut self) {
        self.0.admin_write_done();
    }
}

/// A slot of the concurrency bound (`.1`: a background one), released on drop.
struct Slot<'a>(&'a Sandbox, bool);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut n = self.0.in_flight.lock();
        n.0 -= 1;
        if self.1 {
            n.1 -= 1;
        }
    }
}

/// Background statements that may run at once: the hot store's refill reads
/// its slices one at a time.
const BACKGROUND_STATEMENTS: usize = 1;

/// Whose bound a generated statement counts against ([`Sandbox::run_generated`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// What clients run: `[sql] max_concurrent_queries`.
    Clients,
    /// The server's own background reads, one at a time, beside the clients'.
    Background,
}

impl Sandbox {
    pub(crate) fn start(
        path_arg: String,
        config: SqlConfig,
        access: EngineAccess,
        admin_writes: Arc<dyn AdminWriteObserver>,
    ) -> Arc<Sandbox> {
        let sandbox = Arc::new(Sandbox {
            path_arg,
            config,
            access,
            admin_writes,
            idle: Mutex::new(Vec::new()),
            in_flight: Mutex::new((0, 0)),
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
        let nodes = gate::parse_tree(&ast).ok_or_else(|| {
            SqlError::Invalid(format!(
                "the engine's parse of the statement has an unexpected shape: {}",
                cut(&ast, 200)
            ))
        })?;
        if let Some(f) = gate::format_clause(&nodes) {
            lease_back(self, &mut lease);
            return Err(SqlError::Invalid(format!(
                "the statement chooses its output format (FORMAT {f}); choose it with the format \
                 parameter (json, jsoneachrow, csv, arrow) or Accept instead"
            )));
        }
        let violation = match access {
            SqlAccess::Read(_) => gate::reader_violation(&nodes),
            SqlAccess::Admin => gate::admin_violation(&nodes),
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
            self.admin_writes.admin_write_started();
            AdminWrite(&*self.admin_writes)
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
    ///
    /// `lane`: [`Lane::Clients`] counts against `[sql] max_concurrent_queries`;
    /// [`Lane::Background`] (the server's own reads: the hot store's refill)
    /// does not, so that it never makes a client's statement `Busy`, and runs
    /// at most [`BACKGROUND_STATEMENTS`] at once (`Busy` beyond).
    pub(crate) fn run_generated(
        &self,
        lane: Lane,
        sql: &str,
        format: OutputFormat,
        access: &SqlAccess,
        cancel: &SqlCancel,
        sink: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<SqlSummary, SqlError> {
        let _slot = match lane {
            Lane::Clients => self.slot()?,
            Lane::Background => self.background_slot()?,
        };
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
        if n.0 - n.1 >= self.config.max_concurrent_queries {
            return Err(SqlError::Busy {
                limit: self.config.max_concurrent_queries,
            });
        }
        n.0 += 1;
        Ok(Slot(self, false))
    }

    /// A background slot ([`run_background`](Self::run_background)), or `Busy`
    /// at once.
    fn background_slot(&self) -> Result<Slot<'_>, SqlError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(SqlError::Unavailable("the engine is shutting down".into()));
        }
        let mut n = self.in_flight.lock();
        if n.1 >= BACKGROUND_STATEMENTS {
            return Err(SqlError::Busy {
                limit: BACKGROUND_STATEMENTS,
            });
        }
        n.0 += 1;
        n.1 += 1;
        Ok(Slot(self, true))
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
        while self.in_flight.lock().0 > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.idle.lock().clear();
        *self.control.lock() = None;
        *self.stats.lock() = None;
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
