//! The crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong in the load generator outside of the measured
/// requests themselves (those are outcomes, counted in the results, never errors).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A JSON file (manifest or result) could not be read or written.
    #[error("{}: {source}", path.display())]
    Json {
        /// The file involved.
        path: PathBuf,
        /// The underlying error.
        source: serde_json::Error,
    },
    /// A knob or argument is out of range or malformed.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The target URL cannot be used.
    #[error("invalid URL {url:?}: {reason}")]
    Url {
        /// The URL as given (credentials redacted).
        url: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A payload directory is inconsistent with its manifest.
    #[error("{}: {reason}", path.display())]
    Payload {
        /// The payload directory or file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Encoding a payload failed.
    #[error("encoding payload: {0}")]
    Encode(String),
    /// An HTTP exchange outside the measured requests failed (the query
    /// benchmark's writes and queries must all succeed).
    #[error("{url}: {reason}")]
    Http {
        /// The URL (credentials redacted).
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// A benchmark precondition does not hold: a server refused a query, or
    /// two servers answer the same query differently.
    #[error("check failed: {0}")]
    Check(String),
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
