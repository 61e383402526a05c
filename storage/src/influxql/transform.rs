//! InfluxQL's transformations over one series' points: `derivative`,
//! `non_negative_derivative`, `difference`, `non_negative_difference`,
//! `moving_average`, `cumulative_sum` and `elapsed`, with InfluxDB 1.x's
//! semantics (`query/functions.go`'s reducers, `query/select.go`).
//!
//! Each function takes one column of one series as `(time, value)` points in
//! output order (ascending, or descending for `ORDER BY time DESC`) and returns
//! the points InfluxDB emits. The same functions serve raw points
//! (`derivative(x)`) and `GROUP BY time` intervals (`derivative(mean(x))`,
//! whose times are the intervals' starts). As in InfluxDB:
//!
//! - [`Value::Null`] points (empty intervals under `fill(null)`) are skipped;
//! - the first point only primes the computation (nothing is emitted for it);
//! - `derivative`/`difference` keep the first of several points at the same
//!   time (a series joined from several); the others do not;
//! - with `GROUP BY time`, the intervals before the query's start that
//!   [`lookback_intervals`] names must be in the input (InfluxDB widens the
//!   inner query by them), so the first interval of the range has a
//!   predecessor.
//!
//! Output types are InfluxDB's: `derivative` and `moving_average` are floats;
//! `difference` and `cumulative_sum` keep the input's type (integers wrap as
//! Go's do); `elapsed` is an integer. Strings and booleans are skipped by all
//! but `elapsed` (InfluxDB refuses them when planning).

use super::series::Value;

/// One point of a series: time (ns) and value.
pub type Point = (i64, Value);

/// How many intervals before the query's start InfluxDB adds to the inner
/// query of `function(aggregate(...))` under `GROUP BY time` (after the end
/// with `ORDER BY time DESC`). One for every transformation but
/// `cumulative_sum`, `moving_average(_, n)` included whatever `n` (checked
/// against influxd 1.6.7: its first average over 3 intervals needs 2 intervals
/// of the range itself).
pub fn lookback_intervals(function: &str) -> u64 {
    match function {
        "derivative"
        | "non_negative_derivative"
        | "difference"
        | "non_negative_difference"
        | "elapsed"
        | "moving_average" => 1,
        _ => 0,
    }
}

/// The unit of `derivative(x, unit)`: the explicit unit, else the
/// `GROUP BY time` interval, else one second (InfluxDB's
/// `DerivativeInterval`). All in ns.
pub fn derivative_unit(explicit: Option<i64>, group_interval: Option<i64>) -> i64 {
    explicit
        .or(group_interval.filter(|&i| i > 0))
        .unwrap_or(1_000_000_000)
}

/// The unit of `elapsed(x, unit)`: the explicit unit, else one nanosecond.
pub fn elapsed_unit(explicit: Option<i64>) -> i64 {
    explicit.unwrap_or(1)
}

/// The numeric points of `points`, in order, nulls and non-numbers skipped.
fn numeric(points: &[Point]) -> impl Iterator<Item = &Point> {
    points.iter().filter(|(_, v)| v.as_f64().is_some())
}

/// Drops a point that has the time of the point before it (InfluxDB's
/// derivative and difference reducers "do not advance the stream" on it).
fn advancing<'a>(points: impl Iterator<Item = &'a Point>) -> Vec<&'a Point> {
    let mut out: Vec<&Point> = Vec::new();
    for p in points {
        if out.last().is_none_or(|last| last.0 != p.0) {
            out.push(p);
        }
    }
    out
}

/// `curr - prev` as a float, as InfluxDB's derivative computes it per type.
fn float_diff(prev: &Value, curr: &Value) -> Option<f64> {
    match (prev, curr) {
        (Value::Float(a), Value::Float(b)) => Some(b - a),
        (Value::Integer(a), Value::Integer(b)) => Some(b.wrapping_sub(*a) as f64),
        (Value::Unsigned(a), Value::Unsigned(b)) if b > a => Some((b - a) as f64),
        (Value::Unsigned(a), Value::Unsigned(b)) => Some(-((a - b) as f64)),
        (a, b) => Some(b.as_f64()? - a.as_f64()?),
    }
}

/// `derivative(x[, unit])` (and `non_negative_derivative`): the rate of
/// change between successive points per `unit` ns, at the later point's time.
/// Negative rates are dropped when `non_negative` (the next rate is still
/// taken from the dropped point). `descending` is `ORDER BY time DESC`
/// (elapsed time is then counted backwards, as InfluxDB does).
pub fn derivative(points: &[Point], unit: i64, non_negative: bool, descending: bool) -> Vec<Point> {
    let pts = advancing(numeric(points));
    pts.windows(2)
        .filter_map(|w| {
            let (prev, curr) = (w[0], w[1]);
            let diff = float_diff(&prev.1, &curr.1)?;
            let mut elapsed = curr.0.wrapping_sub(prev.0);
            if descending {
                elapsed = elapsed.wrapping_neg();
            }
            if non_negative && diff < 0.0 {
                return None;
            }
            let value = diff / (elapsed as f64 / unit as f64);
            Some((curr.0, Value::Float(value)))
        })
        .collect()
}

/// `difference(x)` (and `non_negative_difference`): `curr - prev` between
/// successive points, in the input's type, at the later point's time.
pub fn difference(points: &[Point], non_negative: bool) -> Vec<Point> {
    let pts = advancing(numeric(points));
    pts.windows(2)
        .filter_map(|w| {
            let (prev, curr) = (w[0], w[1]);
            let value = match (&prev.1, &curr.1) {
                (Value::Integer(a), Value::Integer(b)) => {
                    let d = b.wrapping_sub(*a);
                    (!non_negative || d >= 0).then_some(Value::Integer(d))?
                }
                (Value::Unsigned(a), Value::Unsigned(b)) => {
                    (!non_negative || b >= a).then_some(Value::Unsigned(b.wrapping_sub(*a)))?
                }
                (a, b) => {
                    let d = b.as_f64()? - a.as_f64()?;
                    (!non_negative || d >= 0.0).then_some(Value::Float(d))?
                }
            };
            Some((curr.0, value))
        })
        .collect()
}

/// `moving_average(x, n)`: the mean of the last `n` points, emitted from the
/// `n`-th point on, as a float. As InfluxDB, the window's sum is kept running
/// (the leaving value subtracted, the entering one added: its rounding
/// included), in wrapping integers for integer inputs.
pub fn moving_average(points: &[Point], n: usize) -> Vec<Point> {
    if n == 0 {
        return Vec::new();
    }
    // `n` comes from the query (`moving_average(x, 4000000000)`): never reserve past the input.
    let mut window: Vec<Value> = Vec::with_capacity(n.min(points.len()));
    let mut sum = RunningSum::Empty;
    let mut out = Vec::new();
    for (i, (t, v)) in numeric(points).enumerate() {
        if window.len() < n {
            window.push(v.clone());
        } else {
            let leaving = std::mem::replace(&mut window[i % n], v.clone());
            sum = sum.sub(&leaving);
        }
        sum = sum.add(v);
        if window.len() == n {
            out.push((*t, Value::Float(sum.as_f64() / n as f64)));
        }
    }
    out
}

/// The running sum of [`moving_average`], in the input's arithmetic.
#[derive(Debug, Clone, Copy)]
enum RunningSum {
    Empty,
    Float(f64),
    Integer(i64),
    Unsigned(u64),
}

impl RunningSum {
    fn add(self, v: &Value) -> RunningSum {
        match (self, v) {
            (RunningSum::Empty, Value::Integer(i)) => RunningSum::Integer(*i),
            (RunningSum::Empty, Value::Unsigned(u)) => RunningSum::Unsigned(*u),
            (RunningSum::Integer(s), Value::Integer(i)) => RunningSum::Integer(s.wrapping_add(*i)),
            (RunningSum::Unsigned(s), Value::Unsigned(u)) => {
                RunningSum::Unsigned(s.wrapping_add(*u))
            }
            (s, v) => RunningSum::Float(s.as_f64() + v.as_f64().unwrap_or(0.0)),
        }
    }

    fn sub(self, v: &Value) -> RunningSum {
        match (self, v) {
            (RunningSum::Integer(s), Value::Integer(i)) => RunningSum::Integer(s.wrapping_sub(*i)),
            (RunningSum::Unsigned(s), Value::Unsigned(u)) => {
                RunningSum::Unsigned(s.wrapping_sub(*u))
            }
            (s, v) => RunningSum::Float(s.as_f64() - v.as_f64().unwrap_or(0.0)),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            RunningSum::Empty => 0.0,
            RunningSum::Float(f) => f,
            RunningSum::Integer(i) => i as f64,
            RunningSum::Unsigned(u) => u as f64,
        }
    }
}

/// `cumulative_sum(x)`: the running sum at every point, in the input's type.
pub fn cumulative_sum(points: &[Point]) -> Vec<Point> {
    let mut out = Vec::new();
    let mut sum: Option<Value> = None;
    for (t, v) in numeric(points) {
        let next = match (sum.take(), v) {
            (None, v) => v.clone(),
            (Some(Value::Integer(a)), Value::Integer(b)) => Value::Integer(a.wrapping_add(*b)),
            (Some(Value::Unsigned(a)), Value::Unsigned(b)) => Value::Unsigned(a.wrapping_add(*b)),
            (Some(a), b) => Value::Float(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)),
        };
        out.push((*t, next.clone()));
        sum = Some(next);
    }
    out
}

/// `elapsed(x[, unit])`: the time between successive points in whole `unit`s
/// (truncated), as an integer, at the later point's time. Any value type.
pub fn elapsed(points: &[Point], unit: i64) -> Vec<Point> {
    let pts: Vec<&Point> = points
        .iter()
        .filter(|(_, v)| !matches!(v, Value::Null))
        .collect();
    pts.windows(2)
        .map(|w| {
            let delta = w[1].0.wrapping_sub(w[0].0);
            (w[1].0, Value::Integer(delta / unit.max(1)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    //! Expected answers come from influxd 1.6.7 (Debian's 1.6.7~rc0).
    //! Raw points: measurement `n`, all series merged in time order:
    //! `v` = 5, 3, 5, 9, 1, 5, 9, 2 (float) and `w` = 1, 2, 2, 3, 3, 1, 3, 1
    //! (integer) at 1s..8s. Intervals: `mean(f)` of measurement `m` (see
    //! `fill/`) per 10 s: 10s 1.75, 20s 6, 50s 3, 60s 9.625, nulls between.
    use super::*;

    const S: i64 = 1_000_000_000;

    fn pts(values: &[Value]) -> Vec<Point> {
        values
            .iter()
            .enumerate()
            .map(|(k, v)| ((k as i64 + 1) * S, v.clone()))
            .collect()
    }
    fn v() -> Vec<Point> {
        pts(&[5., 3., 5., 9., 1., 5., 9., 2.].map(Value::Float))
    }
    fn w() -> Vec<Point> {
        pts(&[1, 2, 2, 3, 3, 1, 3, 1].map(Value::Integer))
    }
    fn at(t: i64, v: Value) -> Point {
        (t * S, v)
    }
    fn fl(t: i64, x: f64) -> Point {
        at(t, Value::Float(x))
    }

    /// `mean(f)` per 10 s from 10s (one interval before `time >= 20s`) to 70s,
    /// `fill(null)`.
    fn means() -> Vec<Point> {
        vec![
            fl(10, 1.75),
            fl(20, 6.0),
            at(30, Value::Null),
            at(40, Value::Null),
            fl(50, 3.0),
            fl(60, 9.625),
            at(70, Value::Null),
        ]
    }

    #[test]
    fn derivative_of_raw_points() {
        // SELECT derivative(v), derivative(v, 2s), non_negative_derivative(v) FROM n
        let d = derivative(&v(), derivative_unit(None, None), false, false);
        let expected = [
            (2, -2.),
            (3, 2.),
            (4, 4.),
            (5, -8.),
            (6, 4.),
            (7, 4.),
            (8, -7.),
        ];
        assert_eq!(d, expected.map(|(t, x)| fl(t, x)).to_vec());
        let d2 = derivative(&v(), derivative_unit(Some(2 * S), None), false, false);
        assert_eq!(d2[0], fl(2, -4.0));
        let nn = derivative(&v(), S, true, false);
        assert_eq!(nn, vec![fl(3, 2.), fl(4, 4.), fl(6, 4.), fl(7, 4.)]);
        // derivative(w) of integers is a float.
        assert_eq!(derivative(&w(), S, false, false)[0], fl(2, 1.0));
    }

    #[test]
    fn derivative_descending() {
        // SELECT derivative(v) FROM n ORDER BY time DESC
        let desc: Vec<Point> = v().into_iter().rev().collect();
        let d = derivative(&desc, S, false, true);
        let expected = [
            (7, 7.),
            (6, -4.),
            (5, -4.),
            (4, 8.),
            (3, -4.),
            (2, -2.),
            (1, 2.),
        ];
        assert_eq!(d, expected.map(|(t, x)| fl(t, x)).to_vec());
        // non_negative_difference(v) ... ORDER BY time DESC
        let nn = difference(&desc, true);
        assert_eq!(nn, vec![fl(7, 7.), fl(4, 8.), fl(1, 2.)]);
    }

    #[test]
    fn difference_keeps_the_type() {
        // SELECT difference(v), non_negative_difference(v), difference(w) FROM n
        assert_eq!(difference(&v(), false)[0], fl(2, -2.0));
        assert_eq!(difference(&v(), true)[0], fl(3, 2.0));
        let d: Vec<Value> = difference(&w(), false).into_iter().map(|p| p.1).collect();
        assert_eq!(d, [1, 0, 1, 0, -2, 2, -2].map(Value::Integer).to_vec());
        // Go wraps unsigned differences.
        let u = vec![at(1, Value::Unsigned(5)), at(2, Value::Unsigned(3))];
        assert_eq!(
            difference(&u, false),
            vec![at(2, Value::Unsigned(u64::MAX - 1))]
        );
        assert!(difference(&u, true).is_empty());
    }

    #[test]
    fn moving_average_and_cumulative_sum_of_raw_points() {
        // SELECT moving_average(v, 3), moving_average(w, 2), cumulative_sum(v),
        //        cumulative_sum(w) FROM n
        let ma = moving_average(&v(), 3);
        assert_eq!(
            ma,
            vec![
                fl(3, 4.333333333333333),
                fl(4, 5.666666666666667),
                fl(5, 5.0),
                fl(6, 5.0),
                fl(7, 5.0),
                fl(8, 5.333333333333333)
            ]
        );
        let ma: Vec<Value> = moving_average(&w(), 2).into_iter().map(|p| p.1).collect();
        assert_eq!(
            ma,
            [1.5, 2., 2.5, 3., 2., 2., 2.].map(Value::Float).to_vec()
        );
        let cs: Vec<Value> = cumulative_sum(&v()).into_iter().map(|p| p.1).collect();
        assert_eq!(
            cs,
            [5., 8., 13., 22., 23., 28., 37., 39.]
                .map(Value::Float)
                .to_vec()
        );
        let cs: Vec<Value> = cumulative_sum(&w()).into_iter().map(|p| p.1).collect();
        assert_eq!(
            cs,
            [1, 3, 5, 8, 11, 12, 15, 16].map(Value::Integer).to_vec()
        );
    }

    #[test]
    fn moving_average_keeps_a_running_sum() {
        // ma v=0.1, 0.2, 0.3, 0.4, 0.7 at 1s..5s: SELECT moving_average(v, 2) FROM ma
        // (0.4 + 0.7) / 2 would be 0.55: InfluxDB's running sum gives 0.5499999999999999.
        let ma = pts(&[0.1, 0.2, 0.3, 0.4, 0.7].map(Value::Float));
        assert_eq!(
            moving_average(&ma, 2),
            vec![
                fl(2, 0.15000000000000002),
                fl(3, 0.25),
                fl(4, 0.35),
                fl(5, 0.5499999999999999)
            ]
        );
    }

    #[test]
    fn elapsed_in_units() {
        // SELECT elapsed(v), elapsed(v, 1s), elapsed(v, 3s) FROM n
        let e = elapsed(&v(), elapsed_unit(None));
        assert_eq!(e.len(), 7);
        assert_eq!(e[0], at(2, Value::Integer(1_000_000_000)));
        assert_eq!(elapsed(&v(), S)[6], at(8, Value::Integer(1)));
        assert_eq!(elapsed(&v(), 3 * S)[0], at(2, Value::Integer(0)));
        // Any type, strings included.
        let s = vec![
            at(1, Value::String("a".into())),
            at(4, Value::String("b".into())),
        ];
        assert_eq!(elapsed(&s, S), vec![at(4, Value::Integer(3))]);
    }

    #[test]
    fn transformations_of_intervals_skip_nulls() {
        // SELECT derivative(mean(f)), difference(mean(f)),
        //        non_negative_derivative(mean(f), 1s)
        // FROM m WHERE time >= 20s AND time <= 70s GROUP BY time(10s)
        let unit = derivative_unit(None, Some(10 * S));
        assert_eq!(
            derivative(&means(), unit, false, false),
            vec![fl(20, 4.25), fl(50, -1.0), fl(60, 6.625)]
        );
        assert_eq!(
            difference(&means(), false),
            vec![fl(20, 4.25), fl(50, -3.0), fl(60, 6.625)]
        );
        assert_eq!(
            derivative(
                &means(),
                derivative_unit(Some(S), Some(10 * S)),
                true,
                false
            ),
            vec![fl(20, 0.425), fl(60, 0.6625)]
        );
        // moving_average(mean(f), 2), elapsed(mean(f), 1s)
        assert_eq!(
            moving_average(&means(), 2),
            vec![fl(20, 3.875), fl(50, 4.5), fl(60, 6.3125)]
        );
        assert_eq!(
            elapsed(&means(), S),
            [(20, 10), (50, 30), (60, 10)]
                .map(|(t, e)| at(t, Value::Integer(e)))
                .to_vec()
        );
        // moving_average(mean(f), 3): only one interval of look-back.
        assert_eq!(lookback_intervals("moving_average"), 1);
        assert_eq!(
            moving_average(&means(), 3),
            vec![fl(50, 3.5833333333333335), fl(60, 6.208333333333333)]
        );
        // cumulative_sum(mean(f)) has no look-back: its input starts at 20s.
        assert_eq!(lookback_intervals("cumulative_sum"), 0);
        assert_eq!(
            cumulative_sum(&means()[1..]),
            vec![fl(20, 6.0), fl(50, 9.0), fl(60, 18.625)]
        );
    }

    #[test]
    fn derivative_of_filled_intervals() {
        // ... GROUP BY time(10s) fill(0)
        let filled: Vec<Point> = means()
            .into_iter()
            .map(|(t, v)| {
                (
                    t,
                    if v == Value::Null {
                        Value::Float(0.0)
                    } else {
                        v
                    },
                )
            })
            .collect();
        let d = derivative(&filled, 10 * S, false, false);
        let expected = [
            (20, 4.25),
            (30, -6.),
            (40, 0.),
            (50, 3.),
            (60, 6.625),
            (70, -9.625),
        ];
        assert_eq!(d, expected.map(|(t, x)| fl(t, x)).to_vec());
    }

    #[test]
    fn derivative_of_intervals_descending() {
        // ... GROUP BY time(10s) ORDER BY time DESC: look-ahead of one interval.
        let mut desc: Vec<Point> = means()[1..].iter().rev().cloned().collect();
        desc.insert(0, at(80, Value::Null));
        let d = derivative(&desc, 10 * S, false, true);
        assert_eq!(d, vec![fl(50, -6.625), fl(20, 1.0)]);
    }

    #[test]
    fn integer_intervals() {
        // SELECT difference(max(i)), cumulative_sum(max(i)) FROM m
        // WHERE time >= 20s AND time <= 70s GROUP BY time(10s)
        let max = [(10, 4), (20, 50), (40, 5), (50, 10), (60, 70)]
            .map(|(t, x)| at(t, Value::Integer(x)))
            .to_vec();
        assert_eq!(
            difference(&max, false),
            [(20, 46), (40, -45), (50, 5), (60, 60)]
                .map(|(t, x)| at(t, Value::Integer(x)))
                .to_vec()
        );
        assert_eq!(
            cumulative_sum(&max[1..]),
            [(20, 50), (40, 55), (50, 65), (60, 135)]
                .map(|(t, x)| at(t, Value::Integer(x)))
                .to_vec()
        );
    }

    #[test]
    fn repeated_times_keep_the_first_point() {
        let p = vec![fl(1, 1.0), fl(1, 100.0), fl(2, 3.0)];
        assert_eq!(difference(&p, false), vec![fl(2, 2.0)]);
        assert_eq!(derivative(&p, S, false, false), vec![fl(2, 2.0)]);
    }
}
