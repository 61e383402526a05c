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

/// The order of two points' shown values: null first, then each value's own order.
fn extras_order(a: &[Value], b: &[Value]) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    a.iter()
        .zip(b)
        .map(|(x, y)| match (x, y) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Less,
            (_, Value::Null) => Ordering::Greater,
            _ => selector::compare_values(x, y),
        })
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
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
    // `top`/`bottom`: points of equal value and time (several series) rank by the values
    // they show (`top(x, 2), host`), not by where the engine put them in the array: the
    // same points answer alike whatever order they were read in (a cluster's shards).
    let sorted: Vec<Tuple>;
    let tuples = match r.function.as_str() {
        "top" | "bottom" => {
            let mut t = tuples.to_vec();
            t.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| extras_order(&a.2, &b.2)));
            sorted = t;
            sorted.as_slice()
        }
        _ => tuples,
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_breaks_ties_of_value_and_time_by_the_shown_values() {
        let r = Reducer {
            function: "top".into(),
            n: 2,
            kind: Kind::Float,
            extras: vec![Kind::String],
            tag_args: 0,
        };
        let host = |h: &str| vec![Value::String(h.into())];
        // Three series tie at time 5 with value 7; read in any order, h1 and h2 are shown.
        let tie = |h| (5, Value::Float(7.0), host(h));
        for order in [["h3", "h1", "h2"], ["h2", "h3", "h1"], ["h1", "h2", "h3"]] {
            let mut tuples = vec![(1, Value::Float(1.0), host("h9"))];
            tuples.extend(order.map(tie));
            tuples.push((5, Value::Float(-1.0), host("h0")));
            let picked: Vec<Vec<Value>> = reduce(&r, &tuples, 0).into_iter().map(|t| t.2).collect();
            assert_eq!(picked, vec![host("h1"), host("h2")], "{order:?}");
        }
    }
}
