//! The last points read without waiting: for a statement run on a server's
//! async worker (issue #44: TSBS `lastpoint` inline), which may not wait for
//! a lock, an engine load or another read's.

use super::{LastPoints, State, TableLasts};

impl LastPoints {
    /// [`LastPoints::read`] where it needs no wait: `f` over
    /// `db`.`measurement`'s last points when they are loaded and no insert
    /// or other read holds them now; `None` otherwise (not loaded yet, being
    /// merged into, too many series, an admin statement writing, the cache
    /// off), and nothing loaded or changed: the caller reads them as before,
    /// off its thread.
    pub fn read_now<R>(
        &self,
        db: &str,
        measurement: &str,
        f: impl FnOnce(&std::sync::Arc<TableLasts>) -> R,
    ) -> Option<R> {
        if self.max_series == 0 || self.admin_writes.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            return None;
        }
        let table = self
            .tables
            .try_lock()?
            .get(&(db.to_string(), measurement.to_string()))
            .cloned()?;
        let state = table.try_lock()?;
        match &*state {
            State::Ready(t) => Some(f(t)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::last::tests::batch;

    #[test]
    fn a_read_now_reads_only_loaded_unlocked_points() {
        let lasts = LastPoints::new(100);
        let series = |t: &std::sync::Arc<TableLasts>| t.series.len();
        assert_eq!(lasts.read_now("d", "m", series), None, "never loaded");
        let table = std::sync::Arc::new(parking_lot::Mutex::new(State::Loading(
            TableLasts::default(),
        )));
        lasts
            .tables
            .lock()
            .insert(("d".into(), "m".into()), table.clone());
        assert_eq!(lasts.read_now("d", "m", series), None, "being loaded");
        let mut ready = TableLasts::default();
        ready
            .merge(&batch(&[(1, 10, 1, 0, "a", Some(1.0))]))
            .unwrap();
        *table.lock() = State::Ready(std::sync::Arc::new(ready));
        assert_eq!(lasts.read_now("d", "m", series), Some(1));
        let held = table.lock();
        assert_eq!(
            lasts.read_now("d", "m", series),
            None,
            "locked by an insert"
        );
        drop(held);
        lasts
            .admin_writes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(lasts.read_now("d", "m", series), None, "an admin write");
        lasts
            .admin_writes
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(lasts.read_now("d", "m", series), Some(1));
        assert_eq!(lasts.read_now("d", "other", series), None);
    }
}
