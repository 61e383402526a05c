//! # flush: chingest's engine side
//!
//! Brief overview:
//! - [`engine`]: the one chDB engine of this process (one data path), a pool of
//!   connections, SQL, and Arrow `RecordBatch` inserts through the C Data
//!   Interface. All FFI and `unsafe` of the crate is there.
//! - [`error`]: [`EngineError`], carrying the engine's own messages.

pub mod engine;
pub mod error;

pub use engine::{quote_ident, quote_string, Engine, EngineConfig, InsertStats, PooledConnection};
pub use error::EngineError;

/// The Arrow crate this crate builds batches with (the version chdb-rust links).
pub use arrow;
/// Output formats the engine can answer in.
pub use chdb_rust::format::OutputFormat;
