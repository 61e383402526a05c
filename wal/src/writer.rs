//! The one group-commit writer thread.
//!
//! It does as little as possible: take what is queued (records already framed and checksummed by
//! the submitting threads), assign consecutive sequence numbers, copy the records into one
//! WriteBatch, write it (synced in `fsync` mode), and only then hand the entries to the flusher
//! in sequence order and complete the tickets. A failed write poisons the WAL: nothing is
//! acknowledged after a failed sync, and every later request fails with `Poisoned`.

use std::sync::atomic::Ordering::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use rocksdb::{WriteBatch, WriteOptions};

use crate::layout::{seq_key, CF_ENTRIES, CF_META, CF_WAL_META, KEY_LAST_SEQ};
use crate::shared::{Shared, Unflushed};
use crate::ticket::Completer;
use crate::{Committed, Durability, WalError};

/// What the queue carries.
pub(crate) enum Request<T> {
    Data {
        /// Payload + trailer (see `record`).
        record: Vec<u8>,
        payload_len: u64,
        /// The larger of the payload and the memory the attachment holds: what the lag index
        /// (`unflushed_bytes`) counts.
        memory_bytes: u64,
        /// Payload plus metadata bytes: what the group budget counts (the WriteBatch's size).
        wal_bytes: u64,
        /// Memory plus metadata bytes: what the queue's byte capacity counts.
        queued_bytes: u64,
        points: u64,
        created_ns: u64,
        meta: Vec<crate::MetaRecord>,
        attachment: T,
        enqueued: Instant,
        done: Completer,
    },
    Meta {
        kvs: Vec<crate::MetaRecord>,
        /// Metadata key prefixes to delete before the puts.
        delete_prefixes: Vec<Vec<u8>>,
        /// Keys put with the last data sequence before this request as their value.
        stamped: Vec<Vec<u8>>,
        bytes: u64,
        enqueued: Instant,
        done: Completer,
    },
    /// Stop after everything queued before it.
    Stop,
}

impl<T> Request<T> {
    /// Bytes this request holds against the queue's byte capacity.
    pub(crate) fn bytes(&self) -> u64 {
        match self {
            Request::Data { queued_bytes, .. } => *queued_bytes,
            Request::Meta { bytes, .. } => *bytes,
            Request::Stop => 0,
        }
    }

    /// Bytes this request adds to a group's WriteBatch (the group budget).
    pub(crate) fn group_bytes(&self) -> u64 {
        match self {
            Request::Data { wal_bytes, .. } => *wal_bytes,
            Request::Meta { bytes, .. } => *bytes,
            Request::Stop => 0,
        }
    }
}

pub(crate) struct WriterConfig {
    pub(crate) durability: Durability,
    pub(crate) group_max_bytes: u64,
    pub(crate) group_max_entries: usize,
    pub(crate) sync_interval: Option<Duration>,
}

/// A data entry after it was put into the batch (its record bytes already released).
struct Pending<T> {
    seq: u64,
    points: u64,
    /// Payload bytes (handed on in `Committed`).
    bytes: u64,
    /// What the lag index counts (see `Request::Data::memory_bytes`).
    memory_bytes: u64,
    created_ns: u64,
    attachment: T,
    done: Completer,
}

pub(crate) fn run<T: Send + 'static>(
    shared: Arc<Shared>,
    rx: Receiver<Request<T>>,
    committed: Sender<Committed<T>>,
    cfg: WriterConfig,
) {
    let mut carry: Option<Request<T>> = None;
    let mut group: Vec<Request<T>> = Vec::with_capacity(cfg.group_max_entries.min(4096));
    let mut last_sync = Instant::now();
    let mut unsynced = false;
    let mut committed_open = true;
    'outer: loop {
        // A carried request was already taken off the queue (and accounted) last round.
        let (first, from_queue) = match carry.take() {
            Some(r) => (r, false),
            None => match cfg.sync_interval {
                Some(iv) if unsynced => {
                    match rx.recv_timeout(iv.saturating_sub(last_sync.elapsed())) {
                        Ok(r) => (r, true),
                        Err(RecvTimeoutError::Timeout) => {
                            periodic_sync(&shared, &mut last_sync, &mut unsynced);
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                _ => match rx.recv() {
                    Ok(r) => (r, true),
                    Err(_) => break,
                },
            },
        };
        if matches!(first, Request::Stop) {
            break;
        }
        if from_queue {
            dequeued(&shared, &first);
        }
        let mut bytes = first.group_bytes();
        group.push(first);
        let mut stop = false;
        while group.len() < cfg.group_max_entries && bytes < cfg.group_max_bytes {
            match rx.try_recv() {
                Ok(Request::Stop) => {
                    stop = true;
                    break;
                }
                Ok(r) => {
                    if bytes + r.group_bytes() > cfg.group_max_bytes {
                        // Too big for this group: it opens the next one.
                        dequeued(&shared, &r);
                        carry = Some(r);
                        break;
                    }
                    dequeued(&shared, &r);
                    bytes += r.group_bytes();
                    group.push(r);
                }
                Err(_) => break,
            }
        }
        metrics::gauge!("chingest_wal_queue_depth").set(shared.queue_depth.load(Relaxed) as f64);
        commit_group(
            &shared,
            &mut group,
            bytes,
            &cfg,
            &committed,
            &mut committed_open,
        );
        if cfg.durability == Durability::Buffered {
            unsynced = true;
            if cfg
                .sync_interval
                .is_some_and(|iv| last_sync.elapsed() >= iv)
            {
                periodic_sync(&shared, &mut last_sync, &mut unsynced);
            }
        }
        if stop {
            break 'outer;
        }
    }
    // Requests still queued (after Stop, or a carried one) complete with Shutdown when their
    // Completers drop together with the receiver.
    drop(carry);
    if unsynced && shared.check_poison().is_ok() {
        periodic_sync(&shared, &mut last_sync, &mut unsynced);
    }
}

/// Accounts a request leaving the queue.
fn dequeued<T>(shared: &Shared, r: &Request<T>) {
    let b = r.bytes();
    shared.queue_depth.fetch_sub(1, Relaxed);
    shared.queued_bytes.fetch_sub(b, Relaxed);
    if let Request::Data { enqueued, .. } | Request::Meta { enqueued, .. } = r {
        metrics::histogram!("chingest_wal_queue_wait_seconds")
            .record(enqueued.elapsed().as_secs_f64());
    }
}

fn periodic_sync(shared: &Shared, last_sync: &mut Instant, unsynced: &mut bool) {
    *last_sync = Instant::now();
    *unsynced = false;
    if shared.check_poison().is_err() {
        return;
    }
    if let Err(e) = shared.db.flush_wal(true) {
        shared.set_poison(format!("periodic WAL sync failed: {e}"));
    }
}

fn commit_group<T>(
    shared: &Shared,
    group: &mut Vec<Request<T>>,
    bytes: u64,
    cfg: &WriterConfig,
    committed: &Sender<Committed<T>>,
    committed_open: &mut bool,
) {
    if let Err(e) = shared.check_poison() {
        for r in group.drain(..) {
            if let Request::Data { done, .. } | Request::Meta { done, .. } = r {
                done.complete(Err(e.clone()));
            }
        }
        return;
    }
    let db = &shared.db;
    let entries_cf = db.cf_handle(CF_ENTRIES).expect("entries CF");
    let meta_cf = db.cf_handle(CF_META).expect("meta CF");
    let wal_meta_cf = db.cf_handle(CF_WAL_META).expect("wal_meta CF");

    // Below the disk reserve, data entries fail (not acknowledged, nothing poisoned) and
    // metadata still commits: the check is fresh for every group that carries data.
    let disk_full = if group.iter().any(|r| matches!(r, Request::Data { .. })) {
        shared.disk.check_free(shared.disk.refresh()).err()
    } else {
        None
    };
    let first_seq = shared.last_seq.load(Relaxed) + 1;
    let mut seq = first_seq - 1;
    // Preallocate: RocksDB's batch buffer would otherwise grow by doubling, copying megabytes.
    let mut batch = WriteBatch::with_capacity_bytes(bytes as usize + group.len() * 64 + 64);
    let mut pending: Vec<Pending<T>> = Vec::with_capacity(group.len());
    let mut meta_done: Vec<(usize, Completer)> = Vec::new();
    for r in group.drain(..) {
        match r {
            Request::Data { done, .. } if disk_full.is_some() => {
                done.complete(Err(disk_full.clone().expect("checked")));
            }
            Request::Data {
                record,
                payload_len,
                memory_bytes,
                points,
                created_ns,
                meta,
                attachment,
                done,
                ..
            } => {
                seq += 1;
                batch.put_cf(entries_cf, seq_key(seq), &record);
                drop(record); // the batch holds a copy; free the payload now
                for (k, v) in &meta {
                    batch.put_cf(meta_cf, k, v);
                }
                pending.push(Pending {
                    seq,
                    points,
                    bytes: payload_len,
                    memory_bytes,
                    created_ns,
                    attachment,
                    done,
                });
            }
            Request::Meta {
                kvs,
                delete_prefixes,
                stamped,
                done,
                ..
            } => {
                for prefix in &delete_prefixes {
                    // All 0xFF (or empty): everything from the prefix on.
                    let end = prefix_end(prefix).unwrap_or_else(|| vec![0xFF; 64]);
                    batch.delete_range_cf(meta_cf, prefix.as_slice(), end.as_slice());
                }
                for (k, v) in &kvs {
                    batch.put_cf(meta_cf, k, v);
                }
                for k in &stamped {
                    // `seq` is the last data sequence of this group so far (or before it),
                    // which is what this request's ticket resolves to.
                    batch.put_cf(meta_cf, k, seq.to_be_bytes());
                }
                meta_done.push((pending.len(), done));
            }
            Request::Stop => unreachable!("Stop never enters a group"),
        }
    }
    if seq >= first_seq {
        batch.put_cf(wal_meta_cf, KEY_LAST_SEQ, seq.to_be_bytes());
    }
    let mut wo = WriteOptions::default();
    wo.set_sync(cfg.durability == Durability::Fsync);

    let t0 = Instant::now();
    let result = if shared.fail_next_write.swap(false, Relaxed) {
        Err(WalError::Rocks {
            op: "group write",
            message: "injected failure (test hook)".into(),
        })
    } else {
        db.write_opt(batch, &wo)
            .map_err(|e| WalError::rocks("group write", e))
    };
    let elapsed = t0.elapsed();
    if let Err(e) = result {
        // Durability of this group is unknown (it may or may not be on disk after a restart),
        // and RocksDB may be in an error state: poison, fail everything, acknowledge nothing.
        shared.set_poison(e.to_string());
        for p in pending {
            p.done.complete(Err(e.clone()));
        }
        for (_, d) in meta_done {
            d.complete(Err(e.clone()));
        }
        return;
    }
    let n = pending.len() as u64;
    metrics::histogram!("chingest_wal_commit_seconds").record(elapsed.as_secs_f64());
    metrics::histogram!("chingest_wal_group_entries").record(n as f64);
    metrics::histogram!("chingest_wal_group_bytes").record(bytes as f64);
    shared.groups_committed.fetch_add(1, Relaxed);
    shared.last_group_entries.store(n, Relaxed);
    shared
        .last_commit_ns
        .store(elapsed.as_nanos() as u64, Relaxed);

    // Lag index and last_seq first, so a flusher that sees the Committed can mark it flushed.
    shared.push_unflushed(pending.iter().map(|p| Unflushed {
        seq: p.seq,
        points: p.points,
        bytes: p.memory_bytes,
        payload_bytes: p.bytes,
        created_ns: p.created_ns,
    }));
    shared.last_seq.store(seq, Release);

    // Hand over in sequence order, then acknowledge. Meta-only tickets resolve to the last data
    // sequence committed at or before them.
    let mut dones: Vec<(u64, Completer)> = Vec::with_capacity(pending.len());
    for p in pending {
        if *committed_open {
            let c = Committed {
                seq: p.seq,
                points: p.points,
                bytes: p.bytes,
                attachment: p.attachment,
            };
            if committed.send(c).is_err() {
                // The data is durable and will be replayed at the next open; keep acknowledging.
                tracing::warn!(
                    "WAL committed receiver dropped; entries are durable but not handed off"
                );
                *committed_open = false;
            }
        }
        dones.push((p.seq, p.done));
    }
    for (s, d) in dones {
        d.complete(Ok(s));
    }
    for (pos, d) in meta_done {
        // `pos` data entries of this group preceded the metadata.
        d.complete(Ok(first_seq - 1 + pos as u64));
    }
}

/// The smallest key greater than every key starting with `prefix`, if one exists.
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod prefix_tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_is_the_next_key_after_the_prefix_range() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xFF, 0xFF]), None);
        assert_eq!(prefix_end(b""), None);
    }
}
