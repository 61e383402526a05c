//! WAL payload: round trip and corruption.

use ingest::wire::{decode, encode, MAGIC};
use ingest::WireError;

use crate::util::{catalog, write};

fn sample() -> (Vec<u8>, ingest::PreparedWrite) {
    let cat = catalog();
    let w = write(
        &cat,
        "cpu,host=a f=1.5,i=2i,s=\"x\" 10\ncpu,host=b u=3u,b=true 20\nmem used=1 30\n",
    );
    (w.encode_wal().unwrap(), w)
}

#[test]
fn round_trip() {
    let (payload, w) = sample();
    assert_eq!(&payload[..4], MAGIC);
    let d = decode(&payload).unwrap();
    assert_eq!(d.db, "db");
    assert_eq!(d.points(), 3);
    assert_eq!(d.tables.len(), w.tables.len());
    for (a, b) in d.tables.iter().zip(&w.tables) {
        assert_eq!(a.measurement, b.measurement);
        assert_eq!(a.batch, b.batch);
    }
    // Empty write round-trips too.
    let empty = encode("db", &[]).unwrap();
    assert_eq!(decode(&empty).unwrap().tables.len(), 0);
}

#[test]
fn lz4_frames_round_trip_smaller_and_fail_cleanly_when_cut_or_corrupted() {
    let cat = catalog();
    // Repetitive enough for LZ4 to matter: 2,000 points of one series shape.
    let body: String = (0..2_000)
        .map(|i| {
            format!(
                "cpu,host=h{} usage_user={}.5,state=\"ok\" {}\n",
                i % 10,
                i % 7,
                i
            )
        })
        .collect();
    let w = write(&cat, &body);
    let plain = w.encode_wal().unwrap();
    let lz4 = w.encode_wal_with(true).unwrap();
    assert!(
        lz4.len() < plain.len() * 3 / 4,
        "{} vs {}",
        lz4.len(),
        plain.len()
    );
    let d = decode(&lz4).unwrap();
    assert_eq!(d.points(), 2_000);
    for (a, b) in d.tables.iter().zip(&w.tables) {
        assert_eq!(a.batch, b.batch);
    }
    for n in (0..lz4.len()).step_by(97) {
        assert!(decode(&lz4[..n]).is_err(), "prefix of {n} bytes decoded");
    }
    let mut bad = lz4.clone();
    for i in (40..bad.len()).step_by(131) {
        bad[i] ^= 0x5a;
    }
    let _ = decode(&bad); // an error or a value, never a panic
}

#[test]
fn every_truncation_is_an_error() {
    let (payload, _) = sample();
    for n in 0..payload.len() {
        assert!(
            decode(&payload[..n]).is_err(),
            "prefix of {n} bytes decoded"
        );
    }
}

#[test]
fn header_errors() {
    let (payload, _) = sample();
    assert_eq!(decode(b"nope").unwrap_err(), WireError::BadMagic);
    let mut p = payload.clone();
    p[4] = 9;
    assert_eq!(decode(&p).unwrap_err(), WireError::UnsupportedVersion(9));
    let mut p = payload.clone();
    p.push(0);
    assert_eq!(decode(&p).unwrap_err(), WireError::TrailingBytes(1));
    // A huge measurement count is refused without allocating for it.
    let mut p = b"CHIW\x01\x02\x00\x00\x00db".to_vec();
    p.extend_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(decode(&p), Err(WireError::Truncated { .. })));
    // A huge ipc length likewise.
    let mut p = b"CHIW\x01\x02\x00\x00\x00db\x01\x00\x00\x00\x01\x00\x00\x00m".to_vec();
    p.extend_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(decode(&p), Err(WireError::Truncated { .. })));
}

#[test]
fn corrupted_bytes_never_panic() {
    let (payload, _) = sample();
    // Deterministic pseudo-random corruption (xorshift).
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut errors = 0;
    for _ in 0..300 {
        let mut p = payload.clone();
        for _ in 0..(next() % 4 + 1) {
            let i = (next() as usize) % p.len();
            p[i] ^= (next() as u8) | 1;
        }
        if decode(&p).is_err() {
            errors += 1;
        }
    }
    assert!(errors > 0);
}
