//! `stddev` of an integer or unsigned field pushed down (issue #43): the embedded engine's
//! `stddevSamp` is computed from its moments `m0` (the count), `m1 = Σx` and `m2 = Σx²`, all
//! `Float64`, as `sqrt(max((m2 - m1 * m1 / m0) / (m0 - 1), 0))` (`agg.rs` answers null below
//! two values). Each shard sends `m1` and `m2` of its points per group and interval (not its
//! own `stddevSamp`: 18.16's is Welford's, which differs in the last bits); the node adds
//! them and applies that formula. For integers every partial sum is an integer, exact in a
//! `Float64` while below 2⁵³, whatever the order of addition, so the node's moments are the
//! engine's bit for bit. Rounding is monotone, so a computed `m2` below 2⁵³ proves every
//! square and every partial `m2` was exact, and `|Σx| ≤ Σx²` for integers bounds `m1` too;
//! past it the statement reads the rows (`CombineError::Inexact`). A float's sums depend on
//! the order of addition: its `stddev` reads the rows.

use influxql::ast::Expr;
use ingest::MeasurementSchema;

use super::combine::CombineError;
use crate::influxql::expr::strip_parens;
use crate::influxql::field_call::plain_field;
use crate::influxql::series::Value;

/// 2⁵³: integers up to it are exact in a `Float64`.
const EXACT_LIMIT: f64 = 9_007_199_254_740_992.0;

/// The field of `stddev(field)` as written.
pub(super) fn call<'e>(e: &'e Expr, schema: &MeasurementSchema) -> Option<&'e String> {
    let Expr::Call { name, args } = strip_parens(e) else {
        return None;
    };
    match (name.as_str(), args.as_slice()) {
        ("stddev", [arg]) => plain_field(arg, schema),
        _ => None,
    }
}

/// The partial columns' SQL over a group's points of value `v`: `Σx`, `Σx²` as floats.
pub(super) fn partial_sql(v: &str) -> (String, String) {
    (
        format!("sum(toFloat64({v}))"),
        format!("sum(toFloat64({v}) * toFloat64({v}))"),
    )
}

/// A group's `stddev` from its points with a value `n` and the sums `m1`, `m2` of their
/// values and squares (`None`: no partial sent one), as the engine's `stddevSamp` answers;
/// `Inexact` where `m2` is not provably exact.
pub(super) fn value(n: u64, m1: Option<f64>, m2: Option<f64>) -> Result<Value, CombineError> {
    if n < 2 {
        return Ok(Value::Null);
    }
    let (m1, m2) = (m1.unwrap_or(0.0), m2.unwrap_or(0.0));
    // A NaN is not exact either.
    if m2.is_nan() || m2 >= EXACT_LIMIT {
        return Err(CombineError::Inexact);
    }
    let m0 = n as f64;
    let var = (m2 - m1 * m1 / m0) / (m0 - 1.0);
    // The engine's `res > 0 ? res : 0`.
    let var = if var > 0.0 { var } else { 0.0 };
    Ok(Value::Float(var.sqrt()))
}

#[cfg(test)]
mod tests;
