//! A raw answer put in InfluxDB's order here, not by the engine.
//!
//! A raw read's order is its groups, then time, then the series by its tags
//! (points of several series at one time), then the series id. The engine
//! sorts a wide answer slowly: TSBS's `high-cpu-all` at 1,000 hosts (464k rows of
//! ten tags and ten fields) took 2.5–2.9 s with that `ORDER BY` and 1.1–1.4 s
//! without it, same run (`test_results/latest/row_order.md`); sorting the rows
//! here takes a small part of the difference. So where no `LIMIT`/`OFFSET` needs
//! the engine's order (over the table's rows or a cluster's shard rows, not a
//! subquery's answer), the statement asks for the tags and series id it orders by
//! (the tags already shown are reused) and the rows are sorted here.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

use engine::quote_ident;

use super::plan::Plan;
use super::rows::Row;
use super::series::Value;

/// How to sort a raw answer's rows: indices into [`Row::values`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RowOrder {
    /// `ORDER BY time DESC`.
    desc: bool,
    /// Each order tag's column: a shown `nullIf(tag, '')` or an added one.
    tags: Vec<usize>,
    /// The added series id column.
    series: usize,
    /// Columns added after the plan's own (dropped after the sort).
    added: usize,
}

impl RowOrder {
    /// The order of `plan`'s raw answer, and the select items it adds after the
    /// plan's columns (`series` is the SQL of the rows' series id), or `None` when
    /// the engine must order it: an aggregate or a `LIMIT`/`OFFSET` the engine
    /// applies. The caller knows whether the rows are points of series (the table's,
    /// a cluster's shard rows) or a subquery's answer, which keeps the inner order.
    pub(crate) fn of(plan: &Plan, series: &str) -> Option<(RowOrder, Vec<String>)> {
        let engine_limits = (plan.limit.is_some() || plan.offset.is_some()) && !plan.transforms();
        if plan.aggregate.is_some() || engine_limits {
            return None;
        }
        let mut added = Vec::new();
        let mut next = plan.columns.len();
        let mut tags = Vec::with_capacity(plan.order_tags.len());
        for t in &plan.order_tags {
            let quoted = quote_ident(t);
            let shown = format!("nullIf({quoted}, '')");
            match plan.columns.iter().position(|c| c.sql == shown) {
                Some(i) => tags.push(i),
                None => {
                    added.push(format!("{quoted} AS __iq_o{}", added.len()));
                    tags.push(next);
                    next += 1;
                }
            }
        }
        added.push(format!("{series} AS __iq_os"));
        let order = RowOrder {
            desc: plan.order_desc,
            tags,
            series: next,
            added: added.len(),
        };
        Some((order, added))
    }

    /// Sorts `rows` as the engine's `ORDER BY` would have, then drops the added
    /// columns. A row lacking them (never from the statement [`of`](Self::of)
    /// rendered) sorts as if they were empty.
    ///
    /// Each distinct group and series is ranked once (a series' tags are the same in
    /// every row of it), then the rows by (group, time, series) as integers: comparing
    /// the tags row by row took a fifth of `high-cpu-all`'s time at 1,000 hosts.
    pub(crate) fn sort(&self, rows: &mut Vec<Row>) {
        let group_rank = ranks(rows.iter().map(|r| r.group.as_slice()));
        let mut first: HashMap<u64, usize> = HashMap::new();
        for (i, r) in rows.iter().enumerate() {
            first.entry(id(r.values.get(self.series))).or_insert(i);
        }
        let mut series: Vec<(u64, usize)> = first.into_iter().collect();
        series.sort_unstable_by(|(a_id, a), (b_id, b)| {
            self.tags
                .iter()
                .map(|&c| text(rows[*a].values.get(c)).cmp(text(rows[*b].values.get(c))))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
                .then(a_id.cmp(b_id))
        });
        let series_rank: HashMap<u64, u32> = series
            .iter()
            .enumerate()
            .map(|(rank, (sid, _))| (*sid, rank as u32))
            .collect();
        let mut keys: Vec<(u32, i64, u32, usize)> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let t = r.time.unwrap_or(i64::MIN);
                // `!t` reverses the order of every i64 without overflow.
                let t = if self.desc { !t } else { t };
                let s = series_rank[&id(r.values.get(self.series))];
                (group_rank[r.group.as_slice()], t, s, i)
            })
            .collect();
        keys.sort_unstable();
        let mut slots: Vec<Option<Row>> = rows.drain(..).map(Some).collect();
        rows.extend(keys.iter().filter_map(|k| slots[k.3].take()));
        for r in rows.iter_mut() {
            let keep = r.values.len().saturating_sub(self.added);
            r.values.truncate(keep);
        }
    }
}

/// Each distinct group's rank in the order of groups.
fn ranks<'a>(groups: impl Iterator<Item = &'a [String]>) -> HashMap<&'a [String], u32> {
    let distinct: BTreeSet<&[String]> = groups.collect();
    distinct
        .into_iter()
        .enumerate()
        .map(|(rank, g)| (g, rank as u32))
        .collect()
}

/// A tag's value as the engine orders it: a missing tag is `''` (shown as null).
fn text(v: Option<&Value>) -> &str {
    match v {
        Some(Value::String(s)) => s,
        _ => "",
    }
}

fn id(v: Option<&Value>) -> u64 {
    match v {
        Some(Value::Unsigned(u)) => *u,
        Some(Value::Integer(i)) => *i as u64,
        _ => 0,
    }
}

#[cfg(test)]
#[path = "row_order_tests.rs"]
mod tests;
