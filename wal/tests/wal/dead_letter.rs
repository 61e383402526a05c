//! The dead-letter column family and stamped metadata (issue #15: quarantined flush data and
//! DROP DATABASE as one durable decision).

use crate::util::*;

#[test]
fn dead_letters_are_durable_and_outlive_mark_flushed() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (wal, _, _rx) = open(config(dir.path()));
        let seq = wal.submit(entry(1, 100)).unwrap().wait().unwrap();
        wal.dead_letter_put(vec![
            (b"db1\0m\0a".to_vec(), b"one".to_vec()),
            (b"db1\0m\0b".to_vec(), b"two".to_vec()),
            (b"db2\0m\0a".to_vec(), b"three".to_vec()),
        ])
        .unwrap();
        wal.mark_flushed(seq).unwrap();
        assert_eq!(wal.dead_letter_scan(b"").unwrap().len(), 3);
    }
    let (wal, rec, _rx) = open(config(dir.path()));
    assert!(rec.entries.is_empty());
    let db1 = wal.dead_letter_scan(b"db1\0").unwrap();
    assert_eq!(
        db1,
        vec![
            (b"db1\0m\0a".to_vec(), b"one".to_vec()),
            (b"db1\0m\0b".to_vec(), b"two".to_vec())
        ]
    );
    wal.dead_letter_delete(vec![b"db1\0m\0a".to_vec()], vec![b"db2\0".to_vec()])
        .unwrap();
    let left: Vec<Vec<u8>> = wal
        .dead_letter_scan(b"")
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(left, vec![b"db1\0m\0b".to_vec()]);
}

#[test]
fn a_stamped_key_holds_the_last_data_sequence_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _, _rx) = open(config(dir.path()));
    let a = wal.submit(entry(1, 50)).unwrap();
    let b = wal.submit(entry(2, 50)).unwrap();
    let m = wal
        .update_meta_stamped(
            vec![(b"k".to_vec(), b"v".to_vec())],
            vec![],
            vec![b"fence".to_vec()],
        )
        .unwrap();
    let c = wal.submit(entry(3, 50)).unwrap();
    let (a, b, m, c) = (
        a.wait().unwrap(),
        b.wait().unwrap(),
        m.wait().unwrap(),
        c.wait().unwrap(),
    );
    assert_eq!((a, b, m, c), (1, 2, 2, 3));
    assert_eq!(
        wal.meta_get(b"fence").unwrap(),
        Some(2u64.to_be_bytes().to_vec())
    );
    assert_eq!(wal.meta_get(b"k").unwrap(), Some(b"v".to_vec()));
}
