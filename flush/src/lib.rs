//! # flush: chingest's engine side
//!
//! Brief overview:
//! - [`engine`]: the one chDB engine of this process (one data path), a pool of
//!   connections, SQL, and Arrow `RecordBatch` inserts through the C Data
//!   Interface. All FFI and `unsafe` of the crate is there.
//! - [`sandbox`]: user SQL on connections of its own (readonly, limits the
//!   statement cannot lift, the engine's classification and parse, engine roles
//!   per read scope, streaming, cancellation); [`access`]: the engine
//!   configuration and roles chingest boots the engine with.
//! - [`table`]: databases and MergeTree tables created and widened on demand,
//!   coalescing request batches, and the point-identity read form.
//! - The [`Flusher`] (`flusher.rs`): committed WAL entries in, coalesced
//!   inserts out, the WAL's flushed sequence advanced only after the engine
//!   holds the rows durably; exactly once across crashes. Its parts:
//!   - `replay.rs`: the [`Resume`] it starts from, and which replayed parts
//!     the engine already holds (by `__seq`), so they are not inserted twice;
//!   - `coordinator.rs`: one thread buffering per (database, measurement)
//!     (`buffer.rs`), dispatching due buffers, retrying failures with
//!     back-off, answering `DROP DATABASE`;
//!   - `worker.rs`: coalesce a job's parts, create tables and columns, insert
//!     one block;
//!   - `classify.rs`: transient failures are retried, deterministic ones
//!     (the engine refuses the statement for what it is) are isolated and
//!     quarantined as [`DeadLetter`]s (`dead_letter.rs`), never dropped;
//!   - `watermark.rs`: the contiguous flushed prefix, reported through the
//!     [`FlushedLog`] trait (the WAL, implemented above this crate: flush does
//!     not know the WAL).
//! - [`config`]: the `[flush]` section, [`FlushConfig`] with the engine's
//!   [`EngineConfig`] flattened into it.
//! - [`error`]: [`EngineError`] carrying the engine's own messages,
//!   [`FlushConfigError`], [`MarkError`].
//!
//! flush keeps no series registry of its own: the catalog's series records
//! (ingest) are the one registry.

pub mod access;
pub mod cluster;
pub mod config;
pub mod engine;
pub mod error;
pub mod exit;
pub mod fence;
pub mod identity;
pub mod ingest_load;
pub mod sandbox;
mod sql_format;
mod sql_gate;
pub mod table;
pub mod unflushed;

mod buffer;
pub mod classify;
mod coordinator;
pub mod dead_letter;
mod flusher;
mod replay;
mod watermark;
mod worker;

pub use access::{EngineAccess, ReadScope};
pub use config::{EngineConfig, FlushConfig};
pub use dead_letter::DeadLetter;
pub use engine::{
    quote_ident, quote_string, unescape_tsv, ArrowScan, Engine, InsertStats, PooledConnection,
};
pub use error::{EngineError, FlushConfigError, MarkError};
pub use fence::{DropScope, Fences};
pub use flusher::{FlushStatus, FlushWrite, Flusher, Retrier, RetryOutcome};
pub use identity::{
    Cell, IdentityIndex, InsertGuard, LastPoint, LastPoints, Reader, Resolved, Rewrites, Snapshot,
    TableLasts,
};
pub use replay::Resume;
pub use sandbox::{SqlAccess, SqlCancel, SqlConfig, SqlError, SqlSummary};
pub use unflushed::{Unflushed, UnflushedPart};
pub use watermark::FlushedLog;

/// The Arrow crate this crate builds batches with (the version chdb-rust links).
pub use arrow;
/// Output formats the engine can answer in.
pub use chdb_rust::format::OutputFormat;
