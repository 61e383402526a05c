//! The engine's settings: [`EngineConfig`], the engine's part of the `[flush]`
//! section (flush's `FlushConfig` flattens it in, so a file reads
//! `[flush] connections = 0` beside the flusher's keys); serde, documented
//! defaults, `validate()`.
//!
//! The data directory is a runtime input, not a setting: the caller derives it
//! ([`EngineConfig::data_dir`] is never read from a file).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// How to open the [`crate::Engine`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Directory the engine keeps its databases in. Not a file setting: the
    /// caller derives it (the server from its data directory). Default:
    /// `data/chdb`.
    #[serde(skip)]
    pub data_dir: PathBuf,
    /// Connections in the pool; 0 means one per core. Default: 0.
    pub connections: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("data/chdb"),
            connections: 0,
        }
    }
}

impl EngineConfig {
    /// The pool size this config resolves to.
    pub fn pool_size(&self) -> usize {
        if self.connections == 0 {
            std::thread::available_parallelism().map_or(2, |n| n.get())
        } else {
            self.connections
        }
    }

    /// Checks the settings make sense.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.data_dir.as_os_str().is_empty() {
            return Err(ConfigError::new("data_dir", "\"\"", "must not be empty"));
        }
        Ok(())
    }
}
