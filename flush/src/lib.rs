//! # flush: committed writes into the engine, and what reads need to know meanwhile
//!
//! Brief overview:
//! - The [`Flusher`] (`flusher.rs`): committed WAL entries ([`FlushWrite`]) in, coalesced
//!   inserts out, the WAL's flushed sequence advanced only after the engine
//!   holds the rows durably; exactly once across crashes. Its parts:
//!   - `replay.rs`: the [`Resume`] it starts from, and which replayed parts
//!     the engine already holds (by `__seq`), so they are not inserted twice;
//!   - `coordinator.rs`: one thread buffering per (database, measurement)
//!     (`buffer.rs`), dispatching due buffers, retrying failures with
//!     back-off, answering `DROP DATABASE`;
//!   - `worker.rs`: each job written to the flusher's [`Destination`]: the
//!     engine's tables (`table_writer.rs`: coalesce a job's parts, create
//!     tables and columns, insert one block), or what storage hands
//!     [`Flusher::start_to`] (a ClickHouse cluster: flush does not know it);
//!   - [`classify`]: transient failures are retried, deterministic ones
//!     (the engine refuses the statement for what it is) are isolated and
//!     quarantined as [`DeadLetter`]s ([`dead_letter`]), never dropped;
//!   - `watermark.rs`: the contiguous flushed prefix, reported through the
//!     [`FlushedLog`] trait (the WAL, implemented above this crate: flush does
//!     not know the WAL);
//!   - [`fence`]: `DROP DATABASE`/`DROP MEASUREMENT` fences.
//! - What reads need from the flusher ([`ReadState`], one per engine):
//!   [`identity`], which points of a table may have several rows (and the
//!   last point of each series), and [`unflushed`], acknowledged points the
//!   engine does not hold yet.
//! - [`config`]: the `[flush]` section, [`FlushConfig`] with the engine's
//!   `EngineConfig` flattened into it; [`error`]: [`MarkError`].
//!
//! The engine itself (connections, the table layout, SQL) is the `engine`
//! crate below this one. flush keeps no series registry of its own: the
//! catalog's series records (ingest) are the one registry.
#![deny(unsafe_code)]

pub mod classify;
pub mod config;
pub mod dead_letter;
pub mod error;
pub mod fence;
pub mod identity;
pub mod unflushed;

mod buffer;
mod coordinator;
mod destination;
mod flusher;
mod read_state;
mod replay;
mod status;
mod table_writer;
mod watermark;
mod worker;
mod write;

pub use config::FlushConfig;
pub use dead_letter::DeadLetter;
pub use destination::{Destination, InsertSlot, InsertSlots};
pub use error::MarkError;
pub use fence::{DropScope, Fences};
pub use flusher::{Flusher, Retrier, RetryOutcome};
pub use identity::{
    Cell, IdentityIndex, InsertGuard, LastPoint, LastPoints, Reader, Rewrites, Snapshot, TableLasts,
};
pub use read_state::ReadState;
pub use replay::Resume;
pub use status::FlushStatus;
pub use unflushed::{PartsObserver, Unflushed, UnflushedPart};
pub use watermark::FlushedLog;
pub use write::FlushWrite;
