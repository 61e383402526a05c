//! Group commit: ordering, hand-off, metadata, truncation, shutdown.

use std::collections::HashMap;
use std::sync::Arc;

use wal::{Entry, WalError};

use crate::util::{config, entry, open, payload};

#[test]
fn concurrent_submitters_get_gap_free_ordered_seqs_and_handoff_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, rec, rx) = open(config(dir.path()));
    assert!(rec.entries.is_empty());
    let wal = Arc::new(wal);
    let threads = 8u64;
    let per = 150u64;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let wal = wal.clone();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                for i in 0..per {
                    let id = t * 1_000_000 + i;
                    let ticket = wal
                        .submit(entry(id, 64 + (i as usize * 37) % 3000))
                        .unwrap();
                    got.push((id, ticket.wait().unwrap()));
                }
                got
            })
        })
        .collect();
    let mut seq_of: HashMap<u64, u64> = HashMap::new();
    for h in handles {
        let got = h.join().unwrap();
        // Within one submitter, later submits get later sequences.
        assert!(got.windows(2).all(|w| w[0].1 < w[1].1));
        seq_of.extend(got);
    }
    let n = threads * per;
    let mut seqs: Vec<u64> = seq_of.values().copied().collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=n).collect::<Vec<_>>(), "gap-free, unique");

    // The flusher side sees every entry exactly once, in sequence order, with its attachment.
    let committed: Vec<_> = rx.try_iter().collect();
    assert_eq!(committed.len() as u64, n);
    for (i, c) in committed.iter().enumerate() {
        assert_eq!(c.seq, i as u64 + 1);
        assert_eq!(seq_of[&c.attachment], c.seq);
        assert_eq!(c.points, c.attachment % 97 + 1);
    }
    let st = wal.stats();
    assert_eq!(st.last_seq, n);
    assert_eq!(st.unflushed_entries, n);
    assert_eq!(
        st.unflushed_points,
        committed.iter().map(|c| c.points).sum::<u64>()
    );
    assert_eq!(
        st.unflushed_bytes,
        committed.iter().map(|c| c.bytes).sum::<u64>()
    );
    assert!(st.oldest_unflushed_age.is_some());
    assert!(st.groups_committed >= 1 && st.groups_committed <= n);
    assert_eq!(st.queue_depth, 0);
}

#[test]
fn ticket_is_awaitable() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _rec, _rx) = open(config(dir.path()));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let wal = Arc::new(wal);
    let seqs = rt.block_on(async {
        let mut tasks = Vec::new();
        for id in 0..20 {
            let wal = wal.clone();
            tasks.push(tokio::spawn(async move {
                wal.submit(entry(id, 100)).unwrap().await.unwrap()
            }));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    });
    let mut sorted = seqs.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (1..=20).collect::<Vec<_>>());
}

#[test]
fn metadata_commits_with_data_and_alone_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (wal, _rec, _rx) = open(config(dir.path()));
        let mut e = entry(1, 50);
        e.meta = vec![(b"schema/db1/cpu".to_vec(), b"v1".to_vec())];
        assert_eq!(wal.submit(e).unwrap().wait().unwrap(), 1);
        assert_eq!(
            wal.meta_get(b"schema/db1/cpu").unwrap().as_deref(),
            Some(&b"v1"[..])
        );
        // Metadata alone resolves to the last data seq before it.
        let t = wal
            .put_meta(vec![(b"db/db2".to_vec(), b"{}".to_vec())])
            .unwrap();
        assert_eq!(t.wait().unwrap(), 1);
        assert_eq!(wal.submit(entry(2, 50)).unwrap().wait().unwrap(), 2);
        assert_eq!(wal.meta_get(b"missing").unwrap(), None);
    }
    let (wal, rec, _rx) = open(config(dir.path()));
    assert_eq!(rec.entries.len(), 2);
    assert_eq!(
        wal.meta_scan().unwrap(),
        vec![
            (b"db/db2".to_vec(), b"{}".to_vec()),
            (b"schema/db1/cpu".to_vec(), b"v1".to_vec())
        ]
    );
}

#[test]
fn metadata_prefix_deletes_are_durable_and_spare_other_keys() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (wal, _rec, _rx) = open(config(dir.path()));
        let kv = |k: &str| (k.as_bytes().to_vec(), b"x".to_vec());
        wal.put_meta(vec![
            kv("ic1Fdb1/a"),
            kv("ic1Fdb1/b"),
            kv("ic1Fdb10/a"),
            kv("ic1Sdb1/1"),
        ])
        .unwrap()
        .wait()
        .unwrap();
        assert_eq!(wal.submit(entry(1, 10)).unwrap().wait().unwrap(), 1);
        // Deletes apply before the puts of the same call; the ticket resolves
        // to the last data sequence before the change.
        let t = wal
            .update_meta(
                vec![kv("ic1Fdb1/c"), kv("drop/db1")],
                vec![b"ic1Fdb1/".to_vec(), b"ic1Sdb1/".to_vec()],
            )
            .unwrap();
        assert_eq!(t.wait().unwrap(), 1);
    }
    let (wal, _rec, _rx) = open(config(dir.path()));
    let keys: Vec<String> = wal
        .meta_scan()
        .unwrap()
        .into_iter()
        .map(|(k, _)| String::from_utf8(k).unwrap())
        .collect();
    assert_eq!(keys, vec!["drop/db1", "ic1Fdb1/c", "ic1Fdb10/a"]);
}

#[test]
fn metadata_prefix_scan_reads_exactly_the_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _rec, _rx) = open(config(dir.path()));
    let kv = |k: &str| (k.as_bytes().to_vec(), k.as_bytes().to_vec());
    wal.put_meta(vec![
        kv("ic1Sdb"),
        kv("ic1Sdb1/1"),
        kv("ic1Sdb1/2"),
        kv("ic1Sdb10/1"),
        kv("ic1Sdb2/1"),
        kv("ic1T"),
    ])
    .unwrap()
    .wait()
    .unwrap();
    let keys = |p: &str| -> Vec<String> {
        wal.meta_scan_prefix(p.as_bytes())
            .unwrap()
            .into_iter()
            .map(|(k, v)| {
                assert_eq!(k, v);
                String::from_utf8(k).unwrap()
            })
            .collect()
    };
    assert_eq!(keys("ic1Sdb1/"), vec!["ic1Sdb1/1", "ic1Sdb1/2"]);
    assert_eq!(keys("ic1Sdb2/"), vec!["ic1Sdb2/1"]);
    assert_eq!(keys("ic1Sdb3/"), Vec::<String>::new());
    assert_eq!(keys("zzz"), Vec::<String>::new());
    assert_eq!(keys("").len(), 6);
}

#[test]
fn mark_flushed_truncates_updates_stats_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (wal, _rec, _rx) = open(config(dir.path()));
        for id in 1..=30 {
            wal.submit(entry(id, 500)).unwrap().wait().unwrap();
        }
        assert_eq!(
            wal.mark_flushed(31),
            Err(WalError::FlushBeyondLast {
                seq: 31,
                last_seq: 30
            })
        );
        wal.mark_flushed(10).unwrap();
        wal.mark_flushed(5).unwrap(); // going backwards is a no-op
        let st = wal.stats();
        assert_eq!(st.flushed_seq, 10);
        assert_eq!(st.unflushed_entries, 20);
        assert_eq!(st.unflushed_bytes, 20 * 500);
        assert_eq!(
            st.unflushed_points,
            (11..=30u64).map(|id| id % 97 + 1).sum::<u64>()
        );
        wal.mark_flushed(30).unwrap();
        let st = wal.stats();
        assert_eq!(
            (
                st.unflushed_entries,
                st.unflushed_bytes,
                st.unflushed_points
            ),
            (0, 0, 0)
        );
        assert_eq!(st.oldest_unflushed_age, None);
        // Sequences continue after a full truncation.
        assert_eq!(wal.submit(entry(31, 10)).unwrap().wait().unwrap(), 31);
    }
    let (wal, rec, _rx) = open(config(dir.path()));
    assert_eq!(rec.flushed_seq, 30);
    assert_eq!(rec.last_seq, 31);
    assert_eq!(
        rec.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![31]
    );
    assert!(rec.missing.is_empty() && rec.corrupt.is_empty());
    drop(wal);
    let db = crate::util::raw_db(dir.path());
    let cf = db.cf_handle(wal::layout::CF_ENTRIES).unwrap();
    let keys: Vec<u64> = db
        .iterator_cf(cf, rocksdb::IteratorMode::Start)
        .map(|r| wal::layout::parse_seq_key(&r.unwrap().0).unwrap())
        .collect();
    assert_eq!(keys, vec![31], "flushed entries are range-deleted");
}

#[test]
fn mark_flushed_runs_concurrently_with_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _rec, rx) = open(config(dir.path()));
    let wal = Arc::new(wal);
    let total = 400u64;
    let flusher = {
        let wal = wal.clone();
        std::thread::spawn(move || {
            let mut flushed = 0;
            while flushed < total - 50 {
                let c = rx.recv().unwrap();
                assert_eq!(c.seq, flushed + 1, "hand-off in order");
                flushed = c.seq;
                if flushed % 7 == 0 {
                    wal.mark_flushed(flushed).unwrap();
                }
            }
            wal.mark_flushed(flushed).unwrap();
            flushed
        })
    };
    let submitters: Vec<_> = (0..4u64)
        .map(|t| {
            let wal = wal.clone();
            std::thread::spawn(move || {
                for i in 0..total / 4 {
                    wal.submit(entry(t * 1000 + i, 200))
                        .unwrap()
                        .wait()
                        .unwrap();
                }
            })
        })
        .collect();
    for s in submitters {
        s.join().unwrap();
    }
    let flushed = flusher.join().unwrap();
    assert_eq!(flushed, total - 50);
    assert_eq!(wal.stats().unflushed_entries, 50);
    drop(Arc::try_unwrap(wal).expect("sole owner"));
    let (_wal, rec, _rx) = open(config(dir.path()));
    assert_eq!(
        rec.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (total - 49..=total).collect::<Vec<_>>()
    );
}

/// A compressed payload can be far smaller than the batches the flusher holds for it: the lag
/// stats count the larger of the two, truncation frees them, and the entry-size limit still
/// judges the payload (what RocksDB stores).
#[test]
fn held_bytes_count_in_unflushed_bytes_when_larger_than_the_payload() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.max_entry_bytes = 1000;
    let (wal, _rec, _rx) = open(cfg);
    let held = |id: u64, len: usize, held_bytes: u64| Entry {
        payload: payload(id, len),
        points: 1,
        held_bytes,
        meta: vec![],
        attachment: id,
    };
    wal.submit(held(1, 100, 1 << 20)).unwrap().wait().unwrap();
    wal.submit(held(2, 300, 10)).unwrap().wait().unwrap();
    assert_eq!(wal.stats().unflushed_bytes, (1 << 20) + 300);
    wal.mark_flushed(1).unwrap();
    assert_eq!(wal.stats().unflushed_bytes, 300);
    wal.mark_flushed(2).unwrap();
    assert_eq!(wal.stats().unflushed_bytes, 0);
}

#[test]
fn oversized_entries_are_refused_and_shutdown_refuses_new_work() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.max_entry_bytes = 1000;
    cfg.queue_max_bytes = 1000;
    let (wal, _rec, _rx) = open(cfg);
    let e = Entry {
        payload: payload(1, 1001),
        points: 1,
        held_bytes: 0,
        meta: vec![],
        attachment: 1,
    };
    assert_eq!(
        wal.submit(e).unwrap_err(),
        WalError::EntryTooLarge {
            bytes: 1001,
            max: 1000
        }
    );
    let t = wal.submit(entry(2, 1000)).unwrap();
    wal.shutdown();
    // Accepted before shutdown: committed by the draining writer.
    assert_eq!(t.wait(), Ok(1));
    assert_eq!(wal.submit(entry(3, 10)).unwrap_err(), WalError::Shutdown);
    assert_eq!(wal.put_meta(vec![]).unwrap_err(), WalError::Shutdown);
}
