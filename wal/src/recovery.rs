//! Recovery at open: read every entry above the flushed sequence, verify it, quarantine the bad.
//!
//! The scan is a small state machine (`Scan`) over the entries column family in key order.
//! Its state is the next expected sequence number; each stored key is classified as a valid
//! entry, a corrupt entry (reported by sequence and reason, moved to the quarantine column
//! family), or preceded by a gap (sequences that have no stored value at all, reported as
//! ranges). A bad entry never affects its neighbours: classification is per key.

use std::ops::RangeInclusive;

use rocksdb::{Direction, IteratorMode, WriteBatch, WriteOptions, DB};

use crate::layout::{parse_seq_key, seq_key, CF_ENTRIES, CF_QUARANTINE};
use crate::record;
use crate::WalError;

/// Why a stored entry was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CorruptReason {
    /// The value is shorter than the record trailer.
    #[error("record of {len} bytes is shorter than its trailer")]
    TooShort {
        /// Stored length.
        len: usize,
    },
    /// The trailer's magic bytes are wrong.
    #[error("bad record magic")]
    BadMagic,
    /// The record was written by an unknown layout version.
    #[error("unsupported record version {version}")]
    UnsupportedVersion {
        /// The stored version byte.
        version: u8,
    },
    /// The stored payload length disagrees with the value's length (truncated or extended).
    #[error("payload length {actual} differs from the recorded {declared}")]
    LengthMismatch {
        /// Length recorded in the trailer.
        declared: u64,
        /// Length found.
        actual: u64,
    },
    /// CRC32 mismatch.
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        /// Checksum in the trailer.
        stored: u32,
        /// Checksum of the bytes found.
        computed: u32,
    },
    /// The key is not an 8-byte sequence number.
    #[error("key of {len} bytes is not a sequence number")]
    BadKey {
        /// Key length.
        len: usize,
    },
}

/// An unflushed entry read back at open, verified.
#[derive(Clone, PartialEq, Eq)]
pub struct RecoveredEntry {
    /// Sequence number.
    pub seq: u64,
    /// The caller's payload, exactly as submitted.
    pub payload: Vec<u8>,
    /// Points the entry carries (as submitted).
    pub points: u64,
    /// Wall clock (ns since the Unix epoch) at submit.
    pub created_ns: u64,
}

impl std::fmt::Debug for RecoveredEntry {
    // Payloads are megabytes: show their length, not their bytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecoveredEntry")
            .field("seq", &self.seq)
            .field("payload_len", &self.payload.len())
            .field("points", &self.points)
            .field("created_ns", &self.created_ns)
            .finish()
    }
}

/// A stored entry that failed verification; it was moved to the quarantine column family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptEntry {
    /// Its sequence number (for a [`CorruptReason::BadKey`] entry, the sequence the scan
    /// expected at that position).
    pub seq: u64,
    /// Why it was rejected.
    pub reason: CorruptReason,
}

/// What [`crate::Wal::open`] found on disk.
///
/// Every sequence in `flushed_seq + 1 ..= last_seq` appears exactly once across `entries`,
/// `corrupt` and `missing`. A consumer that advances `mark_flushed` over a contiguous prefix
/// should treat corrupt and missing sequences as done (they are reported, and there is nothing
/// left to flush for them).
#[derive(Debug, Default)]
pub struct Recovery {
    /// Valid unflushed entries, in sequence order.
    pub entries: Vec<RecoveredEntry>,
    /// Corrupt entries, in sequence order (quarantined, not replayed).
    pub corrupt: Vec<CorruptEntry>,
    /// Sequence ranges that were assigned (≤ `last_seq`) but have no stored entry.
    pub missing: Vec<RangeInclusive<u64>>,
    /// The durable flushed sequence.
    pub flushed_seq: u64,
    /// The last assigned sequence.
    pub last_seq: u64,
}

impl Recovery {
    /// Total points in `entries`.
    pub fn points(&self) -> u64 {
        self.entries.iter().map(|e| e.points).sum()
    }

    /// Every sequence above `flushed_seq` that will never be replayed (corrupt or missing), in
    /// order. Bounded by the number of corrupt entries plus the number of missing ranges.
    pub fn unreplayable(&self) -> impl Iterator<Item = RangeInclusive<u64>> + '_ {
        let mut v: Vec<RangeInclusive<u64>> = self
            .corrupt
            .iter()
            .map(|c| c.seq..=c.seq)
            .chain(self.missing.iter().cloned())
            .collect();
        v.sort_by_key(|r| *r.start());
        v.into_iter()
    }
}

/// Verdict on one stored key/value.
enum Verdict {
    Valid(RecoveredEntry),
    /// The entry and its raw stored bytes (kept for the quarantine).
    Corrupt(CorruptEntry, Box<[u8]>),
}

/// The scan's explicit state: the next sequence number expected in key order.
struct Scan {
    expected: u64,
    out: Recovery,
}

impl Scan {
    fn new(flushed_seq: u64) -> Self {
        Scan {
            expected: flushed_seq + 1,
            out: Recovery {
                flushed_seq,
                ..Recovery::default()
            },
        }
    }

    fn classify(&self, key: &[u8], value: Box<[u8]>) -> Verdict {
        let Some(seq) = parse_seq_key(key) else {
            let reason = CorruptReason::BadKey { len: key.len() };
            return Verdict::Corrupt(
                CorruptEntry {
                    seq: self.expected,
                    reason,
                },
                value,
            );
        };
        match record::decode(&value) {
            Ok(info) => {
                let mut payload = value.into_vec();
                payload.truncate(info.payload_len);
                Verdict::Valid(RecoveredEntry {
                    seq,
                    payload,
                    points: info.points,
                    created_ns: info.created_ns,
                })
            }
            Err(reason) => Verdict::Corrupt(CorruptEntry { seq, reason }, value),
        }
    }

    /// Records a gap before `seq` if the scan skipped sequences, then advances past `seq`.
    fn advance_to(&mut self, seq: u64) {
        if seq > self.expected {
            self.out.missing.push(self.expected..=seq - 1);
        }
        self.expected = self.expected.max(seq + 1);
    }

    fn finish(mut self, last_seq_meta: u64) -> Recovery {
        // last_seq is written in the same batch as the entries, so the stored entries never go
        // beyond it; if they do (damaged bookkeeping), trust the entries.
        let last = last_seq_meta.max(self.expected - 1);
        if last >= self.expected {
            self.out.missing.push(self.expected..=last);
        }
        self.out.last_seq = last;
        self.out
    }
}

/// Scans the entries CF above `flushed_seq`, quarantining corrupt entries (synced).
pub(crate) fn recover(db: &DB, flushed_seq: u64, last_seq: u64) -> Result<Recovery, WalError> {
    let cf = db.cf_handle(CF_ENTRIES).expect("entries CF opened");
    let qcf = db.cf_handle(CF_QUARANTINE).expect("quarantine CF opened");
    let mut scan = Scan::new(flushed_seq);
    let mut quarantine = WriteBatch::default();
    let start = seq_key(flushed_seq.saturating_add(1));
    for item in db.iterator_cf(cf, IteratorMode::From(&start, Direction::Forward)) {
        let (key, value) = item.map_err(|e| WalError::rocks("recovery scan", e))?;
        match scan.classify(&key, value) {
            Verdict::Valid(e) => {
                scan.advance_to(e.seq);
                scan.out.entries.push(e);
            }
            Verdict::Corrupt(c, raw) => {
                tracing::error!(seq = c.seq, reason = %c.reason, "corrupt WAL entry quarantined");
                metrics::counter!("chingest_wal_corrupt_entries_total").increment(1);
                if parse_seq_key(&key).is_some() {
                    scan.advance_to(c.seq);
                }
                let mut qkey = seq_key(c.seq).to_vec();
                quarantine.put_cf(qcf, &key, &raw);
                qkey.extend_from_slice(b"/reason");
                quarantine.put_cf(qcf, &qkey, c.reason.to_string());
                quarantine.delete_cf(cf, &key);
                scan.out.corrupt.push(c);
            }
        }
    }
    if !quarantine.is_empty() {
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        db.write_opt(quarantine, &wo)
            .map_err(|e| WalError::rocks("quarantine write", e))?;
    }
    Ok(scan.finish(last_seq))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(p: &[u8]) -> Box<[u8]> {
        record::encode(p.to_vec(), 1, 0).into_boxed_slice()
    }

    #[test]
    fn scan_reports_gaps_corruption_and_tail() {
        let mut s = Scan::new(10);
        for (seq, v) in [
            (11u64, rec(b"a")),
            (13, rec(b"b")),
            (14, Box::from(&b"junk"[..])),
            (15, rec(b"c")),
        ] {
            match s.classify(&seq_key(seq), v) {
                Verdict::Valid(e) => {
                    s.advance_to(e.seq);
                    s.out.entries.push(e)
                }
                Verdict::Corrupt(c, _) => {
                    s.advance_to(c.seq);
                    s.out.corrupt.push(c)
                }
            }
        }
        let r = s.finish(17);
        assert_eq!(
            r.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
            vec![11, 13, 15]
        );
        assert_eq!(r.entries[2].payload, b"c");
        assert_eq!(
            r.corrupt,
            vec![CorruptEntry {
                seq: 14,
                reason: CorruptReason::TooShort { len: 4 }
            }]
        );
        assert_eq!(r.missing, vec![12..=12, 16..=17]);
        assert_eq!(r.last_seq, 17);
        assert_eq!(
            r.unreplayable().collect::<Vec<_>>(),
            vec![12..=12, 14..=14, 16..=17]
        );
    }

    #[test]
    fn entries_beyond_recorded_last_seq_extend_it() {
        let mut s = Scan::new(0);
        if let Verdict::Valid(e) = s.classify(&seq_key(1), rec(b"x")) {
            s.advance_to(e.seq);
            s.out.entries.push(e);
        }
        let r = s.finish(0);
        assert_eq!(r.last_seq, 1);
        assert!(r.missing.is_empty());
    }
}
