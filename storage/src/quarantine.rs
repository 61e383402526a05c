//! Quarantine: the dead letters of the flusher, kept durably in the WAL's `dead_letter`
//! column family, summarised per table for `/health` and metrics, and listed, retried or
//! discarded by an operator (the server's admin route).
//!
//! The flusher sets a part aside when the engine refuses it deterministically (a reserved
//! column name, a statement past the engine's limits) or when start-up cannot ask the engine
//! what a table holds; the record is synced before the part counts as flushed, so the WAL
//! forgets the entry only once its rows are safe here. Nothing acknowledged is dropped except
//! by an operator's discard (or `DROP DATABASE`).
//!
//! Record (version 1): key `"dl1" lp(db) lp(measurement) u64be(seq)` where `lp(x)` is
//! `u32be(len(x)) x`; value `1 u64be(points) u64be(quarantined_at_ns) lp(error) <Arrow IPC
//! stream of the part>`.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::store::{QuarantineAction, QuarantinedTable};
use crate::{Storage, StorageError, Wal};

const PREFIX: &[u8] = b"dl1";
const VERSION: u8 = 1;

pub(crate) fn lp(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_be_bytes());
    out.extend_from_slice(b);
}

pub(crate) fn take_lp<'a>(b: &mut &'a [u8]) -> Option<&'a [u8]> {
    let n = u32::from_be_bytes(b.get(..4)?.try_into().ok()?) as usize;
    let v = b.get(4..4 + n)?;
    *b = &b[4 + n..];
    Some(v)
}

fn take_u64(b: &mut &[u8]) -> Option<u64> {
    let v = u64::from_be_bytes(b.get(..8)?.try_into().ok()?);
    *b = &b[8..];
    Some(v)
}

/// (database, measurement, seq) of every dead letter: parts replay skips.
pub(crate) type DeadLettered = HashSet<(String, String, u64)>;

/// The key prefix of `db`'s dead letters, or of one table's.
pub(crate) fn prefix(db: &str, measurement: Option<&str>) -> Vec<u8> {
    let mut k = PREFIX.to_vec();
    lp(&mut k, db.as_bytes());
    if let Some(m) = measurement {
        lp(&mut k, m.as_bytes());
    }
    k
}

fn key(db: &str, measurement: &str, seq: u64) -> Vec<u8> {
    let mut k = prefix(db, Some(measurement));
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// (db, measurement, seq) of a dead-letter key.
pub(crate) fn parse_key(k: &[u8]) -> Option<(String, String, u64)> {
    let mut b = k.strip_prefix(PREFIX)?;
    let db = String::from_utf8(take_lp(&mut b)?.to_vec()).ok()?;
    let m = String::from_utf8(take_lp(&mut b)?.to_vec()).ok()?;
    let seq = take_u64(&mut b)?;
    b.is_empty().then_some((db, m, seq))
}

/// What a value says besides its batch.
pub(crate) struct Header<'a> {
    pub(crate) points: u64,
    pub(crate) at_ns: u64,
    pub(crate) error: String,
    pub(crate) ipc: &'a [u8],
}

pub(crate) fn parse_value(v: &[u8]) -> Option<Header<'_>> {
    let (&version, mut b) = v.split_first()?;
    if version != VERSION {
        return None;
    }
    let points = take_u64(&mut b)?;
    let at_ns = take_u64(&mut b)?;
    let error = String::from_utf8_lossy(take_lp(&mut b)?).into_owned();
    Some(Header {
        points,
        at_ns,
        error,
        ipc: b,
    })
}

pub(crate) fn encode(
    l: &flush::DeadLetter,
    at_ns: u64,
) -> Result<wal::MetaRecord, engine::EngineError> {
    let mut v = vec![VERSION];
    v.extend_from_slice(&l.points().to_be_bytes());
    v.extend_from_slice(&at_ns.to_be_bytes());
    lp(&mut v, l.error.as_bytes());
    v.extend_from_slice(&flush::dead_letter::encode_batch(&l.batch)?);
    Ok((key(&l.db, &l.measurement, l.seq), v))
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// One table's quarantine, in memory.
#[derive(Debug, Clone, Default)]
struct Summary {
    entries: u64,
    points: u64,
    error: String,
    since_ns: u64,
}

/// The dead-letter store's per-table summary (kept in step with the WAL records).
#[derive(Debug, Default)]
pub(crate) struct Quarantine {
    tables: Mutex<BTreeMap<(String, String), Summary>>,
}

impl Quarantine {
    /// Reads the summary from the WAL; returns it with the (db, measurement, seq) of every
    /// dead letter (the flusher does not replay those).
    pub(crate) fn load(wal: &Wal) -> Result<(Quarantine, DeadLettered), StorageError> {
        let q = Quarantine::default();
        let mut keys = HashSet::new();
        {
            let mut tables = q.tables.lock();
            for (k, v) in wal.dead_letter_scan(PREFIX)? {
                let (Some((db, m, seq)), Some(h)) = (parse_key(&k), parse_value(&v)) else {
                    tracing::warn!("unreadable dead-letter record ignored ({} bytes)", v.len());
                    continue;
                };
                let s = tables.entry((db.clone(), m.clone())).or_default();
                s.entries += 1;
                s.points += h.points;
                if s.since_ns == 0 || h.at_ns < s.since_ns {
                    s.since_ns = h.at_ns;
                }
                s.error = h.error;
                keys.insert((db, m, seq));
            }
        }
        q.publish();
        Ok((q, keys))
    }

    /// Stores `letters` durably, then counts them.
    pub(crate) fn put(&self, wal: &Wal, letters: &[flush::DeadLetter]) -> Result<(), String> {
        let at = now_ns();
        let records = letters
            .iter()
            .map(|l| encode(l, at))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        wal.dead_letter_put(records).map_err(|e| e.to_string())?;
        let mut tables = self.tables.lock();
        for l in letters {
            let s = tables
                .entry((l.db.clone(), l.measurement.clone()))
                .or_default();
            s.entries += 1;
            s.points += l.points();
            s.error = l.error.clone();
            if s.since_ns == 0 {
                s.since_ns = at;
            }
        }
        drop(tables);
        self.publish();
        Ok(())
    }

    /// Forgets the summary of `db` (or one table of it).
    fn forget(&self, db: &str, measurement: Option<&str>) {
        self.tables
            .lock()
            .retain(|(d, m), _| !(d == db && measurement.is_none_or(|x| x == m)));
        self.publish();
    }

    /// Sets the two gauges.
    fn publish(&self) {
        let tables = self.tables.lock();
        let points: u64 = tables.values().map(|s| s.points).sum();
        metrics::gauge!("chingest_quarantined_tables").set(tables.len() as f64);
        metrics::gauge!("chingest_dead_letter_points").set(points as f64);
    }

    /// The quarantined tables, sorted.
    pub(crate) fn list(&self) -> Vec<QuarantinedTable> {
        let now = now_ns();
        self.tables
            .lock()
            .iter()
            .map(|((db, m), s)| QuarantinedTable {
                db: db.clone(),
                measurement: m.clone(),
                entries: s.entries,
                points: s.points,
                error: s.error.clone(),
                quarantined_secs: now.saturating_sub(s.since_ns) as f64 / 1e9,
            })
            .collect()
    }
}

/// The flusher's dead-letter store: the WAL's column family plus the summary.
pub(crate) struct DeadLetters {
    pub(crate) wal: Arc<Wal>,
    pub(crate) quarantine: Arc<Quarantine>,
}

impl DeadLetters {
    pub(crate) fn put(&self, letters: &[flush::DeadLetter]) -> Result<(), flush::MarkError> {
        self.quarantine
            .put(&self.wal, letters)
            .map_err(flush::MarkError::new)
    }
}

impl Storage {
    /// Quarantined tables (`/health`, the admin route).
    pub(crate) fn quarantined(&self) -> Vec<QuarantinedTable> {
        self.quarantine.list()
    }

    /// Tries the dead letters of `db` (or one table) again, one part per insert, each
    /// after an exactly-once check; removes those now in the engine.
    pub(crate) fn retry_quarantined(
        &self,
        db: &str,
        measurement: Option<&str>,
    ) -> Result<QuarantineAction, StorageError> {
        // Not beside a DROP DATABASE of the same data (it could re-create what the drop
        // removed).
        let _admin = self.lifecycle.admin.lock();
        let retrier = self
            .flusher
            .lock()
            .as_ref()
            .map(|f| f.retrier())
            .ok_or(StorageError::ShuttingDown)?;
        let records = self.wal.dead_letter_scan(&prefix(db, measurement))?;
        let mut action = QuarantineAction::default();
        let mut remove = Vec::new();
        for (k, v) in records {
            let (Some((d, m, seq)), Some(h)) = (parse_key(&k), parse_value(&v)) else {
                continue;
            };
            let batch = flush::dead_letter::decode_batch(h.ipc)?;
            let letter = flush::DeadLetter {
                db: d,
                measurement: m,
                seq,
                batch,
                error: h.error,
            };
            action.entries += 1;
            action.points += h.points;
            match retrier.retry(std::slice::from_ref(&letter)).pop() {
                Some(flush::RetryOutcome::Inserted) => {
                    action.inserted_points += h.points;
                    remove.push(k);
                }
                Some(flush::RetryOutcome::AlreadyInEngine) => {
                    action.already_in_engine_points += h.points;
                    remove.push(k);
                }
                Some(flush::RetryOutcome::Failed(e)) => {
                    action.failed_points += h.points;
                    action.errors.push(format!(
                        "{}.{} seq {seq}: {e}",
                        letter.db, letter.measurement
                    ));
                }
                None => {}
            }
        }
        if !remove.is_empty() {
            self.wal.dead_letter_delete(remove, Vec::new())?;
        }
        self.reload_quarantine()?;
        tracing::info!(db, measurement, ?action, "quarantine retried");
        Ok(action)
    }

    /// Deletes the dead letters of `db` (or one table): the operator's decision to give those
    /// points up.
    pub(crate) fn discard_quarantined(
        &self,
        db: &str,
        measurement: Option<&str>,
    ) -> Result<QuarantineAction, StorageError> {
        let _admin = self.lifecycle.admin.lock();
        let p = prefix(db, measurement);
        let mut action = QuarantineAction::default();
        for (_, v) in self.wal.dead_letter_scan(&p)? {
            action.entries += 1;
            action.points += parse_value(&v).map_or(0, |h| h.points);
        }
        self.wal.dead_letter_delete(Vec::new(), vec![p])?;
        self.quarantine.forget(db, measurement);
        tracing::warn!(
            db,
            measurement,
            entries = action.entries,
            points = action.points,
            "quarantined points discarded by an operator"
        );
        Ok(action)
    }

    /// Drops every dead letter of `db` (`DROP DATABASE`), or of one of its measurements
    /// (`DROP MEASUREMENT`).
    pub(crate) fn drop_dead_letters_of(
        &self,
        db: &str,
        measurement: Option<&str>,
    ) -> Result<(), StorageError> {
        self.wal
            .dead_letter_delete(Vec::new(), vec![prefix(db, measurement)])?;
        self.quarantine.forget(db, measurement);
        Ok(())
    }

    /// Rebuilds the summary from the records (after a partial retry).
    pub(crate) fn reload_quarantine(&self) -> Result<(), StorageError> {
        let (fresh, _) = Quarantine::load(&self.wal)?;
        *self.quarantine.tables.lock() = fresh.tables.into_inner();
        self.quarantine.publish();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_one_database_never_prefix_another() {
        let a = prefix("a", None);
        assert!(key("a", "m", 1).starts_with(&a));
        assert!(!key("ab", "m", 1).starts_with(&a));
        assert_eq!(
            parse_key(&key("d b", "m\u{e9}", 7)),
            Some(("d b".into(), "m\u{e9}".into(), 7))
        );
        assert_eq!(parse_key(b"dl1junk"), None);
    }
}
