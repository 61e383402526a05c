//! What the identity index asks the engine: a table's series and rewritten
//! points when it is first touched, and which suspect rows exist.

use std::collections::HashSet;

use engine::table::qualified;
use engine::PooledConnection;
use engine::{EngineError, Result};

use super::{BySeries, Known, Written};

/// Series per lookup statement (~60 bytes each, well within the engine's
/// statement size).
const LOOKUP_SERIES: usize = 2_000;

/// The table's index, loaded (or reloaded, keeping what is known) from the
/// engine when needed. A table the engine does not have holds nothing.
pub(super) fn loaded<'a>(
    known: &'a mut Option<Known>,
    conn: &PooledConnection,
    db: &str,
    measurement: &str,
) -> Result<&'a mut Known> {
    if known.as_ref().is_some_and(|k| !k.stale) {
        return Ok(known.as_mut().expect("checked"));
    }
    let k = known.get_or_insert_with(Known::default);
    let table = qualified(db, measurement);
    let latest = format!(
        "SELECT series_id, toUnixTimestamp64Nano(max(time)) FROM {table} GROUP BY series_id"
    );
    // Sorted by (series_id, time): grouped in order, streaming.
    let shared = format!(
        "SELECT series_id, toUnixTimestamp64Nano(min(time)), toUnixTimestamp64Nano(max(time)) \
         FROM (SELECT series_id, time FROM {table} GROUP BY series_id, time HAVING count() > 1) \
         GROUP BY series_id SETTINGS optimize_aggregation_in_order = 1"
    );
    let rows = |sql: &str| -> Result<Vec<Vec<i128>>> {
        match conn.query(sql, engine::OutputFormat::TabSeparated) {
            Ok(out) => Ok(String::from_utf8_lossy(&out)
                .lines()
                .map(|l| l.split('\t').filter_map(|v| v.parse().ok()).collect())
                .collect()),
            Err(e) if absent(&e) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    };
    for r in rows(&latest)? {
        if let [sid, t] = r[..] {
            let (sid, t) = (sid as u64, t as i64);
            k.written
                .entry(sid)
                .and_modify(|w| w.floor = w.floor.max(t))
                .or_insert(Written::up_to(t));
        }
    }
    for r in rows(&shared)? {
        if let [sid, a, b] = r[..] {
            let (sid, a, b) = (sid as u64, a as i64, b as i64);
            let e = k.rewritten.entry(sid).or_insert((a, b));
            *e = (e.0.min(a), e.1.max(b));
        }
    }
    k.stale = false;
    Ok(k)
}

pub(super) fn absent(e: &EngineError) -> bool {
    let m = e.to_string();
    ["UNKNOWN_TABLE", "UNKNOWN_DATABASE"]
        .iter()
        .any(|c| m.contains(c))
}

/// Which of `suspects` (series, time ns) the table holds now.
pub(super) fn present(
    conn: &PooledConnection,
    db: &str,
    measurement: &str,
    suspects: &[(u64, i64)],
) -> Result<HashSet<(u64, i64)>> {
    let mut envelope: BySeries<(i64, i64)> = BySeries::default();
    for &(sid, t) in suspects {
        let e = envelope.entry(sid).or_insert((t, t));
        *e = (e.0.min(t), e.1.max(t));
    }
    let mut ranges: Vec<(u64, i64, i64)> =
        envelope.into_iter().map(|(s, (a, b))| (s, a, b)).collect();
    ranges.sort_unstable();
    let wanted: HashSet<(u64, i64)> = suspects.iter().copied().collect();
    let table = qualified(db, measurement);
    let mut found = HashSet::new();
    for chunk in ranges.chunks(LOOKUP_SERIES) {
        let list = |f: &dyn Fn(&(u64, i64, i64)) -> String| {
            chunk.iter().map(f).collect::<Vec<_>>().join(",")
        };
        let ids = list(&|r| r.0.to_string());
        let bound = |values: String, default: i64| {
            format!(
                "transform(series_id, CAST([{ids}], 'Array(UInt64)'), \
                 CAST([{values}], 'Array(Int64)'), toInt64({default}))"
            )
        };
        let sql = format!(
            "SELECT series_id, toUnixTimestamp64Nano(time) FROM {table} \
             WHERE series_id IN ({ids}) AND toUnixTimestamp64Nano(time) BETWEEN {} AND {}",
            bound(list(&|r| r.1.to_string()), i64::MAX),
            bound(list(&|r| r.2.to_string()), i64::MIN),
        );
        let out = match conn.query(&sql, engine::OutputFormat::TabSeparated) {
            Ok(out) => out,
            Err(e) if absent(&e) => continue,
            Err(e) => return Err(e),
        };
        for line in String::from_utf8_lossy(&out).lines() {
            let mut cells = line.split('\t');
            let (Some(Ok(sid)), Some(Ok(t))) = (
                cells.next().map(str::parse::<u64>),
                cells.next().map(str::parse::<i64>),
            ) else {
                return Err(EngineError::Arrow(format!(
                    "identity index: unexpected lookup row {line:?}"
                )));
            };
            if wanted.contains(&(sid, t)) {
                found.insert((sid, t));
            }
        }
    }
    Ok(found)
}
