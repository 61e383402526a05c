//! Queue limits, poisoning and shutdown with a writer held still.
//!
//! The writer is blocked deterministically by a rendezvous `committed` channel that nobody
//! receives from: after the first group commits, the writer waits in `send`.

use std::time::{Duration, Instant};

use wal::{Committed, Wal, WalConfig, WalError};

use crate::util::{config, entry, open};

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Opens with a rendezvous committed channel and commits entry 1, leaving the writer blocked
/// handing it over.
fn blocked(
    cfg: WalConfig,
) -> (
    Wal<u64>,
    crossbeam_channel::Receiver<Committed<u64>>,
    wal::CommitTicket,
) {
    let (tx, rx) = crossbeam_channel::bounded(0);
    let (wal, _rec) = Wal::open(cfg, tx).unwrap();
    let t1 = wal.submit(entry(1, 10)).unwrap();
    wait_until("first group committed", || wal.stats().last_seq == 1);
    (wal, rx, t1)
}

#[test]
fn queue_full_by_count_is_immediate_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.queue_capacity = 2;
    let (wal, rx, t1) = blocked(cfg);
    // Durable but not yet handed over: not acknowledged either (hand-off precedes acks).
    assert!(!t1.is_done());
    let t2 = wal.submit(entry(2, 10)).unwrap();
    let t3 = wal.submit(entry(3, 10)).unwrap();
    let started = Instant::now();
    match wal.submit(entry(4, 10)) {
        Err(WalError::QueueFull {
            depth: 2,
            capacity: 2,
            ..
        }) => {}
        other => panic!("expected QueueFull, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "refusal must not wait"
    );
    assert_eq!(wal.stats().queue_depth, 2);
    // Unblock: everything accepted is committed in order.
    let got: Vec<u64> = (0..3).map(|_| rx.recv().unwrap().seq).collect();
    assert_eq!(got, vec![1, 2, 3]);
    assert_eq!((t1.wait(), t2.wait(), t3.wait()), (Ok(1), Ok(2), Ok(3)));
    let t4 = wal.submit(entry(4, 10)).unwrap();
    assert_eq!(rx.recv().unwrap().seq, 4);
    assert_eq!(t4.wait(), Ok(4));
}

#[test]
fn queue_full_by_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.queue_max_bytes = 1000;
    cfg.max_entry_bytes = 1000;
    let (wal, rx, _t1) = blocked(cfg);
    let _t2 = wal.submit(entry(2, 600)).unwrap();
    match wal.submit(entry(3, 600)) {
        Err(WalError::QueueFull {
            bytes: 600,
            max_bytes: 1000,
            ..
        }) => {}
        other => panic!("expected QueueFull by bytes, got {other:?}"),
    }
    let _t3 = wal.submit(entry(3, 400)).unwrap();
    assert_eq!(wal.stats().queued_bytes, 1000);
    drop(rx); // writer's hand-off fails; it keeps committing
    wal.shutdown();
}

#[test]
fn failed_write_poisons_and_nothing_after_is_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (wal, _rec, rx) = open(config(dir.path()));
        assert_eq!(wal.submit(entry(1, 100)).unwrap().wait(), Ok(1));
        wal.inject_write_failure_for_tests();
        let err = wal.submit(entry(2, 100)).unwrap().wait().unwrap_err();
        assert!(
            matches!(
                err,
                WalError::Rocks {
                    op: "group write",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(wal.stats().poisoned);
        assert!(matches!(
            wal.submit(entry(3, 100)),
            Err(WalError::Poisoned { .. })
        ));
        assert!(matches!(
            wal.put_meta(vec![]),
            Err(WalError::Poisoned { .. })
        ));
        assert!(matches!(
            wal.mark_flushed(1),
            Err(WalError::Poisoned { .. })
        ));
        assert_eq!(wal.stats().last_seq, 1);
        // Only the acknowledged entry was handed over.
        assert_eq!(rx.try_iter().map(|c| c.seq).collect::<Vec<_>>(), vec![1]);
    }
    let (wal, rec, _rx) = open(config(dir.path()));
    assert_eq!(
        rec.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![1]
    );
    assert_eq!(
        wal.submit(entry(2, 100)).unwrap().wait(),
        Ok(2),
        "a restart clears the poison"
    );
}

#[test]
fn shutdown_commits_what_was_queued_and_fails_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.queue_capacity = 4;
    let (wal, rx, t1) = blocked(cfg);
    let t2 = wal.submit(entry(2, 10)).unwrap();
    let wal = std::sync::Arc::new(wal);
    let w = wal.clone();
    let stopper = std::thread::spawn(move || w.shutdown());
    // Submits racing with shutdown may still be accepted; each must then either commit or
    // fail with Shutdown, never hang.
    let mut racing = Vec::new();
    wait_until("shutdown flag", || match wal.submit(entry(9, 10)) {
        Ok(t) => {
            racing.push(t);
            false
        }
        Err(WalError::QueueFull { .. }) => false,
        Err(WalError::Shutdown) => true,
        Err(e) => panic!("unexpected {e:?}"),
    });
    let got: Vec<u64> = rx.iter().map(|c| c.seq).collect(); // ends when the writer exits
    stopper.join().unwrap();
    assert_eq!(&got[..2], &[1, 2]);
    assert_eq!(got, (1..=got.len() as u64).collect::<Vec<_>>());
    assert_eq!((t1.wait(), t2.wait()), (Ok(1), Ok(2)));
    let mut ok = 0;
    for t in racing {
        match t.wait() {
            Ok(seq) => {
                assert!(got.contains(&seq));
                ok += 1;
            }
            Err(e) => assert_eq!(e, WalError::Shutdown),
        }
    }
    assert_eq!(ok + 2, got.len());
    assert_eq!(wal.submit(entry(10, 10)).unwrap_err(), WalError::Shutdown);
}

#[test]
fn groups_respect_entry_and_byte_budgets() {
    for (max_entries, max_bytes, expected_groups) in [(3usize, 1 << 20, 1 + 3), (100, 250, 1 + 5)] {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config(dir.path());
        cfg.group_max_entries = max_entries;
        cfg.group_max_bytes = max_bytes;
        let (wal, rx, _t1) = blocked(cfg);
        // Queued while the writer is held: they form groups only after it is released.
        let tickets: Vec<_> = (2..=10)
            .map(|id| wal.submit(entry(id, 100)).unwrap())
            .collect();
        let got: Vec<u64> = (0..10).map(|_| rx.recv().unwrap().seq).collect();
        assert_eq!(got, (1..=10).collect::<Vec<_>>());
        for (t, seq) in tickets.into_iter().zip(2..) {
            assert_eq!(t.wait(), Ok(seq));
        }
        let st = wal.stats();
        // Entry budget 3: {1} {2,3,4} {5,6,7} {8,9,10}. Byte budget 250 at 100 B: pairs.
        assert_eq!(
            st.groups_committed, expected_groups,
            "budgets {max_entries}/{max_bytes}"
        );
        assert_eq!(st.last_group_entries, if max_entries == 3 { 3 } else { 1 });
        // A request carried over to the next group is accounted once (regression: it was
        // subtracted twice, wrapping the counters and refusing every later submit).
        assert_eq!((st.queue_depth, st.queued_bytes), (0, 0));
        let t = wal.submit(entry(11, 100)).unwrap();
        assert_eq!(rx.recv().unwrap().seq, 11);
        assert_eq!(t.wait(), Ok(11));
    }
}
