//! Aggregates computed after the engine, over each group's points, where
//! InfluxDB's exact rules (tie breaks, several rows per group) are easier in
//! Rust (`selector.rs`) than in SQL: `mode`, `distinct`, `top`, `bottom`.
//!
//! The engine answers the group's points as one array cell: `(time, value,
//! extras...)` tuples sorted by time, where the extras are `top`'s tag
//! arguments and the other selected names (`top(x, 3), host`), whose values
//! come from the picked points.

use super::agg::T;
use super::error::InfluxqlError;
use super::expr::{Kind, Typed};
use super::selector;
use super::series::Value;
use super::transform::Point;

/// One column computed after the engine.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reducer {
    /// `mode`, `distinct`, `top` or `bottom`.
    pub(crate) function: String,
    /// `top(x, n)`'s `n`.
    pub(crate) n: usize,
    /// The kind of the reduced field.
    pub(crate) kind: Kind,
    /// The kinds of the extras in each tuple.
    pub(crate) extras: Vec<Kind>,
    /// How many of the extras are `top(x, tag..., n)`'s tags.
    pub(crate) tag_args: usize,
}

impl Reducer {
    /// Whether each group answers several rows (then with the points' times,
    /// or the group's for `distinct`).
    pub(crate) fn multi_row(&self) -> bool {
        self.function != "mode"
    }
}

/// The engine's array of a group's `(time, value, extras...)` tuples.
pub(crate) fn points_sql(value: &Typed, extras: &[Typed]) -> String {
    let mut tuple = format!("{T}, {}", value.sql);
    for e in extras {
        tuple.push_str(", ");
        tuple.push_str(&e.sql);
    }
    format!(
        "arraySort(x -> x.1, groupArrayIf(({tuple}), {} IS NOT NULL))",
        value.sql
    )
}

/// `top(x, ..., n)`'s `n`, checked as InfluxDB does.
pub(crate) fn limit_arg(function: &str, n: i64) -> Result<usize, InfluxqlError> {
    if n < 1 {
        return Err(InfluxqlError::invalid(format!(
            "limit ({n}) in {function} function must be at least 1"
        )));
    }
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

/// One decoded tuple: time, value, extras.
type Tuple = (i64, Value, Vec<Value>);

/// Decodes the array cell (kept as JSON text by `rows.rs`).
pub(crate) fn decode(cell: &Value, r: &Reducer) -> Result<Vec<Tuple>, InfluxqlError> {
    let Value::String(text) = cell else {
        return Ok(Vec::new());
    };
    let bad = |m: String| InfluxqlError::EngineAnswer(format!("reducer points: {m}"));
    let items: Vec<Vec<serde_json::Value>> =
        serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    items
        .iter()
        .map(|item| {
            if item.len() != 2 + r.extras.len() {
                return Err(bad(format!("a tuple of {} items", item.len())));
            }
            let t = match super::rows::value(&item[0], "Int64")? {
                Value::Integer(t) => t,
                _ => return Err(bad("no time".into())),
            };
            let v = super::rows::value(&item[1], engine_type(r.kind))?;
            let extras = item[2..]
                .iter()
                .zip(&r.extras)
                .map(|(c, k)| super::rows::value(c, engine_type(*k)))
                .collect::<Result<_, _>>()?;
            Ok((t, v, extras))
        })
        .collect()
}

fn engine_type(k: Kind) -> &'static str {
    match k {
        Kind::Float | Kind::Null => "Nullable(Float64)",
        Kind::Integer => "Nullable(Int64)",
        Kind::Unsigned => "Nullable(UInt64)",
        Kind::String => "Nullable(String)",
        Kind::Boolean => "Nullable(Bool)",
    }
}

/// The rows one group answers: `(time, value, extras)`; `group_time` is the
/// group's (bucket start or query start).
pub(crate) fn reduce(r: &Reducer, tuples: &[Tuple], group_time: i64) -> Vec<Tuple> {
    let points: Vec<Point> = tuples.iter().map(|(t, v, _)| (*t, v.clone())).collect();
    let none = || vec![Value::Null; tuples.first().map_or(0, |t| t.2.len())];
    match r.function.as_str() {
        "mode" => vec![(group_time, selector::mode(&points), none())],
        "distinct" => selector::distinct(&points)
            .into_iter()
            .map(|v| (group_time, v, none()))
            .collect(),
        f @ ("top" | "bottom") => {
            let groups: Option<Vec<Vec<Value>>> = (r.tag_args > 0).then(|| {
                tuples
                    .iter()
                    .map(|(_, _, e)| e[..r.tag_args].to_vec())
                    .collect()
            });
            let keys: Option<Vec<String>> =
                groups.map(|g| g.iter().map(|vals| format!("{vals:?}")).collect());
            let picked = if f == "top" {
                selector::top(&points, keys.as_deref(), r.n)
            } else {
                selector::bottom(&points, keys.as_deref(), r.n)
            };
            picked.into_iter().map(|i| tuples[i].clone()).collect()
        }
        _ => Vec::new(),
    }
}
