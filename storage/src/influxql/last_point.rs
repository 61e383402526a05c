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
use super::plan::Plan;
use super::rows::Row;
use super::series::Value;
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
    plan.columns
        .iter()
        .map(|c| {
            if c.reducer.is_some() || c.companion.is_some() {
                return None;
            }
            if let Some(f) = plan.fields.iter().find(|f| quote_ident(f) == c.sql) {
                return Some(Shown::Field(f.clone()));
            }
            plan.tags
                .iter()
                .find(|t| format!("nullIf({}, '')", quote_ident(t)) == c.sql)
                .map(|t| Shown::Tag(t.clone()))
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

fn value(cell: Option<&Cell>) -> Value {
    match cell {
        None => Value::Null,
        Some(Cell::Float(f)) if f.is_finite() => Value::Float(*f),
        Some(Cell::Float(_)) => Value::Null,
        Some(Cell::Integer(i)) => Value::Integer(*i),
        Some(Cell::Unsigned(u)) => Value::Unsigned(*u),
        Some(Cell::String(s)) => Value::String(s.clone()),
        Some(Cell::Boolean(b)) => Value::Boolean(*b),
    }
}

impl Storage {
    /// The rows of `plan` (one per group, ordered by group) from the last
    /// points; `None` when the engine must answer.
    pub(crate) fn read_last_points(
        &self,
        plan: &Plan,
        req: &InfluxqlRequest<'_>,
        schema: &MeasurementSchema,
    ) -> Result<Option<Vec<Row>>, InfluxqlError> {
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
        let answered = |table: &TableLasts| answer(plan, &shown, table, &overlay);
        let rows = if inline {
            // Anything but an answer would go to the engine: refused here.
            match lasts.read_now(&plan.db, &plan.measurement, answered) {
                Some(Some(rows)) => Ok(Some(Some(rows))),
                _ => {
                    inline::refuse();
                    return Ok(None);
                }
            }
        } else {
            let engine = self
                .engine()
                .map_err(|_| engine::SqlError::Unavailable("the server is shutting down".into()))?;
            lasts.read(
                &|| engine.connection(),
                &plan.db,
                &plan.measurement,
                answered,
            )
        };
        stages::lap(Stage::Eval, at);
        let rows = match rows {
            Ok(Some(Some(rows))) => rows,
            Ok(_) => return Ok(None),
            Err(e) => {
                tracing::warn!(db = %plan.db, measurement = %plan.measurement,
                    "last points not loaded ({e}); reading the table");
                return Ok(None);
            }
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
    let shown_at: Vec<usize> = shown
        .iter()
        .map(|s| match s {
            Shown::Field(n) | Shown::Tag(n) => at(&mut names, n),
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
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_unstable_by(|&a, &b| {
        key(a)
            .cmp(key(b))
            .then_with(|| points[b].1.cmp(&points[a].1))
            .then_with(|| cmp_tags(a, b, &order_at))
            .then_with(|| points[a].0.cmp(&points[b].0))
    });
    order.dedup_by(|later, first| key(*later) == key(*first));
    Some(
        order
            .into_iter()
            .map(|p| {
                let c = cells_of(p);
                // A slot for the time `exec.rs` puts first.
                let mut values = Vec::with_capacity(shown.len() + 1);
                values.extend(shown.iter().zip(&shown_at).map(|(s, &i)| match s {
                    Shown::Tag(_) => match c[i] {
                        // A count more: the last points' own string.
                        Some(Cell::String(v)) if !v.is_empty() => Value::String(v.clone()),
                        _ => Value::Null,
                    },
                    Shown::Field(_) => value(c[i]),
                }));
                Row {
                    time: Some(points[p].1),
                    group: group_at.iter().map(|&i| tag(c[i]).to_string()).collect(),
                    values,
                }
            })
            .collect(),
    )
}
