//! # wal: chingest's write-ahead log
//!
//! Brief overview: one group-commit RocksDB writer that acknowledges only what is durable.
//!
//! * Callers encode their request (e.g. `ingest::wire::encode`) on their own thread and
//!   [`Wal::submit`] the bytes; `submit` appends a checksummed trailer ([`record`]) and queues
//!   the entry in a bounded queue. A full queue fails at once with [`WalError::QueueFull`].
//! * One writer thread (`writer.rs`) drains the queue, coalesces up to a byte and an entry budget,
//!   assigns consecutive sequence numbers, writes one RocksDB `WriteBatch` (entries, the entries'
//!   metadata, `last_seq`) with one sync ([`Durability`]), then sends every entry's
//!   [`Committed`] — with its in-memory attachment — to the flusher in sequence order, then
//!   completes the [`CommitTicket`]s. A failed write poisons the WAL. Below the disk reserve
//!   (`min_free_bytes`) data entries are refused with [`WalError::DiskFull`] instead (nothing
//!   written, nothing poisoned; writes resume once space returns).
//! * The `dead_letter` column family keeps what the consumer set aside ([`Wal::dead_letter_put`]);
//!   [`Wal::update_meta_stamped`] records a decision together with its position in the log.
//! * [`Wal::mark_flushed`] durably advances the flushed sequence and range-deletes what the engine
//!   holds; [`Wal::open`] returns a [`Recovery`] with everything above it, corrupt entries
//!   reported by sequence and quarantined ([`recovery`]).
//! * [`Wal::stats`] reads atomics (queue depth, lag) so the server can shed load early.
//! * [`WalConfig`] is the `[wal]` configuration section (serde, documented defaults,
//!   `validate()` → [`WalConfigError`]); its `dir` is derived by the caller, not read from a file.
//!   A consumer of [`Committed`] entries may take them as `(seq, attachment)` through `Into`.
//!
//! Layout and RocksDB tuning: [`layout`]. Metrics (all through the `metrics` facade):
//!
//! | name | type | meaning |
//! |---|---|---|
//! | `chingest_wal_commit_seconds` | histogram | write + sync time of one group |
//! | `chingest_wal_group_entries` | histogram | entries per group |
//! | `chingest_wal_group_bytes` | histogram | payload bytes per group |
//! | `chingest_wal_queue_wait_seconds` | histogram | time an entry waited in the queue |
//! | `chingest_wal_queue_depth` | gauge | entries queued (set per group and by `stats()`) |
//! | `chingest_wal_unflushed_points` | gauge | points committed but not flushed |
//! | `chingest_wal_unflushed_bytes` | gauge | bytes committed but not flushed (per entry the larger of payload and held memory) |
//! | `chingest_wal_lag_seconds` | gauge | age of the oldest unflushed entry |
//! | `chingest_wal_corrupt_entries_total` | counter | corrupt entries quarantined at open |
//! | `chingest_wal_queue_full_total` | counter | submits refused with `QueueFull` |

#![deny(missing_docs)]

mod config;
mod dead_letter;
mod disk;
mod error;
pub mod layout;
pub mod record;
pub mod recovery;
mod shared;
mod ticket;
mod writer;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Sender, TrySendError};
use parking_lot::Mutex;
use rocksdb::{IteratorMode, WriteBatch, WriteOptions, DB};

pub use config::{Durability, WalConfig, WalConfigError};
pub use error::WalError;
pub use recovery::{CorruptEntry, CorruptReason, RecoveredEntry, Recovery};
pub use ticket::CommitTicket;

use layout::{seq_key, CF_ENTRIES, CF_META, CF_WAL_META, KEY_FLUSHED_SEQ, KEY_LAST_SEQ};
use shared::{now_ns, Shared, Unflushed};
use writer::Request;

/// A metadata record: key, value (meta column family).
pub type MetaRecord = (Vec<u8>, Vec<u8>);

/// One request's worth of data to make durable.
#[derive(Debug)]
pub struct Entry<T> {
    /// The caller-encoded payload (the WAL adds a checksummed trailer; it never looks inside).
    pub payload: Vec<u8>,
    /// Points the payload carries (for lag accounting).
    pub points: u64,
    /// Memory the attachment holds until the entry is flushed (e.g. its decoded batches); 0
    /// when the payload's size stands for it. The queue's byte capacity and `unflushed_bytes`
    /// count the larger of the two: a compressed payload can be far smaller than what the
    /// flusher keeps in memory for it.
    pub held_bytes: u64,
    /// Metadata records committed in the same WriteBatch as the payload (meta column family).
    pub meta: Vec<MetaRecord>,
    /// Handed back in [`Committed`] once durable (e.g. the in-memory Arrow batches).
    pub attachment: T,
}

/// A durable entry handed to the flusher, in sequence order.
#[derive(Debug)]
pub struct Committed<T> {
    /// Sequence number.
    pub seq: u64,
    /// Points (as submitted).
    pub points: u64,
    /// Payload bytes.
    pub bytes: u64,
    /// The submitter's attachment.
    pub attachment: T,
}

/// `(seq, attachment)`: what a consumer that needs neither the point nor the byte count takes
/// (e.g. `flush::Flusher::start`, which receives `Committed<FlushWrite>` as `(u64, FlushWrite)`).
impl<T> From<Committed<T>> for (u64, T) {
    fn from(c: Committed<T>) -> Self {
        (c.seq, c.attachment)
    }
}

/// A cheap snapshot of the WAL's state (atomics only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WalStats {
    /// Entries waiting for the writer.
    pub queue_depth: usize,
    /// Payload bytes waiting for the writer.
    pub queued_bytes: u64,
    /// Last committed (durable) sequence.
    pub last_seq: u64,
    /// Durable flushed sequence.
    pub flushed_seq: u64,
    /// Committed entries not yet flushed.
    pub unflushed_entries: u64,
    /// Their points.
    pub unflushed_points: u64,
    /// Their bytes: per entry the larger of its payload and the memory it holds
    /// ([`Entry::held_bytes`]).
    pub unflushed_bytes: u64,
    /// Age of the oldest unflushed entry (since its submit).
    pub oldest_unflushed_age: Option<Duration>,
    /// Groups committed since open.
    pub groups_committed: u64,
    /// Entries in the last group.
    pub last_group_entries: u64,
    /// Write + sync time of the last group.
    pub last_commit_latency: Duration,
    /// True once a failed write poisoned the WAL.
    pub poisoned: bool,
    /// True while the WAL's file system has less free space than `min_free_bytes` (data
    /// entries are refused with `DiskFull`; not a poison: it clears when space returns).
    pub disk_low: bool,
    /// Free bytes on the WAL's file system at the last check (`u64::MAX` when unchecked).
    pub free_bytes: u64,
}

/// The write-ahead log. Share it as `Arc<Wal<T>>`; every method takes `&self`.
pub struct Wal<T: Send + 'static> {
    shared: Arc<Shared>,
    tx: Sender<Request<T>>,
    cfg: WalConfig,
    writer: Mutex<Option<JoinHandle<()>>>,
    /// Serialises `mark_flushed` callers (read-modify-write of the flushed sequence).
    flush_lock: Mutex<()>,
    deleted_since_compact: AtomicU64,
    compacting: Arc<AtomicBool>,
    compaction: Mutex<Option<JoinHandle<()>>>,
}

fn read_u64(db: &DB, key: &'static [u8], name: &'static str) -> Result<u64, WalError> {
    let cf = db.cf_handle(CF_WAL_META).expect("wal_meta CF");
    match db
        .get_cf(cf, key)
        .map_err(|e| WalError::rocks("read wal_meta", e))?
    {
        None => Ok(0),
        Some(v) => match <[u8; 8]>::try_from(v.as_slice()) {
            Ok(b) => Ok(u64::from_be_bytes(b)),
            Err(_) => Err(WalError::CorruptMeta {
                key: name,
                reason: format!("{} bytes, expected 8", v.len()),
            }),
        },
    }
}

impl<T: Send + 'static> Wal<T> {
    /// Opens (or creates) the WAL in `cfg.dir`, recovers what is unflushed, and starts the
    /// writer thread. Committed entries are sent on `committed` in sequence order; the writer
    /// blocks while that channel is full, which back-pressures into `QueueFull`.
    pub fn open(
        cfg: WalConfig,
        committed: Sender<Committed<T>>,
    ) -> Result<(Self, Recovery), WalError> {
        cfg.validate()?;
        std::fs::create_dir_all(&cfg.dir).map_err(|e| WalError::Io {
            path: cfg.dir.clone(),
            message: e.to_string(),
        })?;
        let db = DB::open_cf_descriptors(
            &layout::db_options(&cfg),
            &cfg.dir,
            layout::cf_descriptors(&cfg),
        )
        .map_err(|e| WalError::rocks("open", e))?;
        let last_seq = read_u64(&db, KEY_LAST_SEQ, "last_seq")?;
        let flushed_seq = read_u64(&db, KEY_FLUSHED_SEQ, "flushed_seq")?;
        let recovery = recovery::recover(&db, flushed_seq, last_seq)?;
        tracing::info!(
            flushed_seq,
            last_seq = recovery.last_seq,
            entries = recovery.entries.len(),
            corrupt = recovery.corrupt.len(),
            missing_ranges = recovery.missing.len(),
            "WAL opened"
        );

        let shared = Arc::new(Shared::new(
            Arc::new(db),
            disk::DiskGuard::new(&cfg.dir, cfg.min_free_bytes),
        ));
        shared.last_seq.store(recovery.last_seq, Relaxed);
        shared.flushed_seq.store(flushed_seq, Relaxed);
        shared.push_unflushed(recovery.entries.iter().map(|e| Unflushed {
            seq: e.seq,
            points: e.points,
            // What the replay will decode is not known here; the payload stands for it.
            bytes: e.payload.len() as u64,
            payload_bytes: e.payload.len() as u64,
            created_ns: e.created_ns,
        }));

        let (tx, rx) = crossbeam_channel::bounded(cfg.queue_capacity);
        let wcfg = writer::WriterConfig {
            durability: cfg.durability,
            group_max_bytes: cfg.group_max_bytes,
            group_max_entries: cfg.group_max_entries,
            sync_interval: cfg.buffered_sync_interval(),
        };
        let sh = shared.clone();
        let handle = std::thread::Builder::new()
            .name("chingest-wal-writer".into())
            .spawn(move || writer::run(sh, rx, committed, wcfg))
            .map_err(|e| WalError::Io {
                path: cfg.dir.clone(),
                message: format!("spawn writer: {e}"),
            })?;
        let wal = Wal {
            shared,
            tx,
            cfg,
            writer: Mutex::new(Some(handle)),
            flush_lock: Mutex::new(()),
            deleted_since_compact: AtomicU64::new(0),
            compacting: Arc::new(AtomicBool::new(false)),
            compaction: Mutex::new(None),
        };
        Ok((wal, recovery))
    }

    /// The configuration the WAL was opened with.
    pub fn config(&self) -> &WalConfig {
        &self.cfg
    }

    /// Queues `entry` for the next group. Returns at once: `QueueFull` if the queue is at its
    /// entry or byte capacity, `EntryTooLarge`, `Poisoned` or `Shutdown`; otherwise a ticket
    /// that resolves to the entry's sequence number once it is durable.
    pub fn submit(&self, entry: Entry<T>) -> Result<CommitTicket, WalError> {
        let Entry {
            payload,
            points,
            held_bytes,
            meta,
            attachment,
        } = entry;
        let payload_len = payload.len() as u64;
        let meta_bytes: u64 = meta.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        let wal_bytes = payload_len + meta_bytes;
        if wal_bytes > self.cfg.max_entry_bytes {
            return Err(WalError::EntryTooLarge {
                bytes: wal_bytes,
                max: self.cfg.max_entry_bytes,
            });
        }
        let memory_bytes = payload_len.max(held_bytes);
        let queued_bytes = memory_bytes + meta_bytes;
        self.admit(queued_bytes, true)?;
        // Frame on the caller's thread: the writer only copies finished records.
        let created_ns = now_ns();
        let record = record::encode(payload, points, created_ns);
        let (ticket, done) = ticket::pair();
        let req = Request::Data {
            record,
            payload_len,
            memory_bytes,
            wal_bytes,
            queued_bytes,
            points,
            created_ns,
            meta,
            attachment,
            enqueued: Instant::now(),
            done,
        };
        self.enqueue(req, queued_bytes)?;
        Ok(ticket)
    }

    /// Commits metadata records alone, through the writer, so they are totally ordered with data
    /// (e.g. `CREATE DATABASE`). The ticket resolves to the last data sequence committed at or
    /// before them.
    pub fn put_meta(&self, kvs: Vec<MetaRecord>) -> Result<CommitTicket, WalError> {
        self.update_meta(kvs, Vec::new())
    }

    /// Like [`Wal::put_meta`], and also deletes every metadata record whose key starts with one
    /// of `delete_prefixes`, in the same durable write (deletes apply before the puts). The
    /// ticket resolves to the last data sequence committed before the change: every entry
    /// submitted earlier has a sequence at or below it.
    pub fn update_meta(
        &self,
        kvs: Vec<MetaRecord>,
        delete_prefixes: Vec<Vec<u8>>,
    ) -> Result<CommitTicket, WalError> {
        self.update_meta_stamped(kvs, delete_prefixes, Vec::new())
    }

    /// Like [`Wal::update_meta`], and also puts every key of `stamped` with, as its value, the
    /// sequence the ticket resolves to (8 bytes, big-endian): the last data sequence committed
    /// before this write. A decision that must apply to "every entry before it" (`DROP
    /// DATABASE`) is then one durable write that names its own position in the log.
    pub fn update_meta_stamped(
        &self,
        kvs: Vec<MetaRecord>,
        delete_prefixes: Vec<Vec<u8>>,
        stamped: Vec<Vec<u8>>,
    ) -> Result<CommitTicket, WalError> {
        let bytes: u64 = kvs
            .iter()
            .map(|(k, v)| (k.len() + v.len()) as u64)
            .sum::<u64>()
            + delete_prefixes.iter().map(|p| p.len() as u64).sum::<u64>()
            + stamped.iter().map(|k| k.len() as u64 + 8).sum::<u64>();
        if bytes > self.cfg.max_entry_bytes {
            return Err(WalError::EntryTooLarge {
                bytes,
                max: self.cfg.max_entry_bytes,
            });
        }
        // Metadata is accepted below the disk reserve: it is small, and a DROP DATABASE is how
        // an operator frees space.
        self.admit(bytes, false)?;
        let (ticket, done) = ticket::pair();
        self.enqueue(
            Request::Meta {
                kvs,
                delete_prefixes,
                stamped,
                bytes,
                enqueued: Instant::now(),
                done,
            },
            bytes,
        )?;
        Ok(ticket)
    }

    /// Reserves queue room (entry count and bytes) or fails with the reason; `data` entries
    /// are also refused below the disk reserve.
    fn admit(&self, bytes: u64, data: bool) -> Result<(), WalError> {
        self.shared.check_poison()?;
        if self.shared.closed.load(Acquire) {
            return Err(WalError::Shutdown);
        }
        if data {
            self.shared.disk.check()?;
        }
        let full = |depth, queued| {
            metrics::counter!("chingest_wal_queue_full_total").increment(1);
            WalError::QueueFull {
                depth,
                bytes: queued,
                capacity: self.cfg.queue_capacity,
                max_bytes: self.cfg.queue_max_bytes,
            }
        };
        let max = self.cfg.queue_max_bytes;
        if let Err(queued) = self
            .shared
            .queued_bytes
            .fetch_update(AcqRel, Acquire, |q| (q + bytes <= max).then_some(q + bytes))
        {
            return Err(full(self.shared.queue_depth.load(Relaxed), queued));
        }
        let depth = self.shared.queue_depth.fetch_add(1, AcqRel);
        if depth >= self.cfg.queue_capacity {
            self.release(bytes);
            return Err(full(depth, self.shared.queued_bytes.load(Relaxed)));
        }
        Ok(())
    }

    fn release(&self, bytes: u64) {
        self.shared.queue_depth.fetch_sub(1, AcqRel);
        self.shared.queued_bytes.fetch_sub(bytes, AcqRel);
    }

    fn enqueue(&self, req: Request<T>, bytes: u64) -> Result<(), WalError> {
        match self.tx.try_send(req) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.release(bytes);
                match e {
                    // The depth counter admitted it, but the channel can still be momentarily
                    // full while the writer has taken items off it without yet decrementing.
                    TrySendError::Full(_) => Err(WalError::QueueFull {
                        depth: self.shared.queue_depth.load(Relaxed),
                        bytes: self.shared.queued_bytes.load(Relaxed),
                        capacity: self.cfg.queue_capacity,
                        max_bytes: self.cfg.queue_max_bytes,
                    }),
                    TrySendError::Disconnected(_) => Err(WalError::Shutdown),
                }
            }
        }
    }

    /// Durably records that every entry `<= seq` is in the engine, then range-deletes those
    /// entries (in the same synced WriteBatch). Safe to call from any thread, concurrently with
    /// the writer. A `seq` at or below the current flushed sequence is a no-op.
    pub fn mark_flushed(&self, seq: u64) -> Result<(), WalError> {
        self.shared.check_poison()?;
        let _g = self.flush_lock.lock();
        let prev = self.shared.flushed_seq.load(Acquire);
        if seq <= prev {
            return Ok(());
        }
        let last = self.shared.last_seq.load(Acquire);
        if seq > last {
            return Err(WalError::FlushBeyondLast {
                seq,
                last_seq: last,
            });
        }
        let db = &self.shared.db;
        let mut batch = WriteBatch::default();
        batch.put_cf(
            db.cf_handle(CF_WAL_META).expect("wal_meta CF"),
            KEY_FLUSHED_SEQ,
            seq.to_be_bytes(),
        );
        batch.delete_range_cf(
            db.cf_handle(CF_ENTRIES).expect("entries CF"),
            seq_key(prev + 1),
            seq_key(seq + 1),
        );
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        if let Err(e) = db.write_opt(batch, &wo) {
            let err = WalError::rocks("mark_flushed write", e);
            self.shared.set_poison(err.to_string());
            return Err(err);
        }
        self.shared.flushed_seq.store(seq, Release);
        let freed = self.shared.pop_flushed(seq);
        let total = self.deleted_since_compact.fetch_add(freed, Relaxed) + freed;
        if total >= self.cfg.compact_after_deleted_bytes {
            self.maybe_compact(seq);
        }
        Ok(())
    }

    /// Starts a background compaction of the deleted key range unless one is running. The range
    /// tombstones already hide the entries; compaction gives the disk space back sooner than
    /// RocksDB's own L0 triggers would.
    fn maybe_compact(&self, seq: u64) {
        if self.compacting.swap(true, AcqRel) {
            return;
        }
        self.deleted_since_compact.store(0, Relaxed);
        let mut slot = self.compaction.lock();
        if let Some(h) = slot.take() {
            let _ = h.join(); // already finished: `compacting` was false
        }
        let db = self.shared.db.clone();
        let flag = self.compacting.clone();
        let spawned = std::thread::Builder::new()
            .name("chingest-wal-compact".into())
            .spawn(move || {
                let cf = db.cf_handle(CF_ENTRIES).expect("entries CF");
                db.compact_range_cf(cf, None::<&[u8]>, Some(&seq_key(seq + 1)[..]));
                flag.store(false, Release);
            });
        match spawned {
            Ok(h) => *slot = Some(h),
            Err(e) => {
                tracing::warn!(error = %e, "cannot spawn WAL compaction thread");
                self.compacting.store(false, Release);
            }
        }
    }

    /// The sequence of the last data entry committed: every acknowledged
    /// write is at or below it (entries are handed on before their tickets
    /// resolve).
    pub fn last_seq(&self) -> u64 {
        self.shared.last_seq.load(Acquire)
    }

    /// The flushed sequence: every entry at or below it is in the engine and gone from the
    /// log (a restart replays none of them).
    pub fn flushed_seq(&self) -> u64 {
        self.shared.flushed_seq.load(Acquire)
    }

    /// A snapshot of queue depth, sequences, lag and the last group's size and latency. Also
    /// refreshes the queue/lag gauges.
    pub fn stats(&self) -> WalStats {
        let s = &self.shared;
        let st = WalStats {
            queue_depth: s.queue_depth.load(Relaxed),
            queued_bytes: s.queued_bytes.load(Relaxed),
            last_seq: s.last_seq.load(Acquire),
            flushed_seq: s.flushed_seq.load(Acquire),
            unflushed_entries: s.unflushed_entries.load(Relaxed),
            unflushed_points: s.unflushed_points.load(Relaxed),
            unflushed_bytes: s.unflushed_bytes.load(Relaxed),
            oldest_unflushed_age: s.oldest_age(),
            groups_committed: s.groups_committed.load(Relaxed),
            last_group_entries: s.last_group_entries.load(Relaxed),
            last_commit_latency: Duration::from_nanos(s.last_commit_ns.load(Relaxed)),
            poisoned: s.poison.get().is_some(),
            free_bytes: s.disk.free(),
            disk_low: false,
        };
        let st = WalStats {
            disk_low: s.disk.is_low(),
            ..st
        };
        metrics::gauge!("chingest_wal_queue_depth").set(st.queue_depth as f64);
        s.publish_lag();
        st
    }

    /// `Ok` unless data entries are refused for lack of disk space (`DiskFull`, with the free
    /// bytes and the reserve) or the WAL is poisoned (`Poisoned`, with the failure).
    pub fn check_writable(&self) -> Result<(), WalError> {
        self.shared.check_poison()?;
        self.shared.disk.check()
    }

    /// One metadata record, if present.
    pub fn meta_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, WalError> {
        let db = &self.shared.db;
        db.get_cf(db.cf_handle(CF_META).expect("meta CF"), key)
            .map_err(|e| WalError::rocks("meta get", e))
    }

    /// All persisted metadata records in key order (for `Catalog::load`).
    pub fn meta_scan(&self) -> Result<Vec<MetaRecord>, WalError> {
        let db = &self.shared.db;
        db.iterator_cf(db.cf_handle(CF_META).expect("meta CF"), IteratorMode::Start)
            .map(|r| {
                r.map(|(k, v)| (k.into_vec(), v.into_vec()))
                    .map_err(|e| WalError::rocks("meta scan", e))
            })
            .collect()
    }

    /// The persisted metadata records whose key starts with `prefix`, in key order (e.g. one
    /// database's series records, without reading every other record).
    pub fn meta_scan_prefix(&self, prefix: &[u8]) -> Result<Vec<MetaRecord>, WalError> {
        let db = &self.shared.db;
        let cf = db.cf_handle(CF_META).expect("meta CF");
        let mode = IteratorMode::From(prefix, rocksdb::Direction::Forward);
        let mut out = Vec::new();
        for r in db.iterator_cf(cf, mode) {
            let (k, v) = r.map_err(|e| WalError::rocks("meta prefix scan", e))?;
            if !k.starts_with(prefix) {
                break;
            }
            out.push((k.into_vec(), v.into_vec()));
        }
        Ok(out)
    }

    /// Stops accepting entries, lets the writer commit everything queued so far, and joins it
    /// (and any background compaction). Entries submitted concurrently with shutdown may instead
    /// complete with `WalError::Shutdown`. The committed receiver must keep draining until this
    /// returns. Idempotent; also called by `Drop`.
    pub fn shutdown(&self) {
        self.shared.closed.store(true, Release);
        let handle = self.writer.lock().take();
        if let Some(h) = handle {
            // Blocking send: Stop queues behind everything already accepted.
            let _ = self.tx.send(Request::Stop);
            if h.join().is_err() {
                tracing::error!("WAL writer thread panicked");
            }
        }
        if let Some(h) = self.compaction.lock().take() {
            let _ = h.join();
        }
    }

    /// Test hook: the next group write fails as if RocksDB had reported an I/O error.
    #[doc(hidden)]
    pub fn inject_write_failure_for_tests(&self) {
        self.shared.fail_next_write.store(true, Relaxed);
    }
}

impl<T: Send + 'static> Drop for Wal<T> {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl<T: Send + 'static> std::fmt::Debug for Wal<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal")
            .field("dir", &self.cfg.dir)
            .field("stats", &self.stats())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_committed_entry_converts_to_its_seq_and_attachment() {
        let c = Committed {
            seq: 7,
            points: 3,
            bytes: 100,
            attachment: "batch",
        };
        let (seq, attachment): (u64, &str) = c.into();
        assert_eq!((seq, attachment), (7, "batch"));
    }
}
