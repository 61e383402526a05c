//! The ways the engine layer fails: [`EngineError`] from the engine,
//! [`ConfigError`] from a setting.

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

    /// A statement the engine refused, with the engine's message.
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

/// A setting that cannot work: of the engine's part of the `[flush]` section
/// ([`crate::EngineConfig::validate`], and flush's `FlushConfig::validate` for the
/// rest of it) or of `[sql]` ([`crate::SqlConfig::validate`]). The message names
/// `[flush]` for both, as it always has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid flush config: {key} = {value}: {reason}")]
pub struct ConfigError {
    /// The key within the `[flush]` section, e.g. `max_points_per_batch`.
    pub key: &'static str,
    /// The value given.
    pub value: String,
    /// What the value must be.
    pub reason: String,
}

impl ConfigError {
    /// The setting `key`, given as `value`, and what it must be.
    pub fn new(
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

/// Result alias for engine calls.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;
