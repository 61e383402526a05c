//! The dead-letter column family ([`crate::layout::CF_DEAD_LETTER`]): what the WAL's consumer
//! could not apply and set aside so its flushed sequence can move past it. Writes are synced
//! before they return (a dead letter must be durable before the entry it came from may be
//! range-deleted by `mark_flushed`). The WAL never interprets keys or values.

use rocksdb::{IteratorMode, WriteBatch, WriteOptions};

use crate::layout::CF_DEAD_LETTER;
use crate::{MetaRecord, Wal, WalError};

impl<T: Send + 'static> Wal<T> {
    /// Durably stores `records` (synced). Accepted below the disk reserve too: a dead letter is
    /// what lets the WAL free the entry it came from.
    pub fn dead_letter_put(&self, records: Vec<MetaRecord>) -> Result<(), WalError> {
        self.shared.check_poison()?;
        let db = &self.shared.db;
        let cf = db.cf_handle(CF_DEAD_LETTER).expect("dead_letter CF");
        let mut batch = WriteBatch::default();
        for (k, v) in &records {
            batch.put_cf(cf, k, v);
        }
        self.write_synced(batch, "dead letter put")
    }

    /// Durably deletes the dead letters with these exact `keys` and every one whose key starts
    /// with one of `prefixes` (one synced write).
    pub fn dead_letter_delete(
        &self,
        keys: Vec<Vec<u8>>,
        prefixes: Vec<Vec<u8>>,
    ) -> Result<(), WalError> {
        self.shared.check_poison()?;
        let db = &self.shared.db;
        let cf = db.cf_handle(CF_DEAD_LETTER).expect("dead_letter CF");
        let mut batch = WriteBatch::default();
        for k in &keys {
            batch.delete_cf(cf, k);
        }
        for p in &prefixes {
            let end = crate::writer::prefix_end(p).unwrap_or_else(|| vec![0xFF; 64]);
            batch.delete_range_cf(cf, p.as_slice(), end.as_slice());
        }
        self.write_synced(batch, "dead letter delete")
    }

    /// The dead letters whose key starts with `prefix` (all of them for an empty prefix), in
    /// key order.
    pub fn dead_letter_scan(&self, prefix: &[u8]) -> Result<Vec<MetaRecord>, WalError> {
        let db = &self.shared.db;
        let cf = db.cf_handle(CF_DEAD_LETTER).expect("dead_letter CF");
        let mode = IteratorMode::From(prefix, rocksdb::Direction::Forward);
        let mut out = Vec::new();
        for r in db.iterator_cf(cf, mode) {
            let (k, v) = r.map_err(|e| WalError::rocks("dead letter scan", e))?;
            if !k.starts_with(prefix) {
                break;
            }
            out.push((k.into_vec(), v.into_vec()));
        }
        Ok(out)
    }

    /// Writes `batch` synced; a failure is returned, not poisoning: nothing was acknowledged
    /// on the strength of it, and the caller keeps its data to try again.
    fn write_synced(&self, batch: WriteBatch, op: &'static str) -> Result<(), WalError> {
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        self.shared
            .db
            .write_opt(batch, &wo)
            .map_err(|e| WalError::rocks(op, e))
    }
}
