//! The on-disk layout: column families, keys, and the RocksDB options tuned for this workload.

use rocksdb::{ColumnFamilyDescriptor, DBCompressionType, Options};

use crate::WalConfig;

/// Column family of entries: key = sequence number as big-endian u64 (so byte order is sequence
/// order), value = a [`crate::record`].
pub const CF_ENTRIES: &str = "entries";
/// Column family of the WAL's own bookkeeping: [`KEY_LAST_SEQ`], [`KEY_FLUSHED_SEQ`].
pub const CF_WAL_META: &str = "wal_meta";
/// Column family of caller metadata (schema, series registry, databases), written in the same
/// WriteBatch as the data that introduced it.
pub const CF_META: &str = "meta";
/// Column family of corrupt entries moved aside at recovery: key = sequence (big-endian u64) →
/// the raw stored value; key = sequence + `/reason` → the reason text.
pub const CF_QUARANTINE: &str = "quarantine";

/// Column family of dead letters: entries (or parts of them) the consumer could not apply and
/// set aside durably so the flushed sequence can pass them (e.g. a table the engine refuses).
/// Keys and values are the caller's ([`crate::Wal::dead_letter_put`]); the WAL never looks
/// inside. Kept until the caller deletes them: `mark_flushed` does not touch this family.
pub const CF_DEAD_LETTER: &str = "dead_letter";

/// Last assigned sequence number (big-endian u64), written in every data group's WriteBatch.
pub const KEY_LAST_SEQ: &[u8] = b"last_seq";
/// Highest sequence number known to be in the engine (big-endian u64).
pub const KEY_FLUSHED_SEQ: &[u8] = b"flushed_seq";

/// The entries-CF key of `seq`.
pub fn seq_key(seq: u64) -> [u8; 8] {
    seq.to_be_bytes()
}

/// Parses an entries-CF key.
pub fn parse_seq_key(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(key.try_into().ok()?))
}

const MIB: usize = 1024 * 1024;

/// DB-wide options.
pub(crate) fn db_options(_cfg: &WalConfig) -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    // Two cores: one flush and one compaction at a time is all the box can give without
    // stealing the writer's and the parsers' CPU.
    o.set_max_background_jobs(2);
    // Write SST files out incrementally so a memtable flush does not dump 128 MiB of dirty pages
    // at once and stall the WAL's fdatasync behind it.
    o.set_bytes_per_sync(MIB as u64);
    // Buffered mode: the OS writes the RocksDB WAL back in 1 MiB steps, bounding the dirty
    // (unsynced) tail independent of the periodic sync.
    o.set_wal_bytes_per_sync(MIB as u64);
    // Every write goes to the WAL file at once (no user-space WAL buffer), so an acknowledged
    // entry survives kill -9 even in buffered mode.
    o.set_manual_wal_flush(false);
    // fdatasync is enough for the WAL's durability; fsync would also flush inode metadata.
    o.set_use_fsync(false);
    // The wal_meta/meta CFs are rarely written, yet their memtables pin every RocksDB WAL file
    // that holds one of their writes. Capping the total WAL size forces those small memtables
    // to flush, so old WAL files (gigabytes of entries) are released.
    o.set_max_total_wal_size(512 * MIB as u64);
    // One writer thread: pipelining or unordered writes would buy nothing and weaken ordering.
    o.set_enable_pipelined_write(false);
    o.set_unordered_write(false);
    // Default kPointInTimeRecovery: a torn RocksDB WAL tail is cut at the last complete write
    // batch, so a group is wholly present or wholly absent after a crash.
    o
}

fn entries_options(cfg: &WalConfig) -> Options {
    let mut o = Options::default();
    // Entries are already compact Arrow IPC and are deleted within seconds; compressing them
    // would spend the writer's CPU for disk space we give back almost at once.
    o.set_compression_type(DBCompressionType::None);
    // A large memtable means most entries are flushed to the engine and range-deleted before
    // their memtable is written to an SST: the flush then drops the covered keys instead of
    // writing them out again (write amplification ~1: the RocksDB WAL only).
    o.set_write_buffer_size(cfg.write_buffer_bytes as usize);
    o.set_max_write_buffer_number(4);
    o
}

fn small_cf_options() -> Options {
    let mut o = Options::default();
    o.set_compression_type(DBCompressionType::None);
    o.set_write_buffer_size(4 * MIB);
    o
}

pub(crate) fn cf_descriptors(cfg: &WalConfig) -> Vec<ColumnFamilyDescriptor> {
    vec![
        ColumnFamilyDescriptor::new(CF_ENTRIES, entries_options(cfg)),
        ColumnFamilyDescriptor::new(CF_WAL_META, small_cf_options()),
        ColumnFamilyDescriptor::new(CF_META, small_cf_options()),
        ColumnFamilyDescriptor::new(CF_QUARANTINE, small_cf_options()),
        ColumnFamilyDescriptor::new(CF_DEAD_LETTER, small_cf_options()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_keys_sort_like_numbers() {
        let mut keys: Vec<[u8; 8]> = [300u64, 2, 1 << 40, 255, 256]
            .iter()
            .map(|&s| seq_key(s))
            .collect();
        keys.sort();
        let back: Vec<u64> = keys.iter().map(|k| parse_seq_key(k).unwrap()).collect();
        assert_eq!(back, vec![2, 255, 256, 300, 1 << 40]);
        assert_eq!(parse_seq_key(b"short"), None);
    }
}
