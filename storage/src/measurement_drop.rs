//! `DROP MEASUREMENT`: one durable decision, like `DROP DATABASE` (`registry.rs`), for one
//! table, while writes to every other measurement go on and later writes to this one create
//! it anew, as in InfluxDB 1.x.
//!
//! 1. The write gate is drained (`gate.rs`): no write is between its parse and its WAL
//!    submit, and new ones wait. Every write is then wholly before the drop or parsed
//!    against the catalog the drop leaves.
//! 2. Under the commit lock, one metadata write deletes the measurement's catalog records
//!    (the measurement, its fields and types, tag keys, tag values, and its series) and puts a
//!    *fence* (`st1G`) and a *pending drop* (`st1Q`) stamped with the WAL position of the
//!    drop; then the in-memory catalog forgets the measurement.
//! 3. The flusher discards the table's parts at or below the fence (buffered, arriving, or
//!    readable as unflushed) and waits out its running insert; the engine drops the table;
//!    its dead letters go; the pending marker is deleted. Only then does the gate open: no
//!    row written after the drop can reach the table the engine drops.
//!
//! A `kill -9` after step 2 leaves the pending marker, and so does a step 3 that failed (the
//! engine refused to drop the table; the drop answers with the error and the gate opens
//! again). Such a drop is finished later — at start-up, before serving, or by the next `DROP
//! MEASUREMENT` of the name. If the measurement was written again meanwhile (the catalog
//! knows it: its first write after the drop recorded it, in the same WAL batch as its rows),
//! rows written after the drop may be in the table, and the engine deletes only those at or
//! below the fence (`DELETE … WHERE __seq <= fence`, the write version every row carries);
//! otherwise nothing was written after the fence and the table is dropped whole. Replay
//! discards the table's parts at or below the fence. The fence stays until the flushed
//! watermark has passed it.

use crate::quarantine::{lp, take_lp};
use crate::{Storage, StorageError, Wal};

const FENCE: &[u8] = b"st1G";
const PENDING: &[u8] = b"st1Q";

/// A marker key: `kind lp(db) lp(measurement)` (length-prefixed: never a prefix of
/// another table's key).
fn marker(kind: &[u8], db: &str, measurement: &str) -> Vec<u8> {
    let mut k = kind.to_vec();
    lp(&mut k, db.as_bytes());
    lp(&mut k, measurement.as_bytes());
    k
}

/// The parts of a marker key after its kind.
fn parse_marker(mut rest: &[u8]) -> Option<(String, String)> {
    let mut take = || Some(std::str::from_utf8(take_lp(&mut rest)?).ok()?.to_string());
    let (db, m) = (take()?, take()?);
    rest.is_empty().then_some((db, m))
}

/// (db, measurement, stamped sequence) of every marker of `kind`.
fn markers(wal: &Wal, kind: &[u8]) -> Result<Vec<(String, String, u64)>, StorageError> {
    let mut out = Vec::new();
    for (k, v) in wal.meta_scan_prefix(kind)? {
        match (
            parse_marker(&k[kind.len()..]),
            <[u8; 8]>::try_from(v.as_slice()),
        ) {
            (Some((db, m)), Ok(seq)) => out.push((db, m, u64::from_be_bytes(seq))),
            _ => tracing::warn!("unreadable measurement drop marker ignored"),
        }
    }
    Ok(out)
}

/// The `DROP MEASUREMENT` fences replay still needs (removing those the flushed watermark
/// has passed).
pub(crate) fn fences(
    wal: &Wal,
    flushed_seq: u64,
) -> Result<Vec<(flush::DropScope, u64)>, StorageError> {
    let mut keep = Vec::new();
    let mut stale = Vec::new();
    for (db, m, seq) in markers(wal, FENCE)? {
        if seq <= flushed_seq {
            stale.push(marker(FENCE, &db, &m));
        } else {
            keep.push((flush::DropScope::measurement(&db, &m), seq));
        }
    }
    if !stale.is_empty() {
        wal.update_meta(Vec::new(), stale)?.wait()?;
    }
    Ok(keep)
}

/// Measurements whose drop was decided but whose engine drop may not have finished.
pub(crate) fn pending(wal: &Wal) -> Result<Vec<(String, String, u64)>, StorageError> {
    markers(wal, PENDING)
}

impl Storage {
    /// `DROP MEASUREMENT measurement` of `db`; false if `db` has no such measurement.
    pub(crate) fn drop_measurement_now(
        &self,
        db: &str,
        measurement: &str,
    ) -> Result<bool, StorageError> {
        self.require(db)?;
        let _admin = self.lifecycle.admin.lock();
        let _drained = self.lifecycle.writes.drain();
        self.drop_measurement_drained(db, measurement)
    }

    /// [`Storage::drop_measurement_now`] with the admin lock held and the write gate drained.
    pub(crate) fn drop_measurement_drained(
        &self,
        db: &str,
        measurement: &str,
    ) -> Result<bool, StorageError> {
        self.hot.forget(db, measurement);
        if !self.catalog.measurement_exists(db, measurement.as_bytes()) {
            // An earlier drop of it that did not finish finishes now.
            if let Some((_, _, up_to)) = pending(&self.wal)?
                .into_iter()
                .find(|(d, m, _)| d == db && m == measurement)
            {
                self.finish_measurement_drop(db, measurement, up_to)?;
            }
            return Ok(false);
        }
        let up_to_seq = {
            let _commits = self.lifecycle.commits.write();
            let series = self
                .wal
                .meta_scan_prefix(&ingest::catalog::series_prefix(db))?;
            let (deletes, series) =
                ingest::Catalog::measurement_keys(db, measurement.as_bytes(), series);
            let up_to_seq = self
                .wal
                .update_meta_stamped(
                    Vec::new(),
                    deletes,
                    vec![
                        marker(FENCE, db, measurement),
                        marker(PENDING, db, measurement),
                    ],
                )?
                .wait()?;
            self.catalog
                .forget_measurement(db, measurement.as_bytes(), &series);
            up_to_seq
        };
        tracing::info!(db, measurement, up_to_seq, "measurement drop recorded");
        self.finish_measurement_drop(db, measurement, up_to_seq)?;
        Ok(true)
    }

    /// Step 3 (idempotent): the flusher forgets the table's parts up to the fence, the
    /// engine drops the table (or, if it was written again since, its rows up to the fence),
    /// its dead letters go, the pending marker goes. Called with no write half-way (the gate
    /// drained, or before the server serves).
    pub(crate) fn finish_measurement_drop(
        &self,
        db: &str,
        measurement: &str,
        up_to_seq: u64,
    ) -> Result<(), StorageError> {
        let written_since = self.catalog.measurement_exists(db, measurement.as_bytes());
        if let Some(f) = self.flusher.lock().as_ref() {
            f.drop_measurement(db, measurement, up_to_seq);
        }
        let engine = self.engine()?;
        let table = engine::table::qualified(db, measurement);
        if written_since {
            let exists = engine.query(
                &format!("EXISTS TABLE {table}"),
                engine::OutputFormat::TabSeparated,
            )?;
            if exists.starts_with(b"1") {
                engine.execute(&format!("DELETE FROM {table} WHERE __seq <= {up_to_seq}"))?;
            }
        } else {
            engine.execute(&format!("DROP TABLE IF EXISTS {table} SYNC"))?;
            if let Some(f) = self.flusher.lock().as_ref() {
                f.forget_table(db, measurement);
            }
        }
        self.drop_dead_letters_of(db, Some(measurement))?;
        self.wal
            .update_meta(Vec::new(), vec![marker(PENDING, db, measurement)])?
            .wait()?;
        tracing::info!(db, measurement, up_to_seq, "measurement dropped");
        Ok(())
    }

    /// Finishes the measurement drops a crash interrupted (at start-up, before serving).
    pub(crate) fn finish_pending_measurement_drops(&self) -> Result<(), StorageError> {
        for (db, m, up_to) in pending(&self.wal)? {
            tracing::info!(
                db,
                measurement = m,
                up_to,
                "finishing a DROP MEASUREMENT interrupted by a crash"
            );
            self.finish_measurement_drop(&db, &m, up_to)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_keys_parse_back_and_never_prefix_another_tables() {
        let k = marker(FENCE, "db", "cpu");
        assert_eq!(
            parse_marker(&k[FENCE.len()..]),
            Some(("db".into(), "cpu".into()))
        );
        assert!(!marker(FENCE, "db", "cpu2").starts_with(&k));
        assert!(!marker(FENCE, "db2", "cpu").starts_with(&marker(FENCE, "db", "")));
        assert_eq!(parse_marker(&k[FENCE.len()..k.len() - 1]), None);
    }
}
