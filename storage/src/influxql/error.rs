//! [`InfluxqlError`]: why one InfluxQL statement has no answer. The server maps
//! it to HTTP once (`server/src/error.rs`): most become the statement's
//! `"error"` in a 200 answer, as InfluxDB 1.x does.

/// Why one statement has no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InfluxqlError {
    /// Used if neither `db` nor a qualified name says which database.
    #[error("database name required")]
    DatabaseRequired,
    /// Used if the database does not exist.
    #[error("database not found: {db}")]
    DatabaseNotFound {
        /// The database.
        db: String,
    },
    /// Used if a qualified name or `rp` names a policy other than the
    /// database's one (`autogen`).
    #[error("retention policy not found: {rp}")]
    RetentionPolicyNotFound {
        /// The policy named.
        rp: String,
    },
    /// Used if the statement is not valid InfluxQL for InfluxDB either; the
    /// text is InfluxDB's (`mixing aggregate and non-aggregate queries is not
    /// supported`, `undefined function foo()`).
    #[error("{0}")]
    Invalid(String),
    /// Used if InfluxDB answers the statement and chingest does not (yet):
    /// never a wrong answer instead.
    #[error("{what} is not supported by chingest (see docs/influxql.md)")]
    Unsupported {
        /// What, as InfluxQL names it (`INTO`, `holt_winters()`, `subqueries`).
        what: String,
    },
    /// Used if the engine's SQL sandbox refused or failed the statement chingest
    /// generated (no read access, a limit, a busy sandbox).
    #[error(transparent)]
    Sql(#[from] engine::SqlError),
    /// Used if storage failed a statement that changes data (`DELETE`, `DROP SERIES`).
    #[error(transparent)]
    Storage(#[from] Box<crate::StorageError>),
    /// Used if the engine answered in a shape chingest does not read (a bug).
    #[error("unexpected engine answer: {0}")]
    EngineAnswer(String),
}

impl InfluxqlError {
    /// An [`InfluxqlError::Unsupported`] naming `what`.
    pub(crate) fn unsupported(what: impl Into<String>) -> InfluxqlError {
        InfluxqlError::Unsupported { what: what.into() }
    }

    /// An [`InfluxqlError::Invalid`] with InfluxDB's text.
    pub(crate) fn invalid(text: impl Into<String>) -> InfluxqlError {
        InfluxqlError::Invalid(text.into())
    }
}
