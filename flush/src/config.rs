//! The `[flush]` configuration section this crate owns: serde, documented
//! defaults, `validate()`.
//!
//! One section holds both the engine's setting (`connections`, in
//! [`engine::EngineConfig`], flattened) and the flusher's ([`FlushConfig`]), so a file
//! reads:
//!
//! ```toml
//! [flush]
//! connections = 0
//! max_points_per_batch = 200000
//! max_age_ms = 1000
//! insert_threads = 1
//! ```
//!
//! Runtime inputs are not settings: the engine's data directory is derived by
//! the caller ([`engine::EngineConfig::data_dir`] is never read from a file), and the
//! retention of the databases known at start-up comes in [`crate::Resume`].

use engine::{ConfigError, EngineConfig};
use serde::{Deserialize, Serialize};

/// The `[flush]` section: the engine's settings and the flusher's.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FlushConfig {
    /// The engine's settings, flattened into this section (`connections`).
    /// [`crate::Flusher::start`] takes an open engine and ignores these; pass
    /// them (with a `data_dir`) to [`engine::Engine::open`].
    #[serde(flatten)]
    pub engine: EngineConfig,
    /// A measurement's buffer is flushed once it holds this many points.
    /// Default: 200,000 (the engine has a fixed cost of ~8–10 ms per INSERT).
    pub max_points_per_batch: usize,
    /// ... or once its oldest point has waited this long. Default: 1000 ms.
    pub max_age_ms: u64,
    /// First retry delay after a failed insert; doubles up to `retry_max_ms`.
    /// Default: 100 ms.
    pub retry_initial_ms: u64,
    /// Longest retry delay. Default: 10,000 ms.
    pub retry_max_ms: u64,
    /// Engine threads per insert (`max_threads`); 0 = the engine's default
    /// (one per core). Default: 1: concurrency comes from one insert per
    /// connection, and on a small machine an insert fanning out over every
    /// core competes with parsing (measured: 1M points/s sustainable at p95
    /// 160 ms with 1, 85% of 1.2M offered at p95 330 ms with 2).
    pub insert_threads: usize,
    /// Concurrent inserts (engine connections used); 0 means all of the
    /// engine's connections. Default: 0. Twice as many workers run, so one
    /// job's coalescing overlaps another's insert.
    pub workers: usize,
    /// A flush failure the engine does not name as transient or deterministic is retried;
    /// once it has failed the same way this many times in a row it is treated as
    /// deterministic: the parts that cause it are isolated and quarantined as dead letters
    /// (never dropped). Errors named transient (too many parts, memory, disk, I/O) are
    /// retried forever. Default: 5.
    pub quarantine_after_failures: u32,
}

impl Default for FlushConfig {
    fn default() -> Self {
        Self {
            engine: EngineConfig::default(),
            max_points_per_batch: 200_000,
            max_age_ms: 1000,
            retry_initial_ms: 100,
            retry_max_ms: 10_000,
            insert_threads: 1,
            workers: 0,
            quarantine_after_failures: 5,
        }
    }
}

impl FlushConfig {
    /// Checks the settings make sense.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.engine.validate()?;
        if self.max_points_per_batch == 0 {
            return Err(ConfigError::new(
                "max_points_per_batch",
                0,
                "must be at least 1",
            ));
        }
        if self.quarantine_after_failures == 0 {
            return Err(ConfigError::new(
                "quarantine_after_failures",
                0,
                "must be at least 1",
            ));
        }
        if self.retry_initial_ms == 0 {
            return Err(ConfigError::new(
                "retry_initial_ms",
                0,
                "must be at least 1",
            ));
        }
        if self.retry_max_ms < self.retry_initial_ms {
            return Err(ConfigError::new(
                "retry_max_ms",
                self.retry_max_ms,
                format!(
                    "must be at least retry_initial_ms ({})",
                    self.retry_initial_ms
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn default_is_valid_and_documented() {
        let c = FlushConfig::default();
        c.validate().unwrap();
        assert_eq!(c.engine.connections, 0);
        assert_eq!(c.max_points_per_batch, 200_000);
        assert_eq!(c.max_age_ms, 1000);
        assert_eq!(c.insert_threads, 1);
        assert_eq!(
            (c.retry_initial_ms, c.retry_max_ms, c.workers),
            (100, 10_000, 0)
        );
    }

    #[test]
    fn the_section_reads_engine_and_flusher_keys_flat() {
        let c: FlushConfig = serde_json::from_str(
            r#"{"connections": 3, "max_points_per_batch": 5, "max_age_ms": 7, "insert_threads": 0}"#,
        )
        .unwrap();
        assert_eq!(c.engine.connections, 3);
        assert_eq!(c.engine.data_dir, PathBuf::from("data/chdb"));
        assert_eq!((c.max_points_per_batch, c.max_age_ms), (5, 7));
        assert_eq!(c.insert_threads, 0);
        assert_eq!(c.retry_max_ms, 10_000);
        let empty: FlushConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, FlushConfig::default());
        let back: FlushConfig = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn unknown_keys_and_the_runtime_data_dir_are_refused() {
        for bad in [
            r#"{"bogus": 1}"#,
            r#"{"connections": 1, "max_age_msec": 1}"#,
            r#"{"data_dir": "/x"}"#,
            r#"{"retention_secs": {}}"#,
        ] {
            let e = serde_json::from_str::<FlushConfig>(bad).unwrap_err();
            assert!(e.to_string().contains("unknown field"), "{bad}: {e}");
        }
    }

    #[test]
    fn rejects_unusable_settings_naming_the_key() {
        let c = FlushConfig {
            max_points_per_batch: 0,
            ..Default::default()
        };
        let e = c.validate().unwrap_err();
        assert_eq!(e.key, "max_points_per_batch");
        assert_eq!(
            e.to_string(),
            "invalid flush config: max_points_per_batch = 0: must be at least 1"
        );
        let c = FlushConfig {
            retry_initial_ms: 200,
            retry_max_ms: 100,
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap_err().key, "retry_max_ms");
        let c = FlushConfig {
            retry_initial_ms: 0,
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap_err().key, "retry_initial_ms");
        let e = EngineConfig {
            data_dir: PathBuf::new(),
            connections: 1,
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.key, "data_dir");
    }
}
