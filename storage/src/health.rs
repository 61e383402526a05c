//! Why writes are refused right now, as `/health` and the write path see it: the read
//! side's stats (shutdown, a poisoned WAL) plus the WAL's disk reserve.

use crate::{Storage, StorageStats};

impl Storage {
    /// [`Storage::current_stats`] plus a full disk: below `wal.min_free_bytes` the WAL
    /// refuses data entries (503, not a poison), and `/health` says so until space returns.
    pub(crate) fn stats_with_disk(&self) -> StorageStats {
        let mut s = self.current_stats();
        if s.unavailable.is_none() {
            if let Err(e @ wal::WalError::DiskFull { .. }) = self.wal.check_writable() {
                s.unavailable = Some(e.to_string());
            }
        }
        s
    }
}
