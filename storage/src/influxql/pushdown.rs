//! Aggregates pushed down to the shards of a ClickHouse cluster (issue #43): instead of every
//! raw row of the statement's range crossing the network (`cluster.rs`), each shard applies
//! point identity to its own rows — a series lives on one shard, so grouping its rows by
//! `(series_id, time)` there is exact — and answers one partial row per group and interval
//! (counts, sums, minimums, maximums, the first and last values with their times). The node
//! combines them in the embedded engine into the rows the aggregate statement of `sql.rs`
//! would have answered, so fill, time zones, `LIMIT`, `SLIMIT`, `ORDER BY time DESC` and
//! the rest of the executor work as before.
//!
//! Grouping by point costs most of a shard's time: each shard groups only the rows of the
//! series its index lists as holding a point written more than once, every other row read
//! as a point; a shard's read runs again if a rewrite landed on it meanwhile
//! ([`cluster::Cluster::read_partials`]).
//!
//! The rows the shards cannot be trusted with stay on the node: a series with acknowledged
//! rows not delivered yet is left out of the shards' partials (`NOT IN`), its shard rows are
//! read raw and merged with the undelivered ones, and the same partial statement runs over
//! them in the embedded engine (an undelivered row may rewrite a point a shard holds).
//!
//! Decomposable: `count`, `sum`, `mean`, `min`, `max`, `spread`, `first`, `last` of a field,
//! grouped by tags and `time(...)` (with an offset, any fill), conditions on tags only (those
//! [`super::cluster::shard_condition`] writes for the shards, every one of them). Anything else
//! (another function, an expression of aggregates, a field condition, a transformation, a
//! `tz()` window, a wildcard) reads the rows as before.

use std::collections::BTreeSet;

use engine::arrow::array::{AsArray, RecordBatch};
use engine::arrow::datatypes::UInt64Type;
use engine::table::ColumnKind;
use engine::{quote_ident, ArrowScan};
use influxql::ast::{Expr, SelectStatement};
use ingest::{FieldType, MeasurementSchema};

use super::cluster::strict_shard_condition;
use super::error::InfluxqlError;
use super::field_call::{field_call, Func};
use super::plan::{Plan, Presence, Window};
use super::rows::Row;
use super::sql::TIME_ALIAS;
use super::unflushed::{acked_parts, kind};
use super::InfluxqlRequest;
use crate::Storage;

/// Series with undelivered rows past which the statement reads rows instead (each is
/// listed in the shards' statements).
const MAX_PENDING_SERIES: usize = 2_000;

/// `__seq` values the partial statements pack with `__row` into one `UInt64` (the order of
/// a point's writes; 18.16 has no `UInt128`, and comparing tuples there is 4× slower).
const PACKED_SEQ_LIMIT: u64 = 1 << 32;

/// One output column: a function of one field.
#[derive(Debug, Clone, Copy)]
struct Call {
    func: Func,
    field: usize,
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
    window: Option<Window>,
    /// The answer's time is the lone selector's point's (`SELECT last(v) …`).
    point_time: bool,
    /// `[min, max]` (ns) of the rows read.
    min: i64,
    max: i64,
    /// Where groups without values are dropped.
    presence: Presence,
    /// Time of an answer without a window or a picked point.
    start: i64,
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
    if plan.source.is_some()
        || plan.transforms()
        || plan.columns.iter().any(|c| c.reducer.is_some())
        || !plan.outer_where.is_empty()
        || (agg.window.is_some() && agg.zone.is_some())
        || stmt.fields.len() != plan.columns.len()
        || plan.range.is_empty()
    {
        return None;
    }
    let mut fields: Vec<FieldUse> = Vec::new();
    let mut calls = Vec::new();
    for f in &stmt.fields {
        let (func, field) = field_call(&f.expr, schema)?;
        let ty = schema.fields.iter().find(|(n, _)| n == field)?.1;
        let numeric = matches!(
            ty,
            FieldType::Float | FieldType::Integer | FieldType::UInteger
        );
        let fits = match func {
            Func::Count => true,
            Func::First | Func::Last => ty != FieldType::Boolean,
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
        fields[index].values |= func.reads_values();
        calls.push(Call { func, field: index });
    }
    let point_time = agg.point_time.is_some();
    if point_time && !matches!(calls.as_slice(), [c] if matches!(c.func, Func::First | Func::Last))
    {
        return None;
    }
    let condition = strict_shard_condition(rest, schema)?;
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
        window: agg.window,
        point_time,
        min: plan.range.min.unwrap_or(i64::MIN),
        max: plan.range.max.unwrap_or(i64::MAX),
        presence: agg.presence,
        start: plan.range.min.unwrap_or(0),
    })
}

/// The SQL type of a partial column of `kind`: a shard's (`cluster::schema::shard_type`),
/// which the embedded engine reads the same way.
fn sql_type(kind: ColumnKind) -> &'static str {
    match kind {
        ColumnKind::Tag => "String",
        ColumnKind::Float => "Nullable(Float64)",
        ColumnKind::Integer => "Nullable(Int64)",
        ColumnKind::Unsigned => "Nullable(UInt64)",
        ColumnKind::String => "Nullable(String)",
        ColumnKind::Boolean => "Nullable(UInt8)",
    }
}

fn sum_kind(k: ColumnKind) -> ColumnKind {
    match k {
        ColumnKind::Integer | ColumnKind::Unsigned => k,
        _ => ColumnKind::Float,
    }
}

/// An `Int64` literal every supported server reads as signed (18.16 computes `Int64 %
/// UInt64` unsigned).
fn int(v: i64) -> String {
    format!("toInt64({v})")
}

/// One column of a partial row after its group keys.
struct PartialColumn {
    name: String,
    kind: ColumnKind,
    /// Its SQL over the points of a group (`__t`, `__sid`, `__v<j>`, `__key`).
    points: String,
    /// Its SQL merging partial rows of a group (over the partial columns' names).
    merge: String,
}

impl Pushdown {
    /// Whether a call picks a point (`first`, `last`): then the shards compute each series'
    /// partial first (its point at the picked time), and the group's is picked among them
    /// ([`pick_key`]).
    fn picks(&self) -> bool {
        self.calls
            .iter()
            .any(|c| matches!(c.func, Func::First | Func::Last))
    }

    /// The group keys of a partial row: the interval's start (`b`), then the `GROUP BY`
    /// tags (`k<g>`), with their SQL over the points.
    fn keys(&self) -> Vec<(String, String)> {
        let bucket = match self.window {
            Some(w) => {
                let (iv, off) = (int(w.interval), int(w.offset));
                format!("(__t - (((__t - {off}) % {iv}) + {iv}) % {iv})")
            }
            None => int(0),
        };
        let mut out = vec![("b".to_string(), bucket)];
        for (g, (_, known)) in self.groups.iter().enumerate() {
            let sql = if *known {
                format!("__k{g}")
            } else {
                "''".to_string()
            };
            out.push((format!("k{g}"), sql));
        }
        out
    }

    /// The columns of a partial row after its keys, then `ms` (the largest `__seq` read).
    fn partial_columns(&self) -> Vec<PartialColumn> {
        let mut out = Vec::new();
        let mut col = |name: String, kind, points: String, merge: String| {
            out.push(PartialColumn {
                name,
                kind,
                points,
                merge,
            })
        };
        for (j, f) in self.fields.iter().enumerate() {
            // A point has a value of the field: its latest value is not null, or (only
            // counted) one of its rows has one.
            let points = if f.values {
                format!("count(__v{j})")
            } else {
                format!("sum(__v{j})")
            };
            col(
                format!("n{j}"),
                ColumnKind::Unsigned,
                points,
                format!("sum(n{j})"),
            );
        }
        for (i, c) in self.calls.iter().enumerate() {
            let f = &self.fields[c.field];
            let v = format!("__v{}", c.field);
            let n = format!("n{}", c.field);
            match c.func {
                Func::Count => {}
                Func::Sum => col(
                    format!("s{i}"),
                    sum_kind(f.kind),
                    format!("sum({v})"),
                    format!("sum(s{i})"),
                ),
                Func::Mean => col(
                    format!("s{i}"),
                    ColumnKind::Float,
                    format!("sum(toFloat64({v}))"),
                    format!("sum(s{i})"),
                ),
                Func::Min | Func::Max | Func::Spread => {
                    if c.func != Func::Max {
                        col(
                            format!("m{i}"),
                            f.kind,
                            format!("min({v})"),
                            format!("min(m{i})"),
                        );
                    }
                    if c.func != Func::Min {
                        col(
                            format!("x{i}"),
                            f.kind,
                            format!("max({v})"),
                            format!("max(x{i})"),
                        );
                    }
                }
                Func::First | Func::Last => {
                    let (arg, pick) = if c.func == Func::First {
                        ("argMinIf", "minIf")
                    } else {
                        ("argMaxIf", "maxIf")
                    };
                    let key = pick_key(c.func, &format!("t{i}"), &format!("v{i}"));
                    col(
                        format!("v{i}"),
                        f.kind,
                        format!("{arg}({v}, __t, isNotNull({v}))"),
                        format!("argMaxIf(v{i}, {key}, {n} > 0)"),
                    );
                    col(
                        format!("t{i}"),
                        ColumnKind::Integer,
                        format!("{pick}(__t, isNotNull({v}))"),
                        format!("{pick}(t{i}, {n} > 0)"),
                    );
                    col(
                        format!("y{i}"),
                        ColumnKind::Unsigned,
                        "any(__sid)".to_string(),
                        format!("argMaxIf(y{i}, {key}, {n} > 0)"),
                    );
                }
            }
        }
        col(
            "ms".to_string(),
            ColumnKind::Unsigned,
            "__ms".to_string(),
            "max(ms)".to_string(),
        );
        out
    }
}

/// The order `argMax` picks a `first` or `last` partial by: its time `t` (the earliest for
/// `first`), then among series at that time the larger value `v`, the rule of the embedded
/// path (`agg::selector_order`; InfluxDB 1.x has none: its merge order decides).
fn pick_key(func: Func, t: &str, v: &str) -> String {
    if func == Func::First {
        format!("(-{t}, assumeNotNull({v}))")
    } else {
        format!("({t}, assumeNotNull({v}))")
    }
}

impl Pushdown {
    /// The points of `source` the partial statement aggregates, one row each: `__sid`,
    /// `__t`, the group tags `__k<g>`, each field's latest value `__v<j>` (or, where only
    /// counted, whether one of its rows has one). Point identity groups the rows by
    /// `(series_id, time)`; with `split`, only the rows of its series (the rest are points
    /// as they are: no other row shares their time), the two sets read as one.
    fn points_sql(&self, source: &str, exclude: Option<&str>, split: Option<&[u64]>) -> String {
        let q = |c: &str| format!("__src.{}", quote_ident(c));
        // A point's write order: `__seq`, then `__row`, packed (`PACKED_SEQ_LIMIT`).
        let order = format!(
            "bitOr(bitShiftLeft({}, 32), toUInt64({}))",
            q("__seq"),
            q("__row")
        );
        let mut conds = Vec::new();
        if self.min > i64::MIN {
            conds.push(format!("{} >= {}", q("time"), int(self.min)));
        }
        if self.max < i64::MAX {
            conds.push(format!("{} <= {}", q("time"), int(self.max)));
        }
        if let Some(c) = &self.condition {
            conds.push(format!("({c})"));
        }
        if let Some(e) = exclude {
            conds.push(format!("{} NOT IN ({e})", q("series_id")));
        }
        // Both halves' values have the field's type (a `UNION ALL` of 18.16 does not cast).
        let typed = |sql: String, f: &FieldUse| match split {
            Some(_) if f.values => format!("CAST({sql} AS {})", sql_type(f.kind)),
            _ => sql,
        };
        let branch = |grouped: bool, only: Option<String>| {
            let mut points = format!("SELECT {} AS __sid, {} AS __t", q("series_id"), q("time"));
            for (g, (tag, known)) in self.groups.iter().enumerate() {
                if *known {
                    let t = q(tag);
                    let t = if grouped { format!("any({t})") } else { t };
                    points.push_str(&format!(", {t} AS __k{g}"));
                }
            }
            for (j, f) in self.fields.iter().enumerate() {
                let c = q(&f.name);
                let v = match (f.values, grouped) {
                    (true, true) => format!("argMaxIf({c}, {order}, isNotNull({c}))"),
                    (true, false) => c,
                    (false, true) => format!("max(isNotNull({c}))"),
                    (false, false) => format!("isNotNull({c})"),
                };
                points.push_str(&format!(", {} AS __v{j}", typed(v, f)));
            }
            let mut conds = conds.clone();
            conds.extend(only);
            points.push_str(&format!(" FROM {source} AS __src"));
            if !conds.is_empty() {
                points.push_str(&format!(" WHERE {}", conds.join(" AND ")));
            }
            if grouped {
                points.push_str(&format!(" GROUP BY {}, {}", q("series_id"), q("time")));
            }
            points
        };
        let Some(rewritten) = split else {
            return branch(true, None);
        };
        if rewritten.is_empty() {
            return branch(false, None);
        }
        let list: Vec<String> = rewritten.iter().map(u64::to_string).collect();
        let list = list.join(",");
        format!(
            "{} UNION ALL {}",
            branch(false, Some(format!("{} NOT IN ({list})", q("series_id")))),
            branch(true, Some(format!("{} IN ({list})", q("series_id"))))
        )
    }

    /// The partial statement over `source` (a table or subquery with the shard table's
    /// columns: `time` as `Int64` ns, `series_id`, `__seq`, `__row`, tags, fields), its
    /// columns named `__p<i>`; the series of `exclude` (a list) left out. `split`: only
    /// these series may hold a point written more than once (a shard's
    /// [`cluster::IdentitySnapshot`]): every other row is read as a point, not grouped
    /// (`None`: every row grouped).
    fn partial_sql(&self, source: &str, exclude: Option<&str>, split: Option<&[u64]>) -> String {
        self.partial_sql_with(source, exclude, split, true)
    }

    /// [`Pushdown::partial_sql`]; `seq`: column `ms` is the source's largest `__seq` (a
    /// scalar subquery reading it again; an Arrow scan, read once, is checked before).
    fn partial_sql_with(
        &self,
        source: &str,
        exclude: Option<&str>,
        split: Option<&[u64]>,
        seq: bool,
    ) -> String {
        let points = self.points_sql(source, exclude, split);
        let ms = if seq {
            format!("(SELECT max(`__seq`) FROM {source})")
        } else {
            "toUInt64(0)".to_string()
        };
        let keys = self.keys();
        let columns = self.partial_columns();
        let values = |merge: bool| -> Vec<String> {
            columns
                .iter()
                .map(|c| match (c.points.as_str(), merge) {
                    ("__ms", false) => ms.clone(),
                    (_, false) => c.points.clone(),
                    (_, true) => c.merge.clone(),
                })
                .collect()
        };
        let numbered = |sql: Vec<String>| -> Vec<String> {
            sql.into_iter()
                .enumerate()
                .map(|(i, s)| format!("{s} AS __p{i}"))
                .collect()
        };
        let key_names: Vec<String> = (0..keys.len()).map(|i| format!("__p{i}")).collect();
        if !self.picks() {
            let list: Vec<String> = keys
                .iter()
                .map(|(_, sql)| sql.clone())
                .chain(values(false))
                .collect();
            return format!(
                "SELECT {} FROM ({points}) GROUP BY {}",
                numbered(list).join(", "),
                key_names.join(", ")
            );
        }
        // Each series' partial first (in its interval), named as the partial columns; then
        // the group's.
        let mut series: Vec<String> = vec![format!("{} AS b", keys[0].1)];
        for (name, sql) in &keys[1..] {
            let sql = if sql.starts_with("__k") {
                format!("any({sql})")
            } else {
                sql.clone()
            };
            series.push(format!("{sql} AS {name}"));
        }
        series.extend(
            columns
                .iter()
                .zip(values(false))
                .map(|(c, sql)| format!("{sql} AS {}", c.name)),
        );
        let series = format!(
            "SELECT {} FROM ({points}) GROUP BY __sid, b",
            series.join(", ")
        );
        let list: Vec<String> = keys
            .iter()
            .map(|(name, _)| name.clone())
            .chain(values(true))
            .collect();
        format!(
            "SELECT {} FROM ({series}) GROUP BY {}",
            numbered(list).join(", "),
            key_names.join(", ")
        )
    }

    /// The columns of a partial row as [`cluster::Cluster::read_partials`] reads them.
    fn partial_kinds(&self) -> Vec<(String, ColumnKind)> {
        let keys = self.keys().into_iter().enumerate().map(|(i, (n, _))| {
            let kind = if i == 0 {
                ColumnKind::Integer
            } else {
                ColumnKind::Tag
            };
            (n, kind)
        });
        keys.chain(self.partial_columns().into_iter().map(|c| (c.name, c.kind)))
            .collect()
    }

    /// The statement combining the partial rows of `parts` (a table expression with the
    /// columns of [`Pushdown::partial_kinds`]) into the answer `sql.rs`'s aggregate gives.
    fn combine_sql(&self, parts: &str) -> String {
        let n = |c: &Call| format!("n{}", c.field);
        let time = if self.window.is_some() {
            "any(b)".to_string()
        } else if self.point_time {
            let c = &self.calls[0];
            let pick = if c.func == Func::First {
                "minIf"
            } else {
                "maxIf"
            };
            format!(
                "if(sum({n}) = 0, NULL, {pick}(assumeNotNull(t0), {n} > 0))",
                n = n(c)
            )
        } else {
            int(self.start)
        };
        let mut sql = format!("SELECT {time} AS {TIME_ALIAS}");
        for g in 0..self.groups.len() {
            sql.push_str(&format!(", k{g} AS __iq_g{g}"));
        }
        for (i, c) in self.calls.iter().enumerate() {
            let n = n(c);
            let col = match c.func {
                Func::Count => format!("if(sum({n}) = 0, NULL, toInt64(sum({n})))"),
                Func::Sum => format!("sum(s{i})"),
                Func::Mean => format!("if(sum({n}) = 0, NULL, sum(s{i}) / sum({n}))"),
                Func::Min => format!("min(m{i})"),
                Func::Max => format!("max(x{i})"),
                Func::Spread => format!("max(x{i}) - min(m{i})"),
                Func::First | Func::Last => format!(
                    "argMaxIf(v{i}, {}, {n} > 0)",
                    pick_key(c.func, &format!("assumeNotNull(t{i})"), &format!("v{i}"))
                ),
            };
            sql.push_str(&format!(", {col} AS __iq_c{i}"));
        }
        sql.push_str(&format!(" FROM {parts} AS __parts"));
        let groups: Vec<String> = (0..self.groups.len())
            .map(|g| format!("__iq_g{g}"))
            .collect();
        let mut by = groups.clone();
        if self.window.is_some() {
            by.insert(0, "b".to_string());
        }
        if !by.is_empty() {
            sql.push_str(&format!(" GROUP BY {}", by.join(", ")));
        }
        if self.presence == Presence::InSql {
            let present: Vec<String> = (0..self.fields.len())
                .map(|j| format!("sum(n{j})"))
                .collect();
            sql.push_str(&format!(" HAVING {} > 0", present.join(" + ")));
        }
        let mut order = groups;
        order.push(TIME_ALIAS.to_string());
        sql.push_str(&format!(" ORDER BY {}", order.join(", ")));
        sql
    }

    /// The shard columns the statements read (made on a shard that lacks them).
    fn columns(&self, plan: &Plan, schema: &MeasurementSchema) -> Vec<(String, ColumnKind)> {
        let tags = schema
            .tag_keys
            .iter()
            .filter(|t| plan.tags.contains(t) || self.groups.iter().any(|(g, _)| g == *t))
            .map(|t| (t.clone(), ColumnKind::Tag));
        tags.chain(self.fields.iter().map(|f| (f.name.clone(), f.kind)))
            .collect()
    }
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
    for path in ["pushdown", "rows"] {
        metrics::counter!("chingest_cluster_reads_total", "path" => path).absolute(0);
    }
    for grouped in ["rewritten", "all", "again"] {
        metrics::counter!("chingest_cluster_pushdown_grouping_total", "grouped" => grouped)
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
        let engine = self
            .engine()
            .map_err(|_| engine::SqlError::Unavailable("the server is shutting down".into()))?;
        let unavailable = super::cluster::unavailable(format!("{:?}", schema.name));
        let too_many = |e: cluster::ClusterError| match e {
            cluster::ClusterError::TooManyRows { .. } => {
                InfluxqlError::from(engine::SqlError::LimitExceeded(e.to_string()))
            }
            other => unavailable(other.to_string()),
        };
        let columns = push.columns(plan, schema);
        let max_rows = self.row_limit();
        // Acknowledged before the shards are read: a row delivered meanwhile is in both,
        // and reads as one point (its series' rows are merged on the node).
        let acked = self.wal.last_seq();
        let pending = acked_parts(
            self.reads.unflushed(),
            db,
            &schema.name,
            push.min,
            push.max,
            acked,
            max_rows,
            req.cancel,
        )?
        .map(|parts| flush::unflushed::rows_in(&parts, &columns, push.min, push.max))
        .transpose()
        .map_err(|e| unavailable(e.to_string()))?
        .flatten();
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
            let sql = |_: usize, snapshot: Option<&cluster::IdentitySnapshot>| {
                let split = snapshot.map(|s| s.rewritten.as_slice());
                push.partial_sql(&table, listed.as_deref(), split)
            };
            let (parts, grouped) =
                cluster.read_partials(db, &schema.name, &columns, sql, &kinds, max_rows)?;
            count_grouping(grouped.label());
            Ok(parts)
        };
        // The shards' partials and, for the series with undelivered rows, their shard rows
        // raw (bounded: undelivered rows are), at once.
        let (parts, node_rows) = std::thread::scope(|s| {
            let (push, columns) = (&push, &columns);
            let raw = listed.as_deref().map(|list| {
                s.spawn(move || {
                    let mut cond = format!("`series_id` IN ({list})");
                    if let Some(c) = &push.condition {
                        cond = format!("{cond} AND ({c})");
                    }
                    cluster.read_rows(
                        db,
                        &schema.name,
                        columns,
                        cluster::RowSelection {
                            min: push.min,
                            max: push.max,
                            condition: Some(&cond),
                            last_per_series: false,
                            pointwise: None,
                            whole_series: &[],
                        },
                        max_rows,
                    )
                })
            });
            let parts = read_partials();
            let raw = raw.map(|h| h.join().expect("a shard read does not panic"));
            (parts, raw)
        });
        let parts = parts.map_err(too_many)?;
        let stored = node_rows.transpose().map_err(too_many)?.flatten();
        let node = match (stored, pending) {
            (None, None) => None,
            (Some(b), None) | (None, Some(b)) => Some(b),
            (Some(a), Some(b)) => Some(
                engine::arrow::compute::concat_batches(&a.schema(), &[a.clone(), b])
                    .map_err(|e| unavailable(e.to_string()))?,
            ),
        };
        let packs = parts.as_ref().map_or(0, |p| max_seq(p, "ms")) < PACKED_SEQ_LIMIT
            && node.as_ref().map_or(0, |n| max_seq(n, engine::table::SEQ)) < PACKED_SEQ_LIMIT;
        if !packs {
            return Ok(None);
        }
        count_read("pushdown");
        let mut branches = Vec::new();
        let mut scans: Vec<ArrowScan> = Vec::new();
        let register = |scans: &mut Vec<ArrowScan>, batch: RecordBatch| {
            let scan = engine
                .arrow_scan(batch)
                .and_then(|s| s.register(1).map(|()| s))
                .map_err(|e| unavailable(e.to_string()))?;
            let sql = scan.table_sql(0);
            scans.push(scan);
            Ok::<_, InfluxqlError>(sql)
        };
        if let Some(p) = parts {
            let names: Vec<String> = kinds.iter().map(|(n, _)| quote_ident(n)).collect();
            branches.push(format!(
                "SELECT {} FROM {}",
                names.join(", "),
                register(&mut scans, p)?
            ));
        }
        if let Some(n) = node {
            let scan = register(&mut scans, n)?;
            let mut cols = vec![
                "toUnixTimestamp64Nano(__n.`time`) AS `time`".to_string(),
                "__n.`series_id` AS `series_id`".to_string(),
                "__n.`__seq` AS `__seq`".to_string(),
                "__n.`__row` AS `__row`".to_string(),
            ];
            cols.extend(
                columns
                    .iter()
                    .map(|(c, _)| format!("__n.{q} AS {q}", q = quote_ident(c))),
            );
            let source = format!("(SELECT {} FROM {scan} AS __n)", cols.join(", "));
            let partial = push.partial_sql_with(&source, None, None, false);
            let list: Vec<String> = kinds
                .iter()
                .enumerate()
                .map(|(i, (n, k))| {
                    format!("CAST(__p{i} AS {}) AS {}", sql_type(*k), quote_ident(n))
                })
                .collect();
            branches.push(format!("SELECT {} FROM ({partial})", list.join(", ")));
        }
        if branches.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let sql = push.combine_sql(&format!("({})", branches.join(" UNION ALL ")));
        tracing::debug!(measurement = %schema.name, "InfluxQL pushed down: {partial} | {sql}");
        let rows = self.engine_rows(&sql, req, plan.group_tags.len(), true, &schema.name)?;
        drop(scans);
        Ok(Some(rows))
    }
}

#[cfg(test)]
mod tests {
    use influxql::ast::Statement;

    use super::*;
    use crate::influxql::plan;

    fn schema() -> MeasurementSchema {
        MeasurementSchema {
            name: "cpu".into(),
            tag_keys: vec!["dc".into(), "host".into()],
            fields: vec![
                ("v".into(), FieldType::Float),
                ("n".into(), FieldType::Integer),
                ("s".into(), FieldType::String),
                ("b".into(), FieldType::Boolean),
            ],
        }
    }

    fn pushed(q: &str) -> Option<Pushdown> {
        let Statement::Select(stmt) = influxql::parse_statement(q).unwrap() else {
            panic!("not a SELECT: {q}");
        };
        let schema = schema();
        let shape = plan::check(&stmt).unwrap();
        let filter = super::super::range::split_in(stmt.condition.as_ref(), 0, None).unwrap();
        let target = plan::Target {
            db: "db",
            schema: &schema,
            all: &schema,
            source: None,
        };
        let p = plan::plan(&stmt, shape, target, &filter, 0)
            .unwrap()
            .unwrap();
        decompose(&stmt, &p, &schema, &filter.rest)
    }

    #[test]
    fn decomposable_aggregates_are_pushed_and_the_others_are_not() {
        for q in [
            "SELECT count(v), count(n) FROM cpu",
            "SELECT sum(v), min(v), max(n), first(v), mean(n) FROM cpu GROUP BY dc",
            "SELECT spread(v), last(s) FROM cpu WHERE time > 0 AND time < 100 GROUP BY time(10ns, 3ns), host fill(0)",
            "SELECT last(v) FROM cpu WHERE host = 'a' OR dc =~ /x/ GROUP BY host",
            "SELECT count(b) AS c FROM cpu GROUP BY *",
        ] {
            assert!(pushed(q).is_some(), "{q}");
        }
        for q in [
            "SELECT median(v) FROM cpu",
            "SELECT count(v) FROM cpu WHERE v > 1",
            "SELECT sum(v) + 1 FROM cpu",
            "SELECT mean(*) FROM cpu",
            "SELECT max(v) FROM cpu",
            "SELECT derivative(mean(v)) FROM cpu WHERE time > 0 AND time < 100 GROUP BY time(10ns)",
            "SELECT max(b) FROM cpu",
            "SELECT count(v::integer) FROM cpu",
            "SELECT count(v) FROM cpu WHERE time > 0 AND time < 100 GROUP BY time(10ns) tz('Europe/Paris')",
            "SELECT count(v) FROM cpu WHERE dc = 'a' OR v > 1",
            "SELECT count(v) FROM cpu WHERE nosuch = 'a'",
        ] {
            assert!(pushed(q).is_none(), "{q}");
        }
    }

    #[test]
    fn partials_read_points_and_the_combination_has_the_aggregate_statement_columns() {
        let p = pushed(
            "SELECT count(v), mean(n), max(v) FROM cpu WHERE dc = 'x' AND time >= 5 AND time <= 99 \
             GROUP BY time(10ns, 3ns), host, nosuch",
        )
        .unwrap();
        let sql = p.partial_sql("`__shard_db`.`cpu`", Some("7,8"), None);
        assert!(sql.contains("argMaxIf(__src.`v`, bitOr(bitShiftLeft(__src.`__seq`, 32), toUInt64(__src.`__row`)), isNotNull(__src.`v`)) AS __v0"), "{sql}");
        assert!(sql.contains("WHERE __src.`time` >= toInt64(5) AND __src.`time` <= toInt64(99) AND (`dc` = 'x') AND __src.`series_id` NOT IN (7,8) GROUP BY __src.`series_id`, __src.`time`"), "{sql}");
        assert!(
            sql.contains(
                "(__t - (((__t - toInt64(3)) % toInt64(10)) + toInt64(10)) % toInt64(10)) AS __p0"
            ),
            "{sql}"
        );
        assert!(sql.ends_with("GROUP BY __p0, __p1, __p2"), "{sql}");
        let combine = p.combine_sql("P");
        assert!(combine.starts_with("SELECT any(b) AS __iq_t, k0 AS __iq_g0, k1 AS __iq_g1, if(sum(n0) = 0, NULL, toInt64(sum(n0))) AS __iq_c0"), "{combine}");
        assert!(
            combine.ends_with("GROUP BY b, __iq_g0, __iq_g1 ORDER BY __iq_g0, __iq_g1, __iq_t"),
            "{combine}"
        );
        // A selector: each series' partial first, then the group's by time and value.
        let p = pushed("SELECT first(v), last(s) FROM cpu GROUP BY dc").unwrap();
        let sql = p.partial_sql("t", None, None);
        assert!(sql.contains("any(__sid) AS y0"), "{sql}");
        assert!(
            sql.contains("argMaxIf(v0, (-t0, assumeNotNull(v0)), n0 > 0)")
                && sql.contains("argMaxIf(v1, (t1, assumeNotNull(v1)), n1 > 0)"),
            "{sql}"
        );
        assert!(
            sql.contains(" GROUP BY __sid, b) GROUP BY __p0, __p1"),
            "{sql}"
        );
    }

    #[test]
    fn with_an_index_only_the_rewritten_series_are_grouped() {
        let p = pushed("SELECT count(v), last(v) FROM cpu GROUP BY host").unwrap();
        let whole = p.partial_sql("t", None, None);
        assert_eq!(
            whole
                .matches("GROUP BY __src.`series_id`, __src.`time`")
                .count(),
            1
        );
        // No rewrite: no row grouped by its point.
        let none = p.partial_sql("t", Some("3"), Some(&[]));
        assert!(!none.contains("GROUP BY __src.`series_id`"), "{none}");
        assert!(none.contains("SELECT __src.`series_id` AS __sid, __src.`time` AS __t, __src.`host` AS __k0, CAST(__src.`v` AS Nullable(Float64)) AS __v0 FROM t AS __src WHERE __src.`series_id` NOT IN (3)"), "{none}");
        // Two: their rows grouped, every other row as it is, both as one set of points.
        let some = p.partial_sql("t", None, Some(&[5, 9]));
        assert!(some.contains("FROM t AS __src WHERE __src.`series_id` NOT IN (5,9) UNION ALL SELECT __src.`series_id` AS __sid, __src.`time` AS __t, any(__src.`host`) AS __k0, CAST(argMaxIf(__src.`v`, "), "{some}");
        assert!(
            some.contains(
                "WHERE __src.`series_id` IN (5,9) GROUP BY __src.`series_id`, __src.`time`"
            ),
            "{some}"
        );
    }
}
