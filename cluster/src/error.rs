//! [`ClusterError`]: why a delivery or a statement on a shard failed, and how
//! the flusher's coordinator classifies it.

use engine::EngineError;

/// Why a delivery or a statement on a shard failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The shard could not be reached, or did not answer in time.
    #[error("shard {shard} ({endpoint}) unreachable: {message}")]
    Unreachable {
        /// The shard's index.
        shard: usize,
        /// Its endpoint.
        endpoint: String,
        /// What the client saw.
        message: String,
    },
    /// The shard answered with an error.
    #[error("shard {shard} ({endpoint}) refused `{statement}`: {message}")]
    Refused {
        /// The shard's index.
        shard: usize,
        /// Its endpoint.
        endpoint: String,
        /// The statement, cut to a readable length.
        statement: String,
        /// The server's error text.
        message: String,
        /// The server's error code ([`crate::code`]; `None`: not the server's error, or
        /// it gave none).
        code: Option<u32>,
    },
    /// A column has another type on the shard than in the batch.
    #[error("column {column:?} of {table} is {on_shard} on shard {shard}, not {wanted}")]
    TypeConflict {
        /// The shard's index.
        shard: usize,
        /// `db.measurement`.
        table: String,
        /// The column.
        column: String,
        /// Its type on the shard.
        on_shard: String,
        /// The type the batch needs.
        wanted: String,
    },
    /// The embedded engine failed to send the rows.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The configuration cannot work.
    #[error("invalid cluster configuration: {0}")]
    Config(String),
    /// A read would hold more rows than it may.
    #[error("more than {max_rows} rows of the cluster in one read ([sql] max_result_rows)")]
    TooManyRows {
        /// The bound.
        max_rows: u64,
    },
}

impl ClusterError {
    /// Whether the shard (or the replica asked) could not serve now: it did not answer, or
    /// its replicated tables cannot take writes (their ZooKeeper is gone). Retried, never a
    /// refusal.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, ClusterError::Unreachable { .. })
    }

    /// The server's error code ([`crate::code`]): a refusal's, from its header or either
    /// form of its text; a replica that cannot serve now, the one its text quotes.
    pub fn code(&self) -> Option<u32> {
        match self {
            ClusterError::Refused { code, .. } => *code,
            ClusterError::Unreachable { message, .. } => crate::code::in_text(message),
            _ => None,
        }
    }

    /// Whether a shard refused because a table or database does not exist there (codes 60
    /// and 81, from the server or the engine's relay of it; 390 is 18.16's `SHOW CREATE
    /// TABLE` of a table missing from an existing database).
    pub fn is_missing_table(&self) -> bool {
        use crate::code::{CANNOT_GET_CREATE_TABLE_QUERY, UNKNOWN_DATABASE, UNKNOWN_TABLE};
        matches!(
            self.code(),
            Some(UNKNOWN_TABLE | UNKNOWN_DATABASE | CANNOT_GET_CREATE_TABLE_QUERY)
        )
    }

    /// The error as the flusher's coordinator classifies it (`classify.rs`): a shard that
    /// cannot be reached is transient (retried until it is back, the WAL holding the rows), a
    /// column of another type deterministic (quarantined), a refusal by its server's code.
    pub fn into_engine_error(self) -> EngineError {
        let (statement, name) = match &self {
            ClusterError::Unreachable { .. } => ("cluster delivery", Some("CLUSTER_UNREACHABLE")),
            ClusterError::TypeConflict { .. } => ("cluster delivery", Some("TYPE_MISMATCH")),
            ClusterError::Config(_) => ("cluster delivery", Some("BAD_ARGUMENTS")),
            ClusterError::TooManyRows { .. } => ("cluster read", Some("TOO_MANY_ROWS")),
            // Named by the shard's code (18.16 names none; a relay ends with the engine's
            // RECEIVED_ERROR_FROM_REMOTE_IO_SERVER): a full or busy shard is retried, not
            // quarantined as an unknown failure repeated.
            ClusterError::Refused { code, .. } => {
                ("cluster delivery", code.and_then(crate::code::name))
            }
            ClusterError::Engine(_) => ("", None),
        };
        match (self, name) {
            (ClusterError::Engine(e), _) => e,
            (e, Some(name)) => EngineError::Query {
                statement: statement.into(),
                message: format!("{e} ({name})"),
            },
            (e, None) => EngineError::Query {
                statement: statement.into(),
                message: e.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(message: &str) -> ClusterError {
        ClusterError::Refused {
            shard: 0,
            endpoint: "http://127.0.0.1:8123/".into(),
            statement: "SELECT".into(),
            message: message.into(),
            code: crate::code::in_text(message),
        }
    }

    #[test]
    fn a_missing_table_is_known_by_its_code_in_either_form() {
        for m in [
            "Code: 60, e.displayText() = DB::Exception: Table default.x doesn't exist., \
             e.what() = DB::Exception",
            "Code: 81, e.displayText() = DB::Exception: Database nope doesn't exist, e.what() \
             = DB::Exception",
            "Code: 390, e.displayText() = DB::Exception: There is no metadata file for table \
             x, e.what() = DB::Exception",
            "Code: 60. DB::Exception: Table default.x does not exist. (UNKNOWN_TABLE) (version \
             24.8.4.13 (official build))",
            "Code: 81. DB::Exception: Database nope does not exist. (UNKNOWN_DATABASE) \
             (version 25.8.2.29 (official build))",
        ] {
            assert!(refused(m).is_missing_table(), "{m}");
        }
        let other = refused(
            "Code: 122. DB::Exception: Table columns structure in ZooKeeper is different from \
             local table structure. (INCOMPATIBLE_COLUMNS) (version 24.8.4.13 (official build))",
        );
        assert!(!other.is_missing_table());
        assert_eq!(other.code(), Some(crate::code::INCOMPATIBLE_COLUMNS));
        // A replica that cannot serve now keeps its server's code in its text.
        let down = ClusterError::Unreachable {
            shard: 0,
            endpoint: "http://127.0.0.1:8123/".into(),
            message: "cannot serve now (its ZooKeeper?): Code: 225. DB::Exception: ZooKeeper \
                      is not configured. (NO_ZOOKEEPER)"
                .into(),
        };
        assert_eq!(down.code(), Some(crate::code::NO_ZOOKEEPER));
    }
}
