//! Arithmetic over pushed-down aggregates (`mean(v) * 8`, `sum(a) / sum(b)`, issue #43):
//! the shards compute the calls as partials, the node combines them
//! ([`super::Pushdown::combine`]) and then evaluates each column's arithmetic over its
//! group's combined values here, as the embedded statement's SQL (`expr::arithmetic`)
//! evaluates it over the same values:
//! - a float on either side makes the operation a float one (`Int64` converts to
//!   `Float64`), `/` is always a float one;
//! - two integers add, subtract and multiply as `Int64`, wrapping (the statement's
//!   `toInt64` of the engine's result keeps its low 64 bits, whatever width it computed in);
//! - `x / 0` is `0` (InfluxDB's rule, `if(r = 0, 0., l / r)`), even where `x` is null;
//! - otherwise a null operand makes the result null, and a float that is not finite reads
//!   as null (`rows.rs`).
//!
//! Only `+ - * /` over calls and integer or float literals are evaluated here; `%`, the bit
//! operators, other literals, and aggregates of unsigned, string or boolean fields (other
//! than counts) read the rows: their engine semantics are not restated here (over a string
//! the engine's arithmetic is null, even `x / 0`).

use influxql::ast::{BinaryOp, Expr, Literal};

use crate::influxql::expr::strip_parens;
use crate::influxql::series::Value;

/// One output column of a pushed-down statement, over its combined calls.
#[derive(Debug, Clone)]
pub(super) enum Output {
    /// Call `i`'s value as it is.
    Call(usize),
    /// Arithmetic over calls and literals.
    Arith(Arith),
}

/// Arithmetic over the combined calls.
#[derive(Debug, Clone)]
pub(super) enum Arith {
    Call(usize),
    Int(i64),
    Float(f64),
    Bin(BinaryOp, Box<Arith>, Box<Arith>),
}

/// `e` as an output over calls, each call pushed onto `calls` (`None`: arithmetic this
/// module does not evaluate).
pub(super) fn output(e: &Expr, calls: &mut Vec<Expr>) -> Option<Output> {
    match strip_parens(e) {
        Expr::Binary { .. } => {
            let a = arith(e, calls)?;
            // At least one aggregate: literal arithmetic alone is no aggregate column.
            a.has_call().then_some(Output::Arith(a))
        }
        e => {
            calls.push(e.clone());
            Some(Output::Call(calls.len() - 1))
        }
    }
}

fn arith(e: &Expr, calls: &mut Vec<Expr>) -> Option<Arith> {
    Some(match strip_parens(e) {
        Expr::Binary { op, lhs, rhs } => {
            if !matches!(
                op,
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
            ) {
                return None;
            }
            Arith::Bin(
                *op,
                Box::new(arith(lhs, calls)?),
                Box::new(arith(rhs, calls)?),
            )
        }
        Expr::Literal(Literal::Integer(i)) => Arith::Int(*i),
        Expr::Literal(Literal::Float(f)) if f.is_finite() => Arith::Float(*f),
        call @ Expr::Call { .. } => {
            calls.push(call.clone());
            Arith::Call(calls.len() - 1)
        }
        _ => return None,
    })
}

impl Arith {
    fn has_call(&self) -> bool {
        match self {
            Arith::Call(_) => true,
            Arith::Int(_) | Arith::Float(_) => false,
            Arith::Bin(_, l, r) => l.has_call() || r.has_call(),
        }
    }

    /// The calls it reads.
    pub(super) fn calls(&self, out: &mut Vec<usize>) {
        match self {
            Arith::Call(i) => out.push(*i),
            Arith::Int(_) | Arith::Float(_) => {}
            Arith::Bin(_, l, r) => {
                l.calls(out);
                r.calls(out);
            }
        }
    }

    /// Its value over a group's combined `values` (one per call).
    fn eval(&self, values: &[Value]) -> Value {
        match self {
            Arith::Call(i) => values[*i].clone(),
            Arith::Int(i) => Value::Integer(*i),
            Arith::Float(f) => Value::Float(*f),
            Arith::Bin(op, l, r) => binary(*op, l.eval(values), r.eval(values)),
        }
    }
}

/// `l op r` as `expr::arithmetic`'s SQL computes it in the engine.
fn binary(op: BinaryOp, l: Value, r: Value) -> Value {
    let float = |v: f64| {
        if v.is_finite() {
            Value::Float(v)
        } else {
            Value::Null
        }
    };
    if op == BinaryOp::Div {
        return match (l.as_f64(), r.as_f64()) {
            // `-0.0` too: it equals 0.
            (_, Some(0.0)) => Value::Float(0.0),
            (Some(l), Some(r)) => float(l / r),
            _ => Value::Null,
        };
    }
    match (l, r) {
        (Value::Integer(a), Value::Integer(b)) => Value::Integer(match op {
            BinaryOp::Add => a.wrapping_add(b),
            BinaryOp::Sub => a.wrapping_sub(b),
            _ => a.wrapping_mul(b),
        }),
        (l, r) => match (l.as_f64(), r.as_f64()) {
            (Some(a), Some(b)) => float(match op {
                BinaryOp::Add => a + b,
                BinaryOp::Sub => a - b,
                _ => a * b,
            }),
            _ => Value::Null,
        },
    }
}

/// The answer's values of each output, from the values of each call.
pub(super) fn outputs(outputs: &[Output], calls: Vec<Value>) -> Vec<Value> {
    let mut out = Vec::with_capacity(outputs.len() + 1);
    for o in outputs {
        out.push(match o {
            Output::Call(i) => calls[*i].clone(),
            Output::Arith(a) => a.eval(&calls),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn division_by_zero_is_zero_even_of_a_null() {
        let d = |l, r| binary(BinaryOp::Div, l, r);
        assert_eq!(d(Value::Null, Value::Integer(0)), Value::Float(0.0));
        assert_eq!(d(Value::Float(1.0), Value::Float(-0.0)), Value::Float(0.0));
        assert_eq!(d(Value::Integer(3), Value::Integer(2)), Value::Float(1.5));
        assert_eq!(d(Value::Integer(3), Value::Null), Value::Null);
    }

    #[test]
    fn integers_wrap_and_floats_widen() {
        let max = Value::Integer(i64::MAX);
        assert_eq!(
            binary(BinaryOp::Add, max.clone(), Value::Integer(1)),
            Value::Integer(i64::MIN)
        );
        assert_eq!(
            binary(BinaryOp::Mul, Value::Integer(3), Value::Float(0.5)),
            Value::Float(1.5)
        );
        assert_eq!(
            binary(BinaryOp::Sub, Value::Null, Value::Integer(1)),
            Value::Null
        );
        assert_eq!(
            binary(BinaryOp::Mul, Value::Float(f64::MAX), Value::Integer(2)),
            Value::Null
        );
    }
}
