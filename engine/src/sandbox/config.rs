//! The `[sql]` section: the limits of user SQL, and the same limits as
//! connection arguments (the sandbox's connections) or as settings of a
//! statement sent to a ClickHouse server (a cluster's shard).

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::ingest_load::{idle_cores, INGEST_LOAD};

/// The `[sql]` section: limits of user SQL. Defaults suit a small box (2 cores,
/// a few GB of RAM) that must keep ingesting while someone queries.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SqlConfig {
    /// Statements running at once (each holds one engine connection); one more
    /// is answered 503 with Retry-After at once. Default: 2.
    pub max_concurrent_queries: usize,
    /// A statement is stopped by the engine after this long (and the HTTP
    /// response ends with an error). Below the server's 30 s request deadline, so a
    /// runaway statement is answered with its own error, not a request timeout.
    /// Default: 20 s.
    pub max_execution_secs: u64,
    /// Rows a result may have; more fails the statement. Default: 1,000,000.
    pub max_result_rows: u64,
    /// Bytes (uncompressed, in the engine) a result may have; more fails the
    /// statement. Default: 256 MiB.
    pub max_result_bytes: u64,
    /// Memory one statement may use in the engine; a `GROUP BY` or `ORDER
    /// BY` spills to disk past half of it (at most 4× it on disk). Default: 1 GiB.
    pub max_memory_bytes: u64,
    /// Engine threads per statement; 0 (the default) adapts: the cores the
    /// write path left idle over the last second or two, at least one
    /// ([`crate::ingest_load`]), chosen when the statement starts.
    pub max_threads: u64,
    /// Series whose last point InfluxQL keeps in memory, over all tables
    /// (`ORDER BY time DESC LIMIT 1` answered without an engine statement;
    /// about 60 bytes per column per series); a table that would pass it is
    /// read from the engine. 0: none. Default: 100,000.
    pub last_point_cache_series: usize,
}

impl Default for SqlConfig {
    fn default() -> Self {
        Self {
            max_concurrent_queries: 2,
            max_execution_secs: 20,
            max_result_rows: 1_000_000,
            max_result_bytes: 256 << 20,
            max_memory_bytes: 1 << 30,
            max_threads: 0,
            last_point_cache_series: 100_000,
        }
    }
}

impl SqlConfig {
    /// Checks the settings make sense. A limit of 0 would mean "none" to the
    /// engine, so it is refused rather than silently unlimited.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive: [(&'static str, u64); 5] = [
            ("max_concurrent_queries", self.max_concurrent_queries as u64),
            ("max_execution_secs", self.max_execution_secs),
            ("max_result_rows", self.max_result_rows),
            ("max_result_bytes", self.max_result_bytes),
            ("max_memory_bytes", self.max_memory_bytes),
        ];
        for (key, v) in positive {
            if v == 0 {
                return Err(ConfigError::new(
                    key,
                    0,
                    "must be at least 1 ([sql] limits cannot be switched off)",
                ));
            }
        }
        Ok(())
    }

    /// Engine threads for a statement starting now.
    pub fn threads_now(&self) -> u64 {
        if self.max_threads > 0 {
            return self.max_threads;
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
        idle_cores(cores, INGEST_LOAD.busy_cores())
    }

    /// The limits as settings of a statement sent to a ClickHouse server of a cluster
    /// (those every supported version knows, 18.16 included: no `max_threads`, which the
    /// server's own configuration sets, nor settings newer than it), `readonly=1` first.
    pub fn shard_settings(&self) -> Vec<(&'static str, String)> {
        let known = [
            "max_execution_time",
            "timeout_overflow_mode",
            "max_result_rows",
            "max_result_bytes",
            "result_overflow_mode",
            "max_memory_usage",
            "max_bytes_before_external_group_by",
            "max_bytes_before_external_sort",
        ];
        let mut out = vec![("readonly", "1".to_string())];
        out.extend(
            self.limit_args(1)
                .into_iter()
                .filter(|(k, _)| known.contains(k)),
        );
        out
    }

    /// The limits as connection arguments (all query-level settings the
    /// engine applies to that connection's session only), `threads` engine
    /// threads per statement.
    pub(super) fn limit_args(&self, threads: u64) -> Vec<(&'static str, String)> {
        vec![
            ("max_execution_time", self.max_execution_secs.to_string()),
            ("timeout_overflow_mode", "throw".into()),
            ("max_result_rows", self.max_result_rows.to_string()),
            ("max_result_bytes", self.max_result_bytes.to_string()),
            ("result_overflow_mode", "throw".into()),
            ("max_memory_usage", self.max_memory_bytes.to_string()),
            // A GROUP BY or ORDER BY past half the memory cap spills to disk
            // rather than failing (the point merge of a day of a thousand
            // hosts groups 10M rows), within 4× the cap of temporary data.
            (
                "max_bytes_before_external_group_by",
                (self.max_memory_bytes / 2).to_string(),
            ),
            (
                "max_bytes_before_external_sort",
                (self.max_memory_bytes / 2).to_string(),
            ),
            (
                "max_temporary_data_on_disk_size_for_query",
                self.max_memory_bytes.saturating_mul(4).to_string(),
            ),
            ("max_threads", threads.to_string()),
            ("allow_introspection_functions", "0".into()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_cannot_be_zero() {
        SqlConfig::default().validate().unwrap();
        let c = SqlConfig {
            max_execution_secs: 0,
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap_err().key, "max_execution_secs");
        let c = SqlConfig {
            max_concurrent_queries: 0,
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap_err().key, "max_concurrent_queries");
    }
}
