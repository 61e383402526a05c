//! `[storage]`: where data lives. The WAL's and the flusher's own sections are their
//! crates' configs ([`wal::WalConfig`], [`flush::FlushConfig`]); the server's file nests
//! all three.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[storage]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// Root data directory: the WAL lives in `<data_dir>/wal`, the engine in
    /// `<data_dir>/chdb`. Default: `data`.
    pub data_dir: PathBuf,
    /// How a write's WAL payload is encoded: `lz4` (default: its Arrow
    /// buffers LZ4-framed on the parse threads, 44 instead of 93 bytes per
    /// point of the standard payload for ~75 ns more CPU per point,
    /// `ingest/examples/wire_size.rs`; the server then wrote 71–77 instead of
    /// 232–295 bytes to disk per point, WAL, RocksDB flushes and compactions
    /// included, at no more CPU per point: `test_results/ab_wal_lz4.md`) or
    /// `none`. `limits.max_unflushed_bytes` counts per entry the larger of
    /// its payload and the memory its decoded batches hold, so compressible
    /// values cannot hold more memory than it says. Entries of either kind
    /// replay; a release before this setting cannot read LZ4 entries.
    pub wal_compression: WalCompression,
}

/// The encoding of WAL payloads (`[storage] wal_compression`).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WalCompression {
    /// Arrow IPC as is.
    None,
    /// Arrow IPC with LZ4-framed buffers.
    #[default]
    Lz4,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("data"),
            wal_compression: WalCompression::Lz4,
        }
    }
}

impl StorageConfig {
    /// `<data_dir>/wal`.
    pub fn wal_dir(&self) -> PathBuf {
        self.data_dir.join("wal")
    }
    /// `<data_dir>/chdb`.
    pub fn engine_dir(&self) -> PathBuf {
        self.data_dir.join("chdb")
    }
}
