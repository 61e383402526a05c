//! Each group's last point (`SELECT … ORDER BY time DESC LIMIT 1`: TSBS
//! `lastpoint`, Grafana's current value) from the hot store (issue #44): the
//! newest points of every series are plain in its open tail, so the answer
//! reads one point per series and waits for nothing the store does not wait
//! for anyway. Run inline (`influxql/inline.rs`) it refuses whatever would
//! wait, as `read_hot` does; the flusher's last points (`last_point.rs`),
//! which need the engine, answered it on a blocking thread before.
//!
//! Only where the store can prove each series' newest point is held: it holds
//! every series of the measurement (`Table::every_series`), and each series'
//! newest held point is at or after `Table::complete_from`. Every point at or
//! after that bound is held, the bound only rises, and eviction never drops a
//! series' newest point, so no newer point of that series exists anywhere
//! else. A series seeded by the refill without points (its points are older
//! than the refill's cutoff, the engine's), or one idle since before the bound
//! (a late point of it older than the bound goes to the engine only), leaves
//! the statement to the last points. The answer is `last_point.rs`'s: per
//! group the latest point that has one of the fields that make a point show,
//! among equal times the series first in tag (then id) order, rows in group
//! order.

use std::collections::BTreeMap;
use std::time::Instant;

use engine::quote_ident;

use super::{inline, may_read, RECEIVE_WAIT};
use crate::hot::table::{Column, Plain, Series, Values};
use crate::influxql::error::InfluxqlError;
use crate::influxql::last_point::{shown, Shown};
use crate::influxql::plan::Plan;
use crate::influxql::rows::Row;
use crate::influxql::series::Value;
use crate::influxql::stages::{self, Stage};
use crate::Storage;

/// One series' answer: its id, the series, its open tail and the point's
/// index in it.
type Found<'t> = (u64, &'t Series, &'t Plain, usize);

impl Storage {
    /// The rows of `plan` (one per group, ordered by group) from the hot
    /// store; `None` when the last points or the engine must answer (see
    /// the module's documentation).
    pub(crate) fn read_hot_last_points(
        &self,
        plan: &Plan,
        req: &crate::influxql::InfluxqlRequest<'_>,
    ) -> Result<Option<Vec<Row>>, InfluxqlError> {
        let Some(shown) = shown(plan) else {
            return Ok(None);
        };
        if !self.hot.enabled()
            || self.cluster.is_some()
            || !may_read(req.access, &plan.db)
            || self.catalog.retention_secs(&plan.db) > 0
        {
            return Ok(None);
        }
        let at = Instant::now();
        // As `read_hot`: the measurement is held from now on; inline, nothing
        // waits, and what would is refused (run again on a blocking thread).
        let inline = inline::active();
        if !inline {
            self.hot.want(&plan.db, &plan.measurement);
        } else if !self.hot.wanted_already(&plan.db, &plan.measurement) {
            inline::refuse();
            return Ok(None);
        }
        let acked = self.wal.last_seq();
        let caught_up = if inline {
            self.reads
                .unflushed()
                .wait_received(acked, std::time::Duration::ZERO)
                && self.hot.applied_now(acked, &plan.db, &plan.measurement)
        } else {
            self.reads.unflushed().wait_received(acked, RECEIVE_WAIT)
                && self.hot.wait_applied(acked, &plan.db, &plan.measurement)
        };
        if !caught_up {
            inline::refuse();
            return Ok(None);
        }
        let tables = if inline {
            self.hot.try_read_now()
        } else {
            self.hot.try_read()
        };
        let at = stages::lap(Stage::Wait, at);
        let Some(tables) = tables else {
            inline::refuse();
            return Ok(None);
        };
        let Some(table) = tables.get(&plan.db, &plan.measurement) else {
            return Ok(None);
        };
        if !table.every_series || table.series.len() > self.hot.max_series() {
            return Ok(None);
        }
        // Values read: a point per series, its shown columns and time.
        if inline && table.series.len().saturating_mul(shown.len() + 1) > inline::MAX_VALUES {
            inline::refuse();
            return Ok(None);
        }
        let index = |name: &str| table.fields.iter().position(|f| f == name);
        // Each shown column's source, looked up once (not per row).
        let sources: Vec<Source<'_>> = shown
            .iter()
            .map(|c| match c {
                Shown::Tag(t) => Source::Tag(t),
                Shown::Field(f) => Source::Field(index(f)),
            })
            .collect();
        // The fields of which one makes a point show (a field the table never
        // held shows nothing).
        let present: Vec<usize> = plan
            .fields
            .iter()
            .filter(|f| plan.nonnull.contains(&quote_ident(f)))
            .filter_map(|f| index(f))
            .collect();
        let (min, max) = (
            plan.range.min.unwrap_or(i64::MIN),
            plan.range.max.unwrap_or(i64::MAX),
        );
        let mut best: BTreeMap<Vec<&str>, Found<'_>> = BTreeMap::new();
        for (&sid, s) in &table.series {
            let tail = s.open_tail();
            match tail.times.last() {
                Some(&newest) if newest >= table.complete_from => {}
                // Not provably the series' newest point: the last points'.
                _ => return Ok(None),
            }
            let i = match newest_shown(tail, &present, min, max) {
                Newest::At(i) => i,
                Newest::NoneInRange => continue,
                Newest::Unknown => return Ok(None),
            };
            let group: Vec<&str> = plan.group_tags.iter().map(|t| s.tag(t)).collect();
            match best.get_mut(&group) {
                None => {
                    best.insert(group, (sid, s, tail, i));
                }
                Some(b) => {
                    // The later point wins; at one time the series first in
                    // tag (then id) order (ties are rare: compared only then).
                    let (t, bt) = (tail.times[i], b.2.times[b.3]);
                    let order = |s: &Series| -> Vec<String> {
                        plan.order_tags
                            .iter()
                            .map(|k| s.tag(k).to_string())
                            .collect()
                    };
                    if t > bt || (t == bt && (order(s), sid) < (order(b.1), b.0)) {
                        *b = (sid, s, tail, i);
                    }
                }
            }
        }
        let rows: Vec<Row> = best
            .into_iter()
            .map(|(group, (_, s, tail, i))| {
                // A slot for the time `exec.rs` puts first.
                let mut values = Vec::with_capacity(shown.len() + 1);
                values.extend(sources.iter().map(|c| {
                    match *c {
                        Source::Tag(t) => match s.tag(t) {
                            "" => Value::Null,
                            v => Value::String(v.to_string()),
                        },
                        Source::Field(k) => k
                            .and_then(|k| tail.columns.get(k))
                            .and_then(Option::as_ref)
                            .map_or(Value::Null, |c| value(c, i)),
                    }
                }));
                Row {
                    time: Some(tail.times[i]),
                    group: group.into_iter().map(str::to_string).collect(),
                    values,
                }
            })
            .collect();
        drop(tables);
        stages::lap(Stage::Eval, at);
        if rows.len() as u64 > self.row_limit() {
            // The engine's answer would be refused by its row limit: let it say so.
            return Ok(None);
        }
        Ok(Some(rows))
    }
}

/// Where a shown column's value comes from in a held series.
enum Source<'a> {
    /// The series' tag of this key.
    Tag(&'a str),
    /// The table's field of this index (`None`: the table never held it).
    Field(Option<usize>),
}

/// What a series' open tail says of its newest point that shows.
enum Newest {
    /// At this index.
    At(usize),
    /// None in the range: its older points are older than the range too.
    NoneInRange,
    /// None in the tail: an older point, sealed or before what the table
    /// holds, may be the answer.
    Unknown,
}

/// The newest point of `tail` in `[min, max]` with one of the `present`
/// fields.
fn newest_shown(tail: &Plain, present: &[usize], min: i64, max: i64) -> Newest {
    let shows = |i: usize| {
        present.iter().any(|&f| {
            tail.columns
                .get(f)
                .and_then(Option::as_ref)
                .is_some_and(|c| c.valid[i])
        })
    };
    // From the range's newest point back to the first before the range;
    // no search where the range reaches past the tail (no `WHERE time`:
    // the newest point nearly always answers).
    let times = &tail.times;
    let end = match times.last() {
        Some(&t) if t <= max => times.len(),
        _ => times.partition_point(|&t| t <= max),
    };
    for (i, &t) in times[..end].iter().enumerate().rev() {
        if t < min {
            return Newest::NoneInRange;
        }
        if shows(i) {
            return Newest::At(i);
        }
    }
    // Points before the tail's first may lie in the range.
    match tail.times.first() {
        Some(&first) if first <= min => Newest::NoneInRange,
        _ => Newest::Unknown,
    }
}

/// Point `i`'s value in `c`, as the last points give it (a float that is not
/// finite shows as null).
fn value(c: &Column, i: usize) -> Value {
    if !c.valid[i] {
        return Value::Null;
    }
    match &c.values {
        Values::Float(v) if v[i].is_finite() => Value::Float(v[i]),
        Values::Float(_) => Value::Null,
        Values::Integer(v) => Value::Integer(v[i]),
        Values::Unsigned(v) => Value::Unsigned(v[i]),
        Values::Boolean(v) => Value::Boolean(v[i]),
        Values::String(v) => Value::String(v[i].to_string()),
    }
}
