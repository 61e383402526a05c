//! How many cores ingest kept busy lately: the input of the SQL sandbox's
//! adaptive `max_threads` ([`crate::sandbox::SqlConfig::max_threads`] = 0).
//!
//! The write path reports the time it held a core (a parse thread's hold,
//! a flush worker's build and INSERT); a statement that starts asks how
//! many cores that was over the last one to two seconds and takes the rest.
//! One meter per process (the engine is one per process too). Updates race
//! harmlessly: the answer is an estimate, read once per statement.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Length of one accounting window.
const WINDOW_NS: u64 = 1_000_000_000;

/// Busy time reported in the current window and the one before.
#[derive(Debug)]
pub struct IngestLoad {
    window_start_ns: AtomicU64,
    current_ns: AtomicU64,
    previous_ns: AtomicU64,
}

/// The process's meter.
pub static INGEST_LOAD: IngestLoad = IngestLoad::new();

fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    u64::try_from(EPOCH.get_or_init(Instant::now).elapsed().as_nanos()).unwrap_or(u64::MAX)
}

impl IngestLoad {
    /// A meter that has seen nothing.
    pub const fn new() -> IngestLoad {
        IngestLoad {
            window_start_ns: AtomicU64::new(0),
            current_ns: AtomicU64::new(0),
            previous_ns: AtomicU64::new(0),
        }
    }

    /// Starts a new window when the current one is over.
    fn roll(&self, now: u64) {
        let start = self.window_start_ns.load(Relaxed);
        if now < start.saturating_add(WINDOW_NS) {
            return;
        }
        if self
            .window_start_ns
            .compare_exchange(start, now, Relaxed, Relaxed)
            .is_ok()
        {
            let current = self.current_ns.swap(0, Relaxed);
            // A window that ended long ago says nothing about now.
            let previous = if now - start < 2 * WINDOW_NS {
                current
            } else {
                0
            };
            self.previous_ns.store(previous, Relaxed);
        }
    }

    /// Ingest held a core for `busy`.
    pub fn record(&self, busy: Duration) {
        let now = now_ns();
        self.roll(now);
        let ns = u64::try_from(busy.as_nanos()).unwrap_or(u64::MAX);
        self.current_ns.fetch_add(ns, Relaxed);
    }

    /// Cores ingest kept busy on average over the current and the previous window.
    pub fn busy_cores(&self) -> f64 {
        let now = now_ns();
        self.roll(now);
        let start = self.window_start_ns.load(Relaxed);
        let span = WINDOW_NS + now.saturating_sub(start);
        let busy = self.previous_ns.load(Relaxed) + self.current_ns.load(Relaxed);
        busy as f64 / span as f64
    }
}

impl Default for IngestLoad {
    fn default() -> Self {
        IngestLoad::new()
    }
}

/// Engine threads for a statement starting now on a machine of `cores`:
/// the cores ingest left idle lately, at least one.
pub fn idle_cores(cores: u64, busy_cores: f64) -> u64 {
    let busy = busy_cores.max(0.0).ceil() as u64;
    cores.saturating_sub(busy).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_get_what_ingest_leaves() {
        assert_eq!(idle_cores(2, 0.0), 2);
        assert_eq!(idle_cores(2, 0.2), 1);
        assert_eq!(idle_cores(2, 1.7), 1);
        assert_eq!(idle_cores(16, 4.0), 12);
        assert_eq!(idle_cores(16, 40.0), 1);
    }

    #[test]
    fn recorded_time_counts_as_busy_cores() {
        let m = IngestLoad::new();
        assert_eq!(m.busy_cores(), 0.0);
        m.record(Duration::from_millis(1500));
        let busy = m.busy_cores();
        // 1.5 s of core time over at most two windows: about a core or more.
        assert!(busy > 0.7, "{busy}");
    }
}
