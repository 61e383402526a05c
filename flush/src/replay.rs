//! Start-up: what the flusher resumes from, and which of the replayed parts the
//! engine already holds.
//!
//! Exactly once across crashes: every row carries `__seq`, and an INSERT is a
//! single block into an unpartitioned MergeTree, i.e. one part, atomically.
//! After a crash between an insert and `mark_flushed`, the WAL replays entries
//! the engine already has; those `(table, __seq)` are asked for first
//! (`SELECT DISTINCT __seq … BETWEEN lo AND hi`) and skipped, and only the
//! others are inserted.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::RangeInclusive;

use crate::buffer::Key;
use crate::engine::{quote_string, Engine};
use crate::error::Result;
use crate::flusher::FlushWrite;
use crate::table::qualified;

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
}

/// (database, measurement, seq): replayed parts the engine already holds.
pub(crate) type Held = HashSet<(String, String, u64)>;

/// Which (database, measurement, seq) of `entries` the engine already holds.
pub(crate) fn already_in_engine(engine: &Engine, entries: &[(u64, FlushWrite)]) -> Result<Held> {
    let mut held = Held::new();
    for ((db, m), (lo, hi)) in seq_ranges(entries) {
        for seq in seqs_in_table(engine, &db, &m, lo, hi)? {
            held.insert((db.clone(), m.clone(), seq));
        }
    }
    if !held.is_empty() {
        tracing::info!(
            parts = held.len(),
            "replay: skipping parts the engine already holds"
        );
    }
    Ok(held)
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
