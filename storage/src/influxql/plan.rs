//! A `SELECT` planned against one measurement: output columns as SQL, the
//! time range, the conditions before and after the point merge, grouping,
//! and what is left for after the engine (fill, ordering, limits).
//!
//! [`check`] validates the statement the way InfluxDB does before any name is
//! resolved (so a statement over a measurement that does not exist still gets
//! InfluxDB's error); [`plan`] resolves it against one measurement.

use influxql::ast::{DataType, Dimension, Expr, Fill, Literal, SelectStatement};
use ingest::MeasurementSchema;

use super::agg;
use super::error::InfluxqlError;
use super::expr::{self, strip_parens, Scope, Typed, SRC};
use super::fill::FillColumn;
use super::post::{Scale, Transform};
use super::range::{TimeRange, Where};
use super::reduce::{self, Reducer};
use super::zone::TimeZone;

/// One output column after `time`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Column {
    /// Its name in the answer.
    pub(crate) name: String,
    /// Its SQL (over the merged points, or over a group's for aggregates).
    pub(crate) sql: String,
    /// What `fill(...)` needs to know of it.
    pub(crate) fill: FillColumn,
    /// A transformation of the SQL's value, after the engine.
    pub(crate) transform: Option<Transform>,
    /// An aggregate computed after the engine from the group's points.
    pub(crate) reducer: Option<Reducer>,
    /// This column shows extra `i` of the reducer's picked points
    /// (`top(x, 3), host`).
    pub(crate) companion: Option<usize>,
}

impl Column {
    fn raw(name: String, sql: String) -> Column {
        Column {
            name,
            sql,
            fill: FillColumn::default(),
            transform: None,
            reducer: None,
            companion: None,
        }
    }

    fn aggregate(name: String, t: Typed, count: bool) -> Column {
        Column {
            name,
            sql: t.sql,
            fill: FillColumn {
                data_type: t.kind.field_type(),
                count,
            },
            transform: None,
            reducer: None,
            companion: None,
        }
    }

    fn transformed(mut self, t: Transform) -> Column {
        self.transform = Some(t);
        self
    }
}

/// `GROUP BY time(interval, offset)`, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    /// Bucket width.
    pub(crate) interval: i64,
    /// Bucket alignment, in `[0, interval)`.
    pub(crate) offset: i64,
}

/// The aggregate part of a plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Aggregate {
    /// `GROUP BY time(...)`.
    pub(crate) window: Option<Window>,
    /// SQL of the picked point's time (a lone selector without a window).
    pub(crate) point_time: Option<String>,
    /// Fields the aggregates read: a group without any of their values has
    /// no row (InfluxDB's iterators see no point there).
    pub(crate) fields: Vec<String>,
    /// `fill(...)`.
    pub(crate) fill: Fill,
    /// `tz('Area/City')`: windows are aligned on its local time.
    pub(crate) zone: Option<TimeZone>,
}

/// A `SELECT` against one measurement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// The database.
    pub(crate) db: String,
    /// The measurement.
    pub(crate) measurement: String,
    /// The table to read instead of the measurement's (a subquery's answer).
    pub(crate) source: Option<String>,
    /// Tags the merged points carry (read, grouped or ordered by).
    pub(crate) tags: Vec<String>,
    /// Fields the merged points carry.
    pub(crate) fields: Vec<String>,
    /// Output columns after `time`.
    pub(crate) columns: Vec<Column>,
    /// Aggregation, if the statement aggregates.
    pub(crate) aggregate: Option<Aggregate>,
    /// `GROUP BY` tags, sorted: one series per tag set.
    pub(crate) group_tags: Vec<String>,
    /// Tie-break among points of the same time (raw answers): series by tags.
    pub(crate) order_tags: Vec<String>,
    /// From `WHERE time ...`.
    pub(crate) range: TimeRange,
    /// Conditions on tags only: before the merge.
    pub(crate) inner_where: Vec<String>,
    /// Conditions with fields: after the merge.
    pub(crate) outer_where: Vec<String>,
    /// Raw answers: a point is shown if one of these (SQL) is not null.
    pub(crate) nonnull: Vec<String>,
    /// `nonnull` is every field of the measurement, as it is: every point
    /// shows (a point has at least one field).
    pub(crate) shows_every_point: bool,
    /// `ORDER BY time DESC`.
    pub(crate) order_desc: bool,
    /// `LIMIT` (points per series).
    pub(crate) limit: Option<u64>,
    /// `OFFSET`.
    pub(crate) offset: Option<u64>,
}

impl Plan {
    /// Whether a column is transformed after the engine (then `LIMIT` and
    /// `OFFSET` apply after the transformation, not in the engine).
    pub(crate) fn transforms(&self) -> bool {
        self.columns.iter().any(|c| c.transform.is_some())
    }
}

/// What the statement is, whatever it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    /// It aggregates.
    pub(crate) aggregate: bool,
}

/// InfluxDB's statement checks that need no schema.
pub(crate) fn check(stmt: &SelectStatement) -> Result<Shape, InfluxqlError> {
    if stmt.into.is_some() {
        return Err(InfluxqlError::unsupported("SELECT ... INTO"));
    }
    let window = stmt
        .dimensions
        .iter()
        .any(|d| matches!(d, Dimension::Time { .. }));
    let mut calls = 0;
    let mut raw = 0;
    for f in &stmt.fields {
        if !has_variable(&f.expr) {
            return Err(InfluxqlError::invalid(
                "field must contain at least one variable",
            ));
        }
        let (c, r) = count_calls(&f.expr, window)?;
        calls += c;
        raw += r;
    }
    if calls == 0 && window {
        return Err(InfluxqlError::invalid(
            "GROUP BY requires at least one aggregate function",
        ));
    }
    if calls > 0 && raw > 0 && !lone_selector(stmt) && lone_top(stmt).is_none() {
        return Err(InfluxqlError::invalid(
            "mixing aggregate and non-aggregate queries is not supported",
        ));
    }
    Ok(Shape {
        aggregate: calls > 0,
    })
}

/// (calls, bare names) in a selected expression; unknown functions refused.
fn count_calls(e: &Expr, window: bool) -> Result<(usize, usize), InfluxqlError> {
    Ok(match e {
        Expr::Call { name, args } if agg::TRANSFORMS.contains(&name.as_str()) => {
            check_transform(name, args, window)?
        }
        Expr::Call { name, args } => {
            if agg::UNSUPPORTED.contains(&name.as_str()) {
                return Err(InfluxqlError::unsupported(format!("{name}()")));
            }
            if !agg::AGGREGATES.contains(&name.as_str()) {
                return Err(InfluxqlError::invalid(format!(
                    "undefined function {name}()"
                )));
            }
            if let Some(Expr::Call { name: inner, .. }) = args.first().map(strip_parens) {
                if !(name == "count" && inner == "distinct") {
                    return Err(InfluxqlError::unsupported(format!(
                        "{inner}() inside {name}()"
                    )));
                }
            }
            (1, 0)
        }
        Expr::Binary { lhs, rhs, .. } => {
            let (a, b) = count_calls(lhs, window)?;
            let (c, d) = count_calls(rhs, window)?;
            (a + c, b + d)
        }
        Expr::Paren(inner) => count_calls(inner, window)?,
        Expr::VarRef { name, .. } if name.eq_ignore_ascii_case("time") => (0, 0),
        Expr::VarRef { .. } | Expr::Wildcard(_) | Expr::Literal(Literal::Regex(_)) => (0, 1),
        Expr::Literal(_) => (0, 0),
    })
}

/// A transformation's arguments, InfluxDB's checks: of points without
/// `GROUP BY time`, of an aggregate with it. Counts as what it transforms.
fn check_transform(
    name: &str,
    args: &[Expr],
    window: bool,
) -> Result<(usize, usize), InfluxqlError> {
    let (min, max) = match name {
        "derivative" | "non_negative_derivative" | "elapsed" => (1, 2),
        "moving_average" => (2, 2),
        _ => (1, 1),
    };
    if args.len() < min || args.len() > max {
        let expected = if min == max {
            min.to_string()
        } else {
            format!("{min} or {max}")
        };
        return Err(InfluxqlError::invalid(format!(
            "invalid number of arguments for {name}, expected {expected}, got {}",
            args.len()
        )));
    }
    match strip_parens(&args[0]) {
        Expr::VarRef { .. } if window => Err(InfluxqlError::invalid(format!(
            "aggregate function required inside the call to {name}"
        ))),
        Expr::VarRef { .. } => Ok((0, 1)),
        inner @ Expr::Call { .. } => {
            if !window {
                return Err(InfluxqlError::invalid(format!(
                    "{name} aggregate requires a GROUP BY interval"
                )));
            }
            let (c, _) = count_calls(inner, window)?;
            Ok((c, 0))
        }
        Expr::Wildcard(_) | Expr::Literal(Literal::Regex(_)) if !window => Ok((0, 1)),
        _ => Err(InfluxqlError::unsupported(format!(
            "{name}() of this argument"
        ))),
    }
}

/// `derivative(...)`, maybe inside literal arithmetic (`derivative(...) * 8`):
/// the call, its arguments and the arithmetic, innermost first.
fn transform_parts(e: &Expr) -> Option<(&str, &[Expr], Scale)> {
    match strip_parens(e) {
        Expr::Call { name, args } if agg::TRANSFORMS.contains(&name.as_str()) => {
            Some((name.as_str(), args.as_slice(), Vec::new()))
        }
        Expr::Binary { op, lhs, rhs } if expr::is_arithmetic(*op) => {
            let number = |e: &Expr| match strip_parens(e) {
                Expr::Literal(Literal::Integer(i)) => Some(*i as f64),
                Expr::Literal(Literal::Float(f)) => Some(*f),
                _ => None,
            };
            let (inner, lit, lit_left) = match (number(lhs), number(rhs)) {
                (None, Some(r)) => (lhs, r, false),
                (Some(l), None) => (rhs, l, true),
                _ => return None,
            };
            let (name, args, mut scale) = transform_parts(inner)?;
            scale.push((*op, lit, lit_left));
            Some((name, args, scale))
        }
        _ => None,
    }
}

/// The transformation of `derivative(x, 1s)`-like arguments.
fn transform_of(name: &str, args: &[Expr], scale: Scale) -> Result<Transform, InfluxqlError> {
    let second = args.get(1).map(strip_parens);
    let unit = match second {
        Some(Expr::Literal(Literal::Duration(d))) => Some(d.0),
        _ => None,
    };
    let n = match (name, second) {
        ("moving_average", Some(Expr::Literal(Literal::Integer(n)))) if *n > 1 => *n as usize,
        ("moving_average", _) => {
            return Err(InfluxqlError::invalid(
                "moving_average window must be greater than 1",
            ))
        }
        _ => 0,
    };
    Ok(Transform {
        function: name.to_string(),
        unit,
        n,
        scale,
    })
}

/// `SELECT top(x, 3), host`: one `top`/`bottom` call, and bare names that
/// take the picked points' values.
fn lone_top(stmt: &SelectStatement) -> Option<(&str, &[Expr])> {
    let calls: Vec<&Expr> = stmt
        .fields
        .iter()
        .map(|f| strip_parens(&f.expr))
        .filter(|e| !matches!(e, Expr::VarRef { .. }))
        .collect();
    match calls.as_slice() {
        [Expr::Call { name, args }] if name == "top" || name == "bottom" => {
            Some((name.as_str(), args.as_slice()))
        }
        _ => None,
    }
}

/// Whether `e` names anything (a field, a tag, a wildcard, a call).
fn has_variable(e: &Expr) -> bool {
    match e {
        Expr::VarRef { .. } | Expr::Wildcard(_) | Expr::Call { .. } => true,
        Expr::Literal(Literal::Regex(_)) => true,
        Expr::Literal(_) => false,
        Expr::Binary { lhs, rhs, .. } => has_variable(lhs) || has_variable(rhs),
        Expr::Paren(inner) => has_variable(inner),
    }
}

/// Whether a call reads one named field (not `*` or a regex).
fn on_one_field(args: &[Expr]) -> bool {
    matches!(args.first().map(strip_parens), Some(Expr::VarRef { .. }))
}

/// `SELECT max(f), host, g`: one selector call and bare names, which take
/// the picked point's values.
fn lone_selector(stmt: &SelectStatement) -> bool {
    let calls: Vec<&Expr> = stmt
        .fields
        .iter()
        .map(|f| strip_parens(&f.expr))
        .filter(|e| !matches!(e, Expr::VarRef { .. }))
        .collect();
    matches!(calls.as_slice(), [Expr::Call { name, args }]
        if agg::is_selector(name) && name != "percentile" && on_one_field(args))
}

/// What a statement reads from one measurement.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    /// The database.
    pub(crate) db: &'a str,
    /// The measurement.
    pub(crate) schema: &'a MeasurementSchema,
    /// Every source's fields and tags together: wildcards expand over all of
    /// them, in every measurement's answer (as InfluxDB does).
    pub(crate) all: &'a MeasurementSchema,
    /// The table to read instead of the measurement's (a subquery's answer).
    pub(crate) source: Option<&'a str>,
}

/// Plans `stmt` against one measurement; `None` when it selects nothing there.
pub(crate) fn plan(
    stmt: &SelectStatement,
    shape: Shape,
    target: Target<'_>,
    filter: &Where,
    now_ns: i64,
) -> Result<Option<Plan>, InfluxqlError> {
    let (db, schema) = (target.db, target.schema);
    let group_tags = group_tags(stmt, schema)?;
    let mut scope = Scope::new(schema);
    let (columns, nonnull, aggregate) = if shape.aggregate {
        let (columns, aggregate) = aggregate_columns(stmt, &mut scope, target.all)?;
        (columns, Vec::new(), Some(aggregate))
    } else {
        let (columns, nonnull) = raw_columns(stmt, &mut scope, target.all, &group_tags)?;
        if nonnull.is_empty() {
            return Ok(None);
        }
        (columns, nonnull, None)
    };
    let mut range = filter.range;
    if aggregate.as_ref().is_some_and(|a| a.window.is_some()) && range.max.is_none() {
        // InfluxDB ends GROUP BY time queries at now() unless told otherwise.
        range.max = Some(now_ns);
    }
    if let (Some(w), Some(min)) = (aggregate.as_ref().and_then(|a| a.window), range.min) {
        let lookback = columns
            .iter()
            .filter_map(|c| c.transform.as_ref())
            .map(|t| super::transform::lookback_intervals(&t.function))
            .max()
            .unwrap_or(0);
        if lookback > 0 {
            // InfluxDB moves the inner query's start back by whole intervals
            // (not aligned: the first interval is partial) so the first
            // interval has a predecessor, and shows what comes out.
            let back = i64::try_from(lookback)
                .unwrap_or(1)
                .saturating_mul(w.interval);
            range.min = Some(min.saturating_sub(back));
        }
    }
    let (inner_where, outer_where) = conditions(&filter.rest, &mut scope)?;
    for t in &group_tags {
        if schema.tag_keys.contains(t) {
            scope.tags.insert(t.clone());
        }
    }
    let order_tags = if aggregate.is_none() {
        // Points of several series at one time: in series (tag) order.
        schema.tag_keys.clone()
    } else {
        Vec::new()
    };
    for t in &order_tags {
        scope.tags.insert(t.clone());
    }
    let shows_every_point = !schema.fields.is_empty()
        && schema
            .fields
            .iter()
            .all(|(f, _)| nonnull.contains(&flush::quote_ident(f)));
    Ok(Some(Plan {
        db: db.to_string(),
        measurement: schema.name.clone(),
        source: target.source.map(str::to_string),
        tags: scope.tags.into_iter().collect(),
        fields: scope.fields.into_iter().collect(),
        columns,
        aggregate,
        group_tags,
        order_tags,
        range,
        inner_where,
        outer_where,
        nonnull,
        shows_every_point,
        order_desc: stmt.order_desc,
        // `LIMIT 0` is no limit in InfluxQL.
        limit: stmt.limit.filter(|&l| l > 0),
        offset: stmt.offset,
    }))
}

/// The tags of `GROUP BY` (`*` and regexes expanded), sorted, each once.
fn group_tags(
    stmt: &SelectStatement,
    schema: &MeasurementSchema,
) -> Result<Vec<String>, InfluxqlError> {
    let mut out: Vec<String> = Vec::new();
    for d in &stmt.dimensions {
        match d {
            Dimension::Time { .. } => {}
            Dimension::Tag(t) => out.push(t.clone()),
            Dimension::Wildcard => out.extend(schema.tag_keys.iter().cloned()),
            Dimension::Regex(re) => {
                let re = super::schema::compile(&re.0)?;
                out.extend(schema.tag_keys.iter().filter(|k| re.is_match(k)).cloned());
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The zone of `tz('...')`, in InfluxDB's words when it does not exist.
pub(crate) fn zone(stmt: &SelectStatement) -> Result<Option<TimeZone>, InfluxqlError> {
    stmt.timezone
        .as_deref()
        .map(TimeZone::load)
        .transpose()
        .map_err(|e| InfluxqlError::invalid(e.to_string()))
}

/// The window of `GROUP BY time(...)`, if any.
pub(crate) fn window(stmt: &SelectStatement) -> Result<Option<Window>, InfluxqlError> {
    for d in &stmt.dimensions {
        if let Dimension::Time { interval, offset } = d {
            if interval.0 <= 0 {
                return Err(InfluxqlError::invalid("group by interval must be positive"));
            }
            let off = offset.map_or(0, |o| o.0).rem_euclid(interval.0);
            return Ok(Some(Window {
                interval: interval.0,
                offset: off,
            }));
        }
    }
    Ok(None)
}

/// Tag-only conjuncts go before the merge (a series' tags do not change
/// when its points merge), the others after it.
fn conditions(
    rest: &[Expr],
    scope: &mut Scope<'_>,
) -> Result<(Vec<String>, Vec<String>), InfluxqlError> {
    let (mut inner, mut outer) = (Vec::new(), Vec::new());
    for c in rest {
        let mut probe = Scope::new(scope.schema);
        probe.qualifier = SRC;
        let sql = probe.condition(c)?;
        if probe.fields.is_empty() {
            scope.tags.extend(probe.tags);
            inner.push(sql);
        } else {
            outer.push(scope.condition(c)?);
        }
    }
    Ok((inner, outer))
}

/// Raw columns (wildcards expanded) and the fields whose presence makes a
/// point part of the answer.
fn raw_columns(
    stmt: &SelectStatement,
    scope: &mut Scope<'_>,
    all: &MeasurementSchema,
    group_tags: &[String],
) -> Result<(Vec<Column>, Vec<String>), InfluxqlError> {
    let mut columns = Vec::new();
    let mut nonnull = Vec::new();
    let schema = scope.schema;
    for f in &stmt.fields {
        match strip_parens(&f.expr) {
            Expr::VarRef { name, .. } if name.eq_ignore_ascii_case("time") => {}
            Expr::Wildcard(restrict) => {
                for (name, is_field) in expand(all, *restrict, None, group_tags) {
                    let t = scope.value_ref(&name, None);
                    if is_field {
                        nonnull.push(t.sql.clone());
                    }
                    columns.push(Column::raw(name, t.sql));
                }
            }
            Expr::Literal(Literal::Regex(re)) => {
                let re = super::schema::compile(&re.0)?;
                for (name, is_field) in expand(all, None, Some(&re), group_tags) {
                    let t = scope.value_ref(&name, None);
                    if is_field {
                        nonnull.push(t.sql.clone());
                    }
                    columns.push(Column::raw(name, t.sql));
                }
            }
            e if transform_parts(e).is_some() => {
                let (name, args, scale) = transform_parts(e).expect("a transformation");
                if let Some((_, calls)) = expand_call(strip_parens(e), all)? {
                    // `elapsed(*)`: one column per field, named `elapsed_f`.
                    for call in calls {
                        let Expr::VarRef { name: field, .. } = &call[0] else {
                            continue;
                        };
                        let t = scope.value(&call[0])?;
                        if t.kind != expr::Kind::Null {
                            nonnull.push(t.sql.clone());
                        }
                        let transform = transform_of(name, &call, scale.clone())?;
                        let column = Column::raw(format!("{name}_{field}"), t.sql);
                        columns.push(column.transformed(transform));
                    }
                    continue;
                }
                let t = scope.value(&args[0])?;
                if name != "elapsed" {
                    // InfluxDB refuses to build these over strings and
                    // booleans, naming its iterator (one per pair).
                    if let Some(t) = t.kind.non_numeric_name() {
                        let iterator = match name {
                            "non_negative_derivative" => "derivative",
                            "non_negative_difference" => "difference",
                            "cumulative_sum" => "cumulative sum",
                            "moving_average" => "moving average",
                            other => other,
                        };
                        return Err(InfluxqlError::invalid(format!(
                            "unsupported {iterator} iterator type: *query.{t}InterruptIterator"
                        )));
                    }
                }
                if t.kind != expr::Kind::Null {
                    nonnull.push(t.sql.clone());
                }
                let transform = transform_of(name, args, scale)?;
                columns.push(Column::raw(column_name(f), t.sql).transformed(transform));
            }
            e => {
                let before = scope.fields.clone();
                let t = scope.value(e)?;
                let reads_field =
                    scope.fields.len() > before.len() || fields_in(e, schema).next().is_some();
                if reads_field && t.kind != expr::Kind::Null {
                    nonnull.push(t.sql.clone());
                }
                columns.push(Column::raw(column_name(f), t.sql));
            }
        }
    }
    dedup_names(&mut columns);
    Ok((columns, nonnull))
}

/// Fields named in `e`.
fn fields_in<'a>(e: &'a Expr, schema: &'a MeasurementSchema) -> impl Iterator<Item = &'a str> {
    let mut names = Vec::new();
    collect_names(e, &mut names);
    names
        .into_iter()
        .filter(move |n| schema.fields.iter().any(|(f, _)| f == n))
}

fn collect_names<'a>(e: &'a Expr, out: &mut Vec<&'a str>) {
    match e {
        Expr::VarRef { name, .. } => out.push(name),
        Expr::Binary { lhs, rhs, .. } => {
            collect_names(lhs, out);
            collect_names(rhs, out);
        }
        Expr::Paren(inner) => collect_names(inner, out),
        Expr::Call { args, .. } => args.iter().for_each(|a| collect_names(a, out)),
        _ => {}
    }
}

/// `*`, `*::field`, `*::tag` or `/re/` as (name, is a field), sorted by name;
/// `GROUP BY` tags are left out (they are the series' tags).
fn expand(
    schema: &MeasurementSchema,
    restrict: Option<DataType>,
    re: Option<&regex::Regex>,
    group_tags: &[String],
) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    if restrict != Some(DataType::Tag) {
        out.extend(schema.fields.iter().map(|(f, _)| (f.clone(), true)));
    }
    if restrict != Some(DataType::Field) {
        out.extend(
            schema
                .tag_keys
                .iter()
                .filter(|k| !group_tags.contains(k))
                .map(|k| (k.clone(), false)),
        );
    }
    out.retain(|(n, _)| re.is_none_or(|re| re.is_match(n)));
    out.sort();
    out
}

/// Aggregate columns and the aggregate part of the plan.
fn aggregate_columns(
    stmt: &SelectStatement,
    scope: &mut Scope<'_>,
    all: &MeasurementSchema,
) -> Result<(Vec<Column>, Aggregate), InfluxqlError> {
    let window = window(stmt)?;
    let selector = lone_selector(stmt).then(|| {
        stmt.fields
            .iter()
            .map(|f| strip_parens(&f.expr))
            .find_map(|e| match e {
                Expr::Call { name, args } => Some((name.as_str(), args.as_slice())),
                _ => None,
            })
    });
    let selector = selector.flatten();
    if let Some((name, args)) = lone_top(stmt) {
        let columns = top_columns(stmt, scope, name, args)?;
        return Ok((
            columns,
            Aggregate {
                window,
                point_time: None,
                fields: scope.fields.iter().cloned().collect(),
                fill: Fill::None,
                zone: zone(stmt)?,
            },
        ));
    }
    let mut columns = Vec::new();
    for f in &stmt.fields {
        let e = strip_parens(&f.expr);
        if let Some((name, args)) = expand_call(e, all)? {
            // `mean(*)`, `max(/re/)`: one column per field, named `mean_f`.
            for field in args {
                let t = agg::call(scope, name, &field)?;
                let Expr::VarRef { name: fname, .. } = &field[0] else {
                    continue;
                };
                columns.push(Column::aggregate(
                    format!("{name}_{fname}"),
                    t,
                    name == "count",
                ));
            }
            continue;
        }
        let t = match (e, selector) {
            (Expr::VarRef { name, .. }, _) if name.eq_ignore_ascii_case("time") => continue,
            (Expr::VarRef { name, data_type }, Some((sel, args))) => {
                let column = scope.value_ref(name, *data_type);
                agg::selector_aux(scope, sel, args, &column)?.unwrap_or_else(Typed::null)
            }
            (Expr::Call { name, args }, _) if name == "mode" || name == "distinct" => {
                let Some(q) = agg::field(scope, agg::field_arg(name, args)?)? else {
                    continue;
                };
                let reducer = Reducer {
                    function: name.clone(),
                    n: 0,
                    kind: q.kind,
                    extras: Vec::new(),
                    tag_args: 0,
                };
                let mut c = Column::aggregate(
                    column_name(f),
                    Typed::new(reduce::points_sql(&q, &[]), q.kind),
                    false,
                );
                c.reducer = Some(reducer);
                columns.push(c);
                continue;
            }
            _ => {
                if let Some((name, args, scale)) = transform_parts(e) {
                    let inner = strip_parens(&args[0]);
                    let t = aggregate_value(scope, inner)?;
                    let count = matches!(inner, Expr::Call { name, .. } if name == "count");
                    let transform = transform_of(name, args, scale)?;
                    columns
                        .push(Column::aggregate(column_name(f), t, count).transformed(transform));
                    continue;
                }
                aggregate_value(scope, e)?
            }
        };
        let count = matches!(e, Expr::Call { name, .. } if name == "count");
        columns.push(Column::aggregate(column_name(f), t, count));
    }
    dedup_names(&mut columns);
    let point_time = match selector {
        Some((name, args)) if window.is_none() => agg::selector_time(scope, name, args)?,
        _ => match single_selector_call(stmt) {
            Some((name, args)) if window.is_none() => agg::selector_time(scope, name, args)?,
            _ => None,
        },
    };
    Ok((
        columns,
        Aggregate {
            window,
            point_time,
            fields: scope.fields.iter().cloned().collect(),
            fill: stmt.fill.clone().unwrap_or(Fill::Null),
            zone: zone(stmt)?,
        },
    ))
}

/// `top(x, [tag, ...], n)` and the names selected with it: the reduced
/// column, then one column per tag argument and per name, taken from the
/// picked points.
fn top_columns(
    stmt: &SelectStatement,
    scope: &mut Scope<'_>,
    name: &str,
    args: &[Expr],
) -> Result<Vec<Column>, InfluxqlError> {
    if args.len() < 2 {
        return Err(InfluxqlError::invalid(format!(
            "invalid number of arguments for {name}, expected at least 2, got {}",
            args.len()
        )));
    }
    let n = match strip_parens(&args[args.len() - 1]) {
        Expr::Literal(Literal::Integer(n)) => reduce::limit_arg(name, *n)?,
        _ => {
            return Err(InfluxqlError::invalid(format!(
                "expected integer as last argument in {name}(), found {:?}",
                args[args.len() - 1]
            )))
        }
    };
    let Some(q) = agg::field(scope, strip_parens(&args[0]))? else {
        return Ok(Vec::new());
    };
    let mut extras: Vec<Typed> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for a in &args[1..args.len() - 1] {
        let Expr::VarRef { name: tag, .. } = strip_parens(a) else {
            return Err(InfluxqlError::invalid(format!(
                "only fields or tags are allowed in {name}(), found {a:?}"
            )));
        };
        extras.push(match scope.lookup(tag, None) {
            expr::Name::Tag(k) => scope.tag(k),
            _ => Typed::new("''", expr::Kind::String),
        });
        names.push(tag.clone());
    }
    let tag_args = extras.len();
    let mut top_name = name.to_string();
    for f in &stmt.fields {
        match strip_parens(&f.expr) {
            Expr::VarRef { name: v, .. } if v.eq_ignore_ascii_case("time") => {}
            Expr::VarRef { name: v, data_type } => {
                let t = match scope.lookup(v, *data_type) {
                    expr::Name::Tag(k) => scope.tag(k),
                    _ => scope.value_ref(v, *data_type),
                };
                extras.push(t);
                names.push(column_name(f));
            }
            _ => top_name = column_name(f),
        }
    }
    let reducer = Reducer {
        function: name.to_string(),
        n,
        kind: q.kind,
        extras: extras.iter().map(|e| e.kind).collect(),
        tag_args,
    };
    let sql = reduce::points_sql(&q, &extras);
    let mut top = Column::aggregate(top_name, Typed::new(sql, q.kind), false);
    top.reducer = Some(reducer);
    let mut columns = vec![top];
    for (i, n) in names.into_iter().enumerate() {
        let mut c = Column::raw(n, "NULL".into());
        c.companion = Some(i);
        columns.push(c);
    }
    dedup_names(&mut columns);
    Ok(columns)
}

/// The call of `SELECT percentile(f, 90)`: one selected selector, alone.
fn single_selector_call(stmt: &SelectStatement) -> Option<(&str, &[Expr])> {
    match stmt.fields.as_slice() {
        [f] => match strip_parens(&f.expr) {
            Expr::Call { name, args } if agg::is_selector(name) && on_one_field(args) => {
                Some((name.as_str(), args.as_slice()))
            }
            _ => None,
        },
        _ => None,
    }
}

/// A call over `*` or a regex: its name and the arguments of one call per
/// matching field.
type PerField<'e> = (&'e str, Vec<Vec<Expr>>);

/// `f(*)` or `f(/re/)` as the calls over each matching field.
fn expand_call<'e>(
    e: &'e Expr,
    schema: &MeasurementSchema,
) -> Result<Option<PerField<'e>>, InfluxqlError> {
    let Expr::Call { name, args } = e else {
        return Ok(None);
    };
    let re = match args.first().map(strip_parens) {
        Some(Expr::Wildcard(_)) => None,
        Some(Expr::Literal(Literal::Regex(r))) => Some(super::schema::compile(&r.0)?),
        _ => return Ok(None),
    };
    let numeric_only = !matches!(
        name.as_str(),
        "count" | "first" | "last" | "mode" | "distinct" | "elapsed"
    );
    let calls = schema
        .fields
        .iter()
        .filter(|(f, t)| {
            re.as_ref().is_none_or(|re| re.is_match(f)) && (!numeric_only || agg::numeric_field(*t))
        })
        .map(|(f, _)| {
            let mut a = args.clone();
            a[0] = Expr::VarRef {
                name: f.clone(),
                data_type: None,
            };
            a
        })
        .collect();
    Ok(Some((name.as_str(), calls)))
}

/// An aggregate expression: calls, literals and arithmetic between them.
fn aggregate_value(scope: &mut Scope<'_>, e: &Expr) -> Result<Typed, InfluxqlError> {
    match e {
        Expr::Paren(inner) => aggregate_value(scope, inner),
        Expr::Call { name, args } => agg::call(scope, name, args),
        Expr::Literal(l) => expr::literal(l),
        Expr::Binary { op, lhs, rhs } if expr::is_arithmetic(*op) => {
            let l = aggregate_value(scope, lhs)?;
            let r = aggregate_value(scope, rhs)?;
            Ok(expr::arithmetic(*op, &l, &r))
        }
        _ => Err(InfluxqlError::invalid(
            "mixing aggregate and non-aggregate queries is not supported",
        )),
    }
}

/// InfluxDB's name of a selected column: the alias, else the expression's.
fn column_name(f: &influxql::ast::Field) -> String {
    f.name()
}

/// Repeated names get `_1`, `_2`, ... as InfluxDB numbers them.
fn dedup_names(columns: &mut [Column]) {
    let mut seen: Vec<String> = Vec::new();
    for c in columns.iter_mut() {
        let base = c.name.clone();
        let mut name = base.clone();
        let mut n = 0;
        while seen.contains(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        seen.push(name.clone());
        c.name = name;
    }
}
