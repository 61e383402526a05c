//! Error types of the ingest crate.
//!
//! Per-line problems are not errors of the request: they travel inside
//! [`PreparedWrite`](crate::PreparedWrite) as [`LineError`]s / [`DroppedPoint`]s so a bad line spares
//! its neighbours. [`WriteError`] is for requests that cannot be processed at all.

use std::fmt;

/// An unknown `precision` query parameter (InfluxDB 1.x's spellings, see
/// [`Precision::from_v1`](crate::Precision::from_v1)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid precision {given:?}: expected one of ns, u, us, ms, s, m, h")]
pub struct PrecisionError {
    /// What the client sent (cut to 32 characters).
    pub given: String,
}

/// A line of line protocol (or a msgpack point) that could not be parsed.
///
/// Displays exactly as InfluxDB 1.x: `unable to parse '<line>': <reason>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// The offending line, leading whitespace and the newline stripped (lossy UTF-8).
    pub line: String,
    /// InfluxDB's reason text, e.g. `invalid number`.
    pub reason: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unable to parse '{}': {}", self.line, self.reason)
    }
}

/// Why a parsed point was dropped while resolving schema and series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DropKind {
    /// A field's type differs from the type the field already has.
    TypeConflict,
    /// A cardinality limit (series, measurements, tag values) would be exceeded.
    Limit,
    /// The point's only field was `time`, which InfluxDB drops.
    InvalidField,
    /// A field key is already a tag key of the measurement, or the other way round (both
    /// would be columns of one name).
    ColumnConflict,
    /// The point is older than the database's retention (InfluxDB's "points beyond
    /// retention policy").
    BeyondRetention,
    /// A name storage cannot hold: not UTF-8 (measurement, tag key or value, field key), a
    /// column name the engine reserves, or a measurement name too long for the engine's
    /// file names ([`names`](crate::names) has the rules). HTTP 400.
    InvalidName,
    /// The point would give its measurement more columns than the limit, or column names
    /// past the engine's statement size ([`names::MAX_COLUMN_BYTES`](crate::names::MAX_COLUMN_BYTES)).
    /// HTTP 400: the engine could never hold it.
    TooManyColumns,
}

/// Points dropped for one reason (identical reasons are counted once with a count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedPoint {
    /// The class of the reason (decides the HTTP status).
    pub kind: DropKind,
    /// InfluxDB-style reason text, e.g.
    /// `field type conflict: input field "f" on measurement "m" is type string, already exists as type float`.
    pub reason: String,
    /// How many points were dropped with this exact reason.
    pub count: usize,
}

/// A request that could not be processed at all (not a per-line problem).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The msgpack body is malformed.
    #[error(transparent)]
    Msgpack(#[from] MsgpackError),
    /// Building the Arrow batch failed (an internal error: the layout is built by this crate).
    #[error("building arrow batch: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    /// The database name is refused ([`check_database`](crate::names::check_database)).
    #[error(transparent)]
    InvalidDatabase(#[from] crate::names::NameError),
}

impl WriteError {
    /// True when the client is at fault (HTTP 400), false for an internal error (HTTP 500).
    pub fn is_client_error(&self) -> bool {
        matches!(
            self,
            WriteError::Msgpack(_) | WriteError::InvalidDatabase(_)
        )
    }
}

/// A malformed msgpack body: what was wrong and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid msgpack at byte {offset}: {reason}")]
pub struct MsgpackError {
    /// Byte offset in the body where the problem was detected.
    pub offset: usize,
    /// What was expected or wrong.
    pub reason: String,
}

/// A WAL payload that [`wire::decode`](crate::wire::decode) rejects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// The payload does not start with the magic bytes.
    #[error("bad magic: not a chingest write payload")]
    BadMagic,
    /// The payload's format version is not understood by this build.
    #[error("unsupported payload version {0}")]
    UnsupportedVersion(u8),
    /// The payload ends before a length-prefixed element it announces.
    #[error("truncated payload: {what} at byte {offset}")]
    Truncated {
        /// The element being read.
        what: &'static str,
        /// Where it started.
        offset: usize,
    },
    /// A name is not UTF-8.
    #[error("{what} at byte {offset} is not UTF-8")]
    Utf8 {
        /// The element being read.
        what: &'static str,
        /// Where it started.
        offset: usize,
    },
    /// Bytes follow the last measurement.
    #[error("{0} trailing bytes after the last measurement")]
    TrailingBytes(usize),
    /// An Arrow IPC stream inside the payload is invalid.
    #[error("measurement {measurement:?}: invalid arrow ipc stream: {reason}")]
    Arrow {
        /// The measurement whose stream failed.
        measurement: String,
        /// Arrow's message.
        reason: String,
    },
}

/// A persisted catalog metadata record that cannot be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// The record's key or value does not follow the documented format.
    #[error("corrupt catalog record (key {key:02x?}): {reason}")]
    CorruptRecord {
        /// The record key.
        key: Vec<u8>,
        /// What was wrong.
        reason: &'static str,
    },
}

/// Bytes that are not a canonical series key ([`SeriesKey`](crate::series::SeriesKey)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid series key {key:02x?}: {reason}")]
pub struct SeriesKeyError {
    /// The key (its first 64 bytes).
    pub key: Vec<u8>,
    /// What was wrong.
    pub reason: &'static str,
}
