//! # flush: chingest's engine side
//!
//! Brief overview:
//! - [`engine`]: the one chDB engine of this process (one data path), a pool of
//!   connections, SQL, and Arrow `RecordBatch` inserts through the C Data
//!   Interface. All FFI and `unsafe` of the crate is there.
//! - [`table`]: databases and MergeTree tables created and widened on demand,
//!   coalescing request batches, and the point-identity read form.
//! - [`pipeline`]: the [`Flusher`] — committed WAL entries in, coalesced
//!   inserts out, the WAL's flushed sequence advanced only after the engine
//!   holds the rows durably; exactly once across crashes.
//! - [`error`]: [`EngineError`], carrying the engine's own messages.

pub mod engine;
pub mod error;
pub mod pipeline;
pub mod table;

pub use engine::{quote_ident, quote_string, Engine, EngineConfig, InsertStats, PooledConnection};
pub use error::EngineError;
pub use pipeline::{FlushConfig, FlushStatus, FlushWrite, Flusher, MarkFlushed, Resume};

/// The Arrow crate this crate builds batches with (the version chdb-rust links).
pub use arrow;
/// Output formats the engine can answer in.
pub use chdb_rust::format::OutputFormat;
