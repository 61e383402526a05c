//! Transformations after the engine: each transformed column of a series is
//! taken as `(time, value)` points, transformed (`transform.rs`), scaled by
//! the literal arithmetic around the call (`derivative(...) * 8`), and the
//! columns joined back into rows by time, as InfluxDB joins its iterators.

use influxql::ast::BinaryOp;

use super::series::{Series, Value};
use super::transform::{self, Point};

/// Literal arithmetic around a transformation, innermost first: (op, the
/// literal, whether the literal is on the left).
pub(crate) type Scale = Vec<(BinaryOp, f64, bool)>;

/// One transformation of a column, after the engine.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Transform {
    /// `derivative`, `non_negative_derivative`, `difference`,
    /// `non_negative_difference`, `moving_average`, `cumulative_sum`, `elapsed`.
    pub(crate) function: String,
    /// `derivative(x, unit)` / `elapsed(x, unit)`, ns.
    pub(crate) unit: Option<i64>,
    /// `moving_average(x, n)`.
    pub(crate) n: usize,
    /// Literal arithmetic applied to the result.
    pub(crate) scale: Scale,
}

/// The transformations every transformed column of a series needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Options {
    /// The `GROUP BY time` interval, if any (derivative's default unit).
    pub(crate) interval: Option<i64>,
    /// `ORDER BY time DESC`.
    pub(crate) descending: bool,
    /// `LIMIT` (per column).
    pub(crate) limit: Option<u64>,
    /// `OFFSET` (per column).
    pub(crate) offset: Option<u64>,
}

/// Applies `transforms` (one per column after `time`, `None` = as is) to
/// `s`'s rows, keeps `offset..offset + limit` of each column's points (as
/// InfluxDB limits each of its iterators) and joins the columns back by time.
pub(crate) fn apply(s: &mut Series, transforms: &[Option<Transform>], opts: Options) {
    let columns: Vec<Vec<Point>> = transforms
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let points: Vec<Point> = s
                .values
                .iter()
                .filter_map(|row| match (row.first(), row.get(i + 1)) {
                    (Some(Value::Time(t)), Some(v)) => Some((*t, v.clone())),
                    _ => None,
                })
                .collect();
            let out: Vec<Point> = match t {
                Some(t) => run(t, &points, opts),
                None => points
                    .into_iter()
                    .filter(|(_, v)| *v != Value::Null)
                    .collect(),
            };
            let skip = usize::try_from(opts.offset.unwrap_or(0)).unwrap_or(usize::MAX);
            let take = opts
                .limit
                .filter(|&l| l > 0)
                .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
            out.into_iter().skip(skip).take(take).collect()
        })
        .collect();
    s.values = join(&columns, opts.descending);
}

/// One transformation over one column's points.
fn run(t: &Transform, points: &[Point], opts: Options) -> Vec<Point> {
    let out = match t.function.as_str() {
        "derivative" | "non_negative_derivative" => transform::derivative(
            points,
            transform::derivative_unit(t.unit, opts.interval),
            t.function == "non_negative_derivative",
            opts.descending,
        ),
        "difference" | "non_negative_difference" => {
            transform::difference(points, t.function == "non_negative_difference")
        }
        "moving_average" => transform::moving_average(points, t.n),
        "cumulative_sum" => transform::cumulative_sum(points),
        "elapsed" => transform::elapsed(points, transform::elapsed_unit(t.unit)),
        _ => Vec::new(),
    };
    out.into_iter()
        .map(|(time, v)| (time, scale(v, &t.scale)))
        .collect()
}

/// `v` through the literal arithmetic around the call.
fn scale(v: Value, ops: &[(BinaryOp, f64, bool)]) -> Value {
    let mut v = v;
    for (op, lit, lit_left) in ops {
        let x = match v {
            Value::Float(f) => f,
            Value::Integer(i) => i as f64,
            Value::Unsigned(u) => u as f64,
            _ => return Value::Null,
        };
        let (a, b) = if *lit_left { (*lit, x) } else { (x, *lit) };
        v = match op {
            BinaryOp::Add => Value::Float(a + b),
            BinaryOp::Sub => Value::Float(a - b),
            BinaryOp::Mul => Value::Float(a * b),
            BinaryOp::Div if b != 0.0 => Value::Float(a / b),
            BinaryOp::Mod if b != 0.0 => Value::Float(a % b),
            _ => Value::Null,
        };
    }
    v
}

/// Rows from per-column points: one row per time any column has, in order.
fn join(columns: &[Vec<Point>], descending: bool) -> Vec<Vec<Value>> {
    let mut times: Vec<i64> = columns.iter().flatten().map(|(t, _)| *t).collect();
    times.sort_unstable();
    times.dedup();
    if descending {
        times.reverse();
    }
    let mut cursors = vec![0usize; columns.len()];
    let mut rows = Vec::with_capacity(times.len());
    for t in times {
        let mut row = vec![Value::Time(t)];
        for (c, points) in columns.iter().enumerate() {
            let i = cursors[c];
            if i < points.len() && points[i].0 == t {
                row.push(points[i].1.clone());
                cursors[c] += 1;
                // Further points at the same time (a series joined from
                // several) are not shown twice.
                while cursors[c] < points.len() && points[cursors[c]].0 == t {
                    cursors[c] += 1;
                }
            } else {
                row.push(Value::Null);
            }
        }
        rows.push(row);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derivative_scaled_and_joined_with_a_plain_column() {
        let s0 = 1_000_000_000;
        let mut s = Series {
            name: "net".into(),
            tags: vec![],
            columns: std::sync::Arc::new(vec!["time".into(), "bits".into(), "max".into()]),
            values: vec![
                vec![Value::Time(0), Value::Float(10.0), Value::Float(1.0)],
                vec![Value::Time(10 * s0), Value::Float(30.0), Value::Null],
                vec![Value::Time(20 * s0), Value::Float(20.0), Value::Float(3.0)],
            ],
            packed: None,
            one_row: None,
        };
        let t = Transform {
            function: "non_negative_derivative".into(),
            unit: Some(s0),
            n: 0,
            scale: vec![(BinaryOp::Mul, 8.0, false)],
        };
        apply(
            &mut s,
            &[Some(t), None],
            Options {
                interval: None,
                descending: false,
                limit: None,
                offset: None,
            },
        );
        assert_eq!(
            s.values,
            vec![
                vec![Value::Time(0), Value::Null, Value::Float(1.0)],
                vec![Value::Time(10 * s0), Value::Float(16.0), Value::Null],
                vec![Value::Time(20 * s0), Value::Null, Value::Float(3.0)],
            ]
        );
    }
}
