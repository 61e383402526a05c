//! What the flusher's coordinator tells the hot store (`flush::PartsObserver`),
//! and the engine's admin writes: both must not wait for the tables' lock.

use engine::arrow::array::RecordBatch;

use super::apply::Item;
use super::HotStore;

impl flush::PartsObserver for HotStore {
    /// Queues the parts of held measurements for the applier (`apply.rs`)
    /// and returns; with `[hot] hold = "read"` the others cost a lookup each
    /// (`wanted.rs`).
    fn received(&self, db: &str, seq: u64, parts: &[(&str, &RecordBatch)]) {
        if !self.enabled() {
            return;
        }
        let all = self.holds_all();
        let kept: Vec<(String, u64, RecordBatch)> = parts
            .iter()
            .filter_map(|(m, b)| {
                let epoch = if all { 0 } else { self.wanted.epoch(db, m)? };
                Some((m.to_string(), epoch, (*b).clone()))
            })
            .collect();
        if kept.is_empty() {
            return;
        }
        let bytes = kept.iter().map(|(_, _, b)| b.get_array_memory_size()).sum();
        let item = Item::Parts {
            db: db.to_string(),
            parts: kept,
        };
        let max_backlog =
            usize::try_from(self.config.read().config.max_backlog).unwrap_or(usize::MAX);
        self.applier.push(seq, bytes, item, max_backlog);
    }

    /// Queued too: the coordinator must not wait for the tables' lock.
    fn set_aside(&self, db: &str, measurement: &str) {
        if !self.enabled() {
            // Nothing is served (or applied): nothing to forget.
            return;
        }
        let key = (db.to_string(), measurement.to_string());
        let seq = self.applier.newest();
        self.applier.push(seq, 0, Item::Forget(key), usize::MAX);
    }
}

/// Tells both the flusher's identity index and the hot store of an admin's SQL
/// that may change data.
pub(crate) struct AdminWrites {
    pub(crate) identity: std::sync::Arc<dyn engine::AdminWriteObserver>,
    pub(crate) hot: std::sync::Arc<HotStore>,
}

impl engine::AdminWriteObserver for AdminWrites {
    fn admin_write_started(&self) {
        self.identity.admin_write_started();
        self.hot.forget_all();
    }

    fn admin_write_done(&self) {
        self.identity.admin_write_done();
    }
}
