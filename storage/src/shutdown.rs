//! Orderly shutdown: the WAL commits what is queued and stops, the flusher drains to
//! the engine, the engine closes. Bounded: the flusher stops at a deadline whatever its
//! state (a table failing for ever, a slow engine), and whatever is not flushed then
//! replays from the WAL on the next start.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::{Storage, StorageError};

/// The bound of [`Storage::close`] (the server passes its own, `shutdown_grace_secs`).
const DEFAULT_GRACE: Duration = Duration::from_secs(30);

impl Storage {
    pub(crate) fn close(&self) -> Result<(), StorageError> {
        self.close_within(DEFAULT_GRACE)
    }

    pub(crate) fn close_within(&self, grace: Duration) -> Result<(), StorageError> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        if let Some(sync) = &self.cluster_sync {
            sync.stop();
        }
        // Serves nothing more and joins its applier thread.
        self.hot.stop();
        let deadline = Instant::now() + grace;
        // The WAL's writer exit disconnects the flusher's channel, and the flusher
        // drains to the engine until the deadline.
        self.wal.shutdown();
        let clean = match self.flusher.lock().take() {
            Some(f) => f.shutdown(deadline),
            None => true,
        };
        let s = self.wal.stats();
        if s.flushed_seq < s.last_seq {
            tracing::warn!(
                flushed = s.flushed_seq,
                last = s.last_seq,
                "entries remain unflushed; they replay from the WAL on the next start"
            );
        }
        if !clean {
            // An insert is still running: closing the engine under it could crash.
            // Everything acknowledged is in the WAL; process exit reaps the engine.
            tracing::warn!(
                ?grace,
                "the flusher did not stop within the shutdown grace; leaving the engine to process exit"
            );
            return Ok(());
        }
        if let Some(engine) = self.engine.write().take() {
            // Everything acknowledged is in the WAL (and flushed, unless warned
            // above): an engine that fails to close loses nothing, so say so
            // and still exit cleanly.
            if let Err(e) = engine.shutdown() {
                tracing::warn!("closing the chDB engine reported: {e}");
            }
        }
        Ok(())
    }
}
