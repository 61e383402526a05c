//! One output column's aggregate over a group's and bucket's points: the
//! functions that combine from parts (`field_call.rs`'s `Func`), and `stddev`,
//! `median` and `percentile` as the engine's statement computes them
//! (`agg.rs`): ClickHouse's `stddevSamp` from the sums of values and of
//! squares, `quantileExactInclusive(0.5)` interpolating between the middle
//! two, InfluxDB's nearest rank for `percentile`.

use influxql::ast::{Expr, Literal, SelectStatement};
use ingest::{FieldType, MeasurementSchema};

use crate::hot::table::{Column, Values};
use crate::influxql::expr::strip_parens;
use crate::influxql::field_call::{field_call, plain_field, Func};
use crate::influxql::plan::transform_parts;
use crate::influxql::series::Value;

/// What a column computes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Agg {
    /// One of the aggregates that combine from parts.
    Part(Func),
    Stddev,
    Median,
    /// `percentile(f, p)`.
    Percentile(f64),
}

impl Agg {
    /// Whether it picks one point (its time can be the row's).
    pub(super) fn selects(self) -> bool {
        matches!(
            self,
            Agg::Part(Func::Min | Func::Max | Func::First | Func::Last) | Agg::Percentile(_)
        )
    }
}

/// `stddev(f)`, `median(f)`, `percentile(f, p)` of a name `schema` does not
/// hold as a tag, read as written (no cast), `p` a number.
fn other_call<'e>(e: &'e Expr, schema: &MeasurementSchema) -> Option<(Agg, &'e String)> {
    let Expr::Call { name, args } = strip_parens(e) else {
        return None;
    };
    let (agg, arg) = match (name.as_str(), args.as_slice()) {
        ("stddev", [arg]) => (Agg::Stddev, arg),
        ("median", [arg]) => (Agg::Median, arg),
        ("percentile", [arg, p]) => {
            let p = match strip_parens(p) {
                Expr::Literal(Literal::Integer(i)) => *i as f64,
                Expr::Literal(Literal::Float(f)) if f.is_finite() => *f,
                _ => return None,
            };
            (Agg::Percentile(p), arg)
        }
        _ => return None,
    };
    Some((agg, plain_field(arg, schema)?))
}

/// One output column: a function of one field (`None`: a name the measurement
/// does not have, null as in the engine's answer).
pub(super) struct Spec {
    pub(super) agg: Agg,
    pub(super) field: String,
    pub(super) kind: Option<FieldType>,
}

/// The columns of `stmt` when each is a covered function of one float or
/// integer field of `schema`, as written, or a transformation of one.
pub(super) fn specs(stmt: &SelectStatement, schema: &MeasurementSchema) -> Option<Vec<Spec>> {
    stmt.fields
        .iter()
        .map(|f| {
            // A transformation (`non_negative_derivative(mean(x), 1s)`) is applied
            // to the aggregate's rows after the read (`exec.rs`'s `finish`), as
            // for the engine's rows: the read computes the aggregate inside.
            let e = match transform_parts(&f.expr) {
                Some((_, [inner, ..], _)) => inner,
                Some(_) => return None,
                None => &f.expr,
            };
            let (agg, field) = match field_call(e, schema) {
                Some((func, field)) => (Agg::Part(func), field),
                None => other_call(e, schema)?,
            };
            let kind = schema
                .fields
                .iter()
                .find(|(n, _)| n == field)
                .map(|(_, t)| *t);
            matches!(kind, None | Some(FieldType::Float | FieldType::Integer)).then(|| Spec {
                agg,
                field: field.clone(),
                kind,
            })
        })
        .collect()
}

/// One column's aggregate of one group and bucket.
#[derive(Clone)]
pub(super) struct Acc {
    n: u64,
    float: f64,
    int: i64,
    /// Integer sums for `mean`, exact.
    wide: i128,
    min: f64,
    max: f64,
    imin: i64,
    imax: i64,
    /// (time, value) of `first`/`last`.
    at: i64,
    pick: f64,
    ipick: i64,
    /// Sums of values and of their squares, as floats (`stddev`).
    m1: f64,
    m2: f64,
    /// (value, time) of every point (`median`, `percentile`).
    fvals: Vec<(f64, i64)>,
    ivals: Vec<(i64, i64)>,
}

impl Acc {
    pub(super) const EMPTY: Acc = Acc {
        n: 0,
        float: 0.0,
        int: 0,
        wide: 0,
        min: f64::INFINITY,
        max: f64::NEG_INFINITY,
        imin: i64::MAX,
        imax: i64::MIN,
        at: 0,
        pick: 0.0,
        ipick: 0,
        m1: 0.0,
        m2: 0.0,
        fvals: Vec::new(),
        ivals: Vec::new(),
    };

    pub(super) fn add_float(&mut self, agg: Agg, t: i64, v: f64) {
        self.n += 1;
        let func = match agg {
            Agg::Part(func) => func,
            Agg::Stddev => {
                self.m1 += v;
                self.m2 += v * v;
                return;
            }
            Agg::Median | Agg::Percentile(_) => {
                self.fvals.push((v, t));
                return;
            }
        };
        match func {
            Func::Count => {}
            Func::Sum | Func::Mean => self.float += v,
            Func::Min | Func::Max | Func::Spread => {
                if v < self.min {
                    self.min = v;
                }
                if v > self.max {
                    self.max = v;
                }
            }
            // Points of several series at the picked time: the larger value (`agg.rs`).
            Func::First => {
                if self.n == 1 || t < self.at || (t == self.at && v > self.pick) {
                    (self.at, self.pick) = (t, v);
                }
            }
            Func::Last => {
                if self.n == 1 || t > self.at || (t == self.at && v > self.pick) {
                    (self.at, self.pick) = (t, v);
                }
            }
        }
    }

    pub(super) fn add_int(&mut self, agg: Agg, t: i64, v: i64) {
        self.n += 1;
        let func = match agg {
            Agg::Part(func) => func,
            Agg::Stddev => {
                let x = v as f64;
                self.m1 += x;
                self.m2 += x * x;
                return;
            }
            Agg::Median | Agg::Percentile(_) => {
                self.ivals.push((v, t));
                return;
            }
        };
        match func {
            Func::Count => {}
            Func::Sum => self.int = self.int.wrapping_add(v),
            Func::Mean => self.wide += i128::from(v),
            Func::Min | Func::Max | Func::Spread => {
                self.imin = self.imin.min(v);
                self.imax = self.imax.max(v);
            }
            Func::First => {
                if self.n == 1 || t < self.at || (t == self.at && v > self.ipick) {
                    (self.at, self.ipick) = (t, v);
                }
            }
            Func::Last => {
                if self.n == 1 || t > self.at || (t == self.at && v > self.ipick) {
                    (self.at, self.ipick) = (t, v);
                }
            }
        }
    }

    /// Adds a run of one series' points that share a bucket (`valid`: which
    /// hold the field), in order: what [`Acc::add_float`] does point by
    /// point, the function matched once a run rather than once a point
    /// (TSBS `single-groupby-*` runs 6 points a bucket, `cpu-max-all-1` 360).
    /// The same updates in the same order: the same bits (a float sum's
    /// rounding, `min` of `0.0` and `-0.0` keeping the first).
    pub(super) fn add_floats(&mut self, agg: Agg, times: &[i64], values: &[f64], valid: &[bool]) {
        let points = values.iter().zip(valid).filter(|(_, &ok)| ok);
        match agg {
            Agg::Part(Func::Count) => self.n += points.count() as u64,
            Agg::Part(Func::Sum | Func::Mean) => {
                let mut sum = self.float;
                for (&v, _) in points {
                    self.n += 1;
                    sum += v;
                }
                self.float = sum;
            }
            Agg::Part(Func::Min | Func::Max | Func::Spread) => {
                let (mut lo, mut hi) = (self.min, self.max);
                for (&v, _) in points {
                    self.n += 1;
                    if v < lo {
                        lo = v;
                    }
                    if v > hi {
                        hi = v;
                    }
                }
                (self.min, self.max) = (lo, hi);
            }
            _ => {
                for ((&v, _), &t) in values
                    .iter()
                    .zip(valid)
                    .zip(times)
                    .filter(|((_, &ok), _)| ok)
                {
                    self.add_float(agg, t, v);
                }
            }
        }
    }

    /// [`Acc::add_floats`] for an integer field: [`Acc::add_int`]'s updates.
    pub(super) fn add_ints(&mut self, agg: Agg, times: &[i64], values: &[i64], valid: &[bool]) {
        let points = values.iter().zip(valid).filter(|(_, &ok)| ok);
        match agg {
            Agg::Part(Func::Count) => self.n += points.count() as u64,
            Agg::Part(Func::Sum) => {
                for (&v, _) in points {
                    self.n += 1;
                    self.int = self.int.wrapping_add(v);
                }
            }
            Agg::Part(Func::Mean) => {
                for (&v, _) in points {
                    self.n += 1;
                    self.wide += i128::from(v);
                }
            }
            Agg::Part(Func::Min | Func::Max | Func::Spread) => {
                let (mut lo, mut hi) = (self.imin, self.imax);
                for (&v, _) in points {
                    self.n += 1;
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
                (self.imin, self.imax) = (lo, hi);
            }
            _ => {
                for ((&v, _), &t) in values
                    .iter()
                    .zip(valid)
                    .zip(times)
                    .filter(|((_, &ok), _)| ok)
                {
                    self.add_int(agg, t, v);
                }
            }
        }
    }

    pub(super) fn value(&mut self, spec: &Spec) -> Value {
        if self.n == 0 || spec.kind.is_none() {
            return Value::Null;
        }
        let float = spec.kind == Some(FieldType::Float);
        let f = |x: f64| {
            if x.is_finite() {
                Value::Float(x)
            } else {
                Value::Null
            }
        };
        let func = match spec.agg {
            Agg::Part(func) => func,
            Agg::Stddev => {
                if self.n < 2 {
                    return Value::Null;
                }
                // ClickHouse's `VarMoments::getSample`, then the root.
                let n = self.n as f64;
                let var = ((self.m2 - self.m1 * self.m1 / n) / (n - 1.0)).max(0.0);
                return f(var.sqrt());
            }
            Agg::Median => return f(self.median()),
            Agg::Percentile(p) => {
                return match self.rank(p) {
                    None => Value::Null,
                    Some(k) if float => f(self.fvals[k].0),
                    Some(k) => Value::Integer(self.ivals[k].0),
                }
            }
        };
        match (func, float) {
            (Func::Count, _) => Value::Integer(i64::try_from(self.n).unwrap_or(i64::MAX)),
            (Func::Sum, true) => f(self.float),
            (Func::Sum, false) => Value::Integer(self.int),
            (Func::Mean, true) => f(self.float / self.n as f64),
            (Func::Mean, false) => f(self.wide as f64 / self.n as f64),
            (Func::Min, true) => f(self.min),
            (Func::Min, false) => Value::Integer(self.imin),
            (Func::Max, true) => f(self.max),
            (Func::Max, false) => Value::Integer(self.imax),
            (Func::Spread, true) => f(self.max - self.min),
            (Func::Spread, false) => Value::Integer(self.imax.wrapping_sub(self.imin)),
            (Func::First | Func::Last, true) => f(self.pick),
            (Func::First | Func::Last, false) => Value::Integer(self.ipick),
        }
    }

    /// `quantileExactInclusive(0.5)`: the middle value, or the lower middle
    /// plus half the difference (an integer difference exact, then a float).
    fn median(&mut self) -> f64 {
        self.sort();
        let len = self.fvals.len().max(self.ivals.len());
        let h = 0.5 * (len - 1) as f64 + 1.0;
        let n = h as usize;
        let frac = h - n as f64;
        let at = |k: usize| -> f64 {
            match self.fvals.get(k) {
                Some(v) => v.0,
                None => self.ivals[k].0 as f64,
            }
        };
        if n >= len {
            return at(len - 1);
        }
        let delta = if self.fvals.is_empty() {
            (i128::from(self.ivals[n].0) - i128::from(self.ivals[n - 1].0)) as f64
        } else {
            self.fvals[n].0 - self.fvals[n - 1].0
        };
        at(n - 1) + frac * delta
    }

    /// InfluxDB's nearest rank of `percentile(f, p)` as the engine computes
    /// it (`floor(n * p / 100 + 0.5)`, 1-based), `None` outside the values;
    /// the values sorted by (value, time).
    pub(super) fn rank(&mut self, p: f64) -> Option<usize> {
        self.sort();
        let len = self.fvals.len().max(self.ivals.len());
        let k = (len as f64 * p / 100.0 + 0.5).floor();
        (k >= 1.0 && k <= len as f64).then(|| k as usize - 1)
    }

    /// The time of the point at `rank` (`Acc::rank`).
    pub(super) fn time_at(&self, rank: usize) -> i64 {
        match self.fvals.get(rank) {
            Some(v) => v.1,
            None => self.ivals[rank].1,
        }
    }

    fn sort(&mut self) {
        self.fvals
            .sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        self.ivals.sort_unstable();
    }
}

/// A lone selector without a window shows its picked point's time: the
/// earliest point of the extreme value (`min`, `max`), the earliest or latest
/// point (`first`, `last`).
#[derive(Clone, Copy)]
pub(super) struct Picked {
    pub(super) time: i64,
    pub(super) value: f64,
    pub(super) ivalue: i64,
    pub(super) any: bool,
}

/// Moves `p` to point `i` (time `t`) of `col` when `func` picks it over `p`.
pub(super) fn pick(p: &mut Picked, func: Func, col: &Option<&Column>, i: usize, t: i64) {
    let Some(c) = col else { return };
    if !c.valid[i] {
        return;
    }
    let (v, iv) = match &c.values {
        Values::Float(v) => (v[i], 0),
        Values::Integer(v) => (v[i] as f64, v[i]),
        _ => return,
    };
    let int = matches!(c.values, Values::Integer(_));
    let better = !p.any
        || match func {
            Func::First if int => t < p.time || (t == p.time && iv > p.ivalue),
            Func::Last if int => t > p.time || (t == p.time && iv > p.ivalue),
            Func::First => t < p.time || (t == p.time && v > p.value),
            Func::Last => t > p.time || (t == p.time && v > p.value),
            Func::Max if int => iv > p.ivalue || (iv == p.ivalue && t < p.time),
            Func::Min if int => iv < p.ivalue || (iv == p.ivalue && t < p.time),
            Func::Max => v > p.value || (v == p.value && t < p.time),
            Func::Min => v < p.value || (v == p.value && t < p.time),
            _ => false,
        };
    if better {
        *p = Picked {
            time: t,
            value: v,
            ivalue: iv,
            any: true,
        };
    }
}

#[cfg(test)]
#[path = "acc_tests.rs"]
mod tests;
