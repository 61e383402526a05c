//! The sandbox's connections: opened with the limits as arguments (each read
//! back), leased to one statement, given back to the idle ones after a reader's
//! success, closed otherwise.

use std::sync::atomic::Ordering;

use chdb_rust::connection::Connection;
use chdb_rust::format::OutputFormat;

use super::error::{engine_message, SqlError};
use super::request::SqlAccess;
use super::Sandbox;
use crate::access::ReadScope;

/// A connection used by one statement; closed on drop unless given back.
pub(super) struct Lease {
    pub(super) conn: Option<Connection>,
    pub(super) comment: String,
    /// The engine role the connection has set (reader connections).
    role: Option<String>,
    /// Its engine threads per statement (reader connections).
    threads: u64,
    /// Its `readonly` level (reader connections).
    readonly: Readonly,
}

/// A reader connection waiting for its next statement.
pub(super) struct Idle {
    conn: Connection,
    comment: String,
    role: Option<String>,
    threads: u64,
    readonly: Readonly,
}

/// The `readonly` level of a reader connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Readonly {
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
    /// Opens a connection with `settings` and reads each back.
    pub(super) fn open(&self, settings: &[(&'static str, String)]) -> Result<Connection, SqlError> {
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

    pub(super) fn new_comment(&self, kind: &str) -> String {
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

    pub(super) fn lease(&self, access: &SqlAccess, readonly: Readonly) -> Result<Lease, SqlError> {
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

    /// Sets the engine role of `scope` on a reader connection, unless it has it.
    pub(super) fn set_role(&self, lease: &mut Lease, scope: &ReadScope) -> Result<(), SqlError> {
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
}

/// A reader connection whose statement succeeded goes back to the pool.
pub(super) fn lease_back(sandbox: &Sandbox, lease: &mut Lease) {
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

impl Drop for Lease {
    fn drop(&mut self) {
        // A connection not given back (failure, cancel, kill, admin) closes here.
        self.conn.take();
    }
}
