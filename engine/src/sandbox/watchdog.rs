//! The watchdog: a thread that kills (`KILL QUERY` on a control connection) a
//! statement whose caller cancelled or that outlived its time limit while
//! blocked inside the engine.

use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::{Duration, Instant};

use chdb_rust::format::OutputFormat;

use super::error::engine_message;
use super::request::SqlCancel;
use super::Sandbox;
use crate::quote::quote_string;

/// A watched statement: what the watchdog kills, and when.
pub(super) struct Watch {
    pub(super) comment: String,
    pub(super) cancel: SqlCancel,
    pub(super) deadline: Instant,
    pub(super) killed: bool,
}

impl Sandbox {
    /// Kills the statement running on the connection with `comment`.
    pub(super) fn kill(&self, comment: &str) {
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
            quote_string(comment)
        );
        if let Err(e) = conn.query(&sql, OutputFormat::TabSeparated) {
            tracing::warn!("KILL QUERY failed: {}", engine_message(e));
            *guard = None;
        }
    }
}

/// Kills statements whose caller cancelled or whose time is up; polls every 50 ms.
pub(super) fn watchdog(sandbox: Weak<Sandbox>) {
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
