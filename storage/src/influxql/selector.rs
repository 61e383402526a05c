//! InfluxQL aggregates and selectors computed in Rust over one group's points
//! (a `GROUP BY` interval of a series, e.g. from the engine's `groupArray`),
//! where InfluxDB's exact rules (tie breaks, nearest rank, output order) are
//! easier to state here than in SQL: `top`/`bottom`, `percentile`, `median`,
//! `mode`, `spread`, `stddev`, `distinct`. Each follows InfluxDB 1.6's reducer
//! in `query/call_iterator.go` / `query/functions.go`.
//!
//! Points are `(time, value)`, expected in time order (as InfluxDB reads
//! them; tie breaks depend on it). [`Value::Null`] points are ignored.
//! Functions over numbers ignore strings and booleans (InfluxDB refuses them
//! when planning).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::hash::Hash;

use super::series::Value;
use super::transform::Point;

/// Numbers of one type, as InfluxDB's typed reducers see them.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    Float(f64),
    Integer(i64),
    Unsigned(u64),
}

impl Num {
    fn of(v: &Value) -> Option<Num> {
        match v {
            Value::Float(f) => Some(Num::Float(*f)),
            Value::Integer(i) => Some(Num::Integer(*i)),
            Value::Unsigned(u) => Some(Num::Unsigned(*u)),
            _ => None,
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Num::Float(f) => f,
            Num::Integer(i) => i as f64,
            Num::Unsigned(u) => u as f64,
        }
    }

    /// Value order; NaN sorts like Go's `<` leaves it (neither less nor
    /// greater: equal here).
    fn cmp(&self, other: &Num) -> Ordering {
        match (self, other) {
            (Num::Integer(a), Num::Integer(b)) => a.cmp(b),
            (Num::Unsigned(a), Num::Unsigned(b)) => a.cmp(b),
            (a, b) => a
                .as_f64()
                .partial_cmp(&b.as_f64())
                .unwrap_or(Ordering::Equal),
        }
    }
}

/// The numeric points of `points` with their index, in input order.
fn numbers(points: &[Point]) -> Vec<(usize, i64, Num)> {
    points
        .iter()
        .enumerate()
        .filter_map(|(i, (t, v))| Some((i, *t, Num::of(v)?)))
        .collect()
}

/// `top(x[, tag...], n)`: the indices (into `points`) of the `n` largest
/// values, equal values broken by the earlier time, returned in time order
/// (equal times: larger value first), as InfluxDB answers them.
///
/// With tag arguments, `groups[i]` is point `i`'s tuple of those tags'
/// values: each group is first reduced to its `max` (earliest time on ties),
/// then the top `n` groups are kept, as InfluxDB does.
pub fn top<K: Hash + Eq>(points: &[Point], groups: Option<&[K]>, n: usize) -> Vec<usize> {
    rank(points, groups, n, |a, b| a.cmp(b))
}

/// `bottom(x[, tag...], n)`: as [`top`], for the smallest values (groups
/// reduced to their `min`); equal times: smaller value first.
pub fn bottom<K: Hash + Eq>(points: &[Point], groups: Option<&[K]>, n: usize) -> Vec<usize> {
    rank(points, groups, n, |a, b| b.cmp(a))
}

/// The `n` best points by `better` (greater is better), ties to the earlier
/// time, in time order.
fn rank<K: Hash + Eq>(
    points: &[Point],
    groups: Option<&[K]>,
    n: usize,
    better: impl Fn(&Num, &Num) -> Ordering,
) -> Vec<usize> {
    // Best first: better value, then earlier time.
    let order =
        |a: &(usize, i64, Num), b: &(usize, i64, Num)| better(&b.2, &a.2).then(a.1.cmp(&b.1));
    let mut candidates = numbers(points);
    if let Some(groups) = groups {
        let mut best: HashMap<&K, (usize, i64, Num)> = HashMap::new();
        for c in candidates {
            let Some(key) = groups.get(c.0) else { continue };
            match best.get(key) {
                Some(b) if order(b, &c) != Ordering::Greater => {}
                _ => {
                    best.insert(key, c);
                }
            }
        }
        candidates = best.into_values().collect();
    }
    // Equal value and time: the earlier in `points` (not the map's order, which varies
    // from run to run).
    candidates.sort_by(|a, b| order(a, b).then(a.0.cmp(&b.0)));
    candidates.truncate(n);
    // Output in time order; within one time, rank order (a stable sort).
    candidates.sort_by_key(|c| c.1);
    candidates.into_iter().map(|c| c.0).collect()
}

/// `percentile(x, p)`: InfluxDB's nearest rank, `i = floor(len * p / 100 +
/// 0.5) - 1` over the values sorted ascending; `None` when `i` falls outside
/// (e.g. `p = 0`). Returns the index (into `points`) of the selected point,
/// whose time InfluxDB shows when there is no `GROUP BY time`.
pub fn percentile(points: &[Point], p: f64) -> Option<usize> {
    let mut nums = numbers(points);
    let len = nums.len();
    let i = ((len as f64) * p / 100.0 + 0.5).floor() as i64 - 1;
    if i < 0 || i >= len as i64 {
        return None;
    }
    // Go sorts by value only; small inputs keep their time order on ties
    // (its insertion sort is stable), which a stable sort reproduces.
    nums.sort_by(|a, b| a.2.cmp(&b.2));
    Some(nums[i as usize].0)
}

/// `median(x)`: the middle value, or the mean of the two middle values for an
/// even count (`lo + (hi - lo) / 2`), always a float; `Null` when there is no
/// number.
pub fn median(points: &[Point]) -> Value {
    let mut nums: Vec<Num> = numbers(points).into_iter().map(|n| n.2).collect();
    if nums.is_empty() {
        return Value::Null;
    }
    nums.sort_by(Num::cmp);
    let mid = nums.len() / 2;
    if nums.len() % 2 == 1 {
        return Value::Float(nums[mid].as_f64());
    }
    let (lo, hi) = (nums[mid - 1], nums[mid]);
    let half = match (lo, hi) {
        (Num::Integer(a), Num::Integer(b)) => b.wrapping_sub(a) as f64 / 2.0,
        (Num::Unsigned(a), Num::Unsigned(b)) => b.wrapping_sub(a) as f64 / 2.0,
        (a, b) => (b.as_f64() - a.as_f64()) / 2.0,
    };
    Value::Float(lo.as_f64() + half)
}

/// `mode(x)`: the most frequent value, in the input's type. Ties go as in
/// InfluxDB's reducer: values are scanned in ascending order, and a later
/// value that reaches the leading count takes over unless its run started
/// after the leading value's last point (so with time-ordered input, usually
/// the larger value wins a tie). Booleans: `true` unless `false` is strictly
/// more frequent. `Null` when there is no value.
pub fn mode(points: &[Point]) -> Value {
    let mut vals: Vec<(i64, &Value)> = points
        .iter()
        .filter(|(_, v)| !matches!(v, Value::Null | Value::Time(_)))
        .map(|(t, v)| (*t, v))
        .collect();
    match vals.as_slice() {
        [] => return Value::Null,
        [(_, v)] => return (*v).clone(),
        _ => {}
    }
    if let Value::Boolean(_) = vals[0].1 {
        let trues = vals
            .iter()
            .filter(|(_, v)| **v == Value::Boolean(true))
            .count();
        return Value::Boolean(trues * 2 >= vals.len());
    }
    vals.sort_by(|a, b| compare_values(a.1, b.1));
    let (mut most_freq, mut curr_freq) = (0usize, 0usize);
    let (mut curr_mode, mut most_mode) = (vals[0].1, vals[0].1);
    let (mut curr_time, mut most_time) = (vals[0].0, vals[0].0);
    for &(t, v) in &vals {
        if v != curr_mode {
            curr_freq = 1;
            curr_mode = v;
            curr_time = t;
            continue;
        }
        curr_freq += 1;
        if most_freq > curr_freq || (most_freq == curr_freq && curr_time > most_time) {
            continue;
        }
        most_freq = curr_freq;
        most_mode = v;
        most_time = t;
    }
    most_mode.clone()
}

/// Value order within one type (numbers numerically, strings bytewise).
pub(crate) fn compare_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::String(a), Value::String(b)) => a.cmp(b),
        (Value::Boolean(a), Value::Boolean(b)) => a.cmp(b),
        _ => match (Num::of(a), Num::of(b)) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => Ordering::Equal,
        },
    }
}

/// `spread(x)`: max − min, in the input's type (integers wrap as Go's do);
/// `Null` when there is no number.
pub fn spread(points: &[Point]) -> Value {
    let nums: Vec<Num> = numbers(points).into_iter().map(|n| n.2).collect();
    let (Some(min), Some(max)) = (
        nums.iter().copied().min_by(Num::cmp),
        nums.iter().copied().max_by(Num::cmp),
    ) else {
        return Value::Null;
    };
    match (min, max) {
        (Num::Integer(a), Num::Integer(b)) => Value::Integer(b.wrapping_sub(a)),
        (Num::Unsigned(a), Num::Unsigned(b)) => Value::Unsigned(b.wrapping_sub(a)),
        (a, b) => Value::Float(b.as_f64() - a.as_f64()),
    }
}

/// `stddev(x)`: the sample standard deviation (n − 1), a float; `Null` for
/// fewer than two values (InfluxDB computes NaN and shows null). Float NaNs
/// are left out of the computation, as in InfluxDB.
pub fn stddev(points: &[Point]) -> Value {
    let nums: Vec<Num> = numbers(points).into_iter().map(|n| n.2).collect();
    if nums.len() < 2 {
        return Value::Null;
    }
    let xs: Vec<f64> = nums
        .iter()
        .map(|n| n.as_f64())
        .filter(|x| !x.is_nan())
        .collect();
    // Go's incremental mean, for the same rounding.
    let mut mean = 0.0;
    for (i, x) in xs.iter().enumerate() {
        mean += (x - mean) / (i + 1) as f64;
    }
    let variance: f64 = xs.iter().map(|x| (x - mean).powi(2)).sum();
    let sd = (variance / (xs.len() as f64 - 1.0)).sqrt();
    if sd.is_nan() {
        Value::Null
    } else {
        Value::Float(sd)
    }
}

/// `distinct(x)`: each value once, ordered by the time it first appears, then
/// by value, as InfluxDB emits them (each row then carries the interval's
/// start as its time).
pub fn distinct(points: &[Point]) -> Vec<Value> {
    let mut first: HashMap<DistinctKey<'_>, (i64, &Value)> = HashMap::new();
    for (t, v) in points {
        let Some(key) = DistinctKey::of(v) else {
            continue;
        };
        first
            .entry(key)
            .and_modify(|e| e.0 = e.0.min(*t))
            .or_insert((*t, v));
    }
    let mut out: Vec<(i64, &Value)> = first.into_values().collect();
    out.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| compare_values(a.1, b.1)));
    out.into_iter().map(|(_, v)| v.clone()).collect()
}

/// A value as a Go map key: floats by value (`0.0` and `-0.0` are one key).
#[derive(Debug, PartialEq, Eq, Hash)]
enum DistinctKey<'a> {
    Float(u64),
    Integer(i64),
    Unsigned(u64),
    String(&'a str),
    Boolean(bool),
}

impl<'a> DistinctKey<'a> {
    fn of(v: &'a Value) -> Option<Self> {
        Some(match v {
            Value::Float(f) if *f == 0.0 => DistinctKey::Float(0),
            Value::Float(f) => DistinctKey::Float(f.to_bits()),
            Value::Integer(i) => DistinctKey::Integer(*i),
            Value::Unsigned(u) => DistinctKey::Unsigned(*u),
            Value::String(s) => DistinctKey::String(s),
            Value::Boolean(b) => DistinctKey::Boolean(*b),
            Value::Null | Value::Time(_) => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    //! Expected answers come from influxd 1.6.7 (Debian's 1.6.7~rc0) over
    //! measurement `n`: at 1s..8s, host a, a, b, b, c, a, c, a;
    //! `v` = 5, 3, 5, 9, 1, 5, 9, 2 (float); `w` = 1, 2, 2, 3, 3, 1, 3, 1 (integer).
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
    const HOSTS: [&str; 8] = ["a", "a", "b", "b", "c", "a", "c", "a"];

    fn rows(points: &[Point], idx: &[usize]) -> Vec<Point> {
        idx.iter().map(|&i| points[i].clone()).collect()
    }

    #[test]
    fn top_by_tag_breaks_ties_of_value_and_time_by_the_points_order() {
        // SELECT top(v, host, 2): eight hosts, one point each, all 7 at the same time. The
        // first two in the points' order, every time (the per-tag map's order varies).
        let points: Vec<Point> = (0..8).map(|_| (S, Value::Float(7.0))).collect();
        let hosts: Vec<String> = (0..8).map(|h| format!("h{h}")).collect();
        for _ in 0..20 {
            assert_eq!(top(&points, Some(&hosts[..]), 2), vec![0, 1]);
            assert_eq!(bottom(&points, Some(&hosts[..]), 3), vec![0, 1, 2]);
        }
    }

    #[test]
    fn top_and_bottom() {
        // SELECT top(v, 3) FROM n: 5@1s, 9@4s, 9@7s (5s tie: earliest).
        let t = top::<()>(&v(), None, 3);
        assert_eq!(t, vec![0, 3, 6]);
        // SELECT bottom(v, 3) FROM n: 3@2s, 1@5s, 2@8s.
        assert_eq!(bottom::<()>(&v(), None, 3), vec![1, 4, 7]);
        // SELECT top(v, host, 2) FROM n: 9@4s b, 9@7s c.
        assert_eq!(top(&v(), Some(&HOSTS[..]), 2), vec![3, 6]);
        // SELECT bottom(v, host, 2) FROM n: 1@5s c, 2@8s a.
        assert_eq!(bottom(&v(), Some(&HOSTS[..]), 2), vec![4, 7]);
        // More than there are.
        assert_eq!(top::<()>(&v(), None, 10).len(), 8);
        assert_eq!(
            rows(&v(), &top::<()>(&v(), None, 1)),
            vec![(4 * S, Value::Float(9.0))]
        );
    }

    #[test]
    fn percentile_is_nearest_rank() {
        // SELECT percentile(v, 50), percentile(v, 0), percentile(v, 100),
        //        percentile(v, 1), percentile(w, 90) FROM n  → 5, null, 9, null, 3
        let value = |p: &[Point], pct| percentile(p, pct).map(|i| p[i].1.clone());
        assert_eq!(value(&v(), 50.0), Some(Value::Float(5.0)));
        assert_eq!(value(&v(), 0.0), None);
        assert_eq!(value(&v(), 100.0), Some(Value::Float(9.0)));
        assert_eq!(value(&v(), 1.0), None);
        assert_eq!(value(&w(), 90.0), Some(Value::Integer(3)));
        // The selected point keeps its time: the first 5 in time order.
        assert_eq!(percentile(&v(), 50.0), Some(0));
    }

    #[test]
    fn median_mode_spread_stddev() {
        // SELECT median(v), median(w), mode(v), mode(w), spread(v), spread(w),
        //        stddev(v), stddev(w) FROM n
        assert_eq!(median(&v()), Value::Float(5.0));
        assert_eq!(median(&w()), Value::Float(2.0));
        assert_eq!(mode(&v()), Value::Float(5.0));
        assert_eq!(mode(&w()), Value::Integer(3));
        assert_eq!(spread(&v()), Value::Float(8.0));
        assert_eq!(spread(&w()), Value::Integer(2));
        assert_eq!(stddev(&v()), Value::Float(2.948970764763288));
        assert_eq!(stddev(&w()), Value::Float(0.9258200997725514));
        // SELECT stddev(v), median(w) FROM n WHERE host='a' AND time < 2s → null, 1
        assert_eq!(stddev(&v()[..1]), Value::Null);
        assert_eq!(median(&w()[..1]), Value::Float(1.0));
        assert_eq!(median(&[]), Value::Null);
    }

    #[test]
    fn mode_of_strings_and_booleans() {
        let s = pts(&["b", "a", "b", "a"].map(|x| Value::String(x.into())));
        assert_eq!(mode(&s), Value::String("b".into()));
        let b = pts(&[false, true].map(Value::Boolean));
        assert_eq!(mode(&b), Value::Boolean(true));
        let b = pts(&[false, true, false].map(Value::Boolean));
        assert_eq!(mode(&b), Value::Boolean(false));
    }

    #[test]
    fn distinct_in_order_of_first_appearance() {
        // SELECT distinct(v) FROM n → 5, 3, 9, 1, 2
        assert_eq!(
            distinct(&v()),
            [5., 3., 9., 1., 2.].map(Value::Float).to_vec()
        );
        // SELECT distinct(w) FROM n GROUP BY host, host a → 1, 2
        let a: Vec<Point> = w()
            .into_iter()
            .zip(HOSTS)
            .filter(|(_, h)| *h == "a")
            .map(|(p, _)| p)
            .collect();
        assert_eq!(distinct(&a), vec![Value::Integer(1), Value::Integer(2)]);
        // Same time: by value.
        let same = vec![(0, Value::Integer(3)), (0, Value::Integer(1))];
        assert_eq!(distinct(&same), vec![Value::Integer(1), Value::Integer(3)]);
    }
}
