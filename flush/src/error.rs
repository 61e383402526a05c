//! The ways the engine side fails: [`EngineError`] from the engine,
//! [`FlushConfigError`] from a setting, [`MarkError`] from the flushed log.

/// An engine failure. Engine errors carry the engine's own message verbatim,
/// so a caller (and ultimately an HTTP client) sees what ClickHouse said.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The engine could not be opened on the data path.
    #[error("cannot open the chDB engine on {path}: {message}")]
    Open {
        /// The data path asked for.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// This process already runs the engine on another data path; chDB binds
    /// one path per process.
    #[error("the chDB engine is already open on {active} in this process; it cannot also open {requested}")]
    PathConflict {
        /// The path the engine is bound to.
        active: String,
        /// The path that was asked for.
        requested: String,
    },
    /// The engine rejected a statement.
    #[error("chDB error: {message} (statement: {statement})")]
    Query {
        /// The statement, cut to 200 characters.
        statement: String,
        /// The engine's message.
        message: String,
    },
    /// A batch could not be handed to the engine through the Arrow C interface.
    #[error("arrow hand-off failed: {0}")]
    Arrow(String),
    /// The engine has been shut down in this process.
    #[error("the chDB engine has been shut down")]
    ShutDown,
}

impl EngineError {
    /// The engine's message alone, without the statement.
    pub fn engine_message(&self) -> Option<&str> {
        match self {
            EngineError::Query { message, .. } => Some(message),
            _ => None,
        }
    }

    pub(crate) fn query(statement: &str, err: chdb_rust::error::Error) -> Self {
        let message = match err {
            chdb_rust::error::Error::QueryError(m) => m,
            other => other.to_string(),
        };
        EngineError::Query {
            statement: cut(statement, 200),
            message: message.trim().to_string(),
        }
    }
}

/// `s` cut to at most `max` bytes on a character boundary, with an ellipsis.
pub(crate) fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// A `[flush]` setting that cannot work; used by [`crate::FlushConfig::validate`]
/// and [`crate::EngineConfig::validate`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid flush config: {key} = {value}: {reason}")]
pub struct FlushConfigError {
    /// The key within the `[flush]` section, e.g. `max_points_per_batch`.
    pub key: &'static str,
    /// The value given.
    pub value: String,
    /// What the value must be.
    pub reason: String,
}

impl FlushConfigError {
    pub(crate) fn new(
        key: &'static str,
        value: impl std::fmt::Display,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            key,
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}

/// A [`crate::FlushedLog`] could not record the flushed watermark. The
/// flusher logs it with the sequence and goes on: its next advance records a
/// later sequence, which covers this one. The engine already holds the rows,
/// so nothing is lost (a restart skips them by `__seq`).
#[derive(Debug, thiserror::Error)]
#[error("cannot record the flushed sequence: {source}")]
pub struct MarkError {
    /// Why, as the log reported it (e.g. a `wal::WalError`).
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl MarkError {
    /// Wraps the log's own error.
    pub fn new(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self {
            source: source.into(),
        }
    }
}

/// Result alias for engine calls.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;
