//! [`SqlError`]: why a statement did not run, or stopped, told from the
//! engine's (or a ClickHouse server's) error codes.

use super::config::SqlConfig;
use super::request::SqlCancel;

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
pub fn engine_code(message: &str) -> Option<u32> {
    let rest = &message[message.find("Code: ")? + 6..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A statement's failure as the caller is told it, from the engine's (or a ClickHouse
/// server's: the same codes) message under the limits `c`.
pub fn engine_sql_error(c: &SqlConfig, message: &str, cancel: &SqlCancel) -> SqlError {
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

pub(super) fn engine_message(e: chdb_rust::error::Error) -> String {
    match e {
        chdb_rust::error::Error::QueryError(m) => m.trim().to_string(),
        other => other.to_string(),
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
}
