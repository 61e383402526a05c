//! Each group's last point (`SELECT … ORDER BY time DESC LIMIT 1`:
//! Grafana's "current value", TSBS `lastpoint`) from the flusher's last
//! points (`flush::LastPoints`) instead of an engine statement: the engine
//! would read every granule of every part to find the series' tails.
//!
//! The same answer as the engine's: the acknowledged points not flushed yet
//! are taken first (waiting until the flusher received every acknowledged
//! write), then a copy of the table's last points, and the unflushed rows
//! merged into it (point identity: last write wins field by field). A
//! series' last point after the query's time range, or one without any of
//! the shown fields, means the group's answer is an older point: the read
//! goes to the engine then, as it does for any other statement shape, for a
//! database with a retention (the engine deletes its old points lazily), and
//! when the last points cannot be had (being loaded, too many series).

use std::cmp::Ordering;

use engine::{quote_ident, ReadScope, SqlAccess};
use flush::{Cell, Reader, TableLasts};
use ingest::catalog::MeasurementSchema;

use super::error::InfluxqlError;
use super::last_rows::{LastRow, LastRows, Tables};
use super::plan::Plan;
use super::rows::Row;
use super::series::{Columns, OneRowSeries, Series, Value, ValueRef};
use super::stages::{self, Stage};
use super::{inline, unflushed, InfluxqlRequest};
use crate::Storage;

/// Reads answered from the last points.
pub(crate) const LAST_POINT_READS: &str = "chingest_influxql_last_point_reads_total";

pub(crate) fn register_metrics() {
    metrics::counter!(LAST_POINT_READS).increment(0);
}

/// Where an output column's value comes from.
pub(super) enum Shown {
    Field(String),
    /// A tag (`''`, no tag, shows as null).
    Tag(String),
}

/// The shown columns, when `plan` asks for each group's last point and
/// every column is a field or a tag as it is.
pub(super) fn shown(plan: &Plan) -> Option<Vec<Shown>> {
    // Tag conditions are left to the engine too (the last points know no
    // InfluxQL conditions).
    if !plan.asks_last_point() || !plan.inner_where.is_empty() {
        return None;
    }
    // Each name's SQL made once (TSBS `lastpoint`: 20 columns matched
    // against 10 fields and 9 tags, a string made per comparison).
    let fields: Vec<(String, &String)> = plan.fields.iter().map(|f| (quote_ident(f), f)).collect();
    let tags: Vec<(String, &String)> = plan
        .tags
        .iter()
        .map(|t| (format!("nullIf({}, '')", quote_ident(t)), t))
        .collect();
    plan.columns
        .iter()
        .map(|c| {
            if c.reducer.is_some() || c.companion.is_some() {
                return None;
            }
            if let Some((_, f)) = fields.iter().find(|(sql, _)| *sql == c.sql) {
                return Some(Shown::Field((*f).clone()));
            }
            tags.iter()
                .find(|(sql, _)| *sql == c.sql)
                .map(|(_, t)| Shown::Tag((*t).clone()))
        })
        .collect()
}

pub(super) fn may_read(access: &SqlAccess, db: &str) -> bool {
    match access {
        SqlAccess::Admin | SqlAccess::Read(ReadScope::All) => true,
        SqlAccess::Read(ReadScope::Databases(dbs)) => dbs.contains(db),
    }
}

/// A tag's value (`""`: the series has none).
fn tag(c: Option<&Cell>) -> &str {
    match c {
        Some(Cell::String(s)) => s,
        _ => "",
    }
}

impl Storage {
    /// The series of `plan` (one per group, each its one row, in the
    /// answer's order: descending groups) from the last points, built
    /// directly (no `Row` a group cut into series after); `None` when the
    /// engine must answer.
    /// `one_row`: the groups may come as one [`OneRowSeries`] (the caller
    /// renders JSON and counts no series).
    pub(crate) fn read_last_points(
        &self,
        plan: &Plan,
        req: &InfluxqlRequest<'_>,
        schema: &MeasurementSchema,
        one_row: bool,
    ) -> Result<Option<Vec<Series>>, InfluxqlError> {
        let Some(shown) = shown(plan) else {
            return Ok(None);
        };
        let at = std::time::Instant::now();
        if !may_read(req.access, &plan.db) || self.catalog.retention_secs(&plan.db) > 0 {
            return Ok(None);
        }
        let lasts = self.reads.identity().last_points();
        // Run inline (`inline.rs`): nothing waits, and a table of more
        // series than an inline read may answer is refused before any work.
        let inline = inline::active();
        let acked = self.wal.last_seq();
        if inline
            && !(self
                .reads
                .unflushed()
                .wait_received(acked, std::time::Duration::ZERO)
                && lasts
                    .read_now(&plan.db, &plan.measurement, |t| t.series.len())
                    .is_some_and(|n| n <= inline::MAX_LAST_POINT_SERIES))
        {
            inline::refuse();
            return Ok(None);
        }
        let unavailable = |e: engine::EngineError| {
            InfluxqlError::from(engine::SqlError::Unavailable(format!(
                "cannot read the last points: {e}"
            )))
        };
        // Unflushed rows first: a row leaves them only once the last points
        // have it. Inline, at most as many as it may read values (more would
        // wait for their flush: refused there).
        let max_rows = match inline {
            true => (inline::MAX_VALUES / plan.columns.len().max(1)) as u64,
            false => self.row_limit(),
        };
        let parts = unflushed::acked_parts(
            self.reads.unflushed(),
            &plan.db,
            &plan.measurement,
            i64::MIN,
            i64::MAX,
            acked,
            max_rows,
            req.cancel,
        )?;
        let at = stages::lap(Stage::Wait, at);
        // The unflushed rows' last points, merged over the table's below.
        let mut overlay = TableLasts::default();
        if let Some(parts) = parts {
            let columns = unflushed::columns(plan, schema);
            if let Some(batch) = flush::unflushed::rows_in(&parts, &columns, i64::MIN, i64::MAX)
                .map_err(unavailable)?
            {
                overlay.merge(&batch).map_err(unavailable)?;
            }
        }
        // The table's points as they are now, held by the answer (an insert
        // ending meanwhile merges into a copy): evaluated and rendered with
        // nothing locked (`last_rows.rs`).
        let taken = |table: &std::sync::Arc<TableLasts>| table.clone();
        let base = if inline {
            match lasts.read_now(&plan.db, &plan.measurement, taken) {
                Some(base) => base,
                None => {
                    inline::refuse();
                    return Ok(None);
                }
            }
        } else {
            let engine = self
                .engine()
                .map_err(|_| engine::SqlError::Unavailable("the server is shutting down".into()))?;
            match lasts.read(&|| engine.connection(), &plan.db, &plan.measurement, taken) {
                Ok(Some(base)) => base,
                Ok(None) => return Ok(None),
                Err(e) => {
                    tracing::warn!(db = %plan.db, measurement = %plan.measurement,
                        "last points not loaded ({e}); reading the table");
                    return Ok(None);
                }
            }
        };
        // One list of names for every series.
        let columns = super::exec::column_names(plan);
        let rows = match one_row {
            true => LastRows::try_new(Tables { base, overlay }, |t| {
                picked(plan, &shown, &t.base, &t.overlay).ok_or(())
            })
            .ok()
            .map(|rows| one_row_series(plan, rows, &columns)),
            false => picked(plan, &shown, &base, &overlay).map(|p| p.series(plan, &columns)),
        };
        stages::lap(Stage::Eval, at);
        let Some(rows) = rows else {
            // Anything but an answer goes to the engine: refused inline.
            if inline {
                inline::refuse();
            }
            return Ok(None);
        };
        metrics::counter!(LAST_POINT_READS).increment(1);
        Ok(Some(rows))
    }
}

/// `name`'s index in `names`, added at the end if it is not there yet.
fn at<'a>(names: &mut Vec<&'a str>, name: &'a str) -> usize {
    match names.iter().position(|n| *n == name) {
        Some(i) => i,
        None => {
            names.push(name);
            names.len() - 1
        }
    }
}

/// Each group's last point from `table`'s last points with `overlay` (the
/// unflushed rows') merged in, ordered by group; `None` when a group's
/// answer may be an older point (the engine answers then).
pub(super) fn answer(
    plan: &Plan,
    shown: &[Shown],
    table: &TableLasts,
    overlay: &TableLasts,
) -> Option<Vec<Row>> {
    Some(picked(plan, shown, table, overlay)?.rows())
}

/// Each group's last point, picked from the last points: the points'
/// cells (borrowed from them) and the groups' order.
#[derive(Debug)]
pub(crate) struct Picked<'a> {
    /// Cells a point: the group tags, the order tags, the fields that make
    /// a point show, the shown columns (each name once).
    width: usize,
    group_at: Vec<usize>,
    /// Per shown column: its cell's index and whether it is a tag.
    shown_at: Vec<(usize, bool)>,
    /// Per point: its series id and time.
    points: Vec<(u64, i64)>,
    cells: Vec<Option<&'a Cell>>,
    /// Per point its group tags' values, side by side (`group_at.len()`
    /// a point).
    group_keys: Vec<&'a str>,
    /// The points that answer, one per group, by ascending group.
    order: Vec<usize>,
}

/// The first sixteen bytes of `s`, zero-padded, as a big-endian integer:
/// of two strings, the lesser's is never greater (a shorter string padded
/// with zeros sorts before any longer one it begins), so comparing these
/// first orders as comparing the strings, which are compared only where
/// these tie. TSBS `lastpoint` at 1,000 hosts: the sort's string
/// comparisons (`host_123`) were 8 % of the request's samples; with eight
/// bytes, `host_100` to `host_1009` still tied.
fn prefix(s: &str) -> u128 {
    let mut b = [0u8; 16];
    let n = s.len().min(16);
    b[..n].copy_from_slice(&s.as_bytes()[..n]);
    u128::from_be_bytes(b)
}

fn picked<'a>(
    plan: &Plan,
    shown: &[Shown],
    table: &'a TableLasts,
    overlay: &'a TableLasts,
) -> Option<Picked<'a>> {
    // The columns read, in this order: group tags, order tags, the fields
    // that make a point show, the shown columns.
    let present: Vec<&String> = plan
        .fields
        .iter()
        .filter(|f| plan.nonnull.contains(&quote_ident(f)))
        .collect();
    // Each name once (TSBS `lastpoint`'s `SELECT *` shows the fields that
    // make a point show and the tags it orders by: 41 columns resolved per
    // series, 20 of them distinct), the sections as indexes into them.
    let mut names: Vec<&str> = Vec::new();
    let group_at: Vec<usize> = plan.group_tags.iter().map(|t| at(&mut names, t)).collect();
    let order_at: Vec<usize> = plan.order_tags.iter().map(|t| at(&mut names, t)).collect();
    let present_at: Vec<usize> = present.iter().map(|f| at(&mut names, f)).collect();
    let shown_at: Vec<(usize, bool)> = shown
        .iter()
        .map(|s| match s {
            Shown::Field(n) => (at(&mut names, n), false),
            Shown::Tag(n) => (at(&mut names, n), true),
        })
        .collect();
    let width = names.len();
    let reader = Reader::new(table, overlay, &names);
    // Every series' point that may answer: its id and time, its cells in
    // one flat vector (`width` a series). Nothing is allocated a series
    // (TSBS `lastpoint` at 1,000 hosts allocated a cell vector and a group
    // key a series, and kept them in a tree ordered by group).
    let mut points: Vec<(u64, i64)> = Vec::with_capacity(table.series.len());
    let mut cells: Vec<Option<&Cell>> = Vec::with_capacity(table.series.len() * width);
    let mut older = false;
    reader.for_each(|sid, time, point| {
        if older || plan.range.min.is_some_and(|min| time < min) {
            return;
        }
        // The range's last point of this series is an older one, or its
        // last point shows nothing: an older one would.
        if plan.range.max.is_some_and(|max| time > max)
            || present_at.iter().all(|&i| point[i].is_none())
        {
            older = true;
            return;
        }
        points.push((sid, time));
        cells.extend_from_slice(point);
    });
    if older {
        return None;
    }
    let cells_of = |p: usize| &cells[p * width..(p + 1) * width];
    // Per group: latest first; among equal times, series in tag (then id)
    // order. Compared in place, tag by tag: no key is built.
    let cmp_tags = |a: usize, b: usize, at: &[usize]| {
        let (ca, cb) = (cells_of(a), cells_of(b));
        at.iter()
            .map(|&i| tag(ca[i]).cmp(tag(cb[i])))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    };
    // Each point's group key read once, its tags side by side: compared as
    // slices, a comparison is one string compare per tag (TSBS `lastpoint`
    // at 1,000 hosts: the sort, reading the key's cells anew in every
    // comparison, was 8 % of the request's samples).
    let g = group_at.len();
    let mut group_keys: Vec<&str> = Vec::with_capacity(points.len() * g);
    for p in 0..points.len() {
        let c = cells_of(p);
        group_keys.extend(group_at.iter().map(|&i| tag(c[i])));
    }
    let key = |p: usize| &group_keys[p * g..(p + 1) * g];
    // Sorted by the first group tag's prefix ([`prefix`]), held beside each
    // point, then each run of equal prefixes in full: most points are told
    // apart by their prefix alone, compared as integers (one comparison
    // taking every rule was 8 % of TSBS `lastpoint`'s samples at 1,000
    // hosts, where no two prefixes are equal).
    let mut order: Vec<(u128, usize)> = (0..points.len())
        .map(|p| (key(p).first().map_or(0, |t| prefix(t)), p))
        .collect();
    order.sort_unstable_by_key(|&(prefix, _)| prefix);
    for run in order.chunk_by_mut(|a, b| a.0 == b.0) {
        if run.len() > 1 {
            run.sort_unstable_by(|&(_, a), &(_, b)| {
                key(a)
                    .cmp(key(b))
                    .then_with(|| points[b].1.cmp(&points[a].1))
                    .then_with(|| cmp_tags(a, b, &order_at))
                    .then_with(|| points[a].0.cmp(&points[b].0))
            });
        }
    }
    order.dedup_by(|later, first| key(later.1) == key(first.1));
    let order = order.into_iter().map(|(_, p)| p).collect();
    Some(Picked {
        width,
        group_at,
        shown_at,
        points,
        cells,
        group_keys,
        order,
    })
}

impl<'a> Picked<'a> {
    fn cells_of(&self, p: usize) -> &[Option<&'a Cell>] {
        &self.cells[p * self.width..(p + 1) * self.width]
    }

    /// Groups answering.
    pub(super) fn len(&self) -> usize {
        self.order.len()
    }

    /// The point of the answer's series `i`: by descending group, as
    /// `exec.rs`'s `to_series` cuts the rows into series for a descending
    /// answer (every last-point read is one: `ORDER BY time DESC`).
    fn nth(&self, i: usize) -> usize {
        self.order[self.order.len() - 1 - i]
    }

    /// Series `i`'s group tag `k` (`""`: none).
    pub(super) fn tag(&self, i: usize, k: usize) -> &'a str {
        self.group_keys[self.nth(i) * self.group_at.len() + k]
    }

    /// Series `i`'s row: its time, then its shown cells.
    pub(super) fn row(&self, i: usize) -> LastRow<'_> {
        self.row_of(self.nth(i))
    }

    /// Point `p`'s row: its time, then its shown cells.
    fn row_of(&self, p: usize) -> LastRow<'_> {
        LastRow::new(self.points[p].1, self.cells_of(p), &self.shown_at)
    }

    /// Point `p`'s row as values, without its time unless `time` (room for
    /// it either way).
    fn values(&self, p: usize, time: bool) -> Vec<Value> {
        let mut out = Vec::with_capacity(self.shown_at.len() + 1);
        out.extend(
            self.row_of(p)
                .skip(usize::from(!time))
                .map(ValueRef::to_value),
        );
        out
    }

    /// Point `p`'s group tags' values (`""`: none).
    fn group(&self, p: usize) -> impl Iterator<Item = String> + '_ {
        let g = self.group_at.len();
        self.group_keys[p * g..(p + 1) * g]
            .iter()
            .map(|t| t.to_string())
    }

    /// One row a group, by ascending group (a cluster's answer: merged
    /// with the shards' rows, `cluster_last_point.rs`).
    fn rows(&self) -> Vec<Row> {
        self.order
            .iter()
            .map(|&p| Row {
                time: Some(self.points[p].1),
                group: self.group(p).collect(),
                // With a slot for the time `exec.rs` puts first.
                values: self.values(p, false),
            })
            .collect()
    }

    /// One series a group, each its one row, time first, by descending
    /// group ([`Self::nth`]). No `Row` in between (TSBS `lastpoint` at
    /// 1,000 hosts built one a group, moved each cell to put the time
    /// first, and cut them into series: the `build` stage, a seventh of
    /// the server's time).
    fn series(&self, plan: &Plan, columns: &Columns) -> Vec<Series> {
        (0..self.len())
            .map(|i| {
                let p = self.nth(i);
                Series {
                    name: plan.measurement.clone(),
                    tags: plan.group_tags.iter().cloned().zip(self.group(p)).collect(),
                    columns: columns.clone(),
                    values: vec![self.values(p, true)],
                    packed: None,
                    one_row: None,
                }
            })
            .collect()
    }
}

/// The groups of `rows` as one [`OneRowSeries`] (none when no group
/// answers): the same series as [`Picked::series`], cell for cell, read
/// in place.
fn one_row_series(plan: &Plan, rows: LastRows, columns: &Columns) -> Vec<Series> {
    if rows.len() == 0 {
        return Vec::new();
    }
    vec![Series {
        name: plan.measurement.clone(),
        tags: Vec::new(),
        columns: columns.clone(),
        values: Vec::new(),
        packed: None,
        one_row: Some(Box::new(OneRowSeries::from_last_rows(
            plan.group_tags.clone(),
            rows,
        ))),
    }]
}

#[cfg(test)]
mod tests {
    use super::prefix;

    /// The sort compares the prefixes first and the strings only where they
    /// tie: a prefix must never order two strings against their own order,
    /// over shared first eight bytes, lengths around eight, zero bytes and
    /// multibyte text.
    #[test]
    fn prefixes_never_order_strings_against_their_order() {
        let mut texts: Vec<String> = [
            "",
            "\0",
            "\0\0",
            "a",
            "a\0",
            "a\0\0\0\0\0\0\0\0",
            "host_",
            "host_1",
            "host_10",
            "host_100",
            "host_1000",
            "host_10000",
            "host_2",
            "host_aaa",
            "host_aaaaaaaa1",
            "host_aaaaaaaa10",
            "host_aaaaaaaa2",
            "host_aaaaaaab",
            "host_aaaaaaaaaaa1",
            "host_aaaaaaaaaaa10",
            "host_aaaaaaaaaab",
            "1234567890123456",
            "123456789012345",
            "12345678901234567",
            "hostXaaa",
            "Host_1",
            "~",
            "\u{7f}",
            "\u{e9}",
            "\u{65e5}\u{672c}",
            "\u{1f642}",
            "host_\u{e9}",
            "12345678",
            "1234567",
            "123456789",
            "12345678\0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Every string cut at every length, and with every byte class after.
        let base = texts.clone();
        for s in &base {
            for (i, _) in s.char_indices() {
                texts.push(s[..i].to_string());
            }
            for tail in ["\0", "0", "\u{7f}", "\u{e9}", "\u{ffff}"] {
                texts.push(format!("{s}{tail}"));
            }
        }
        for a in &texts {
            for b in &texts {
                let by_prefix = prefix(a).cmp(&prefix(b));
                assert!(
                    by_prefix.is_eq() || by_prefix == a.cmp(b),
                    "{a:?} against {b:?}: prefixes {by_prefix:?}"
                );
                if a.len() <= 16 && b.len() <= 16 && !a.contains('\0') && !b.contains('\0') {
                    // Short strings without a zero byte are told apart.
                    assert_eq!(by_prefix, a.cmp(b), "{a:?} against {b:?}");
                }
            }
        }
    }
}
