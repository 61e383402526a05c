//! Shared helpers: deterministic payloads, configs, open helpers.

use crossbeam_channel::Receiver;
use wal::{Committed, Recovery, Wal, WalConfig};

/// A payload that identifies itself: id, length, then xorshift bytes seeded by id.
pub(crate) fn payload(id: u64, len: usize) -> Vec<u8> {
    let len = len.max(12);
    let mut v = Vec::with_capacity(len);
    v.extend_from_slice(&id.to_le_bytes());
    v.extend_from_slice(&(len as u32).to_le_bytes());
    let mut x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(x as u8);
    }
    v
}

/// The id of a self-identifying payload, if it is exactly what `payload` generated.
pub(crate) fn payload_id(p: &[u8]) -> Option<u64> {
    if p.len() < 12 {
        return None;
    }
    let id = u64::from_le_bytes(p[..8].try_into().ok()?);
    let len = u32::from_le_bytes(p[8..12].try_into().ok()?) as usize;
    (payload(id, len) == p).then_some(id)
}

pub(crate) fn config(dir: &std::path::Path) -> WalConfig {
    let mut c = WalConfig::new(dir);
    // Small memtables keep tests light.
    c.write_buffer_bytes = 4 << 20;
    c
}

pub(crate) type Opened = (Wal<u64>, Recovery, Receiver<Committed<u64>>);

/// Opens with an unbounded committed channel.
pub(crate) fn open(cfg: WalConfig) -> Opened {
    let (tx, rx) = crossbeam_channel::unbounded();
    let (wal, rec) = Wal::open(cfg, tx).expect("open WAL");
    (wal, rec, rx)
}

pub(crate) fn entry(id: u64, len: usize) -> wal::Entry<u64> {
    wal::Entry {
        payload: payload(id, len),
        points: id % 97 + 1,
        held_bytes: 0,
        meta: Vec::new(),
        attachment: id,
    }
}

/// Opens the WAL's RocksDB directly (the WAL must be closed).
pub(crate) fn raw_db(dir: &std::path::Path) -> rocksdb::DB {
    let opts = rocksdb::Options::default();
    rocksdb::DB::open_cf(
        &opts,
        dir,
        [
            wal::layout::CF_ENTRIES,
            wal::layout::CF_WAL_META,
            wal::layout::CF_META,
            wal::layout::CF_QUARANTINE,
            wal::layout::CF_DEAD_LETTER,
        ],
    )
    .expect("open raw db")
}

#[test]
fn payload_ids_round_trip() {
    assert_eq!(payload_id(&payload(42, 100)), Some(42));
    let mut p = payload(42, 100);
    p[50] ^= 1;
    assert_eq!(payload_id(&p), None);
    assert_eq!(payload_id(&payload(7, 100)[..99]), None);
}
