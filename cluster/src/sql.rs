//! `/api/v1/sql` on a cluster (issue #25): the statement goes, as the client wrote it, to
//! one shard that answers, which runs it over the whole cluster through the `Distributed`
//! tables (`<db>`.`<m>`; `[storage.clickhouse] distributed`) and streams the answer back.
//!
//! The guarantees are the server's, enforced where the statement runs, never by chingest
//! reading the statement (a ClickHouse of another version could parse it differently):
//! `readonly=1` and the `[sql]` limits as settings of the request, which the statement
//! cannot lift (18.16 and later refuse `SET`, `SETTINGS` and table functions under
//! `readonly=1`: tested); `wait_end_of_query=1`, so a statement that fails after its first
//! rows answers an error, not a cut answer with a success status. Per-database access too:
//! chingest's own user on the shards reads every database, so a non-admin's statement runs
//! as the shards' *reader* of the one database it reads (`[[storage.clickhouse.readers]]`:
//! a user the servers' `users.xml` allows that database and its `__shard_` database only),
//! with that database as the statement's default; the server refuses anything else
//! (`Access denied to database …`, tested: other databases, subqueries, joins, views, and
//! `system` tables list no other database's tables or columns). `storage` decides who runs
//! as whom.

use std::io::Read;
use std::sync::atomic::Ordering;
use std::time::Duration;

use engine::sandbox::{engine_code, engine_sql_error, SqlCancel, SqlConfig, SqlError, SqlSummary};

use crate::{Cluster, ClusterError};

/// The piece of an answer handed to the sink at a time.
const BLOCK_BYTES: usize = 64 << 10;

impl Cluster {
    /// Runs a user's read-only statement on the cluster, the answer in ClickHouse's
    /// `format` (`JSON`, `JSONEachRow`, `CSVWithNames`, `ArrowStream` where the server has
    /// it) handed to `sink` in blocks; `sink` answering false stops it (cancelled).
    /// `reader`: the database whose reader runs it ([`Cluster::reader`]); `None`:
    /// chingest's own user.
    pub fn sql(
        &self,
        sql: &str,
        format: &str,
        limits: &SqlConfig,
        cancel: &SqlCancel,
        sink: &mut dyn FnMut(&[u8]) -> bool,
        reader: Option<&str>,
    ) -> Result<SqlSummary, SqlError> {
        if self.config.distributed.is_none() {
            return Err(SqlError::Invalid(
                "SQL on a ClickHouse cluster reads its Distributed tables: set \
                 [storage.clickhouse] distributed to the cluster's name in the servers' \
                 remote_servers (docs/architecture.md)"
                    .into(),
            ));
        }
        let reader = match reader {
            None => None,
            Some(db) => Some(self.reader(db).ok_or_else(|| {
                SqlError::Forbidden(format!("no reader of database {db:?} on the shards"))
            })?),
        };
        let mut settings = limits.shard_settings();
        if let Some(r) = reader {
            settings.push(("database", r.database.clone()));
        }
        settings.push(("default_format", format.to_string()));
        settings.push(("wait_end_of_query", "1".to_string()));
        let timeout = Duration::from_secs(limits.max_execution_secs + 5);
        let shards = self.config.shards.len();
        // Statements take turns among the shards; one that does not answer passes the
        // statement to the next.
        let first = self.next_sql_shard.fetch_add(1, Ordering::Relaxed) % shards;
        let mut down = Vec::new();
        for k in (0..shards).map(|i| (first + i) % shards) {
            if cancel.is_cancelled() {
                return Err(SqlError::Cancelled);
            }
            match self.http.user_statement(k, sql, &settings, timeout, reader) {
                Ok(Ok(answer)) => return stream(answer, cancel, sink),
                Ok(Err(message)) if reached_no_other_shard(&message) => {
                    return Err(SqlError::Unavailable(format!(
                        "shard {k} could not read every shard of the cluster (one is down?): \
                         {message}"
                    )))
                }
                Ok(Err(message)) if reader.is_some() && refused_credentials(&message) => {
                    return Err(SqlError::Unavailable(format!(
                        "shard {k} refused the credentials of the reader of database {:?} \
                         ([[storage.clickhouse.readers]] and the servers' users.xml must \
                         agree): {message}",
                        reader.map_or("", |r| r.database.as_str())
                    )))
                }
                Ok(Err(message)) => return Err(engine_sql_error(limits, &message, cancel)),
                Err(e @ ClusterError::Unreachable { .. }) => down.push(e.to_string()),
                Err(e) => return Err(SqlError::Unavailable(e.to_string())),
            }
        }
        Err(SqlError::Unavailable(format!(
            "no shard of the cluster answers: {}",
            down.join("; ")
        )))
    }
}

impl Cluster {
    /// The shards' reader of `db` (`[[storage.clickhouse.readers]]`), if one is configured.
    pub fn reader(&self, db: &str) -> Option<&crate::ShardReader> {
        self.config.readers.iter().find(|r| r.database == db)
    }
}

/// Whether a server's error says another shard could not be reached (the `Distributed`
/// table's read of it): the statement may succeed later, so `503`, not the caller's fault.
/// ClickHouse's codes: `SOCKET_TIMEOUT` (209), `NETWORK_ERROR` (210),
/// `ALL_CONNECTION_TRIES_FAILED` (279), `ALL_REPLICAS_ARE_STALE` (369).
fn reached_no_other_shard(message: &str) -> bool {
    matches!(engine_code(message), Some(209 | 210 | 279 | 369))
}

/// Whether a server's error says it does not know the user or its password: the
/// configuration's fault, not the statement's. ClickHouse's codes: `UNKNOWN_USER` (192),
/// `WRONG_PASSWORD` (193), `REQUIRED_PASSWORD` (194), `IP_ADDRESS_NOT_ALLOWED` (195),
/// `AUTHENTICATION_FAILED` (516).
fn refused_credentials(message: &str) -> bool {
    matches!(engine_code(message), Some(192..=195 | 516))
}

/// Hands `answer`'s body to `sink` block by block.
fn stream(
    mut answer: reqwest::blocking::Response,
    cancel: &SqlCancel,
    sink: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<SqlSummary, SqlError> {
    let mut out = SqlSummary::default();
    let mut buf = vec![0u8; BLOCK_BYTES];
    loop {
        if cancel.is_cancelled() {
            return Err(SqlError::Cancelled);
        }
        let n = answer
            .read(&mut buf)
            .map_err(|e| SqlError::Unavailable(format!("the shard stopped answering: {e}")))?;
        if n == 0 {
            return Ok(out);
        }
        if !sink(&buf[..n]) {
            return Err(SqlError::Cancelled);
        }
        out.chunks += 1;
        out.bytes += n as u64;
    }
}
