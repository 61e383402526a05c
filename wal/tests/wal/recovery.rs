//! Replay after reopen, corruption reporting and quarantine.

use wal::layout::{seq_key, CF_ENTRIES, CF_QUARANTINE};
use wal::{CorruptReason, RecoveredEntry};

use crate::util::{config, entry, open, payload, payload_id, raw_db};

fn ids(entries: &[RecoveredEntry]) -> Vec<u64> {
    entries
        .iter()
        .map(|e| payload_id(&e.payload).expect("intact payload"))
        .collect()
}

#[test]
fn replay_yields_exactly_the_unflushed_entries_in_order_every_time() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (wal, _rec, _rx) = open(config(dir.path()));
        for id in 1..=60u64 {
            assert_eq!(
                wal.submit(entry(id, (id as usize * 131) % 5000))
                    .unwrap()
                    .wait()
                    .unwrap(),
                id
            );
        }
        wal.mark_flushed(25).unwrap();
    }
    for _ in 0..3 {
        let (wal, rec, rx) = open(config(dir.path()));
        assert_eq!(rec.flushed_seq, 25);
        assert_eq!(rec.last_seq, 60);
        assert_eq!(
            rec.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
            (26..=60).collect::<Vec<_>>()
        );
        assert_eq!(ids(&rec.entries), (26..=60).collect::<Vec<_>>());
        for e in &rec.entries {
            assert_eq!(e.points, e.seq % 97 + 1);
            assert!(e.created_ns > 0);
        }
        assert!(rec.corrupt.is_empty() && rec.missing.is_empty());
        let st = wal.stats();
        assert_eq!(st.unflushed_entries, 35);
        assert_eq!(st.unflushed_points, rec.points());
        // Recovered entries are not re-sent on the committed channel: the caller replays them.
        assert!(rx.try_recv().is_err());
    }
}

#[test]
fn corrupt_entries_are_reported_and_quarantined_while_neighbours_replay() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (wal, _rec, _rx) = open(config(dir.path()));
        for id in 1..=10u64 {
            wal.submit(entry(id, 300)).unwrap().wait().unwrap();
        }
    }
    let original5;
    {
        let db = raw_db(dir.path());
        let cf = db.cf_handle(CF_ENTRIES).unwrap();
        let mut v = db.get_cf(cf, seq_key(5)).unwrap().unwrap();
        original5 = v.clone();
        v[100] ^= 0x10; // bit rot in the payload
        db.put_cf(cf, seq_key(5), &v).unwrap();
        let v7 = db.get_cf(cf, seq_key(7)).unwrap().unwrap();
        db.put_cf(cf, seq_key(7), &v7[10..]).unwrap(); // torn: front of the value lost
    }
    {
        let (wal, rec, _rx) = open(config(dir.path()));
        assert_eq!(rec.corrupt.len(), 2);
        assert_eq!(rec.corrupt[0].seq, 5);
        assert!(
            matches!(
                rec.corrupt[0].reason,
                CorruptReason::ChecksumMismatch { .. }
            ),
            "{:?}",
            rec.corrupt[0]
        );
        assert_eq!(rec.corrupt[1].seq, 7);
        assert!(
            matches!(rec.corrupt[1].reason, CorruptReason::LengthMismatch { .. }),
            "{:?}",
            rec.corrupt[1]
        );
        assert_eq!(ids(&rec.entries), vec![1, 2, 3, 4, 6, 8, 9, 10]);
        assert_eq!(rec.unreplayable().collect::<Vec<_>>(), vec![5..=5, 7..=7]);
        // The WAL keeps going after the damage.
        assert_eq!(wal.submit(entry(11, 10)).unwrap().wait().unwrap(), 11);
    }
    {
        let db = raw_db(dir.path());
        let q = db.cf_handle(CF_QUARANTINE).unwrap();
        let mut expected5 = original5.clone();
        expected5[100] ^= 0x10;
        assert_eq!(
            db.get_cf(q, seq_key(5)).unwrap(),
            Some(expected5),
            "raw bytes kept for forensics"
        );
        let mut rk = seq_key(5).to_vec();
        rk.extend_from_slice(b"/reason");
        let reason = String::from_utf8(db.get_cf(q, &rk).unwrap().unwrap()).unwrap();
        assert!(reason.contains("checksum"), "{reason}");
        assert!(db.get_cf(q, seq_key(7)).unwrap().is_some());
        let e = db.cf_handle(CF_ENTRIES).unwrap();
        assert_eq!(
            db.get_cf(e, seq_key(5)).unwrap(),
            None,
            "moved out of the entries CF"
        );
    }
    // Reported once; afterwards the sequences are known gaps, still never silently skipped.
    let (_wal, rec, _rx) = open(config(dir.path()));
    assert!(rec.corrupt.is_empty());
    assert_eq!(rec.missing, vec![5..=5, 7..=7]);
    assert_eq!(ids(&rec.entries), vec![1, 2, 3, 4, 6, 8, 9, 10, 11]);
}

#[test]
fn payloads_are_returned_byte_exact_including_empty() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (wal, _rec, _rx) = open(config(dir.path()));
        let e = wal::Entry {
            payload: Vec::new(),
            points: 0,
            held_bytes: 0,
            meta: vec![],
            attachment: 0,
        };
        wal.submit(e).unwrap().wait().unwrap();
        wal.submit(entry(2, 1 << 20)).unwrap().wait().unwrap();
    }
    let (_wal, rec, _rx) = open(config(dir.path()));
    assert_eq!(rec.entries[0].payload, Vec::<u8>::new());
    assert_eq!(rec.entries[1].payload, payload(2, 1 << 20));
}
