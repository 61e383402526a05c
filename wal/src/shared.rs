//! State shared by the public handle, the writer thread and `mark_flushed` callers.
//!
//! Everything `stats()` reads is an atomic so that the server can poll it per request.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use rocksdb::DB;

use crate::WalError;

/// One committed, not yet flushed entry (for lag accounting).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unflushed {
    pub(crate) seq: u64,
    pub(crate) points: u64,
    /// What `unflushed_bytes` counts: the larger of payload and held memory.
    pub(crate) bytes: u64,
    /// Payload bytes (what truncation frees on disk).
    pub(crate) payload_bytes: u64,
    pub(crate) created_ns: u64,
}

pub(crate) struct Shared {
    pub(crate) db: Arc<DB>,
    pub(crate) queue_depth: AtomicUsize,
    pub(crate) queued_bytes: AtomicU64,
    pub(crate) last_seq: AtomicU64,
    pub(crate) flushed_seq: AtomicU64,
    pub(crate) unflushed_entries: AtomicU64,
    pub(crate) unflushed_points: AtomicU64,
    pub(crate) unflushed_bytes: AtomicU64,
    /// created_ns of the oldest unflushed entry, 0 if none.
    pub(crate) oldest_created_ns: AtomicU64,
    pub(crate) groups_committed: AtomicU64,
    pub(crate) last_group_entries: AtomicU64,
    pub(crate) last_commit_ns: AtomicU64,
    /// Per-entry lag accounting, in sequence order. ~32 bytes per unflushed entry; the server
    /// bounds the backlog by refusing writes when the lag grows.
    pub(crate) index: Mutex<VecDeque<Unflushed>>,
    pub(crate) poison: OnceLock<String>,
    pub(crate) closed: AtomicBool,
    /// Test hook: fail the next group write as if RocksDB had failed.
    pub(crate) fail_next_write: AtomicBool,
    /// The free-space guard of the WAL's file system.
    pub(crate) disk: crate::disk::DiskGuard,
}

pub(crate) fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

impl Shared {
    pub(crate) fn new(db: Arc<DB>, disk: crate::disk::DiskGuard) -> Self {
        Shared {
            db,
            queue_depth: AtomicUsize::new(0),
            queued_bytes: AtomicU64::new(0),
            last_seq: AtomicU64::new(0),
            flushed_seq: AtomicU64::new(0),
            unflushed_entries: AtomicU64::new(0),
            unflushed_points: AtomicU64::new(0),
            unflushed_bytes: AtomicU64::new(0),
            oldest_created_ns: AtomicU64::new(0),
            groups_committed: AtomicU64::new(0),
            last_group_entries: AtomicU64::new(0),
            last_commit_ns: AtomicU64::new(0),
            index: Mutex::new(VecDeque::new()),
            poison: OnceLock::new(),
            closed: AtomicBool::new(false),
            fail_next_write: AtomicBool::new(false),
            disk,
        }
    }

    pub(crate) fn check_poison(&self) -> Result<(), WalError> {
        match self.poison.get() {
            Some(reason) => Err(WalError::Poisoned {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    pub(crate) fn set_poison(&self, reason: String) {
        tracing::error!(%reason, "WAL poisoned: refusing all further writes");
        let _ = self.poison.set(reason);
    }

    /// Appends committed entries to the lag index (called by the writer, in sequence order).
    pub(crate) fn push_unflushed(&self, items: impl Iterator<Item = Unflushed>) {
        let mut idx = self.index.lock();
        let (mut n, mut p, mut b) = (0, 0, 0);
        for u in items {
            n += 1;
            p += u.points;
            b += u.bytes;
            idx.push_back(u);
        }
        self.unflushed_entries.fetch_add(n, Relaxed);
        self.unflushed_points.fetch_add(p, Relaxed);
        self.unflushed_bytes.fetch_add(b, Relaxed);
        self.oldest_created_ns
            .store(idx.front().map_or(0, |u| u.created_ns), Relaxed);
        drop(idx);
        self.publish_lag();
    }

    /// Drops entries `<= seq` from the lag index; returns the payload bytes removed.
    pub(crate) fn pop_flushed(&self, seq: u64) -> u64 {
        let mut idx = self.index.lock();
        let (mut n, mut p, mut b, mut payload) = (0, 0, 0, 0);
        while idx.front().is_some_and(|u| u.seq <= seq) {
            let u = idx.pop_front().expect("front exists");
            n += 1;
            p += u.points;
            b += u.bytes;
            payload += u.payload_bytes;
        }
        self.unflushed_entries.fetch_sub(n, Relaxed);
        self.unflushed_points.fetch_sub(p, Relaxed);
        self.unflushed_bytes.fetch_sub(b, Relaxed);
        self.oldest_created_ns
            .store(idx.front().map_or(0, |u| u.created_ns), Relaxed);
        drop(idx);
        self.publish_lag();
        payload
    }

    pub(crate) fn oldest_age(&self) -> Option<Duration> {
        match self.oldest_created_ns.load(Relaxed) {
            0 => None,
            t => Some(Duration::from_nanos(now_ns().saturating_sub(t))),
        }
    }

    /// Sets the lag gauges from the atomics.
    pub(crate) fn publish_lag(&self) {
        metrics::gauge!("chingest_wal_unflushed_points")
            .set(self.unflushed_points.load(Relaxed) as f64);
        metrics::gauge!("chingest_wal_unflushed_bytes")
            .set(self.unflushed_bytes.load(Relaxed) as f64);
        metrics::gauge!("chingest_wal_lag_seconds")
            .set(self.oldest_age().map_or(0.0, |d| d.as_secs_f64()));
    }
}
