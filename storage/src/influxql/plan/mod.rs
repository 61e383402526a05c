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
use super::rows::Row;
use super::series::Value;
use super::zone::TimeZone;

mod check;
mod columns;

use check::*;
pub(crate) use check::{check, transform_parts};
pub(crate) use columns::expand_call;
use columns::*;

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
    /// Where groups without any value of `fields` are dropped.
    pub(crate) presence: Presence,
}

/// Where an aggregate's groups without any value of its fields are dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Presence {
    /// By the engine: `HAVING count(f) + count(g) + … > 0`.
    InSql,
    /// After the engine: every column is null exactly where the group has
    /// no value of its one field, and every field has such a column, so a
    /// row without values is one whose columns are all null
    /// ([`Plan::drop_valueless`]). The `HAVING`'s counts cost the engine's
    /// analysis about a millisecond per field.
    AfterEngine,
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
    /// A condition already keeps only rows where one of `nonnull` is set (a field
    /// shown, compared with a literal: null, so false, where the field is), so the
    /// raw read need not ask again (the engine analyses each expression: ~0.8 ms for
    /// ten fields).
    pub(crate) nonnull_implied: bool,
    /// `ORDER BY time DESC`.
    pub(crate) order_desc: bool,
    /// `LIMIT` (points per series).
    pub(crate) limit: Option<u64>,
    /// `OFFSET`.
    pub(crate) offset: Option<u64>,
}

impl Plan {
    /// Drops the rows of groups without any value of the aggregate's fields
    /// when the engine left them in ([`Presence::AfterEngine`]).
    pub(crate) fn drop_valueless(&self, mut rows: Vec<Row>) -> Vec<Row> {
        if self
            .aggregate
            .as_ref()
            .is_some_and(|a| a.presence == Presence::AfterEngine)
        {
            rows.retain(|r| r.values.iter().any(|v| !matches!(v, Value::Null)));
        }
        rows
    }

    /// Whether a column is transformed after the engine (then `LIMIT` and
    /// `OFFSET` apply after the transformation, not in the engine).
    pub(crate) fn transforms(&self) -> bool {
        self.columns.iter().any(|c| c.transform.is_some())
    }

    /// Raw points, each group's latest one only (`ORDER BY time DESC LIMIT
    /// 1`), with nothing that could pick another point (a field condition, a
    /// transformation, an offset), and something shown.
    pub(crate) fn asks_last_point(&self) -> bool {
        self.aggregate.is_none()
            && self.source.is_none()
            && self.order_desc
            && self.limit == Some(1)
            && self.offset.unwrap_or(0) == 0
            && self.outer_where.is_empty()
            && !self.transforms()
            && !self.nonnull.is_empty()
    }
}

/// What the statement is, whatever it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    /// It aggregates.
    pub(crate) aggregate: bool,
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
    let nonnull_implied = filter
        .rest
        .iter()
        .any(|c| keeps_only_shown(c, &scope, &nonnull));
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
            .all(|(f, _)| nonnull.contains(&engine::quote_ident(f)));
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
        nonnull_implied,
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
/// Whether the top-level condition `c` keeps only rows where one of `nonnull` (a raw
/// read's shown values) is set: a comparison of a shown field with a literal is null,
/// which `WHERE` takes for false, where the field is.
fn keeps_only_shown(c: &Expr, scope: &Scope<'_>, nonnull: &[String]) -> bool {
    let Expr::Binary { op, lhs, rhs } = strip_parens(c) else {
        return false;
    };
    if !expr::is_comparison(*op) {
        return false;
    }
    let field = |e: &Expr| match strip_parens(e) {
        Expr::VarRef {
            name,
            data_type: None,
        } => match scope.lookup(name, None) {
            expr::Name::Field(f, _) => Some(f),
            _ => None,
        },
        _ => None,
    };
    let literal = |e: &Expr| matches!(strip_parens(e), Expr::Literal(_));
    let shown = match (field(lhs), field(rhs)) {
        (Some(f), None) if literal(rhs) => f,
        (None, Some(f)) if literal(lhs) => f,
        _ => return false,
    };
    nonnull.contains(&engine::quote_ident(shown))
}

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

#[cfg(test)]
mod tests {
    use influxql::ast::Statement;
    use ingest::FieldType;

    use super::*;

    fn presence(q: &str) -> Presence {
        planned(q).aggregate.unwrap().presence
    }

    #[test]
    fn a_raw_read_asks_for_a_shown_value_unless_a_condition_already_does() {
        let implied = |q: &str| planned(q).nonnull_implied;
        assert!(implied("SELECT a FROM cpu WHERE a > 1"));
        assert!(implied("SELECT * FROM cpu WHERE host = 'x' AND (1 <= b)"));
        assert!(implied("SELECT a, b FROM cpu WHERE b != 3 AND time > 0"));
        // Not shown, not top-level, not a literal, a cast, not a comparison.
        assert!(!implied("SELECT a FROM cpu WHERE b > 1"));
        assert!(!implied("SELECT a FROM cpu WHERE a > 1 OR host = 'x'"));
        assert!(!implied("SELECT a, b FROM cpu WHERE a > b"));
        assert!(!implied("SELECT a FROM cpu WHERE a::integer > 1"));
        assert!(!implied("SELECT a FROM cpu WHERE host = 'x'"));
        assert!(!implied("SELECT a FROM cpu WHERE a =~ /x/"));
    }

    fn planned(q: &str) -> Plan {
        let Statement::Select(stmt) = influxql::parse_statement(q).unwrap() else {
            panic!("not a SELECT: {q}");
        };
        let schema = MeasurementSchema {
            name: "cpu".into(),
            tag_keys: vec!["host".into()],
            fields: vec![
                ("a".into(), FieldType::Float),
                ("b".into(), FieldType::Integer),
            ],
        };
        let shape = check(&stmt).unwrap();
        let filter = super::super::range::split_in(stmt.condition.as_ref(), 0, None).unwrap();
        let target = Target {
            db: "db",
            schema: &schema,
            all: &schema,
            source: None,
        };
        plan(&stmt, shape, target, &filter, 0).unwrap().unwrap()
    }

    #[test]
    fn valueless_groups_are_dropped_after_the_engine_only_where_the_columns_say_so() {
        let after = [
            "SELECT max(a) FROM cpu GROUP BY time(1m)",
            "SELECT max(a), mean(b), count(a), sum(b), first(a), last(a) FROM cpu GROUP BY time(1m), host",
            "SELECT spread(a), median(b), min(a) FROM cpu",
            "SELECT mean(*) FROM cpu GROUP BY time(1m)",
            "SELECT max(a::float) FROM cpu GROUP BY time(1m)",
            // The condition filters points; the groups are of `a`'s values.
            "SELECT max(a) FROM cpu WHERE b > 0 GROUP BY time(1m)",
        ];
        for q in after {
            assert_eq!(presence(q), Presence::AfterEngine, "{q}");
        }
        let in_sql = [
            // Null where the group has a value.
            "SELECT stddev(a) FROM cpu GROUP BY time(1m)",
            "SELECT percentile(a, 5) FROM cpu GROUP BY time(1m)",
            // A cast the field cannot take reads nothing.
            "SELECT max(a::string) FROM cpu GROUP BY time(1m)",
            // Not one aggregate of one field per column.
            "SELECT max(a) + 1 FROM cpu GROUP BY time(1m)",
            "SELECT max(a), b FROM cpu",
            "SELECT count(distinct(b)) FROM cpu",
            "SELECT derivative(mean(a)) FROM cpu GROUP BY time(1m)",
            "SELECT max(a), max(c) FROM cpu GROUP BY time(1m)",
        ];
        for q in in_sql {
            assert_eq!(presence(q), Presence::InSql, "{q}");
        }
    }
}
