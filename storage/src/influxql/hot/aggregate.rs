//! The rows of an aggregate read from the hot store: each group's buckets,
//! each bucket's aggregate per column (`acc.rs`), as the engine's statement
//! answers them (`sql.rs`'s `aggregate`: one row per group tag set and
//! bucket, ordered by group then time, a bucket only where a point has one
//! of the aggregated fields).
//!
//! A series' points (in time order) are cut into runs that share a bucket,
//! the bucket looked up once a run (UTC windows: by index, `bucket.rs`'s
//! `Slots::Dense`), and each column's values added a run at a time
//! (`Acc::add_floats`): no per-point lookup or function match
//! (`single-groupby-5-1-12`: 4,320 points × 5 fields into 720 buckets).

use std::collections::BTreeMap;
use std::ops::Range;

use super::acc::{pick, Acc, Agg, Picked, Spec};
use super::bucket::{Bucket, Layout, Slots};
use super::scratch::Scratch;
use super::Chosen;
use crate::hot::table::{Column, Values};
use crate::influxql::plan::{Aggregate, Plan};
use crate::influxql::rows::Row;
use crate::influxql::series::Value;

/// The aggregate's rows (`None`: a column the evaluator cannot read).
pub(super) fn aggregate_rows(
    plan: &Plan,
    agg: &Aggregate,
    specs: &[Spec],
    lone: bool,
    fields: &[String],
    chosen: &Chosen<'_>,
) -> Option<Vec<Row>> {
    let (min, max) = (chosen.min, chosen.max);
    let index: Vec<Option<usize>> = specs
        .iter()
        .map(|s| {
            s.kind?;
            fields.iter().position(|f| *f == s.field)
        })
        .collect();
    let window = agg.window.map(|w| (w.interval, w.offset));
    let zone = agg.zone.as_ref();
    let fixed = plan.range.min.unwrap_or(0);
    let width = specs.len();
    // The newest point any bucket can hold: how far a dense table reaches.
    let newest = chosen
        .series
        .iter()
        .filter_map(|(_, s, _)| s.newest())
        .max()
        .map_or(min, |n| n.min(max));
    let layout = Layout::of(window, zone, (min, newest), chosen.series.len());
    // Each group's buckets, as slots into one arena of aggregates (`width`
    // per bucket) and picks: no allocation per bucket.
    let mut groups: BTreeMap<Vec<String>, Slots> = BTreeMap::new();
    // Room for one group's buckets at once (a dense layout knows how many
    // windows the range has; `single-groupby-*-12`: 720), not grown by
    // doubling bucket after bucket; at most a few thousand, for a range of
    // many windows may hold few points.
    let buckets = layout.windows().min(4096);
    let mut accs: Vec<Acc> = Vec::with_capacity(buckets * width);
    let mut picks: Vec<Picked> = Vec::with_capacity(buckets);
    let mut scratch = Scratch::take();
    let mut runs: Vec<(u32, Range<usize>)> = Vec::new();
    let reads = chosen.reads(index.iter().flatten().copied().collect());
    for (_, s, test) in &chosen.series {
        let s = *s;
        let p = chosen.points(s, test, &reads, &mut scratch);
        let span = p.span(min, max);
        if span.is_empty() {
            continue;
        }
        let cols: Vec<Option<&Column>> = index
            .iter()
            .map(|i| i.and_then(|i| p.columns.get(i)).and_then(Option::as_ref))
            .collect();
        if cols.iter().all(Option::is_none) {
            continue;
        }
        let key: Vec<String> = plan
            .group_tags
            .iter()
            .map(|t| s.tag(t).to_string())
            .collect();
        let buckets = groups.entry(key).or_insert_with(|| layout.slots());
        // A point adds to a bucket (and makes one) where it passes the
        // conditions and has one of the aggregated fields: every point where
        // nothing is tested and a column has every point.
        let every = test.is_none()
            && cols
                .iter()
                .flatten()
                .any(|c| c.valid[span.clone()].iter().all(|&ok| ok));
        runs.clear();
        let mut current: Option<(Bucket, u32)> = None;
        for i in span.clone() {
            let adds =
                every || (Chosen::passes(test, p, i) && cols.iter().flatten().any(|c| c.valid[i]));
            if !adds {
                continue;
            }
            let t = p.times[i];
            let slot = match current {
                Some((b, slot)) if b.holds(t) => slot,
                _ => {
                    let b = Bucket::of(t, window, zone, fixed);
                    let slot = buckets.slot(b.start, || {
                        accs.extend(std::iter::repeat_n(Acc::EMPTY, width));
                        picks.push(Picked {
                            time: 0,
                            value: 0.0,
                            ivalue: 0,
                            any: false,
                        });
                        (picks.len() - 1) as u32
                    })?;
                    current = Some((b, slot));
                    slot
                }
            };
            match runs.last_mut() {
                Some((last, r)) if *last == slot && r.end == i => r.end = i + 1,
                _ => runs.push((slot, i..i + 1)),
            }
        }
        // Each column's values into their buckets' aggregates, a run at a
        // time: the same values in the same order into each aggregate as
        // point by point.
        for (k, (spec, col)) in specs.iter().zip(&cols).enumerate() {
            let Some(c) = col else { continue };
            for (slot, r) in &runs {
                let acc = &mut accs[*slot as usize * width + k];
                let (times, valid) = (&p.times[r.clone()], &c.valid[r.clone()]);
                match &c.values {
                    Values::Float(v) => acc.add_floats(spec.agg, times, &v[r.clone()], valid),
                    Values::Integer(v) => acc.add_ints(spec.agg, times, &v[r.clone()], valid),
                    _ if valid.contains(&true) => return None,
                    _ => {}
                }
            }
        }
        if let (true, Agg::Part(func)) = (lone, specs[0].agg) {
            for (slot, r) in &runs {
                for i in r.clone() {
                    pick(&mut picks[*slot as usize], func, &cols[0], i, p.times[i]);
                }
            }
        }
    }
    let mut rows = Vec::new();
    for (group, buckets) in groups {
        for (time, slot) in buckets.into_sorted() {
            let slot = slot as usize;
            let (accs, picked) = (&mut accs[slot * width..][..width], picks[slot]);
            let time = match (lone, specs[0].agg) {
                (false, _) => time,
                // The nearest rank's point; none (a null time in the engine's
                // row): let the engine answer.
                (true, Agg::Percentile(p)) => {
                    let k = accs[0].rank(p)?;
                    accs[0].time_at(k)
                }
                (true, _) if !picked.any => continue,
                (true, _) => picked.time,
            };
            // A slot for the time `exec.rs` puts first: no reallocation per row.
            let mut values: Vec<Value> = Vec::with_capacity(specs.len() + 1);
            values.extend(accs.iter_mut().zip(specs).map(|(a, s)| a.value(s)));
            rows.push(Row {
                time: Some(time),
                group: group.clone(),
                values,
            });
        }
    }
    Some(rows)
}
