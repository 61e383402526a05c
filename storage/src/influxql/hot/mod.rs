//! Statements over a few series answered from the hot store (`crate::hot`,
//! issue #44) instead of an engine statement (3–4 ms of planning however small).
//!
//! It produces the rows the engine's statement would (`sql.rs`'s `aggregate`:
//! one per group tag set and bucket, ordered by group then time, a bucket only
//! where a point has one of the aggregated fields; `sql.rs`'s `raw`: `raw.rs`),
//! so fill, `ORDER BY time DESC`, `LIMIT`/`OFFSET` and `SLIMIT` stay
//! `exec.rs`'s, as for the engine's rows.
//!
//! Covered: `count`, `sum`, `mean`, `min`, `max`, `first`, `last`, `spread`,
//! `stddev`, `median`, `percentile` (`acc.rs`) of float and integer fields as
//! written (no cast, no wildcard), with or without
//! `GROUP BY time(interval[, offset])` (any `fill`, `tz()`), `GROUP BY` tags;
//! raw fields and tags (`*` included: time, then fields and tags by name);
//! `WHERE` time and conditions joined by `AND`/`OR` (`cond.rs`): a tag `=`/`!=`
//! a string or `=~`/`!~` a regex as the engine's `match()` reads it
//! (`pattern.rs`: Grafana's `/^(a|b)$/` a set of values), a field compared
//! with a literal; a transformation of such an aggregate (`derivative`, …:
//! `exec.rs` transforms the rows, which start an interval before the range as
//! the plan's do). The engine answers everything else, and any statement whose
//! conditions leave more than `[hot] max_series` series (1,000), whose range starts
//! before what the store holds completely, of a database with a retention, or
//! of a caller that may not read the database.

use std::time::Instant;

use engine::{ReadScope, SqlAccess};
use influxql::ast::{Expr, SelectStatement};
use ingest::MeasurementSchema;

use super::error::InfluxqlError;
use super::inline;
use super::plan::{Aggregate, Plan};
use super::stages::{self, Stage};
use crate::hot::table::{Chunk, Plain, Series, Sift};
use crate::Storage;

mod acc;
mod aggregate;
mod bucket;
mod cond;
#[cfg(test)]
mod index_tests;
mod pattern;
mod raw;
pub(crate) use raw::RawRows;
mod scratch;
#[cfg(test)]
mod skip_tests;
mod tag_values;

use acc::{specs, Spec};
use aggregate::aggregate_rows;
use cond::{Cond, Decided};

/// Compressed points a statement may decode (`Series::sealed_points`) and
/// still be answered here. Decoding costs more per value than the engine's
/// scan of its parts: in the same-run TSBS run at 200 hosts
/// (test_results/latest/tsbs_bench.md) `double-groupby-5` and `-all` (864k
/// points, 5 and 10 fields) took 77 and 141 ms decoded against 50 and 86 ms
/// from the engine, while `double-groupby-1` (one field) was even. Points in
/// each series' plain tail (its newest 1,024 or more) cost nothing to decode
/// and are not counted, so dashboards over recent hours stay here.
const MAX_DECODED_POINTS: usize = 250_000;

/// How long a read waits for the coordinator to receive every acknowledged write.
const RECEIVE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

fn may_read(access: &SqlAccess, db: &str) -> bool {
    match access {
        SqlAccess::Admin | SqlAccess::Read(ReadScope::All) => true,
        SqlAccess::Read(ReadScope::Databases(dbs)) => dbs.contains(db),
    }
}

impl Storage {
    /// The engine's rows for `plan` computed from the hot store; `None` when the
    /// engine must answer (see the module's documentation).
    pub(crate) fn read_hot(
        &self,
        stmt: &SelectStatement,
        rest: &[Expr],
        plan: &Plan,
        req: &super::InfluxqlRequest<'_>,
        schema: &MeasurementSchema,
    ) -> Result<Option<RawRows>, InfluxqlError> {
        let at = Instant::now();
        if !self.hot.enabled()
            || self.cluster.is_some()
            || plan.source.is_some()
            // Raw points' transformations take `LIMIT` after them (`raw.rs` pages).
            || (plan.transforms() && plan.aggregate.is_none())
            || plan
                .columns
                .iter()
                .any(|c| c.reducer.is_some() || c.companion.is_some())
            || !may_read(req.access, &plan.db)
            || self.catalog.retention_secs(&plan.db) > 0
        {
            return Ok(None);
        }
        let shape = match &plan.aggregate {
            Some(agg) => {
                let Some(specs) = specs(stmt, schema) else {
                    return Ok(None);
                };
                if specs.len() != plan.columns.len() || specs.is_empty() {
                    return Ok(None);
                }
                let lone = match &agg.point_time {
                    None => false,
                    Some(_) => match specs.as_slice() {
                        [s] if s.agg.selects() => true,
                        _ => return Ok(None),
                    },
                };
                Shape::Aggregate { agg, specs, lone }
            }
            None => match raw::Shown::of(plan, schema) {
                Some(shown) => Shape::Raw(shown),
                None => return Ok(None),
            },
        };
        let conds: Option<Vec<Cond>> = rest.iter().map(|e| Cond::of(e, schema)).collect();
        let Some(mut conds) = conds else {
            return Ok(None);
        };
        // A statement the store could answer: its measurement is held from now
        // on (`[hot] hold = "read"`: the first such read marks it and starts
        // its refill, and goes to the engine below until that ended).
        // Inline (`influxql/inline.rs`): nothing waits; what would is refused.
        let inline = inline::active();
        if !inline {
            self.hot.want(&plan.db, &plan.measurement);
        } else if !self.hot.wanted_already(&plan.db, &plan.measurement) {
            inline::refuse();
            return Ok(None);
        }
        let at = stages::lap(Stage::Plan, at);
        // Every acknowledged write is queued for the store once the coordinator
        // received it, and in it once the applier applied it (`hot/apply.rs`).
        let acked = self.wal.last_seq();
        if inline
            && !(self
                .reads
                .unflushed()
                .wait_received(acked, std::time::Duration::ZERO)
                && self.hot.applied_now(acked, &plan.db, &plan.measurement))
        {
            inline::refuse();
            return Ok(None);
        }
        if !self.reads.unflushed().wait_received(acked, RECEIVE_WAIT) {
            return Ok(None);
        }
        if !self.hot.wait_applied(acked, &plan.db, &plan.measurement) {
            return Ok(None);
        }
        let (min, max) = (
            plan.range.min.unwrap_or(i64::MIN),
            plan.range.max.unwrap_or(i64::MAX),
        );
        let max_series = self.hot.max_series();
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
        if min < table.complete_from {
            return Ok(None);
        }
        for c in &mut conds {
            c.bind(&table.fields);
        }
        let mut series: Vec<(u64, &Series, Test<'_>)> = Vec::new();
        let mut decoded = 0usize;
        // Values an inline read may read (`inline::MAX_VALUES`): points it
        // reads (`Series::points_read`: its plain tail's in the range only;
        // counted whole, TSBS `high-cpu-1` counted up to 1,152 points it
        // does not read) × the fields it reads. Sealed chunks the read skips
        // undecoded (`decodes`) count nothing: counted, 11 of 40 TSBS
        // `high-cpu-1` windows were refused inline and planned twice. Tags
        // are not values read (one per series, not per point): counted as
        // columns, TSBS `high-cpu-1`'s `SELECT *` (10 fields, 10 tags) read
        // 4,320 × 21 and was refused inline, to be planned again on a
        // blocking thread.
        let columns = shape.fields_read(&table.fields, &conds).len().max(1);
        let mut inline_points = 0usize;
        // The series the tag index names (`hostname = 'x' [OR …]`), else all.
        let named = cond::candidates(&conds, &table.tags);
        let held: Box<dyn Iterator<Item = (&u64, &Series)>> = match &named {
            Some(ids) => Box::new(ids.iter().filter_map(|id| table.series.get_key_value(id))),
            None => Box::new(table.series.iter()),
        };
        'series: for (id, s) in held {
            let mut every_point = true;
            for c in &conds {
                match c.on_series(s) {
                    Some(false) => continue 'series,
                    Some(true) => {}
                    None => every_point = false,
                }
            }
            let test = (!every_point).then(|| conds.iter().map(|c| c.decide(s)).collect());
            if inline {
                inline_points += s.points_read(min, max, |c| decodes(&conds, s, &test, c));
                if inline_points.saturating_mul(columns) > inline::MAX_VALUES {
                    inline::refuse();
                    return Ok(None);
                }
            }
            series.push((*id, s, test));
            decoded += s.sealed_points(min, max);
            if series.len() > max_series || decoded > MAX_DECODED_POINTS {
                return Ok(None);
            }
        }
        // Series in one order every time (first/last ties are broken by value, `Acc`).
        series.sort_unstable_by_key(|c| c.0);
        let at = stages::lap(Stage::Series, at);
        let chosen = Chosen {
            series,
            conds: &conds,
            min,
            max,
        };
        let rows = match shape {
            Shape::Aggregate { agg, specs, lone } => {
                aggregate_rows(plan, agg, &specs, lone, &table.fields, &chosen).map(RawRows::Rows)
            }
            Shape::Raw(shown) => raw::rows(plan, &shown, &table.fields, &chosen, req.packed),
        };
        drop(tables);
        stages::lap(Stage::Eval, at);
        let Some(rows) = rows else {
            return Ok(None);
        };
        if rows.len() as u64 > self.row_limit() {
            // The engine's answer would be refused by its row limit: let it say so.
            return Ok(None);
        }
        Ok(Some(rows))
    }
}

/// What a statement computes from its points.
enum Shape<'p> {
    Aggregate {
        agg: &'p Aggregate,
        specs: Vec<Spec>,
        lone: bool,
    },
    Raw(raw::Shown),
}

impl Shape<'_> {
    /// The fields (the table's indexes) a read decodes: those shown or
    /// aggregated, those tested for presence, and those the conditions read.
    fn fields_read(&self, fields: &[String], conds: &[Cond]) -> Vec<usize> {
        let at = |name: &String| fields.iter().position(|f| f == name);
        let mut read: Vec<usize> = match self {
            Shape::Aggregate { specs, .. } => specs.iter().filter_map(|s| at(&s.field)).collect(),
            Shape::Raw(shown) => shown.fields().filter_map(at).collect(),
        };
        for c in conds {
            c.fields(&mut read);
        }
        read.sort_unstable();
        read.dedup();
        read
    }
}

/// What a series' points must pass: the conditions with its tags decided
/// (`Cond::decide`), or `None` where every point passes them.
type Test<'c> = Option<Vec<Decided<'c>>>;

/// The series a statement reads (id, series, what its points must pass),
/// in id order, and the time range (inclusive).
struct Chosen<'t> {
    series: Vec<(u64, &'t Series, Test<'t>)>,
    conds: &'t [Cond],
    min: i64,
    max: i64,
}

impl Chosen<'_> {
    /// `fields` and those the conditions read: what a read decodes.
    fn reads(&self, mut fields: Vec<usize>) -> Vec<usize> {
        for c in self.conds {
            c.fields(&mut fields);
        }
        fields
    }

    /// `s`'s points in the range with `fields` decoded, less the sealed
    /// chunks whose bounds no point passing the conditions can lie in (TSBS
    /// `high-cpu-1`'s `usage_user > 90.0`: most of a host's chunks stay
    /// compressed), and less those of which no point in the range passes
    /// them (their condition's fields decoded first, the others not).
    /// A skipped chunk's points fail the conditions, so every caller, which
    /// tests each point with [`Chosen::passes`], sees the same.
    fn points<'a>(
        &self,
        s: &'a Series,
        test: &Test<'_>,
        fields: &[usize],
        scratch: &'a mut Plain,
    ) -> &'a Plain {
        let keep = |c: &Chunk| decodes(self.conds, s, test, c);
        let mut first = Vec::new();
        for c in self.conds {
            c.fields(&mut first);
        }
        // Sifting pays where the condition reads fewer fields than the read.
        let passes = |p: &Plain, i: usize| Chosen::passes(test, p, i);
        let sift = match test {
            Some(_) if fields.iter().any(|f| !first.contains(f)) => Sift {
                fields: &first,
                passes: Some(&passes),
            },
            _ => Sift::NONE,
        };
        s.points_sifted(self.min, self.max, fields, scratch, keep, &sift)
    }

    /// [`Chosen::passes`] of each point in `range` of `p`, into `out`
    /// (cleared first), a column's comparison at a time (`Decided::mark`).
    fn marks(test: &Test<'_>, p: &Plain, range: std::ops::Range<usize>, out: &mut Vec<bool>) {
        let Some((first, rest)) = test.as_ref().and_then(|t| t.split_first()) else {
            out.clear();
            out.resize(range.len(), true);
            return;
        };
        first.mark(p, range.clone(), out);
        let mut other = Vec::new();
        for c in rest {
            c.mark(p, range.clone(), &mut other);
            for (x, y) in out.iter_mut().zip(&other) {
                *x &= *y;
            }
        }
    }

    /// Whether point `i` of `p` (a series' points) passes its `test`.
    fn passes(test: &Test<'_>, p: &Plain, i: usize) -> bool {
        test.as_ref()
            .is_none_or(|t| t.iter().all(|c| c.on_point(p, i)))
    }
}

/// Whether a read of `s`'s points that must pass `test` decodes its sealed
/// chunk `c`: not where no point within the chunk's bounds can pass the
/// conditions (TSBS `high-cpu-1`'s `usage_user > 90.0` skips most of a
/// host's chunks). [`Chosen::points`] skips by it and an inline read's count
/// of the values it reads leaves the same chunks out.
fn decodes(conds: &[Cond], s: &Series, test: &Test<'_>, c: &Chunk) -> bool {
    test.is_none() || conds.iter().all(|k| k.may_pass(s, &|i| c.bounds(i)))
}
