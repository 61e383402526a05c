//! The `[wal]` configuration section this crate owns: serde, documented defaults,
//! `validate()`. The directory is a runtime input (derived from the data directory by the
//! caller), never read from a file.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

const MIB: u64 = 1024 * 1024;

/// When an acknowledged entry is durable. Read from a file as `"fsync"` or `"buffered"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Default. Every group is written with `sync = true` (one `fdatasync` of the RocksDB WAL per
    /// group) before any entry of the group is acknowledged: an acknowledged entry survives a
    /// process crash, an OS crash and a power loss (given a disk that honours flushes).
    #[default]
    Fsync,
    /// Every group is written to the RocksDB WAL file with `sync = false` before it is
    /// acknowledged, i.e. it sits in the OS page cache. An acknowledged entry survives a process
    /// crash (`kill -9`, panic, OOM kill). An OS crash or power loss loses what was written since
    /// the last sync: the writer syncs the RocksDB WAL every `buffered_sync_interval_ms` (and
    /// RocksDB syncs it in the background every `wal_bytes_per_sync` bytes), so the window is at
    /// most about one interval of acknowledged writes. Entries lost that way are wholly lost:
    /// RocksDB's point-in-time WAL recovery keeps a consistent prefix.
    Buffered,
}

/// Configuration of [`crate::Wal`]: the `[wal]` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WalConfig {
    /// Directory of the RocksDB instance. Not a file setting: the caller derives it (the
    /// server from its data directory). Default: `data/wal`.
    #[serde(skip)]
    pub dir: PathBuf,
    /// Durability mode. Default: `fsync`.
    pub durability: Durability,
    /// Maximum number of entries waiting for the writer; a submit beyond it fails at once with
    /// `QueueFull`. Default: 1024.
    pub queue_capacity: usize,
    /// Maximum payload bytes waiting for the writer (the payloads are already in memory; this
    /// caps how much memory the queue pins). Default: 512 MiB.
    pub queue_max_bytes: u64,
    /// Maximum payload bytes the writer coalesces into one group (one WriteBatch, one sync). A
    /// single larger entry still forms its own group. Default: 16 MiB.
    pub group_max_bytes: u64,
    /// Maximum entries in one group. Default: 1024.
    pub group_max_entries: usize,
    /// Largest accepted payload; larger submits fail with `EntryTooLarge`. Default: 256 MiB.
    pub max_entry_bytes: u64,
    /// `buffered` mode only: how often the writer syncs the RocksDB WAL; 0 disables the periodic
    /// sync (then only RocksDB's `wal_bytes_per_sync` background sync bounds the loss window).
    /// Default: 1000 ms.
    pub buffered_sync_interval_ms: u64,
    /// RocksDB memtable size of the entries column family. Default: 128 MiB.
    pub write_buffer_bytes: u64,
    /// After this many payload bytes were truncated by `mark_flushed`, a background compaction of
    /// the truncated key range is started to reclaim disk space early. Default: 1 GiB.
    pub compact_after_deleted_bytes: u64,
    /// Free space (bytes, for unprivileged users) the WAL's file system must keep: below it, new
    /// data entries are refused with `DiskFull` (HTTP 503) instead of being written, and they
    /// are accepted again by themselves once space is freed. Metadata writes (`DROP DATABASE`)
    /// and dead letters are still accepted, so an operator can free space through the API.
    /// The reserve is what RocksDB's memtable flushes and compactions, the engine's inserts and
    /// merges (same data directory) still need; a write that fails inside RocksDB regardless
    /// poisons the WAL until restart. 0 disables the check. Default: 256 MiB.
    pub min_free_bytes: u64,
}

impl Default for WalConfig {
    fn default() -> Self {
        WalConfig {
            dir: PathBuf::from("data/wal"),
            durability: Durability::Fsync,
            queue_capacity: 1024,
            queue_max_bytes: 512 * MIB,
            group_max_bytes: 16 * MIB,
            group_max_entries: 1024,
            max_entry_bytes: 256 * MIB,
            buffered_sync_interval_ms: 1000,
            write_buffer_bytes: 128 * MIB,
            compact_after_deleted_bytes: 1024 * MIB,
            min_free_bytes: 256 * MIB,
        }
    }
}

impl WalConfig {
    /// A default config rooted at `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        WalConfig {
            dir: dir.into(),
            ..WalConfig::default()
        }
    }

    /// The periodic sync interval of `buffered` mode, if enabled.
    pub fn buffered_sync_interval(&self) -> Option<Duration> {
        match (self.durability, self.buffered_sync_interval_ms) {
            (Durability::Buffered, ms) if ms > 0 => Some(Duration::from_millis(ms)),
            _ => None,
        }
    }

    /// Checks that the settings are usable together.
    pub fn validate(&self) -> Result<(), WalConfigError> {
        let bad = |key, value: &dyn std::fmt::Display, reason: String| {
            Err(WalConfigError {
                key,
                value: value.to_string(),
                reason,
            })
        };
        if self.dir.as_os_str().is_empty() {
            return bad("dir", &"\"\"", "must not be empty".into());
        }
        if self.queue_capacity == 0 {
            return bad("queue_capacity", &0, "must be at least 1".into());
        }
        if self.group_max_entries == 0 {
            return bad("group_max_entries", &0, "must be at least 1".into());
        }
        if self.group_max_bytes == 0 {
            return bad("group_max_bytes", &0, "must be at least 1".into());
        }
        // RocksDB values are limited to 4 GiB; keep a margin for the record trailer.
        if self.max_entry_bytes == 0 || self.max_entry_bytes > 3 * 1024 * MIB {
            let v = self.max_entry_bytes;
            return bad("max_entry_bytes", &v, "must be in 1..=3 GiB".into());
        }
        if self.queue_max_bytes < self.max_entry_bytes {
            return bad(
                "queue_max_bytes",
                &self.queue_max_bytes,
                format!(
                    "must be at least max_entry_bytes ({}) or the largest entry could never be queued",
                    self.max_entry_bytes
                ),
            );
        }
        if self.write_buffer_bytes < MIB {
            let v = self.write_buffer_bytes;
            return bad("write_buffer_bytes", &v, "must be at least 1 MiB".into());
        }
        Ok(())
    }
}

/// A `[wal]` setting that cannot work; used by [`WalConfig::validate`] (and so by
/// [`crate::Wal::open`], as [`crate::WalError::Config`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("wal.{key} = {value}: {reason}")]
pub struct WalConfigError {
    /// The key within the `[wal]` section, e.g. `queue_capacity`.
    pub key: &'static str,
    /// The value given.
    pub value: String,
    /// What the value must be.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_fsync() {
        let c = WalConfig::default();
        c.validate().unwrap();
        assert_eq!(c.durability, Durability::Fsync);
        assert_eq!(c.buffered_sync_interval(), None);
    }

    #[test]
    fn rejects_unusable_settings() {
        let mut c = WalConfig::new("/tmp/x");
        c.queue_capacity = 0;
        assert!(matches!(
            c.validate(),
            Err(WalConfigError {
                key: "queue_capacity",
                ..
            })
        ));
        let mut c = WalConfig::new("/tmp/x");
        c.queue_max_bytes = c.max_entry_bytes - 1;
        assert!(matches!(
            c.validate(),
            Err(WalConfigError {
                key: "queue_max_bytes",
                ..
            })
        ));
        let mut c = WalConfig::new("");
        c.dir = PathBuf::new();
        assert!(c.validate().is_err());
    }

    #[test]
    fn a_config_error_names_the_key_and_value() {
        let mut c = WalConfig::new("/tmp/x");
        c.write_buffer_bytes = 5;
        let e = crate::WalError::from(c.validate().unwrap_err());
        assert_eq!(
            e.to_string(),
            "invalid WAL config: wal.write_buffer_bytes = 5: must be at least 1 MiB"
        );
    }

    #[test]
    fn deserializes_partial_toml_like_json_with_defaults() {
        let c: WalConfig = serde_json::from_str(r#"{"durability":"buffered"}"#).unwrap();
        assert_eq!(c.durability, Durability::Buffered);
        assert_eq!(c.queue_capacity, 1024);
        assert_eq!(c.buffered_sync_interval(), Some(Duration::from_secs(1)));
        assert!(serde_json::from_str::<WalConfig>(r#"{"bogus":1}"#).is_err());
    }

    #[test]
    fn durability_reads_as_a_lowercase_enum() {
        let d = |s: &str| serde_json::from_str::<WalConfig>(&format!(r#"{{"durability":{s}}}"#));
        assert_eq!(d(r#""fsync""#).unwrap().durability, Durability::Fsync);
        assert_eq!(d(r#""buffered""#).unwrap().durability, Durability::Buffered);
        for bad in [r#""Fsync""#, r#""sometimes""#, r#""""#, "1"] {
            assert!(d(bad).is_err(), "{bad} accepted");
        }
        let e = d(r#""sometimes""#).unwrap_err().to_string();
        assert!(e.contains("fsync") && e.contains("buffered"), "{e}");
    }

    #[test]
    fn the_directory_is_not_a_file_setting() {
        // Derived from the data directory by the caller: a file cannot set it, and
        // serializing the section does not write it.
        let e = serde_json::from_str::<WalConfig>(r#"{"dir":"/d"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field"), "{e}");
        let c = WalConfig::new("/somewhere");
        let json = serde_json::to_string(&c).unwrap();
        assert!(!json.contains("somewhere"), "{json}");
        let back: WalConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, WalConfig::default());
    }
}
