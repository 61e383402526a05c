//! Where the flusher writes a table's rows: the [`Destination`] trait.
//!
//! The embedded engine's own tables are one destination ([`TableWriter`]);
//! a ClickHouse cluster is another, implemented above this crate (storage
//! hands the `cluster` crate's client to [`crate::Flusher::start_to`]), so
//! flush does not know the cluster, as [`crate::FlushedLog`] keeps it from
//! knowing the WAL. Workers and operator retries write through one
//! destination; the coordinator's buffering, retries, quarantine and the
//! flushed watermark are the same whatever it is.
//!
//! [`TableWriter`]: crate::table_writer::TableWriter

use engine::table::Part;
use engine::Result;
use parking_lot::{Condvar, Mutex};

/// Where flushed rows go. Writes run on several worker threads at once.
pub trait Destination: Send + Sync {
    /// Writes `parts` of table `db`.`measurement` as one block (per shard, on a
    /// cluster), holding one of `slots` (when given) while it writes: parts
    /// with a sequence at or below `verify_up_to` may be there already (an
    /// earlier attempt's outcome is unknown), so the destination is asked
    /// which it holds and only the others are written: exactly once.
    fn write(
        &self,
        db: &str,
        measurement: &str,
        parts: &[Part],
        verify_up_to: u64,
        slots: Option<&InsertSlots>,
    ) -> Result<()>;

    /// Whether every write asks the destination which of its parts it holds.
    /// The embedded engine's tables are asked once, up front, for everything
    /// replayed at start-up (and before an operator's retry): false. A
    /// cluster's shards are asked by each write instead (every replayed part
    /// is written with `verify_up_to` covering it): true.
    fn verifies_each_write(&self) -> bool;
}

/// A bound on concurrent writes (engine connections the flusher's inserts
/// use): twice as many workers run, so one job's coalescing overlaps another's
/// write.
#[derive(Debug)]
pub struct InsertSlots {
    free: Mutex<usize>,
    freed: Condvar,
}

/// One held slot of [`InsertSlots`], released on drop.
#[derive(Debug)]
pub struct InsertSlot<'a>(&'a InsertSlots);

impl InsertSlots {
    /// `n` free slots.
    pub fn new(n: usize) -> Self {
        Self {
            free: Mutex::new(n),
            freed: Condvar::new(),
        }
    }

    /// Waits for a free slot.
    pub fn acquire(&self) -> InsertSlot<'_> {
        let mut free = self.free.lock();
        while *free == 0 {
            self.freed.wait(&mut free);
        }
        *free -= 1;
        InsertSlot(self)
    }
}

impl Drop for InsertSlot<'_> {
    fn drop(&mut self) {
        *self.0.free.lock() += 1;
        self.0.freed.notify_one();
    }
}
