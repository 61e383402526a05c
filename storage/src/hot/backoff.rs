//! Backoff between refills of a measurement whose refill keeps failing (issue
//! #44, `[hot] hold = "read"`). A refill that fails for good (`refill.rs`:
//! an error that does not pass, or one that did not pass within its tries)
//! drops the measurement (`HotStore::unwant`), and its next read would start
//! another at once: a measurement read every few seconds whose refill always
//! fails would have the engine read its whole window again and again, beside
//! the reads it answers. So after a refill given up, reads of it go to the
//! engine without starting one for [`FIRST`], doubling with each refill given
//! up in a row up to [`CAP`]; a refill that ends served starts the count again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::Key;

/// Refills given up that started a backoff (`chingest_hot_refill_backoffs_total`).
pub(crate) const HOT_REFILL_BACKOFFS: &str = "chingest_hot_refill_backoffs_total";
/// Reads that started no refill because their measurement's backoff had not
/// passed (they went to the engine).
pub(crate) const HOT_REFILL_BACKOFF_READS: &str = "chingest_hot_refill_backoff_reads_total";

/// The wait after the first refill given up.
pub(super) const FIRST: Duration = Duration::from_secs(1);
/// The longest wait.
pub(super) const CAP: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Refills given up in a row.
    gave_up: u32,
    /// No refill before this (ms since [`Backoff::born`]).
    until_ms: u64,
}

/// The measurements whose last refills were given up.
#[derive(Debug)]
pub(super) struct Backoff {
    map: Mutex<HashMap<Key, Entry>>,
    born: Instant,
    /// Added to the clock (tests: time passes without sleeping).
    skew_ms: AtomicU64,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            map: Mutex::default(),
            born: Instant::now(),
            skew_ms: AtomicU64::new(0),
        }
    }
}

/// The wait after `gave_up` refills given up in a row.
pub(super) fn delay(gave_up: u32) -> Duration {
    let doublings = gave_up.saturating_sub(1).min(31);
    FIRST.saturating_mul(1u32 << doublings).min(CAP)
}

impl Backoff {
    fn now_ms(&self) -> u64 {
        self.born.elapsed().as_millis() as u64 + self.skew_ms.load(Ordering::Relaxed)
    }

    /// `key`'s refill was given up: no other before the returned wait.
    pub(super) fn gave_up(&self, key: &Key) -> Duration {
        let now = self.now_ms();
        let mut map = self.map.lock();
        let e = map.entry(key.clone()).or_insert(Entry {
            gave_up: 0,
            until_ms: 0,
        });
        e.gave_up = e.gave_up.saturating_add(1);
        let wait = delay(e.gave_up);
        e.until_ms = now.saturating_add(wait.as_millis() as u64);
        metrics::counter!(HOT_REFILL_BACKOFFS).increment(1);
        wait
    }

    /// Whether a read of `key` must not start a refill yet (counted).
    pub(super) fn waiting(&self, key: &Key) -> bool {
        let map = self.map.lock();
        if map.is_empty() {
            return false;
        }
        let waiting = map.get(key).is_some_and(|e| self.now_ms() < e.until_ms);
        if waiting {
            metrics::counter!(HOT_REFILL_BACKOFF_READS).increment(1);
        }
        waiting
    }

    /// `key`'s refill ended served: the next failure waits [`FIRST`] again.
    pub(super) fn served(&self, key: &Key) {
        let mut map = self.map.lock();
        if !map.is_empty() {
            map.remove(key);
        }
    }

    /// Forgets every backoff (the store switched off).
    pub(super) fn clear(&self) {
        self.map.lock().clear();
    }

    #[cfg(test)]
    pub(super) fn advance(&self, by: Duration) {
        self.skew_ms
            .fetch_add(by.as_millis() as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_up_to_the_cap() {
        assert_eq!(delay(1), FIRST);
        assert_eq!(delay(2), FIRST * 2);
        assert_eq!(delay(4), FIRST * 8);
        assert_eq!(delay(40), CAP);
        assert_eq!(delay(u32::MAX), CAP);
    }
}
