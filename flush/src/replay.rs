//! Start-up: what the flusher resumes from, and which of the replayed parts the
//! engine already holds.
//!
//! Exactly once across crashes: every row carries `__seq`, and an INSERT is a
//! single block into an unpartitioned MergeTree, i.e. one part, atomically.
//! After a crash between an insert and `mark_flushed`, the WAL replays entries
//! the engine already has; those `(table, __seq)` are asked for first
//! (`SELECT DISTINCT __seq … BETWEEN lo AND hi`) and skipped, and only the
//! others are inserted. The same check guards every other re-insert: a job
//! retried after a failure ([`held_seqs`], from the worker) and a dead letter
//! retried by an operator.
//!
//! Start-up never fails on one table: a table whose check fails (e.g. a table
//! an older version created without `__seq`) has its replayed parts set aside
//! as dead letters (quarantined) with the engine's error, and the others flush.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::RangeInclusive;

use engine::table::qualified;
use engine::Result;
use engine::{quote_string, Engine};

use crate::buffer::Key;
use crate::write::FlushWrite;

/// What the flusher resumes from at start-up: the WAL's recovery and the
/// state of the databases known then.
#[derive(Debug, Default)]
pub struct Resume {
    /// The WAL's durable flushed sequence.
    pub flushed_seq: u64,
    /// Unflushed entries read back from the WAL, in sequence order.
    pub entries: Vec<(u64, FlushWrite)>,
    /// Sequences above `flushed_seq` that will never arrive (corrupt,
    /// missing or undecodable entries, already reported by the caller).
    pub skip: Vec<RangeInclusive<u64>>,
    /// Retention per database, in seconds (absent or 0 = keep forever), of
    /// the databases known at start-up: their tables are created with a TTL
    /// that deletes older rows in background merges.
    /// [`crate::Flusher::set_retention`] adds databases later.
    pub retention_secs: BTreeMap<String, u64>,
    /// `DROP DATABASE` fences: parts of the database with a sequence at or below the value are
    /// discarded (replayed or still to arrive), as [`crate::Flusher::drop_database`] does.
    pub dropped: crate::fence::Fences,
    /// (database, measurement, seq) parts already in the dead-letter store: not replayed, they
    /// count as done.
    pub dead_lettered: HashSet<(String, String, u64)>,
}

/// (database, measurement, seq): replayed parts the engine already holds.
pub(crate) type Held = HashSet<(String, String, u64)>;

/// Which (database, measurement, seq) of `entries` the engine already holds, and the tables
/// whose check failed (with the engine's error): those cannot be replayed safely.
pub(crate) fn already_in_engine(
    engine: &Engine,
    entries: &[(u64, FlushWrite)],
) -> (Held, HashMap<Key, String>) {
    let mut held = Held::new();
    let mut unverifiable = HashMap::new();
    for ((db, m), (lo, hi)) in seq_ranges(entries) {
        match seqs_in_table(engine, &db, &m, lo, hi) {
            Ok(seqs) => {
                for seq in seqs {
                    held.insert((db.clone(), m.clone(), seq));
                }
            }
            Err(e) => {
                tracing::error!(db, measurement = m, error = %e,
                    "replay: cannot ask the engine what it holds; the table's parts are quarantined");
                unverifiable.insert((db, m), format!("replay check failed: {e}"));
            }
        }
    }
    if !held.is_empty() {
        tracing::info!(
            parts = held.len(),
            "replay: skipping parts the engine already holds"
        );
    }
    (held, unverifiable)
}

/// Which of `seqs` the engine's `db`.`m` already holds (none if the table is missing).
pub(crate) fn held_seqs(engine: &Engine, db: &str, m: &str, seqs: &[u64]) -> Result<HashSet<u64>> {
    let (Some(lo), Some(hi)) = (seqs.iter().min(), seqs.iter().max()) else {
        return Ok(HashSet::new());
    };
    let wanted: HashSet<u64> = seqs.iter().copied().collect();
    Ok(seqs_in_table(engine, db, m, *lo, *hi)?
        .into_iter()
        .filter(|s| wanted.contains(s))
        .collect())
}

/// The lowest and highest sequence of each table written by `entries`.
fn seq_ranges(entries: &[(u64, FlushWrite)]) -> HashMap<Key, (u64, u64)> {
    let mut ranges: HashMap<Key, (u64, u64)> = HashMap::new();
    for (seq, w) in entries {
        for (m, _) in &w.tables {
            let r = ranges
                .entry((w.db.clone(), m.clone()))
                .or_insert((*seq, *seq));
            r.0 = r.0.min(*seq);
            r.1 = r.1.max(*seq);
        }
    }
    ranges
}

/// The distinct `__seq` in `lo..=hi` of `db`.`m`; none if the table is missing.
fn seqs_in_table(engine: &Engine, db: &str, m: &str, lo: u64, hi: u64) -> Result<Vec<u64>> {
    let exists = engine.query_text(&format!(
        "SELECT count() FROM system.tables WHERE database = {} AND name = {}",
        quote_string(db),
        quote_string(m)
    ))?;
    if exists.trim() == "0" {
        return Ok(Vec::new());
    }
    let seqs = engine.query_text(&format!(
        "SELECT DISTINCT `__seq` FROM {} WHERE `__seq` BETWEEN {lo} AND {hi}",
        qualified(db, m)
    ))?;
    Ok(seqs
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .collect())
}
