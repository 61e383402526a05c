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

    /// Whether a shard refused because a table or database does not exist there
    /// (18.16's codes 60 and 81, as the server's text or the engine's relay of it; 390 is
    /// its `SHOW CREATE TABLE` of a table missing from an existing database).
    pub fn is_missing_table(&self) -> bool {
        match self {
            ClusterError::Refused { message, .. } => {
                message.contains("UNKNOWN_TABLE")
                    || message.contains("UNKNOWN_DATABASE")
                    || message.contains("Code: 60,")
                    || message.contains("Code: 81,")
                    || message.contains("Code: 390,")
                    || message.contains("doesn't exist")
            }
            _ => false,
        }
    }

    /// The error as the flusher's coordinator classifies it (`classify.rs`): a shard that
    /// cannot be reached is transient (retried until it is back, the WAL holding the rows), a
    /// column of another type deterministic (quarantined), a refusal by its server's words.
    pub fn into_engine_error(self) -> EngineError {
        let (statement, name) = match &self {
            ClusterError::Unreachable { .. } => ("cluster delivery", Some("CLUSTER_UNREACHABLE")),
            ClusterError::TypeConflict { .. } => ("cluster delivery", Some("TYPE_MISMATCH")),
            ClusterError::Config(_) => ("cluster delivery", Some("BAD_ARGUMENTS")),
            ClusterError::TooManyRows { .. } => ("cluster read", Some("TOO_MANY_ROWS")),
            ClusterError::Refused { .. } => ("cluster delivery", None),
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
