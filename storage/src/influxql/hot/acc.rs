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

/// One column's aggregate of one group and bucket. A column computes one
/// function, so the functions share its words (`f0`/`f1` for a float field,
/// `i0`/`i1` for an integer one), and the values `median`/`percentile` keep
/// are boxed apart: 56 bytes, where a word per function's state was 176 (a
/// bucketed read makes one per column and bucket, `single-groupby-5-1-12`
/// 3,600: writing and dropping them was a tenth of its evaluation).
/// `min`/`max`/`spread` take their first point as both ends (`n == 0`), so
/// the empty state is all zeros (and stays so until a point comes).
#[derive(Clone)]
pub(super) struct Acc {
    n: u64,
    /// Floats: the sum (`sum`, `mean`), the smallest (`min`, `max`, `spread`),
    /// the picked value (`first`, `last`), the sum of values (`stddev`, of
    /// integers too).
    f0: f64,
    /// Floats: the largest (`min`, `max`, `spread`), the sum of squares
    /// (`stddev`).
    f1: f64,
    /// Integers: the sum (`sum`, wrapping), the low word of the exact sum
    /// (`mean`), the smallest, the picked value.
    i0: i64,
    /// Integers: the high word of the exact sum (`mean`), the largest.
    i1: i64,
    /// The picked point's time (`first`, `last`).
    at: i64,
    /// (value, time) of every point (`median`, `percentile`).
    vals: Option<Box<Vals>>,
}

/// The points `median` and `percentile` rank.
#[derive(Clone, Default)]
struct Vals {
    floats: Vec<(f64, i64)>,
    ints: Vec<(i64, i64)>,
}

impl Acc {
    pub(super) const EMPTY: Acc = Acc {
        n: 0,
        f0: 0.0,
        f1: 0.0,
        i0: 0,
        i1: 0,
        at: 0,
        vals: None,
    };

    fn vals(&mut self) -> &mut Vals {
        self.vals.get_or_insert_with(Box::default)
    }

    /// The exact integer sum of `mean`.
    fn wide(&self) -> i128 {
        (i128::from(self.i1) << 64) | i128::from(self.i0 as u64)
    }

    fn set_wide(&mut self, w: i128) {
        (self.i0, self.i1) = (w as i64, (w >> 64) as i64);
    }

    /// The (smallest, largest) float so far; none yet: the infinities, which
    /// any number replaces (NaN never does, as before).
    fn float_ends(&self) -> (f64, f64) {
        if self.n == 0 {
            (f64::INFINITY, f64::NEG_INFINITY)
        } else {
            (self.f0, self.f1)
        }
    }

    fn int_ends(&self) -> (i64, i64) {
        if self.n == 0 {
            (i64::MAX, i64::MIN)
        } else {
            (self.i0, self.i1)
        }
    }

    pub(super) fn add_float(&mut self, agg: Agg, t: i64, v: f64) {
        let func = match agg {
            Agg::Part(func) => func,
            Agg::Stddev => {
                self.n += 1;
                self.f0 += v;
                self.f1 += v * v;
                return;
            }
            Agg::Median | Agg::Percentile(_) => {
                self.n += 1;
                self.vals().floats.push((v, t));
                return;
            }
        };
        match func {
            Func::Count => {}
            Func::Sum | Func::Mean => self.f0 += v,
            Func::Min | Func::Max | Func::Spread => {
                let (mut lo, mut hi) = self.float_ends();
                if v < lo {
                    lo = v;
                }
                if v > hi {
                    hi = v;
                }
                (self.f0, self.f1) = (lo, hi);
            }
            // Points of several series at the picked time: the larger value (`agg.rs`).
            Func::First => {
                if self.n == 0 || t < self.at || (t == self.at && v > self.f0) {
                    (self.at, self.f0) = (t, v);
                }
            }
            Func::Last => {
                if self.n == 0 || t > self.at || (t == self.at && v > self.f0) {
                    (self.at, self.f0) = (t, v);
                }
            }
        }
        self.n += 1;
    }

    pub(super) fn add_int(&mut self, agg: Agg, t: i64, v: i64) {
        let func = match agg {
            Agg::Part(func) => func,
            Agg::Stddev => {
                self.n += 1;
                let x = v as f64;
                self.f0 += x;
                self.f1 += x * x;
                return;
            }
            Agg::Median | Agg::Percentile(_) => {
                self.n += 1;
                self.vals().ints.push((v, t));
                return;
            }
        };
        match func {
            Func::Count => {}
            Func::Sum => self.i0 = self.i0.wrapping_add(v),
            Func::Mean => self.set_wide(self.wide() + i128::from(v)),
            Func::Min | Func::Max | Func::Spread => {
                let (lo, hi) = self.int_ends();
                (self.i0, self.i1) = (lo.min(v), hi.max(v));
            }
            Func::First => {
                if self.n == 0 || t < self.at || (t == self.at && v > self.i0) {
                    (self.at, self.i0) = (t, v);
                }
            }
            Func::Last => {
                if self.n == 0 || t > self.at || (t == self.at && v > self.i0) {
                    (self.at, self.i0) = (t, v);
                }
            }
        }
        self.n += 1;
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
                let mut sum = self.f0;
                for (&v, _) in points {
                    self.n += 1;
                    sum += v;
                }
                self.f0 = sum;
            }
            Agg::Part(Func::Min | Func::Max | Func::Spread) => {
                let (mut lo, mut hi) = self.float_ends();
                for (&v, _) in points {
                    self.n += 1;
                    if v < lo {
                        lo = v;
                    }
                    if v > hi {
                        hi = v;
                    }
                }
                if self.n > 0 {
                    (self.f0, self.f1) = (lo, hi);
                }
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
                    self.i0 = self.i0.wrapping_add(v);
                }
            }
            Agg::Part(Func::Mean) => {
                let mut wide = self.wide();
                for (&v, _) in points {
                    self.n += 1;
                    wide += i128::from(v);
                }
                self.set_wide(wide);
            }
            Agg::Part(Func::Min | Func::Max | Func::Spread) => {
                let (mut lo, mut hi) = self.int_ends();
                for (&v, _) in points {
                    self.n += 1;
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
                if self.n > 0 {
                    (self.i0, self.i1) = (lo, hi);
                }
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
                let var = ((self.f1 - self.f0 * self.f0 / n) / (n - 1.0)).max(0.0);
                return f(var.sqrt());
            }
            Agg::Median => return f(self.median()),
            Agg::Percentile(p) => {
                return match self.rank(p) {
                    None => Value::Null,
                    Some(k) if float => f(self.vals().floats[k].0),
                    Some(k) => Value::Integer(self.vals().ints[k].0),
                }
            }
        };
        match (func, float) {
            (Func::Count, _) => Value::Integer(i64::try_from(self.n).unwrap_or(i64::MAX)),
            (Func::Sum, true) => f(self.f0),
            (Func::Sum, false) => Value::Integer(self.i0),
            (Func::Mean, true) => f(self.f0 / self.n as f64),
            (Func::Mean, false) => f(self.wide() as f64 / self.n as f64),
            (Func::Min, true) => f(self.f0),
            (Func::Min, false) => Value::Integer(self.i0),
            (Func::Max, true) => f(self.f1),
            (Func::Max, false) => Value::Integer(self.i1),
            (Func::Spread, true) => f(self.f1 - self.f0),
            (Func::Spread, false) => Value::Integer(self.i1.wrapping_sub(self.i0)),
            (Func::First | Func::Last, true) => f(self.f0),
            (Func::First | Func::Last, false) => Value::Integer(self.i0),
        }
    }

    /// `quantileExactInclusive(0.5)`: the middle value, or the lower middle
    /// plus half the difference (an integer difference exact, then a float).
    fn median(&mut self) -> f64 {
        self.sort();
        let v: &Vals = self.vals();
        let len = v.floats.len().max(v.ints.len());
        let h = 0.5 * (len - 1) as f64 + 1.0;
        let n = h as usize;
        let frac = h - n as f64;
        let at = |k: usize| -> f64 {
            match v.floats.get(k) {
                Some(x) => x.0,
                None => v.ints[k].0 as f64,
            }
        };
        if n >= len {
            return at(len - 1);
        }
        let delta = if v.floats.is_empty() {
            (i128::from(v.ints[n].0) - i128::from(v.ints[n - 1].0)) as f64
        } else {
            v.floats[n].0 - v.floats[n - 1].0
        };
        at(n - 1) + frac * delta
    }

    /// InfluxDB's nearest rank of `percentile(f, p)` as the engine computes
    /// it (`floor(n * p / 100 + 0.5)`, 1-based), `None` outside the values;
    /// the values sorted by (value, time).
    pub(super) fn rank(&mut self, p: f64) -> Option<usize> {
        self.sort();
        let v: &Vals = self.vals();
        let len = v.floats.len().max(v.ints.len());
        let k = (len as f64 * p / 100.0 + 0.5).floor();
        (k >= 1.0 && k <= len as f64).then(|| k as usize - 1)
    }

    /// The time of the point at `rank` (`Acc::rank`).
    pub(super) fn time_at(&self, rank: usize) -> i64 {
        let v = self.vals.as_deref().expect("ranked values");
        match v.floats.get(rank) {
            Some(x) => x.1,
            None => v.ints[rank].1,
        }
    }

    fn sort(&mut self) {
        let v = self.vals();
        v.floats
            .sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        v.ints.sort_unstable();
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
