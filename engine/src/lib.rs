//! # engine: chingest's embedded chDB engine layer
//!
//! Brief overview:
//! - [`Engine`] (`pool.rs`): the one chDB engine of this process (one data
//!   path), a pool of connections, SQL; Arrow batches inserted and scanned
//!   through the C Data Interface ([`arrow_ffi`]).
//! - [`sandbox`]: user SQL on connections of its own (readonly, limits the
//!   statement cannot lift, the engine's classification and parse, engine roles
//!   per read scope, streaming, cancellation); [`access`]: the engine
//!   configuration and roles chingest boots the engine with.
//! - [`table`]: the table layout (one MergeTree table per measurement),
//!   tables created and widened on demand, request batches coalesced into one
//!   insertable batch ([`table::Part`], [`table::coalesce`]), the
//!   point-identity read form.
//! - [`exit`]: the process ends without tearing the engine down.
//! - [`ingest_load`]: the cores the write path kept busy, which the sandbox's
//!   adaptive threads leave to it.
//! - `quote.rs`: names and literals quoted for ClickHouse SQL, its text
//!   answers unescaped; [`config`]: [`EngineConfig`]; [`error`]:
//!   [`EngineError`] carrying the engine's own messages, [`ConfigError`].
//!
//! Nothing here knows the flusher or a ClickHouse cluster: `flush` (the
//! flusher, the reads' identity index and unflushed rows) and `cluster` (the
//! ClickHouse-cluster client) are built on this crate, side by side.
//!
//! `unsafe` code is denied in this crate but in its two FFI modules,
//! [`arrow_ffi`] (an Arrow batch handed to the engine by pointer) and [`exit`]
//! (the C library's exit handlers).
#![deny(unsafe_code)]

pub mod access;
#[allow(unsafe_code)]
pub mod arrow_ffi;
pub mod config;
pub mod error;
#[allow(unsafe_code)]
pub mod exit;
pub mod ingest_load;
mod pool;
mod quote;
pub mod sandbox;
pub mod table;

pub use access::{EngineAccess, ReadScope};
pub use arrow_ffi::ArrowScan;
pub use config::EngineConfig;
pub use error::{ConfigError, EngineError, Result};
pub use pool::{Engine, InsertStats, PooledConnection};
pub use quote::{quote_ident, quote_string, unescape_tsv};
pub use sandbox::{
    AdminWriteObserver, Lane, SqlAccess, SqlCancel, SqlConfig, SqlError, SqlSummary,
};

/// The Arrow crate this crate builds batches with (the version chdb-rust links).
pub use arrow;
/// Output formats the engine can answer in.
pub use chdb_rust::format::OutputFormat;
