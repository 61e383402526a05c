//! Aggregates pushed down to the shards of a ClickHouse cluster (issue #43): instead of every
//! raw row of the statement's range crossing the network (`cluster.rs`), each shard applies
//! point identity to its own rows — a series lives on one shard, so grouping its rows by
//! `(series_id, time)` there is exact — and answers one partial row per group and interval
//! (counts, sums, minimums, maximums, the first and last values with their times). The node
//! combines them in Rust (`combine.rs`; `answer.rs` runs it) into the rows the aggregate
//! statement of `sql.rs` would have answered, so fill, time zones, `LIMIT`, `SLIMIT`,
//! `ORDER BY time DESC` and the rest of the executor work as before. An embedded-engine
//! statement costs 3–4 ms of planning (release) however few its rows: a read without undelivered rows
//! runs none. The engine's combining statement ([`Pushdown::combine_sql`]) stays as the
//! fallback for partials the Rust combination does not read, and defines what it must answer.
//!
//! Grouping by point costs most of a shard's time: each shard groups only the rows of the
//! series its index lists as holding a point written more than once, every other row read
//! as a point; a shard's read runs again if a rewrite landed on it meanwhile
//! ([`cluster::Cluster::read_partials`]).
//!
//! The rows the shards cannot be trusted with stay on the node: a series with acknowledged
//! rows not delivered yet is left out of the shards' partials (`NOT IN`), its shard rows are
//! read raw and merged with the undelivered ones, and the same partial statement runs over
//! them in the embedded engine (an undelivered row may rewrite a point a shard holds); its
//! partial rows are combined with the shards'.
//!
//! Decomposable: `count`, `sum`, `mean`, `min`, `max`, `spread`, `first`, `last` of a field,
//! `stddev` of an integer or unsigned field (`stddev.rs`),
//! grouped by tags and `time(...)` (with an offset, any fill), conditions on tags only (those
//! [`super::cluster::shard_condition`] writes for the shards, every one of them), and
//! `count(DISTINCT)`, `median`, `percentile`, `mode`, `distinct` as `decompose` allows. A
//! transformation of those runs on the node after them as after the embedded statement
//! (`post.rs`); `+ - * /` between them is evaluated on the node (`expression.rs`). Anything
//! else (another function, a field condition, a transformation of raw values) reads the rows
//! as before.

use std::collections::BTreeSet;

use engine::arrow::array::{AsArray, RecordBatch};
use engine::arrow::datatypes::UInt64Type;
use engine::table::ColumnKind;
use influxql::ast::{Expr, Literal, SelectStatement};
use ingest::{FieldType, MeasurementSchema};

use super::cluster::strict_shard_condition;
use super::error::InfluxqlError;
use super::expr::strip_parens;
use super::field_call::{field_call, plain_field, Func};
use super::plan::{expand_call, transform_parts, Plan, Presence, Window};
use super::rows::Row;
use super::series_prune::tag_values;
use super::unflushed::kind;
use super::zone::TimeZone;
use super::InfluxqlRequest;
use crate::Storage;

mod answer;
mod by_series;
mod combine;
mod expression;
mod integral;
mod integral_sql;
mod partial;
mod shard_reads;
mod stddev;
mod values;

pub(crate) use partial::sql_type;

/// Series with undelivered rows past which the statement reads rows instead (each is
/// listed in the shards' statements).
const MAX_PENDING_SERIES: usize = 2_000;

/// Values of a `count(DISTINCT)` set past which a partial row sends none and the group's
/// set is not built: the statement reads the rows instead (a set crosses the network and is
/// held on the node whole).
const MAX_DISTINCT_VALUES: usize = 100_000;

/// `__seq` values the partial statements pack with `__row` into one `UInt64` (the order of
/// a point's writes; 18.16 has no `UInt128`, and comparing tuples there is 4× slower).
const PACKED_SEQ_LIMIT: u64 = 1 << 32;

/// One output column: a function of one field.
#[derive(Debug, Clone, Copy)]
struct Call {
    func: Func,
    field: usize,
    /// What the partials carry for it beyond `func`'s columns.
    form: Form,
}

/// A call that is not one of [`Func`] alone (then `func` is `Count`, its points counted).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Form {
    /// `func` as it is.
    Plain,
    /// `count(DISTINCT field)`: the shards send their sets of values.
    Distinct,
    /// `median(field)`, where every group is one series: the shard holding it computes it.
    Median,
    /// `percentile(field, p)`, where every group is one series (as `Median`).
    Percentile(f64),
    /// `mode(field)`: the shards send each value's points, counted (`values.rs`).
    Mode,
    /// `distinct(field)`: as `Mode`.
    Values,
    /// `stddev(field)` of an integer or unsigned field: the shards send the sums of its
    /// values and of their squares as floats, exact while under 2⁵³ (`stddev.rs`).
    Stddev,
}

impl Form {
    /// Whether the shards send each value's points (`values.rs`): the reducer's column.
    fn runs(self) -> bool {
        matches!(self, Form::Mode | Form::Values)
    }
}

impl Call {
    /// Whether a shard computes the whole aggregate of a group (it holds all its points).
    fn whole(&self) -> bool {
        matches!(self.form, Form::Median | Form::Percentile(_))
    }

    /// Whether its partials combine only in Rust (the engine's statement does not read them).
    fn rust_only(&self) -> bool {
        self.form != Form::Plain
    }
}

/// One field the calls read.
#[derive(Debug, Clone)]
struct FieldUse {
    name: String,
    kind: ColumnKind,
    /// A call reads its values (not only whether a point has one).
    values: bool,
}

/// A statement's aggregate over one measurement, as partial aggregates on the shards.
#[derive(Debug, Clone)]
pub(crate) struct Pushdown {
    calls: Vec<Call>,
    fields: Vec<FieldUse>,
    /// `GROUP BY` tags: the name, and whether the measurement has it (else `''`).
    groups: Vec<(String, bool)>,
    /// The tag conditions, for the shards' columns.
    condition: Option<String>,
    /// The tag values every row of the condition holds: the shards read only their series.
    series_of: Option<cluster::TagValues>,
    window: Option<Window>,
    /// The intervals the shards' partials are in: `window`, or with `tz()` a finer grid
    /// whose every interval lies in one of the zone's windows ([`zone_grain`]).
    shard_window: Option<Window>,
    /// `tz()` of a window: the node puts each shard interval in its zone window.
    zone: Option<TimeZone>,
    /// The answer's time is the lone selector's point's (`SELECT last(v) …`).
    point_time: bool,
    /// `[min, max]` (ns) of the rows read.
    min: i64,
    max: i64,
    /// Where groups without values are dropped.
    presence: Presence,
    /// Time of an answer without a window or a picked point.
    start: i64,
    /// The shard groups by series, the group tags' columns holding the series id
    /// (`by_series.rs`).
    by_series: bool,
    /// Each output column over the calls' combined values, where one is not simply its
    /// call (arithmetic of aggregates, `expression.rs`).
    outputs: Option<Vec<expression::Output>>,
}

/// `plan`'s aggregate as partial aggregates (`None`: it does not decompose, or the rows are
/// needed for another reason).
pub(crate) fn decompose(
    stmt: &SelectStatement,
    plan: &Plan,
    schema: &MeasurementSchema,
    rest: &[Expr],
) -> Option<Pushdown> {
    let agg = plan.aggregate.as_ref()?;
    // A transformation (`derivative(mean(v), 1s)`) runs after the aggregate statement on
    // every path (`post.rs`): the aggregate it transforms is pushed down as any other.
    // `mode` and `distinct` of the aggregates computed after the engine (`reduce.rs`)
    // combine (not `top`/`bottom`).
    let reduced = |f: &str| f == "mode" || f == "distinct";
    if plan.source.is_some()
        || plan
            .columns
            .iter()
            .any(|c| c.reducer.as_ref().is_some_and(|r| !reduced(&r.function)))
        || !plan.outer_where.is_empty()
        || plan.range.is_empty()
    {
        return None;
    }
    let shard_window = match (agg.window, &agg.zone) {
        (Some(w), Some(zone)) => Some(zone_grain(w, zone, &plan.range)?),
        (w, _) => w,
    };
    let exprs = expanded_calls(stmt, plan, schema)?;
    // Arithmetic of aggregates: its calls pushed down, evaluated on the node.
    let mut call_exprs = Vec::new();
    let outputs: Vec<expression::Output> = exprs
        .iter()
        .map(|e| expression::output(e, &mut call_exprs))
        .collect::<Option<_>>()?;
    let exprs = call_exprs;
    // Per call, whether arithmetic over it is left to the engine (`expression.rs`).
    let mut not_in_arith = Vec::new();
    // Every group a subset of one series (grouped by every tag key of the measurement): it
    // lives on one shard, or on the node (a series with undelivered rows), whole.
    let one_series_per_group = schema.tag_keys.iter().all(|k| plan.group_tags.contains(k));
    let mut fields: Vec<FieldUse> = Vec::new();
    let mut calls = Vec::new();
    for e in &exprs {
        let (func, field, form) = match (distinct_call(e, schema), whole_call(e, schema)) {
            _ if values_call(e, schema).is_some() => {
                let (form, field) = values_call(e, schema)?;
                (Func::Count, field, form)
            }
            (Some(field), _) => (Func::Count, field, Form::Distinct),
            (_, Some((form, field))) => (Func::Count, field, form),
            _ if stddev::call(e, schema).is_some() => {
                (Func::Count, stddev::call(e, schema)?, Form::Stddev)
            }
            _ => {
                let (func, field) = field_call(e, schema)?;
                (func, field, Form::Plain)
            }
        };
        let ty = schema.fields.iter().find(|(n, _)| n == field)?.1;
        let numeric = matches!(
            ty,
            FieldType::Float | FieldType::Integer | FieldType::UInteger
        );
        // An unsigned value (the engine types its arithmetic), or no number at all: the
        // engine's arithmetic is null there even where `x / 0` is 0.
        let counted = func == Func::Count && matches!(form, Form::Plain | Form::Distinct);
        not_in_arith.push(!counted && !matches!(ty, FieldType::Float | FieldType::Integer));
        let fits = match (form, func) {
            (Form::Mode | Form::Values, _) => true,
            // A float's sums depend on the order of addition: its rows are read.
            (Form::Stddev, _) => matches!(ty, FieldType::Integer | FieldType::UInteger),
            (Form::Median | Form::Percentile(_), _) => numeric && one_series_per_group,
            (_, Func::Count) => true,
            (_, Func::First | Func::Last) => ty != FieldType::Boolean,
            _ => numeric,
        };
        if !fits {
            return None;
        }
        let index = match fields.iter().position(|u| u.name == *field) {
            Some(i) => i,
            None => {
                fields.push(FieldUse {
                    name: field.clone(),
                    kind: kind(ty),
                    values: false,
                });
                fields.len() - 1
            }
        };
        fields[index].values |= func.reads_values() || form != Form::Plain;
        calls.push(Call {
            func,
            field: index,
            form,
        });
    }
    // A set of values does not merge in SQL: a selector's partials, computed per series
    // first, would have to.
    let picks = calls
        .iter()
        .any(|c| matches!(c.func, Func::First | Func::Last));
    if picks && calls.iter().any(Call::rust_only) {
        return None;
    }
    // A whole aggregate is one partial row per group and window: not over a zone's finer
    // grid, where a window takes several.
    if shard_window != agg.window && calls.iter().any(Call::whole) {
        return None;
    }
    // Arithmetic the engine types otherwise than `expression.rs` does.
    let mut in_arith = Vec::new();
    for o in &outputs {
        if let expression::Output::Arith(a) = o {
            a.calls(&mut in_arith);
        }
    }
    if in_arith
        .iter()
        .any(|&i| not_in_arith[i] || calls[i].form.runs())
    {
        return None;
    }
    // A `mode` or `distinct` is the reducer's column, and only it: its partial is the
    // reducer's cell.
    let reducer_columns = outputs.iter().zip(&plan.columns).all(|(o, col)| {
        let per_value = matches!(o, expression::Output::Call(i) if calls[*i].form.runs());
        per_value == col.reducer.is_some() && (!per_value || col.transform.is_none())
    });
    if !reducer_columns {
        return None;
    }
    let identity = outputs.len() == calls.len()
        && outputs
            .iter()
            .enumerate()
            .all(|(i, o)| matches!(o, expression::Output::Call(c) if *c == i));
    let point_time = agg.point_time.is_some();
    // A lone selector shows its point's time: the partials carry it for these.
    let shows_point = |c: &Call| match c.form {
        Form::Plain => matches!(c.func, Func::First | Func::Last | Func::Min | Func::Max),
        Form::Percentile(_) => true,
        Form::Distinct | Form::Median | Form::Mode | Form::Values | Form::Stddev => false,
    };
    if point_time && !matches!(calls.as_slice(), [c] if shows_point(c)) {
        return None;
    }
    let condition = strict_shard_condition(rest, schema)?;
    let series_of = tag_values(rest, schema);
    let groups = plan
        .group_tags
        .iter()
        .map(|t| (t.clone(), schema.tag_keys.contains(t)))
        .collect();
    Some(Pushdown {
        calls,
        fields,
        groups,
        condition,
        series_of,
        window: agg.window,
        shard_window,
        zone: agg.window.and(agg.zone.clone()),
        point_time,
        min: plan.range.min.unwrap_or(i64::MIN),
        max: plan.range.max.unwrap_or(i64::MAX),
        presence: agg.presence,
        start: plan.range.min.unwrap_or(0),
        by_series: false,
        outputs: (!identity).then_some(outputs),
    })
}

/// The statement's calls as the plan's columns: a call over `*` or a regex (`max(*)`,
/// `count(/re/)`) as one call per field of `schema`, which must be the fields the plan
/// expanded it to (over every measurement of the statement), named as it named them.
fn expanded_calls(
    stmt: &SelectStatement,
    plan: &Plan,
    schema: &MeasurementSchema,
) -> Option<Vec<Expr>> {
    let mut exprs = Vec::new();
    let mut names: Vec<Option<String>> = Vec::new();
    for f in &stmt.fields {
        let mut e = strip_parens(&f.expr);
        // A transformation's aggregate (the plan's column, transformed after it).
        if let Some((_, args, _)) = transform_parts(e) {
            e = strip_parens(args.first()?);
            if expand_call(e, schema).ok()?.is_some() {
                return None;
            }
        }
        match expand_call(e, schema).ok()? {
            Some((name, per_field)) => {
                for args in per_field {
                    let Expr::VarRef { name: field, .. } = &args[0] else {
                        return None;
                    };
                    names.push(Some(format!("{name}_{field}")));
                    exprs.push(Expr::Call {
                        name: name.to_string(),
                        args,
                    });
                }
            }
            None => {
                names.push(None);
                exprs.push(e.clone());
            }
        }
    }
    let same = exprs.len() == plan.columns.len()
        && names
            .iter()
            .zip(&plan.columns)
            .all(|(n, c)| n.as_ref().is_none_or(|n| *n == c.name));
    same.then_some(exprs)
}

/// The field of `count(DISTINCT field)` (`count(distinct(field))`) as written.
fn distinct_call<'e>(e: &'e Expr, schema: &MeasurementSchema) -> Option<&'e String> {
    let Expr::Call { name, args } = strip_parens(e) else {
        return None;
    };
    let [inner] = args.as_slice() else {
        return None;
    };
    let Expr::Call { name: inner, args } = strip_parens(inner) else {
        return None;
    };
    if name != "count" || inner != "distinct" {
        return None;
    }
    let [arg] = args.as_slice() else {
        return None;
    };
    plain_field(arg, schema)
}

/// `mode(field)` or `distinct(field)` as written.
fn values_call<'e>(e: &'e Expr, schema: &MeasurementSchema) -> Option<(Form, &'e String)> {
    let Expr::Call { name, args } = strip_parens(e) else {
        return None;
    };
    let form = match name.as_str() {
        "mode" => Form::Mode,
        "distinct" => Form::Values,
        _ => return None,
    };
    match args.as_slice() {
        [arg] => Some((form, plain_field(arg, schema)?)),
        _ => None,
    }
}

/// `median(field)` or `percentile(field, p)` (`p` a number) as written.
fn whole_call<'e>(e: &'e Expr, schema: &MeasurementSchema) -> Option<(Form, &'e String)> {
    let Expr::Call { name, args } = strip_parens(e) else {
        return None;
    };
    match (name.as_str(), args.as_slice()) {
        ("median", [arg]) => Some((Form::Median, plain_field(arg, schema)?)),
        ("percentile", [arg, p]) => {
            let p = match strip_parens(p) {
                Expr::Literal(Literal::Integer(i)) => *i as f64,
                Expr::Literal(Literal::Float(f)) => *f,
                _ => return None,
            };
            Some((Form::Percentile(p), plain_field(arg, schema)?))
        }
        _ => None,
    }
}

/// Zone offsets and their changes fall on whole quarter hours (ns); a shard interval that
/// divides one, the window and its offset lies in one window of the zone whatever its
/// offset (`fill::window_start_in`).
const QUARTER_HOUR: i64 = 900_000_000_000;

/// Shard intervals past which a `tz()` window reads rows instead.
const MAX_ZONE_INTERVALS: i64 = 100_000;

/// The shards' grid for window `w` in `zone` over `range`: intervals of
/// `gcd(interval, offset, 15 min)` aligned on the epoch, each inside one zone window, so
/// the node can put a shard interval's partial in its window. `None` where the range is
/// unbounded or would need too many intervals, or the zone is anywhere in the range at an
/// offset, or changes offset at an instant, off the whole quarter hour (a historical local
/// mean time).
fn zone_grain(w: Window, zone: &TimeZone, range: &super::range::TimeRange) -> Option<Window> {
    let (min, max) = (range.min?, range.max?);
    let gcd = |mut a: i64, mut b: i64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let grain = gcd(gcd(w.interval, w.offset), QUARTER_HOUR);
    let whole = zone.changes_whole_between(min, max, QUARTER_HOUR / 1_000_000_000);
    let intervals = (max / grain).saturating_sub(min / grain);
    (grain > 0 && whole && intervals <= MAX_ZONE_INTERVALS).then_some(Window {
        interval: grain,
        offset: 0,
    })
}

/// Which path a cluster read took, counted in `chingest_cluster_reads_total{path}`.
pub(crate) fn count_read(path: &'static str) {
    metrics::counter!("chingest_cluster_reads_total", "path" => path).increment(1);
}

/// How a pushed-down read applied point identity on the shards, counted in
/// `chingest_cluster_pushdown_grouping_total{grouped}`: `rewritten` (every shard grouped
/// only the series its index lists), `all` (a shard grouped every row), `again` (read again:
/// a rewrite appeared while the shards were read).
fn count_grouping(grouped: &'static str) {
    metrics::counter!("chingest_cluster_pushdown_grouping_total", "grouped" => grouped)
        .increment(1);
}

/// Registers the counters, so every label is exported before the first read.
pub(crate) fn register_metrics() {
    answer::register_metrics();
    by_series::register_metrics();
    for path in ["pushdown", "candidates", "rows", "last_point"] {
        metrics::counter!("chingest_cluster_reads_total", "path" => path).absolute(0);
    }
    for grouped in ["rewritten", "all", "again"] {
        metrics::counter!("chingest_cluster_pushdown_grouping_total", "grouped" => grouped)
            .absolute(0);
    }
    // Each shard's answer to a read of each group's last point (`cluster/src/last_points.rs`).
    for answered in ["kept", "new_parts", "loaded", "shard"] {
        metrics::counter!("chingest_cluster_last_point_reads_total", "answered" => answered)
            .absolute(0);
    }
    // Each shard's read pruned to the series of a tag's values (`cluster/src/series_of_tags.rs`).
    for outcome in ["pruned", "none", "again", "unpruned"] {
        metrics::counter!("chingest_cluster_series_pruning_total", "outcome" => outcome)
            .absolute(0);
    }
}

/// The largest `__seq` of a batch's column `name` (0 when empty).
fn max_seq(batch: &RecordBatch, name: &str) -> u64 {
    batch
        .column_by_name(name)
        .and_then(|c| {
            let c = c.as_primitive_opt::<UInt64Type>()?;
            engine::arrow::compute::max(c)
        })
        .unwrap_or(0)
}

impl Storage {
    /// The rows of `plan`'s aggregate over `schema` on the cluster, computed by the shards
    /// as partial aggregates; `None` when the statement does not decompose ([`decompose`])
    /// or a write's order cannot be packed (a `__seq` past 2³²): then it reads the rows.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn cluster_pushdown(
        &self,
        cluster: &cluster::Cluster,
        db: &str,
        schema: &MeasurementSchema,
        stmt: &SelectStatement,
        plan: &Plan,
        rest: &[Expr],
        req: &InfluxqlRequest<'_>,
    ) -> Result<Option<Vec<Row>>, InfluxqlError> {
        let Some(push) = decompose(stmt, plan, schema, rest) else {
            return Ok(None);
        };
        let unavailable = super::cluster::unavailable(format!("{:?}", schema.name));
        let too_many = |e: cluster::ClusterError| match e {
            cluster::ClusterError::TooManyRows { .. } => {
                InfluxqlError::from(engine::SqlError::LimitExceeded(e.to_string()))
            }
            other => unavailable(other.to_string()),
        };
        let columns = push.columns(plan, schema);
        let max_rows = self.row_limit();
        // Its series' rows are merged on the node.
        let pending = self.undelivered(db, schema, &columns, (push.min, push.max), req.cancel)?;
        let pending_series: BTreeSet<u64> = pending
            .as_ref()
            .and_then(|b| b.column_by_name(engine::table::SERIES_ID))
            .and_then(|c| c.as_primitive_opt::<UInt64Type>().cloned())
            .map(|c| c.values().iter().copied().collect())
            .unwrap_or_default();
        if pending_series.len() > MAX_PENDING_SERIES {
            return Ok(None);
        }
        let listed = (!pending_series.is_empty()).then(|| {
            pending_series
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        });
        let table = cluster::Cluster::shard_table(db, &schema.name);
        let partial = push.partial_sql(&table, listed.as_deref(), None);
        let kinds = push.partial_kinds();
        // The shards' partials, each shard grouping only the rows its index says may share
        // a point; a shard read again if a rewrite appeared meanwhile.
        let read_partials = || -> Result<Option<RecordBatch>, cluster::ClusterError> {
            let sql = |_: usize,
                       snapshot: Option<&cluster::IdentitySnapshot>,
                       series: Option<&[u64]>,
                       by_series: bool| {
                let split = snapshot.map(|s| s.rewritten.as_slice());
                let mut push = push.grouped_by_series(by_series);
                if let Some(ids) = series {
                    // Only the series holding the condition's tag values: the primary key
                    // skips the rest of the table.
                    push.only_series(ids);
                }
                push.partial_sql(&table, listed.as_deref(), split)
            };
            let (parts, grouped) = cluster.read_partials_by_series(
                db,
                &schema.name,
                &columns,
                push.series_of.as_ref(),
                &push.group_tags(&kinds),
                sql,
                &kinds,
                max_rows,
            )?;
            count_grouping(grouped.label());
            Ok(parts)
        };
        // The shards' partials and, for the series with undelivered rows, their shard rows
        // raw (bounded: undelivered rows are), at once.
        let (parts, node_rows) = std::thread::scope(|s| {
            let (push, columns) = (&push, &columns);
            let raw = listed.as_deref().map(|list| {
                s.spawn(move || {
                    push.listed_rows(cluster, db, &schema.name, columns, list, max_rows)
                })
            });
            let parts = read_partials();
            let raw = raw.map(|h| h.join().expect("a shard read does not panic"));
            (parts, raw)
        });
        let parts = parts.map_err(too_many)?;
        let stored = node_rows.transpose().map_err(too_many)?.flatten();
        let node =
            shard_reads::node_rows(stored, pending).map_err(|e| unavailable(e.to_string()))?;
        if !shard_reads::seqs_pack(parts.as_ref(), node.as_ref()) {
            return Ok(None);
        }
        let read = answer::Partials {
            shards: parts,
            node,
            columns: &columns,
            measurement: &schema.name,
            shard_sql: &partial,
        };
        let mut rows = self.pushdown_answer(&push, read, req)?;
        if let (Some(rows), Some(outputs)) = (rows.as_mut(), &push.outputs) {
            for row in rows.iter_mut() {
                let calls = std::mem::take(&mut row.values);
                row.values = expression::outputs(outputs, calls);
            }
        }
        if rows.is_some() {
            count_read("pushdown");
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests;
