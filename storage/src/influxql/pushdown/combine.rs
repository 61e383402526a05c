//! The partial rows of a pushed-down aggregate combined in Rust: the rows
//! [`Pushdown::combine_sql`] answers in the embedded engine, value for value, without its
//! statement (3–4 ms of planning in a release build however few the rows, part of what a
//! small statement costs on a cluster, issue #43).
//!
//! Each rule below is the engine statement's, so that the answer is the same whichever
//! combines:
//! - the groups are `(interval start, GROUP BY tag values)`; without a window or tags one
//!   group answers even when no partial row came (an aggregate without `GROUP BY`), and is
//!   dropped with every group without a value where the plan drops them in the statement
//!   (`HAVING`, [`Presence::InSql`]);
//! - rows in `ORDER BY` tag values (bytes), then time, nulls last;
//! - counts are `Int64`, null at 0; sums keep the field's type (`Int64` and `UInt64` wrap as
//!   the engine's `sum` does) and add in the partials' order (shards, then the node's: the
//!   order the statement read them), one at a time from `0.0` (the engine's `-0.0 + 0.0` is
//!   `0.0` too; its unrolled lanes for a statement without `GROUP BY` could differ in the
//!   last bit only with many partial rows per group, one per shard); `mean` is the float sum over the count; `spread` of an
//!   `Int64` or `UInt64` field is an `Int64` difference, wrapping (the engine's `minus`);
//! - `first`/`last`: the partial with the greatest `(-t, v)` / `(t, v)` among those holding a
//!   value, the earlier row kept on a tie (`argMax`), the time of the point picked when the
//!   statement shows it (null without a value, 0 without any partial row);
//! - a float that is not finite reads as null, as `rows.rs` reads the engine's answer.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};

use engine::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use engine::arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};
use engine::table::ColumnKind;

use super::stddev;
use super::values::{Counts, MAX_VALUES};
use super::{Form, Pushdown, MAX_DISTINCT_VALUES};
use crate::influxql::field_call::Func;
use crate::influxql::fill::window_start_in;
use crate::influxql::plan::Presence;
use crate::influxql::rows::Row;
use crate::influxql::series::Value;

/// Why partial rows were not combined here (the engine's statement combines them then).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CombineError {
    /// Used if a partial batch lacks a column the statement's partials have.
    #[error("no partial column {0}")]
    Missing(String),
    /// Used if a group's `count(DISTINCT)` set holds more than `MAX_DISTINCT_VALUES`
    /// values (a shard sent none, or the union grew past it): the rows are read instead.
    #[error("a count(DISTINCT) set over {MAX_DISTINCT_VALUES} values")]
    DistinctTooLarge,
    /// Used if a group's whole aggregate came in more than one partial row (its points
    /// were not on one shard).
    #[error("a group's whole aggregate in more than one partial row of column {0}")]
    Split(String),
    /// Used if a `count(DISTINCT)` set is not in the partial statement's encoding.
    #[error("a malformed count(DISTINCT) set in partial column {0}")]
    DistinctEncoding(String),
    /// Used if a group's `mode` or `distinct` has more than `MAX_VALUES` values (a shard sent
    /// none, or the union grew past it): the rows are read instead.
    #[error("a mode or distinct over {MAX_VALUES} values")]
    ModeTooLarge,
    /// Used if a `mode` or `distinct` partial is not in the partial statement's encoding.
    #[error("a malformed mode or distinct partial: {0}")]
    ModeEncoding(String),
    /// Used if a group's `stddev` sums are not provably exact (`stddev.rs`): the rows are
    /// read instead.
    #[error("a stddev's sum of squares past 2^53")]
    Inexact,
    /// Used if a partial column is of a type this combination does not read.
    #[error("partial column {name} of Arrow type {found}")]
    Type {
        /// The column.
        name: String,
        /// Its type.
        found: DataType,
    },
}

/// One value of a partial column.
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Float(f64),
    Int(i64),
    UInt(u64),
    Str(String),
}

impl Scalar {
    /// `self` + `x` as the engine's `sum` adds (wrapping integers).
    fn add(self, x: &Scalar) -> Scalar {
        match (self, x) {
            (Scalar::Float(a), Scalar::Float(b)) => Scalar::Float(a + b),
            (Scalar::Int(a), Scalar::Int(b)) => Scalar::Int(a.wrapping_add(*b)),
            (Scalar::UInt(a), Scalar::UInt(b)) => Scalar::UInt(a.wrapping_add(*b)),
            (a, _) => a,
        }
    }

    /// The zero a sum starts from.
    fn zero(&self) -> Scalar {
        match self {
            Scalar::Float(_) => Scalar::Float(0.0),
            Scalar::Int(_) => Scalar::Int(0),
            Scalar::UInt(_) => Scalar::UInt(0),
            Scalar::Str(_) => Scalar::Str(String::new()),
        }
    }

    /// The order of the engine's comparisons (`<`, `>`; strings by bytes); `None` for a
    /// NaN, which no comparison prefers.
    fn cmp(&self, other: &Scalar) -> Option<Ordering> {
        match (self, other) {
            (Scalar::Float(a), Scalar::Float(b)) => a.partial_cmp(b),
            (Scalar::Int(a), Scalar::Int(b)) => Some(a.cmp(b)),
            (Scalar::UInt(a), Scalar::UInt(b)) => Some(a.cmp(b)),
            (Scalar::Str(a), Scalar::Str(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
            _ => None,
        }
    }

    fn value(self) -> Value {
        match self {
            Scalar::Float(f) => float(f),
            Scalar::Int(i) => Value::Integer(i),
            Scalar::UInt(u) => Value::Unsigned(u),
            Scalar::Str(s) => Value::String(s.into()),
        }
    }
}

/// A float of the answer: InfluxDB has no NaN or infinities to show (`rows.rs`).
fn float(f: f64) -> Value {
    if f.is_finite() {
        Value::Float(f)
    } else {
        Value::Null
    }
}

/// One partial column, typed.
enum Cells {
    Float(ArrayRef),
    Int(ArrayRef),
    UInt(ArrayRef),
    Str(ArrayRef),
}

impl Cells {
    /// Column `name` of `batch`, read as a column of `kind` ([`Pushdown::partial_kinds`]):
    /// the shards' batches have these types already (`cluster::read`); the engine's
    /// answer over the node's rows may send text as binary or a dictionary.
    fn of(batch: &RecordBatch, name: &str, kind: ColumnKind) -> Result<Cells, CombineError> {
        let col = batch
            .column_by_name(name)
            .ok_or_else(|| CombineError::Missing(name.to_string()))?;
        let want = match kind {
            ColumnKind::Float => DataType::Float64,
            ColumnKind::Integer => DataType::Int64,
            ColumnKind::Unsigned => DataType::UInt64,
            ColumnKind::Tag | ColumnKind::String => DataType::Utf8,
            ColumnKind::Boolean => DataType::UInt8,
        };
        let bad = || CombineError::Type {
            name: name.to_string(),
            found: col.data_type().clone(),
        };
        let col = match col.data_type() {
            t if *t == want => col.clone(),
            DataType::Binary | DataType::LargeBinary | DataType::LargeUtf8 | DataType::Utf8View
                if want == DataType::Utf8 =>
            {
                engine::arrow::compute::cast(col, &want).map_err(|_| bad())?
            }
            DataType::Dictionary(_, _) if want == DataType::Utf8 => {
                engine::arrow::compute::cast(col, &want).map_err(|_| bad())?
            }
            _ => return Err(bad()),
        };
        Ok(match want {
            DataType::Float64 => Cells::Float(col),
            DataType::Int64 => Cells::Int(col),
            DataType::UInt64 => Cells::UInt(col),
            DataType::Utf8 => Cells::Str(col),
            _ => return Err(bad()),
        })
    }

    /// Row `i` (`None`: null).
    fn get(&self, i: usize) -> Option<Scalar> {
        let (Cells::Float(a) | Cells::Int(a) | Cells::UInt(a) | Cells::Str(a)) = self;
        if a.is_null(i) {
            return None;
        }
        Some(match self {
            Cells::Float(a) => Scalar::Float(a.as_primitive::<Float64Type>().value(i)),
            Cells::Int(a) => Scalar::Int(a.as_primitive::<Int64Type>().value(i)),
            Cells::UInt(a) => Scalar::UInt(a.as_primitive::<UInt64Type>().value(i)),
            Cells::Str(a) => Scalar::Str(a.as_string::<i32>().value(i).to_string()),
        })
    }

    fn int(&self, i: usize) -> Option<i64> {
        match self.get(i) {
            Some(Scalar::Int(v)) => Some(v),
            _ => None,
        }
    }

    fn uint(&self, i: usize) -> u64 {
        match self.get(i) {
            Some(Scalar::UInt(v)) => v,
            _ => 0,
        }
    }

    fn text(&self, i: usize) -> String {
        match self.get(i) {
            Some(Scalar::Str(s)) => s,
            _ => String::new(),
        }
    }
}

/// One call's partial columns in one batch (by [`Pushdown::partial_columns`]' names).
struct CallCells {
    /// `s<i>`: the sum (`sum`, `mean`, `stddev`).
    sum: Option<Cells>,
    /// `q<i>`: the sum of squares (`stddev`).
    squares: Option<Cells>,
    /// `m<i>`, `x<i>`: the minimum, the maximum.
    min: Option<Cells>,
    max: Option<Cells>,
    /// `v<i>`, `t<i>`: the picked value and its time (`first`, `last`).
    pick: Option<(Cells, Cells)>,
    /// `t<i>`: the time of the minimum's (maximum's) point (a lone `min`, `max`).
    at: Option<Cells>,
    /// `d<i>`: the set of values (`count(DISTINCT)`), encoded.
    set: Option<Cells>,
    /// `w<i>`: the group's whole aggregate (`median`, `percentile`).
    whole: Option<Cells>,
    /// `o<i>`: each value's points (`mode`, `distinct`), encoded.
    mode: Option<Cells>,
}

/// One call's combination so far in one group.
#[derive(Default)]
struct CallState {
    sum: Option<Scalar>,
    squares: Option<Scalar>,
    min: Option<Scalar>,
    max: Option<Scalar>,
    /// The picked partial's time and value.
    pick: Option<(i64, Scalar)>,
    /// The time of the point of `min` or `max` (a lone selector's).
    at: Option<i64>,
    /// The values seen (`count(DISTINCT)`), as the partials encode them.
    set: HashSet<Vec<u8>>,
    /// The group's whole aggregate, and whether a partial row sent it.
    whole: Option<Scalar>,
    whole_rows: u32,
    /// Each value's points (`mode`, `distinct`).
    mode: Counts,
}

/// One group's combination so far.
struct Group {
    /// Partial rows merged.
    rows: u64,
    /// Per field: its points with a value (`n<j>`), summed.
    n: Vec<u64>,
    calls: Vec<CallState>,
}

impl Pushdown {
    /// The rows [`Pushdown::combine_sql`] answers over the partial rows of `batches` (each
    /// with the columns of [`Pushdown::partial_kinds`]), in the same order.
    pub(super) fn combine(&self, batches: &[&RecordBatch]) -> Result<Vec<Row>, CombineError> {
        let kinds: BTreeMap<String, ColumnKind> = self.partial_kinds().into_iter().collect();
        let cells = |b: &RecordBatch, name: String| -> Result<Cells, CombineError> {
            let kind = *kinds
                .get(&name)
                .ok_or_else(|| CombineError::Missing(name.clone()))?;
            Cells::of(b, &name, kind)
        };
        let new_group = || Group {
            rows: 0,
            n: vec![0; self.fields.len()],
            calls: self.calls.iter().map(|_| CallState::default()).collect(),
        };
        // Keyed by tag values, then interval: the answer's order.
        let mut groups: BTreeMap<(Vec<String>, i64), Group> = BTreeMap::new();
        if self.window.is_none() && self.groups.is_empty() {
            // An aggregate without `GROUP BY`: one row, partials or not.
            groups.insert((Vec::new(), 0), new_group());
        }
        for batch in batches {
            let b = cells(batch, "b".into())?;
            let tags: Vec<Cells> = (0..self.groups.len())
                .map(|g| cells(batch, format!("k{g}")))
                .collect::<Result<_, _>>()?;
            let n: Vec<Cells> = (0..self.fields.len())
                .map(|j| cells(batch, format!("n{j}")))
                .collect::<Result<_, _>>()?;
            let calls: Vec<CallCells> = self
                .calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let col = |p: &str| cells(batch, format!("{p}{i}"));
                    Ok(CallCells {
                        sum: (matches!(c.func, Func::Sum | Func::Mean) || c.form == Form::Stddev)
                            .then(|| col("s"))
                            .transpose()?,
                        squares: (c.form == Form::Stddev).then(|| col("q")).transpose()?,
                        min: matches!(c.func, Func::Min | Func::Spread)
                            .then(|| col("m"))
                            .transpose()?,
                        max: matches!(c.func, Func::Max | Func::Spread)
                            .then(|| col("x"))
                            .transpose()?,
                        pick: match c.func {
                            Func::First | Func::Last => Some((col("v")?, col("t")?)),
                            _ => None,
                        },
                        at: (self.point_time
                            && (matches!(c.func, Func::Min | Func::Max) || c.whole()))
                        .then(|| col("t"))
                        .transpose()?,
                        set: (c.form == Form::Distinct).then(|| col("d")).transpose()?,
                        whole: c.whole().then(|| col("w")).transpose()?,
                        mode: c.form.runs().then(|| col("o")).transpose()?,
                    })
                })
                .collect::<Result<_, CombineError>>()?;
            for row in 0..batch.num_rows() {
                let bucket = match (self.window, &self.zone) {
                    // A shard interval, inside one of the zone's windows (`zone_grain`).
                    (Some(w), Some(zone)) => {
                        window_start_in(b.int(row).unwrap_or(0), w.interval, w.offset, Some(zone))
                    }
                    (Some(_), None) => b.int(row).unwrap_or(0),
                    (None, _) => 0,
                };
                let key = (tags.iter().map(|t| t.text(row)).collect(), bucket);
                let group = groups.entry(key).or_insert_with(new_group);
                group.rows += 1;
                for (sum, col) in group.n.iter_mut().zip(&n) {
                    *sum = sum.wrapping_add(col.uint(row));
                }
                for (i, (c, cols)) in self.calls.iter().zip(&calls).enumerate() {
                    let present = n[c.field].uint(row) > 0;
                    if let Some(set) = &cols.set {
                        merge_set(&mut group.calls[i].set, set, row, present)
                            .map_err(|e| e.named(&format!("d{i}")))?;
                    }
                    if let Some(mode) = &cols.mode {
                        let text = match mode.get(row) {
                            Some(Scalar::Str(s)) => Some(s),
                            _ => None,
                        };
                        group.calls[i].mode.merge(text.as_deref(), present)?;
                    }
                    if let (Some(whole), true) = (&cols.whole, present) {
                        // The rule of `decompose`: a group's points are on one shard (or
                        // on the node), so one partial row holds them all.
                        let state = &mut group.calls[i];
                        state.whole_rows += 1;
                        if state.whole_rows > 1 {
                            return Err(CombineError::Split(format!("w{i}")));
                        }
                        state.whole = whole.get(row);
                        state.at = cols.at.as_ref().and_then(|t| t.int(row));
                    }
                    merge(c.func, &mut group.calls[i], cols, row, present);
                }
            }
        }
        let mut rows = Vec::with_capacity(groups.len());
        for ((tags, bucket), group) in groups {
            let any = group.n.iter().map(|n| u128::from(*n)).sum::<u128>() > 0;
            if self.presence == Presence::InSql && !any {
                continue;
            }
            rows.push(self.row(tags, bucket, group)?);
        }
        // Ordered by tags, then interval; without a window one row per tag set, so a null
        // time (last in the statement's order) breaks no tie.
        Ok(rows)
    }

    /// A group's answer row.
    fn row(&self, tags: Vec<String>, bucket: i64, group: Group) -> Result<Row, CombineError> {
        let time = if self.window.is_some() {
            Some(bucket)
        } else if self.point_time {
            // `if(sum(n) = 0, NULL, minIf(t, n > 0))`: over no row at all `sum(n)` is null,
            // not 0, and `minIf` the type's default (a row the executor drops, its value
            // null).
            let n = group.n[self.calls[0].field];
            let state = &group.calls[0];
            let picked = state.pick.as_ref().map(|(t, _)| *t).or(state.at);
            match (group.rows, picked) {
                (0, _) => Some(0),
                (_, Some(t)) if n > 0 => Some(t),
                _ => None,
            }
        } else {
            Some(self.start)
        };
        // One slot more: the answer row puts the time in front (`exec::to_series`).
        let mut values = Vec::with_capacity(self.calls.len() + 1);
        for (c, state) in self.calls.iter().zip(group.calls) {
            let n = group.n[c.field];
            let f = &self.fields[c.field];
            values.push(match c.func {
                _ if c.form == Form::Mode => state.mode.cell(f.kind)?,
                _ if c.form == Form::Values => state.mode.distinct_cell(f.kind)?,
                _ if c.whole() => state.whole.map_or(Value::Null, Scalar::value),
                _ if c.form == Form::Stddev => {
                    let float = |s: Option<Scalar>| match s {
                        Some(Scalar::Float(f)) => Some(f),
                        _ => None,
                    };
                    stddev::value(n, float(state.sum), float(state.squares))?
                }
                Func::Count if c.form == Form::Distinct => match (n, state.set.len()) {
                    (0, _) | (_, 0) => Value::Null,
                    (_, len) => Value::Integer(len as i64),
                },
                Func::Count => match n {
                    0 => Value::Null,
                    n => Value::Integer(n as i64),
                },
                Func::Sum => state.sum.map_or(Value::Null, Scalar::value),
                Func::Mean => match (n, state.sum) {
                    (0, _) | (_, None) => Value::Null,
                    (n, Some(Scalar::Float(s))) => float(s / n as f64),
                    (_, Some(_)) => Value::Null,
                },
                Func::Min => state.min.map_or(Value::Null, Scalar::value),
                Func::Max => state.max.map_or(Value::Null, Scalar::value),
                Func::Spread => spread(f.kind, state.max, state.min),
                Func::First | Func::Last => state.pick.map_or(Value::Null, |(_, v)| v.value()),
            });
        }
        Ok(Row {
            time,
            group: tags,
            values,
        })
    }
}

/// `max(x) - min(m)` as the engine's `minus` computes it: floats as floats, two `Int64`s or
/// two `UInt64`s as an `Int64`, wrapping; null where either is.
fn spread(kind: ColumnKind, max: Option<Scalar>, min: Option<Scalar>) -> Value {
    match (kind, max, min) {
        (_, Some(Scalar::Float(x)), Some(Scalar::Float(m))) => float(x - m),
        (_, Some(Scalar::Int(x)), Some(Scalar::Int(m))) => Value::Integer(x.wrapping_sub(m)),
        (_, Some(Scalar::UInt(x)), Some(Scalar::UInt(m))) => {
            Value::Integer((x as i64).wrapping_sub(m as i64))
        }
        _ => Value::Null,
    }
}

impl CombineError {
    /// The error with column `name` where it names one.
    fn named(self, name: &str) -> CombineError {
        match self {
            CombineError::DistinctEncoding(_) => CombineError::DistinctEncoding(name.to_string()),
            other => other,
        }
    }
}

/// Splits the next value off a shard's encoded values, `<bytes>:<value>` (the form
/// `count(DISTINCT)`'s sets and `mode`'s runs share); `None`: not of that form.
pub(super) fn next_value<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let colon = rest.iter().position(|b| *b == b':')?;
    let len: usize = std::str::from_utf8(&rest[..colon]).ok()?.parse().ok()?;
    let end = (colon + 1).checked_add(len)?;
    let value = rest.get(colon + 1..end)?;
    *rest = &rest[end..];
    Some(value)
}

/// Adds the values of partial row `row`'s `count(DISTINCT)` set (`present`: it holds a
/// value) to `set`: each value as `<bytes>:<value>`, one after another; a null set where
/// values were is one the shard did not send (over `MAX_DISTINCT_VALUES`).
fn merge_set(
    set: &mut HashSet<Vec<u8>>,
    cells: &Cells,
    row: usize,
    present: bool,
) -> Result<(), CombineError> {
    let encoded = match cells.get(row) {
        Some(Scalar::Str(s)) => s,
        None if present => return Err(CombineError::DistinctTooLarge),
        _ => return Ok(()),
    };
    let bad = || CombineError::DistinctEncoding(String::new());
    let mut rest = encoded.as_bytes();
    while !rest.is_empty() {
        let value = next_value(&mut rest).ok_or_else(bad)?;
        set.insert(value.to_vec());
    }
    if set.len() > MAX_DISTINCT_VALUES {
        return Err(CombineError::DistinctTooLarge);
    }
    Ok(())
}

/// Adds partial row `row` (`present`: it holds a value of the call's field) to `state`.
fn merge(func: Func, state: &mut CallState, cols: &CallCells, row: usize, present: bool) {
    if let Some(x) = cols.sum.as_ref().and_then(|c| c.get(row)) {
        let sum = state.sum.take().unwrap_or_else(|| x.zero());
        state.sum = Some(sum.add(&x));
    }
    if let Some(x) = cols.squares.as_ref().and_then(|c| c.get(row)) {
        let sum = state.squares.take().unwrap_or_else(|| x.zero());
        state.squares = Some(sum.add(&x));
    }
    // `min` replaces on less, `max` on greater: the first of equal values stays, unless
    // the lone selector's point time `at` is kept: then the earlier point of equal values.
    let at = cols.at.as_ref().and_then(|c| c.int(row));
    let earlier = |kept: Option<i64>| matches!((at, kept), (Some(t), Some(k)) if t < k);
    if let Some(x) = cols.min.as_ref().and_then(|c| c.get(row)) {
        let better = match state.min.as_ref().map(|m| x.cmp(m)) {
            None => true,
            Some(o) => {
                o == Some(Ordering::Less) || (o == Some(Ordering::Equal) && earlier(state.at))
            }
        };
        if better {
            state.min = Some(x);
            state.at = at;
        }
    }
    if let Some(x) = cols.max.as_ref().and_then(|c| c.get(row)) {
        let better = match state.max.as_ref().map(|m| x.cmp(m)) {
            None => true,
            Some(o) => {
                o == Some(Ordering::Greater) || (o == Some(Ordering::Equal) && earlier(state.at))
            }
        };
        if better {
            state.max = Some(x);
            state.at = at;
        }
    }
    let Some((v, t)) = &cols.pick else { return };
    if !present {
        return;
    }
    // `argMaxIf(v, (-t, v) or (t, v), n > 0)`: a null `v` or `t` is the type's default
    // there (`assumeNotNull`).
    let t = t.int(row).unwrap_or(0);
    let Some(v) = v.get(row) else { return };
    let key = |t: i64| {
        if func == Func::First {
            t.wrapping_neg()
        } else {
            t
        }
    };
    let better = match &state.pick {
        None => true,
        Some((bt, bv)) => match key(t).cmp(&key(*bt)) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => v.cmp(bv) == Some(Ordering::Greater),
        },
    };
    if better {
        state.pick = Some((t, v));
    }
}

#[cfg(test)]
#[path = "combine_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "combine_engine_tests.rs"]
mod engine_tests;
