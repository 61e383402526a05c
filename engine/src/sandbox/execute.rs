//! A statement run on its leased connection, watched by the watchdog:
//! streamed block by block (its blocks joined into one answer by
//! [`super::format`]) or whole; and the operator's stats queries.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use chdb_rust::format::OutputFormat;

use super::connections::{lease_back, Lease};
use super::error::{engine_message, engine_sql_error, SqlError};
use super::format::Stitcher;
use super::request::{SqlCancel, SqlSummary};
use super::watchdog::Watch;
use super::Sandbox;

impl Sandbox {
    /// Runs the statement on its connection, watched: streamed block by
    /// block, or whole. The connection goes back to the idle ones after a
    /// success that was not killed; otherwise it closes.
    pub(super) fn execute(
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

    pub(super) fn map_engine_error(&self, message: &str, cancel: &SqlCancel) -> SqlError {
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
}
