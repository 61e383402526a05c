//! The WAL's error type.

use std::path::PathBuf;

/// Everything that can go wrong in the WAL.
///
/// Errors are `Clone` because one failure (a failed group write, shutdown) completes many tickets
/// at once; RocksDB errors are therefore kept as their message text.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum WalError {
    /// Used if the bounded submit queue is full (by entry count or by bytes). Callers should shed
    /// load (HTTP 429/503) rather than wait.
    #[error("WAL queue full ({depth} entries / {bytes} bytes queued; capacity {capacity} entries / {max_bytes} bytes)")]
    QueueFull {
        /// Entries queued when the submit was refused.
        depth: usize,
        /// Bytes queued when the submit was refused.
        bytes: u64,
        /// Configured entry capacity.
        capacity: usize,
        /// Configured byte capacity.
        max_bytes: u64,
    },
    /// Used if a single entry (payload plus metadata) is larger than `max_entry_bytes`.
    #[error("WAL entry of {bytes} bytes exceeds the limit of {max} bytes")]
    EntryTooLarge {
        /// Size of the refused entry's payload plus metadata.
        bytes: u64,
        /// Configured `max_entry_bytes`.
        max: u64,
    },
    /// Used for every operation after a write or sync failed: nothing can be acknowledged once
    /// durability is in doubt (the fsync-gate lesson), so the WAL refuses all further work until
    /// the process restarts and recovers from what is on disk.
    #[error("WAL poisoned by an earlier failed write: {reason}")]
    Poisoned {
        /// The failure that poisoned the WAL.
        reason: String,
    },
    /// Used if the WAL's file system has less free space than `min_free_bytes`: the entry was
    /// not written (nothing is acknowledged), and the WAL is not poisoned: writes are accepted
    /// again as soon as space is freed. Callers should answer 503.
    #[error("disk full: {free} bytes free on {path}, below the reserve of {reserve} bytes (wal.min_free_bytes); free space, writes resume by themselves")]
    DiskFull {
        /// Free bytes seen (for unprivileged users).
        free: u64,
        /// Configured `min_free_bytes`.
        reserve: u64,
        /// The WAL directory.
        path: PathBuf,
    },
    /// Used if the WAL is shutting down or shut down; queued entries that were not committed
    /// complete with this error and are not durable.
    #[error("WAL is shut down")]
    Shutdown,
    /// Used if a RocksDB operation failed.
    #[error("RocksDB {op} failed: {message}")]
    Rocks {
        /// What the WAL was doing.
        op: &'static str,
        /// RocksDB's message.
        message: String,
    },
    /// Used if the WAL directory cannot be created.
    #[error("cannot create WAL directory {path}: {message}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// The OS error text.
        message: String,
    },
    /// Used if the configuration is invalid (see `WalConfig::validate`).
    #[error("invalid WAL config: {0}")]
    Config(#[from] crate::WalConfigError),
    /// Used if `mark_flushed` names a sequence that was never committed.
    #[error("cannot mark seq {seq} flushed: last committed seq is {last_seq}")]
    FlushBeyondLast {
        /// The requested sequence.
        seq: u64,
        /// The last committed sequence.
        last_seq: u64,
    },
    /// Used if a WAL bookkeeping value (last/flushed sequence) is unreadable at open.
    #[error("corrupt WAL metadata {key}: {reason}")]
    CorruptMeta {
        /// The bookkeeping key.
        key: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

impl WalError {
    pub(crate) fn rocks(op: &'static str, e: rocksdb::Error) -> Self {
        WalError::Rocks {
            op,
            message: e.into_string(),
        }
    }
}
