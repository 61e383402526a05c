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
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("data"),
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
