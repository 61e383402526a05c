//! InfluxQL aggregates and selectors as engine aggregate functions, over the
//! merged points of one group (a `GROUP BY time` bucket and tag set).
//!
//! Every function is null when the group has no value of its field (the
//! engine's bare `sum`, `argMin` and friends answer 0 there). Selectors pick
//! the point InfluxDB picks: `max`/`min` the earliest point of the extreme
//! value, `first`/`last` the earliest/latest point, `percentile` the
//! nearest-rank point.

use influxql::ast::{Expr, Literal};
use ingest::FieldType;

use super::error::InfluxqlError;
use super::expr::{strip_parens, Kind, Name, Scope, Typed};

/// A point's time in ns, as the aggregates see it.
pub(crate) const T: &str = "toUnixTimestamp64Nano(`time`)";

/// Functions that aggregate points into one value per group.
pub(crate) const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "mean",
    "min",
    "max",
    "first",
    "last",
    "spread",
    "stddev",
    "median",
    "percentile",
    "mode",
    "distinct",
    "top",
    "bottom",
];

/// Functions InfluxDB has that chingest does not run (yet): named in the error.
pub(crate) const UNSUPPORTED: &[&str] = &[
    "sample",
    "integral",
    "holt_winters",
    "holt_winters_with_fit",
    "chande_momentum_oscillator",
    "exponential_moving_average",
    "double_exponential_moving_average",
    "triple_exponential_moving_average",
    "relative_strength_index",
    "triple_exponential_derivative",
    "kaufmans_efficiency_ratio",
    "kaufmans_adaptive_moving_average",
    "count_hll",
];

/// Transformations of points or of aggregates, computed after the engine.
pub(crate) const TRANSFORMS: &[&str] = &[
    "derivative",
    "non_negative_derivative",
    "difference",
    "non_negative_difference",
    "moving_average",
    "cumulative_sum",
    "elapsed",
];

/// Aggregates of numbers only.
const NUMERIC_ONLY: &[&str] = &["sum", "mean", "spread", "stddev", "median", "percentile"];

/// Aggregates whose value is null exactly where the group has no value of
/// their field (so a row whose every column is one of them has values iff
/// one of its columns is not null: `Presence`).
pub(crate) const NULL_WHERE_VALUELESS: &[&str] = &[
    "count", "sum", "mean", "min", "max", "first", "last", "spread", "median",
];

/// Whether `name` picks one point (so its time can be the point's).
pub(crate) fn is_selector(name: &str) -> bool {
    matches!(name, "min" | "max" | "first" | "last" | "percentile")
}

/// How a selector orders points: the engine function and its key.
///
/// `first` and `last` of points that share the chosen time (several series
/// without `GROUP BY`) take the largest value, as InfluxDB's reducers do
/// (`p.Time == prev.Time && p.Value > prev.Value`); a time alone would leave
/// the choice to the order the engine (or a cluster's shards) read the rows
/// in, so one set of points could answer differently from run to run.
fn selector_order(name: &str, q: &str) -> Option<(&'static str, String)> {
    Some(match name {
        "max" => ("argMaxIf", format!("({q}, -{T})")),
        "min" => ("argMinIf", format!("({q}, {T})")),
        "first" => ("argMaxIf", format!("(-{T}, {q})")),
        "last" => ("argMaxIf", format!("({T}, {q})")),
        _ => return None,
    })
}

/// The field an aggregate reads (`mean(f)`, `count(distinct(f))`'s inner).
pub(crate) fn field_arg<'e>(name: &str, args: &'e [Expr]) -> Result<&'e Expr, InfluxqlError> {
    let want = match name {
        "percentile" => 2,
        _ => 1,
    };
    if args.len() != want {
        return Err(InfluxqlError::invalid(format!(
            "invalid number of arguments for {name}, expected {want}, got {}",
            args.len()
        )));
    }
    Ok(strip_parens(&args[0]))
}

/// `name(args)` as SQL over the group.
pub(crate) fn call(
    scope: &mut Scope<'_>,
    name: &str,
    args: &[Expr],
) -> Result<Typed, InfluxqlError> {
    let arg = field_arg(name, args)?;
    if name == "count" {
        if let Expr::Call { name: inner, args } = arg {
            if inner == "distinct" {
                let Some(q) = field(scope, field_arg("distinct", args)?)? else {
                    return Ok(Typed::null());
                };
                let c = &q.sql;
                return Ok(Typed::new(
                    format!("if(count({c}) = 0, NULL, toInt64(uniqExact({c})))"),
                    Kind::Integer,
                ));
            }
        }
    }
    let Some(q) = field(scope, arg)? else {
        return Ok(Typed::null());
    };
    let numeric = q.kind.is_numeric();
    if !numeric && NUMERIC_ONLY.contains(&name) {
        // InfluxDB refuses these when it builds the iterator, in these words.
        let t = if q.kind == Kind::Boolean {
            "boolean"
        } else {
            "string"
        };
        return Err(InfluxqlError::invalid(format!(
            "unsupported {name} iterator type: *query.{t}InterruptIterator"
        )));
    }
    if q.kind == Kind::String && matches!(name, "min" | "max") {
        return Err(InfluxqlError::invalid(format!(
            "unsupported {name} iterator type: *query.stringInterruptIterator"
        )));
    }
    let guard = |body: String, kind: Kind| {
        Typed::new(format!("if(count({}) = 0, NULL, {body})", q.sql), kind)
    };
    // Null where the group has no value of the field without a guard: a
    // field's column is `Nullable` and the engine's aggregates skip nulls and
    // answer null over none; a column that is not `Nullable` has a value in
    // every row. A guard costs the engine's analysis about a millisecond per
    // column (`cpu-max-all-1`: 16 against 10 ms for ten `max`).
    let plain = Typed::new;
    let c = &q.sql;
    Ok(match name {
        // Null (not 0) where nothing was counted: `fill` decides what an
        // empty interval shows.
        "count" => guard(format!("toInt64(count({c}))"), Kind::Integer),
        "sum" if numeric => plain(format!("sum({c})"), sum_kind(q.kind)),
        "mean" if numeric => plain(format!("avg({c})"), Kind::Float),
        // The value a max or min picks is the largest or smallest value,
        // whichever point it came from (its time and other columns, when
        // shown, are `selector_time` / `selector_aux`): the plain aggregate,
        // about twice as fast in the engine as ordering (value, time) tuples
        // (`cpu-max-all-8`: 40 against 75 ms).
        "min" | "max" => plain(format!("{name}({c})"), q.kind),
        "first" | "last" => {
            let (f, key) = selector_order(name, c).expect("a selector");
            plain(format!("{f}({c}, {key}, {c} IS NOT NULL)"), q.kind)
        }
        "spread" if numeric => plain(format!("max({c}) - min({c})"), q.kind),
        "stddev" if numeric => Typed::new(
            format!("if(count({c}) < 2, NULL, stddevSamp({c}))"),
            Kind::Float,
        ),
        "median" if numeric => plain(format!("quantileExactInclusive(0.5)({c})"), Kind::Float),
        "percentile" if numeric => percentile(c, q.kind, &args[1])?,
        _ => Typed::null(),
    })
}

/// The value of the nearest-rank point: InfluxDB sorts the values and takes
/// index `floor(n * p / 100 + 0.5) - 1`, none outside the values.
fn percentile(c: &str, kind: Kind, p: &Expr) -> Result<Typed, InfluxqlError> {
    let p = percent(p)?;
    Ok(Typed::new(
        format!(
            "if(floor(count({c}) * {p:?} / 100 + 0.5) BETWEEN 1 AND count({c}), \
             arraySort(groupArrayIf({c}, {c} IS NOT NULL))[toInt64(floor(count({c}) * {p:?} / 100 + 0.5))], NULL)"
        ),
        kind,
    ))
}

fn percent(p: &Expr) -> Result<f64, InfluxqlError> {
    match strip_parens(p) {
        Expr::Literal(Literal::Integer(i)) => Ok(*i as f64),
        Expr::Literal(Literal::Float(f)) => Ok(*f),
        _ => Err(InfluxqlError::invalid(
            "expected float argument in percentile()",
        )),
    }
}

/// The time of the point a lone selector picked.
pub(crate) fn selector_time(
    scope: &mut Scope<'_>,
    name: &str,
    args: &[Expr],
) -> Result<Option<String>, InfluxqlError> {
    let arg = field_arg(name, args)?;
    let Some(q) = field(scope, arg)? else {
        return Ok(None);
    };
    let c = &q.sql;
    if name == "percentile" {
        let p = percent(&args[1])?;
        return Ok(Some(format!(
            "if(floor(count({c}) * {p:?} / 100 + 0.5) BETWEEN 1 AND count({c}), \
             arraySort(groupArrayIf(({c}, {T}), {c} IS NOT NULL))[toInt64(floor(count({c}) * {p:?} / 100 + 0.5))].2, NULL)"
        )));
    }
    Ok(selector_order(name, c)
        .map(|(f, key)| format!("if(count({c}) = 0, NULL, {f}({T}, {key}, {c} IS NOT NULL))")))
}

/// The value of `column` at the point a lone selector picked (`SELECT
/// max(f), host`).
pub(crate) fn selector_aux(
    scope: &mut Scope<'_>,
    name: &str,
    args: &[Expr],
    column: &Typed,
) -> Result<Option<Typed>, InfluxqlError> {
    let arg = field_arg(name, args)?;
    let Some(q) = field(scope, arg)? else {
        return Ok(None);
    };
    let c = &q.sql;
    Ok(selector_order(name, c).map(|(f, key)| {
        Typed::new(
            format!(
                "if(count({c}) = 0, NULL, {f}({}, {key}, {c} IS NOT NULL))",
                column.sql
            ),
            column.kind,
        )
    }))
}

/// The field an aggregate reads, `None` if the name is no field here.
pub(crate) fn field(scope: &mut Scope<'_>, arg: &Expr) -> Result<Option<Typed>, InfluxqlError> {
    match arg {
        Expr::VarRef { name, data_type } => Ok(match scope.lookup(name, *data_type) {
            Name::Field(f, t) => Some(super::expr::cast_to(scope.field(f, t), *data_type)),
            _ => None,
        }),
        Expr::Call { name, .. } => Err(InfluxqlError::unsupported(format!(
            "{name}() inside another function"
        ))),
        _ => Err(InfluxqlError::invalid(
            "expected field argument in aggregate function",
        )),
    }
}

fn sum_kind(k: Kind) -> Kind {
    match k {
        Kind::Unsigned => Kind::Unsigned,
        Kind::Integer => Kind::Integer,
        _ => Kind::Float,
    }
}

/// Whether `t` can be aggregated numerically.
pub(crate) fn numeric_field(t: FieldType) -> bool {
    matches!(
        t,
        FieldType::Float | FieldType::Integer | FieldType::UInteger
    )
}
