//! Start-up recovery: what the WAL holds unflushed becomes the flusher's [`flush::Resume`]
//! (with the `DROP DATABASE` fences replay must honour and the parts already quarantined),
//! and the flusher reports its watermark and its dead letters back to the WAL.

use std::sync::Arc;

use crate::Wal;

/// The flusher's view of the WAL: where it records the flushed watermark and sets
/// refused parts aside.
pub(crate) struct WalWatermark(
    pub(crate) Arc<Wal>,
    pub(crate) crate::quarantine::DeadLetters,
);

impl flush::FlushedLog for WalWatermark {
    fn mark_flushed(&self, seq: u64) -> Result<(), flush::MarkError> {
        self.0.mark_flushed(seq).map_err(flush::MarkError::new)
    }
    fn dead_letter(&self, letters: &[flush::DeadLetter]) -> Result<(), flush::MarkError> {
        self.1.put(letters)
    }
}

/// The unflushed entries of `recovery`, decoded, in order; corrupt and undecodable
/// entries are reported and skipped (the WAL already quarantined the corrupt ones).
pub(crate) fn resume(
    recovery: &wal::Recovery,
    catalog: &ingest::Catalog,
    dropped: flush::Fences,
    dead_lettered: std::collections::HashSet<(String, String, u64)>,
) -> flush::Resume {
    for c in &recovery.corrupt {
        tracing::error!(
            seq = c.seq,
            "WAL entry is corrupt and was quarantined: {:?}",
            c.reason
        );
    }
    let mut resume = flush::Resume {
        flushed_seq: recovery.flushed_seq,
        entries: Vec::with_capacity(recovery.entries.len()),
        skip: recovery.unreplayable().collect(),
        retention_secs: retention_of(catalog),
        dropped,
        dead_lettered,
    };
    for e in &recovery.entries {
        match ingest::wire::decode(&e.payload) {
            Ok(d) => resume.entries.push((e.seq, flush_write(d))),
            Err(err) => {
                tracing::error!(
                    seq = e.seq,
                    "WAL entry cannot be decoded and is skipped: {err}"
                );
                resume.skip.push(e.seq..=e.seq);
            }
        }
    }
    resume.skip.sort_by_key(|r| *r.start());
    if !resume.entries.is_empty() {
        tracing::info!(
            entries = resume.entries.len(),
            points = recovery.points(),
            "replaying unflushed WAL entries into the engine"
        );
    }
    resume
}

/// The retention of every database that has one, for the tables the flusher creates.
fn retention_of(catalog: &ingest::Catalog) -> std::collections::BTreeMap<String, u64> {
    catalog
        .databases()
        .into_iter()
        .filter_map(|db| match catalog.retention_secs(&db) {
            0 => None,
            secs => Some((db, secs)),
        })
        .collect()
}

/// A decoded WAL payload as the flusher takes it.
fn flush_write(d: ingest::wire::DecodedWrite) -> flush::FlushWrite {
    flush::FlushWrite {
        db: d.db,
        tables: d
            .tables
            .into_iter()
            .map(|t| (t.measurement, t.batch))
            .collect(),
    }
}
