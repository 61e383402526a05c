//! The stored form of one WAL entry: the caller's payload followed by a fixed trailer.
//!
//! ```text
//! payload bytes (caller-encoded, e.g. ingest::wire)
//! points        u64 LE
//! created_ns    u64 LE   wall clock at submit (for the age of the oldest unflushed entry)
//! payload_len   u64 LE   detects truncated or extended values
//! flags         u8       reserved, 0
//! crc32         u32 LE   crc32 (IEEE, crc32fast) of everything above
//! magic         "CW"
//! version       u8       RECORD_VERSION
//! ```
//!
//! Why a trailer rather than a header: the payload arrives as a `Vec<u8>` and appending 32 bytes
//! to it does not copy the payload (large allocations grow in place or by `mremap`), whereas a
//! header would force one more copy of megabytes per entry. The record is built on the
//! submitting thread, so the writer thread only copies it into the WriteBatch.

use crate::recovery::CorruptReason;

/// Version of the record layout written by this build.
pub const RECORD_VERSION: u8 = 1;
const MAGIC: [u8; 2] = *b"CW";
/// Length of the trailer appended to every payload.
pub const TRAILER_LEN: usize = 32;

/// A decoded, checksum-verified record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordInfo {
    /// Points the entry carries.
    pub points: u64,
    /// Wall clock (ns since the Unix epoch) when it was submitted.
    pub created_ns: u64,
    /// Payload length; the payload is `record[..payload_len]`.
    pub payload_len: usize,
}

/// Appends the trailer to `payload`, turning it into a record.
pub fn encode(mut payload: Vec<u8>, points: u64, created_ns: u64) -> Vec<u8> {
    let payload_len = payload.len() as u64;
    payload.reserve_exact(TRAILER_LEN);
    payload.extend_from_slice(&points.to_le_bytes());
    payload.extend_from_slice(&created_ns.to_le_bytes());
    payload.extend_from_slice(&payload_len.to_le_bytes());
    payload.push(0); // flags
    let crc = crc32fast::hash(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    payload.extend_from_slice(&MAGIC);
    payload.push(RECORD_VERSION);
    payload
}

/// Verifies `record` and returns its trailer fields.
pub fn decode(record: &[u8]) -> Result<RecordInfo, CorruptReason> {
    let len = record.len();
    if len < TRAILER_LEN {
        return Err(CorruptReason::TooShort { len });
    }
    let t = &record[len - TRAILER_LEN..];
    let version = t[31];
    if t[29..31] != MAGIC {
        return Err(CorruptReason::BadMagic);
    }
    if version != RECORD_VERSION {
        return Err(CorruptReason::UnsupportedVersion { version });
    }
    let u64_at = |i: usize| u64::from_le_bytes(t[i..i + 8].try_into().expect("8 bytes"));
    let points = u64_at(0);
    let created_ns = u64_at(8);
    let declared = u64_at(16);
    let actual = (len - TRAILER_LEN) as u64;
    if declared != actual {
        return Err(CorruptReason::LengthMismatch { declared, actual });
    }
    let stored = u32::from_le_bytes(t[25..29].try_into().expect("4 bytes"));
    let computed = crc32fast::hash(&record[..len - 7]);
    if stored != computed {
        return Err(CorruptReason::ChecksumMismatch { stored, computed });
    }
    Ok(RecordInfo {
        points,
        created_ns,
        payload_len: actual as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let rec = encode(b"hello".to_vec(), 7, 42);
        assert_eq!(rec.len(), 5 + TRAILER_LEN);
        let info = decode(&rec).unwrap();
        assert_eq!(
            info,
            RecordInfo {
                points: 7,
                created_ns: 42,
                payload_len: 5
            }
        );
        assert_eq!(&rec[..info.payload_len], b"hello");
        let empty = encode(Vec::new(), 0, 0);
        assert_eq!(decode(&empty).unwrap().payload_len, 0);
    }

    #[test]
    fn every_single_byte_flip_is_detected() {
        let rec = encode((0..200u8).collect(), 3, 9);
        for i in 0..rec.len() {
            let mut bad = rec.clone();
            bad[i] ^= 0x40;
            assert!(decode(&bad).is_err(), "flip at {i} not detected");
        }
    }

    #[test]
    fn truncation_and_extension_are_detected() {
        let rec = encode(vec![1; 64], 1, 1);
        assert!(matches!(
            decode(&rec[..10]),
            Err(CorruptReason::TooShort { len: 10 })
        ));
        // Drop a payload byte but keep the trailer: the length no longer matches.
        let mut cut = rec.clone();
        cut.remove(0);
        assert!(matches!(
            decode(&cut),
            Err(CorruptReason::LengthMismatch {
                declared: 64,
                actual: 63
            })
        ));
        let mut ext = vec![0u8];
        ext.extend_from_slice(&rec);
        assert!(matches!(
            decode(&ext),
            Err(CorruptReason::LengthMismatch { .. })
        ));
    }

    #[test]
    fn unknown_version_is_reported() {
        let mut rec = encode(vec![1; 4], 1, 1);
        *rec.last_mut().unwrap() = 9;
        assert_eq!(
            decode(&rec),
            Err(CorruptReason::UnsupportedVersion { version: 9 })
        );
    }
}
