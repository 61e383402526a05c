//! The hot store's refill thread (issue #44): one per store, woken when
//! measurements become pending; it refills them (`refill.rs`) and drops the
//! measurements not read for `[hot] idle` (`wanted.rs`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::refill::{live, refill_all, Retries, AGAIN_AFTER};
use super::HotStore;
use crate::Storage;

/// Wakes the refill thread: a measurement became pending.
#[derive(Debug, Default)]
pub(super) struct Kick {
    kicked: Mutex<bool>,
    cv: Condvar,
    /// Kicks so far (tests).
    count: AtomicUsize,
}

impl Kick {
    /// Waits until kicked or `timeout` passed; true when kicked.
    fn wait(&self, timeout: Duration) -> bool {
        let mut k = self.kicked.lock();
        if !*k {
            self.cv.wait_for(&mut k, timeout);
        }
        std::mem::take(&mut *k)
    }

    #[cfg(test)]
    pub(super) fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }
}

impl HotStore {
    /// Wakes the refill thread: measurements became pending (or the store stops).
    pub(super) fn kick_refill(&self) {
        self.kick.count.fetch_add(1, Ordering::Relaxed);
        *self.kick.kicked.lock() = true;
        self.kick.cv.notify_all();
    }

    /// How often the refill thread looks for idle measurements (`wanted.rs`).
    fn sweep_every(&self) -> Duration {
        let idle = Duration::from_nanos(self.config.read().idle.max(0) as u64);
        (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(60))
    }
}

impl Storage {
    /// Starts the refill thread (once, when the store is on): it refills the
    /// measurements that existed at start (`[hot] hold = "all"`), then, each
    /// time it is kicked, those that became pending: first read (`wanted.rs`),
    /// or emptied by a dropped backlog (`apply.rs`); and drops the
    /// measurements not read for `[hot] idle`.
    ///
    /// At normal priority, started from the caller's thread (not the idle
    /// applier's, whose `SCHED_IDLE` a thread it started would inherit): a
    /// refill is a bounded read (slices of about [`SLICE_ROWS`] rows) that a
    /// dashboard waits for, and at idle priority beside the queries one took
    /// 231 s after a bulk load (issue #44). It only waits while backlogs are
    /// being dropped (the writes outrun the applier: what it merged would be
    /// emptied again), not while the applier is merely busy.
    pub(crate) fn start_hot_refill(self: &Arc<Self>) {
        if !self.hot.enabled() || self.hot.refill_started.swap(true, Ordering::AcqRel) {
            return;
        }
        let storage = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("hot-refill".into())
            .spawn(move || {
                let mut retries = Retries::new();
                let mut again = refill_all(&storage, true, &mut retries);
                while let Some(mut wait) = live(&storage).map(|s| s.hot.sweep_every()) {
                    if again {
                        // A measurement waits for another pass: in a second.
                        wait = wait.min(AGAIN_AFTER);
                    }
                    // Not holding the storage while asleep: shutdown drops it.
                    let kick = storage.upgrade().map(|s| s.hot.clone());
                    let Some(hot) = kick else { break };
                    hot.kick.wait(wait);
                    drop(hot);
                    let Some(s) = live(&storage) else { break };
                    s.hot.drop_idle();
                    if s.hot.pending().is_empty() {
                        again = false;
                        continue;
                    }
                    if s.hot.applier.dropping() {
                        // Looked at again in a second (or at the next kick).
                        again = true;
                        continue;
                    }
                    drop(s);
                    again = refill_all(&storage, false, &mut retries);
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "hot store: cannot start the refill; nothing is served");
            self.hot.forget_all();
        }
    }
}
