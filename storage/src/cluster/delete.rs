//! `DELETE` and `DROP SERIES` with the points on a ClickHouse cluster (issue #25): the
//! points of some series, inside a time range, gone from every shard before the statement
//! answers, and exactly those acknowledged — by any ingest node — before it began.
//!
//! 1. The statement begins at `began` (this node's clock, ms) and at this node's WAL
//!    position `up_to`.
//! 2. Wait until this node delivered everything up to `up_to` (as `series_delete.rs`
//!    waits for the engine), and until every other node lists on the shards that it
//!    delivered everything it acknowledged before `began` (`cluster`'s `nodes`
//!    module; each node publishes this every [`crate::cluster::catalog::REFRESH`] from the
//!    [`DeliveredClock`] below). Now every row the statement must delete is on a shard.
//! 3. On every shard, delete the matching rows and wait for it (a mutation on 18.16). Rows
//!    delivered after it began — written after the statement began — stay.
//! 4. This node's dead letters matching it at or below `up_to` are deleted too, as on one
//!    node (another node's dead letters are that node's: an operator's retry there could
//!    bring their rows back).
//!
//! The series that have no point left disappear from `SHOW SERIES` and `SHOW TAG VALUES`
//! by themselves (read from the shards); this node's catalog keeps counting them against
//! `limits.max_series_per_database` (InfluxDB would not).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cluster::Cluster;
use parking_lot::Mutex;

use crate::series_delete::TableDelete;
use crate::{Storage, StorageError};

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Storage {
    /// Deletes what `deletes` says from `db` on the cluster (see the [module](self)).
    pub(crate) fn delete_on_cluster(
        &self,
        cluster: &Cluster,
        db: &str,
        deletes: &[TableDelete],
    ) -> Result<(), StorageError> {
        self.require(db)?;
        let _admin = self.lifecycle.admin.lock();
        let (_, up_to) = self.fence_cluster(cluster)?;
        let schema = self.catalog.schema(db);
        for d in deletes {
            let (tags, rows) = d.rows_up_to(&schema, up_to);
            self.delete_from_dead_letters(db, &d.measurement, &tags, &rows, up_to)?;
            if cluster.delete_rows(db, &d.measurement, d.on_shards.as_deref())? {
                tracing::info!(
                    db,
                    measurement = d.measurement,
                    "points deleted on the cluster"
                );
            }
        }
        Ok(())
    }

    /// Steps 1 and 2: the statement's start (ms) and WAL position, once this node delivered
    /// everything up to that position and every other node everything it acknowledged
    /// before that start. Called with the admin lock held.
    pub(crate) fn fence_cluster(&self, cluster: &Cluster) -> Result<(u64, u64), StorageError> {
        let began = now_ms();
        let up_to = self.wal.last_seq();
        self.wait_flushed(up_to)?;
        self.wait_nodes_delivered(cluster, began)?;
        Ok((began, up_to))
    }

    /// Step 2 for the other nodes: waits until each lists a delivery through `began`.
    fn wait_nodes_delivered(&self, cluster: &Cluster, began: u64) -> Result<(), StorageError> {
        let deadline = Instant::now() + cluster.delete_wait();
        loop {
            let behind: Vec<String> = cluster
                .nodes_delivered()?
                .into_iter()
                .filter(|(node, through)| node.as_str() != cluster.node() && *through < began)
                .map(|(node, _)| node)
                .collect();
            if behind.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(StorageError::NotDeliveredByNodes {
                    nodes: behind.join(", "),
                    waited_secs: cluster.delete_wait().as_secs(),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A node's side of the fence: samples of (time, this node's last WAL sequence), so that
/// once the delivered watermark passes a sample's sequence, every write acknowledged
/// before the sample's time is known to be on the shards.
#[derive(Default)]
pub(crate) struct DeliveredClock(Mutex<ClockState>);

/// [`DeliveredClock`]'s samples (time, sequence), oldest first, and the last time returned.
#[derive(Default)]
struct ClockState {
    samples: VecDeque<(u64, u64)>,
    published: u64,
}

/// The most samples kept while delivery is stalled; past it the oldest go (a later sample
/// stands for them: its time is published once its writes are delivered).
const MAX_SAMPLES: usize = 10_000;

impl DeliveredClock {
    /// Takes the sample (`at`, `last_seq`) — `at` read *before* `last_seq`, so every write
    /// acknowledged before `at` is at or below it — and returns the newest sampled time
    /// whose writes are all delivered (`delivered_seq`), when it is newer than the last
    /// one returned.
    pub(crate) fn advance(&self, at: u64, last_seq: u64, delivered_seq: u64) -> Option<u64> {
        let mut state = self.0.lock();
        let ClockState { samples, published } = &mut *state;
        match samples.back_mut() {
            // Nothing written since: the later time stands for both.
            Some(back) if back.1 == last_seq => back.0 = back.0.max(at),
            _ => samples.push_back((at, last_seq)),
        }
        while samples.len() > MAX_SAMPLES {
            samples.pop_front();
        }
        let mut through = None;
        while let Some(&(t, seq)) = samples.front() {
            if seq > delivered_seq {
                break;
            }
            through = Some(t);
            samples.pop_front();
        }
        let through = through?;
        (through > *published).then(|| {
            *published = through;
            through
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_publishes_a_time_once_every_write_before_it_is_delivered() {
        let clock = DeliveredClock::default();
        // At 100 the WAL is at 5, nothing delivered: nothing to publish.
        assert_eq!(clock.advance(100, 5, 0), None);
        // At 200 the WAL is at 9, delivered up to 5: every write before 100 is delivered.
        assert_eq!(clock.advance(200, 9, 5), Some(100));
        // Nothing new delivered: 100 again is not published again.
        assert_eq!(clock.advance(300, 9, 5), None);
        // Idle since 9 (no write): the later time stands for it once 9 is delivered.
        assert_eq!(clock.advance(400, 9, 9), Some(400));
        // Writes 10–12 before 500 not delivered yet: nothing new.
        assert_eq!(clock.advance(500, 12, 9), None);
        // Delivered up to 13 of 15: the sample at 500 (sequence 12) is passed, 600's is not.
        assert_eq!(clock.advance(600, 15, 13), Some(500));
        assert_eq!(clock.advance(700, 15, 15), Some(700));
    }
}
