//! The `WHERE` clause split the way InfluxDB reads it: the time range (from
//! top-level `AND`ed comparisons of `time`) and the rest of the condition.

use influxql::ast::{BinaryOp, Expr, Literal};

use super::error::InfluxqlError;
use super::expr::strip_parens;
use super::zone::TimeZone;

/// Inclusive bounds in ns since the epoch; `None` is unbounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct TimeRange {
    /// Earliest time included.
    pub(crate) min: Option<i64>,
    /// Latest time included.
    pub(crate) max: Option<i64>,
}

impl TimeRange {
    fn narrow_min(&mut self, t: i64) {
        self.min = Some(self.min.map_or(t, |m| m.max(t)));
    }

    fn narrow_max(&mut self, t: i64) {
        self.max = Some(self.max.map_or(t, |m| m.min(t)));
    }

    /// Whether no time can be in the range.
    pub(crate) fn is_empty(&self) -> bool {
        matches!((self.min, self.max), (Some(a), Some(b)) if a > b)
    }
}

/// A `WHERE` clause: its time range and its other top-level conjuncts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Where {
    /// From the `time` comparisons.
    pub(crate) range: TimeRange,
    /// Everything else, `AND`ed.
    pub(crate) rest: Vec<Expr>,
}

/// Splits `cond`; `now_ns` is `now()`.
pub(crate) fn split(cond: Option<&Expr>, now_ns: i64) -> Result<Where, InfluxqlError> {
    split_in(cond, now_ns, None)
}

/// Splits `cond` of a statement with `tz(zone)`: a time literal without an
/// offset (`'2020-09-13 07:00:00'`, `'2020-09-13'`) is a time in the zone, as
/// InfluxDB parses it (Go's `time.ParseInLocation`); one with `Z` or an offset
/// is that instant wherever.
pub(crate) fn split_in(
    cond: Option<&Expr>,
    now_ns: i64,
    zone: Option<&TimeZone>,
) -> Result<Where, InfluxqlError> {
    let mut out = Where::default();
    if let Some(c) = cond {
        match zone {
            Some(z) => add(&mut out, &localize(c, z), now_ns)?,
            None => add(&mut out, c, now_ns)?,
        }
    }
    Ok(out)
}

/// `e` with every offset-less time literal compared with `time` replaced by
/// the instant it names in `zone`.
fn localize(e: &Expr, zone: &TimeZone) -> Expr {
    let local = |x: &Expr| -> Expr {
        match strip_parens(x) {
            Expr::Literal(Literal::String(s)) if !has_offset(s) => {
                match influxql::parse_time_literal(s) {
                    Some(wall) => Expr::Literal(Literal::Integer(zone.instant_of_wall(wall))),
                    None => x.clone(),
                }
            }
            _ => x.clone(),
        }
    };
    match e {
        Expr::Binary { op, lhs, rhs } => {
            let is_time = |x: &Expr| matches!(strip_parens(x), Expr::VarRef { name, .. } if name.eq_ignore_ascii_case("time"));
            let (l, r) = if is_time(lhs) {
                (lhs.as_ref().clone(), local(rhs))
            } else if is_time(rhs) {
                (local(lhs), rhs.as_ref().clone())
            } else {
                (localize(lhs, zone), localize(rhs, zone))
            };
            Expr::Binary {
                op: *op,
                lhs: Box::new(l),
                rhs: Box::new(r),
            }
        }
        Expr::Paren(inner) => Expr::Paren(Box::new(localize(inner, zone))),
        other => other.clone(),
    }
}

/// Whether a time literal names its offset (`Z`, `+02:00`): the forms
/// without one are the date alone and `date time` with a space.
fn has_offset(s: &str) -> bool {
    !(s.len() == 10 || s.as_bytes().get(10) == Some(&b' '))
}

fn add(out: &mut Where, e: &Expr, now_ns: i64) -> Result<(), InfluxqlError> {
    let e = strip_parens(e);
    if let Expr::Binary {
        op: BinaryOp::And,
        lhs,
        rhs,
    } = e
    {
        add(out, lhs, now_ns)?;
        return add(out, rhs, now_ns);
    }
    let rest = extract(&mut out.range, e, now_ns)?;
    if rest != Expr::Literal(Literal::Boolean(true)) {
        out.rest.push(rest);
    }
    Ok(())
}

/// `e` with every `time` comparison taken into `range` and replaced by
/// `true`: InfluxDB 1.x intersects all of a condition's time comparisons,
/// wherever they stand (also under `OR`), into one range.
fn extract(range: &mut TimeRange, e: &Expr, now_ns: i64) -> Result<Expr, InfluxqlError> {
    if let Some((op, other)) = time_comparison(e) {
        let t = eval_time(other, now_ns)?;
        match op {
            BinaryOp::Gt => range.narrow_min(t.saturating_add(1)),
            BinaryOp::GtEq => range.narrow_min(t),
            BinaryOp::Lt => range.narrow_max(t.saturating_sub(1)),
            BinaryOp::LtEq => range.narrow_max(t),
            BinaryOp::Eq => {
                range.narrow_min(t);
                range.narrow_max(t);
            }
            other => {
                return Err(InfluxqlError::invalid(format!(
                    "invalid time comparison operator: {other}"
                )))
            }
        }
        return Ok(Expr::Literal(Literal::Boolean(true)));
    }
    Ok(match e {
        Expr::Paren(inner) => Expr::Paren(Box::new(extract(range, inner, now_ns)?)),
        Expr::Binary {
            op: op @ (BinaryOp::And | BinaryOp::Or),
            lhs,
            rhs,
        } => Expr::Binary {
            op: *op,
            lhs: Box::new(extract(range, lhs, now_ns)?),
            rhs: Box::new(extract(range, rhs, now_ns)?),
        },
        e if mentions_time(e) => {
            return Err(InfluxqlError::unsupported(
                "a time condition other than a comparison with a time",
            ))
        }
        e => e.clone(),
    })
}

/// `time op x` (or `x op time`, flipped) as `(op, x)`.
fn time_comparison(e: &Expr) -> Option<(BinaryOp, &Expr)> {
    let Expr::Binary { op, lhs, rhs } = e else {
        return None;
    };
    let is_time = |e: &Expr| matches!(strip_parens(e), Expr::VarRef { name, .. } if name.eq_ignore_ascii_case("time"));
    if is_time(lhs) {
        Some((*op, rhs))
    } else if is_time(rhs) {
        let flipped = match op {
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::GtEq => BinaryOp::LtEq,
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::LtEq => BinaryOp::GtEq,
            other => *other,
        };
        Some((flipped, lhs))
    } else {
        None
    }
}

fn mentions_time(e: &Expr) -> bool {
    match e {
        Expr::VarRef { name, .. } => name.eq_ignore_ascii_case("time"),
        Expr::Binary { lhs, rhs, .. } => mentions_time(lhs) || mentions_time(rhs),
        Expr::Paren(inner) => mentions_time(inner),
        Expr::Call { args, .. } => args.iter().any(mentions_time),
        _ => false,
    }
}

/// A time expression: `now()`, an RFC3339 string, an integer (ns), a
/// duration literal (`1600000000000ms`), sums and differences of those.
pub(crate) fn eval_time(e: &Expr, now_ns: i64) -> Result<i64, InfluxqlError> {
    match strip_parens(e) {
        Expr::Call { name, args } if name == "now" && args.is_empty() => Ok(now_ns),
        Expr::Literal(Literal::String(s)) => parse_time(s),
        Expr::Literal(Literal::Integer(i)) => Ok(*i),
        Expr::Literal(Literal::Duration(d)) => Ok(d.0),
        Expr::Literal(Literal::Float(f)) => Ok(*f as i64),
        Expr::Binary {
            op: op @ (BinaryOp::Add | BinaryOp::Sub),
            lhs,
            rhs,
        } => {
            let l = eval_time(lhs, now_ns)?;
            let r = eval_time(rhs, now_ns)?;
            Ok(if *op == BinaryOp::Add {
                l.saturating_add(r)
            } else {
                l.saturating_sub(r)
            })
        }
        Expr::Literal(_) => Err(InfluxqlError::invalid(
            "invalid operation: time and *influxql.StringLiteral are not compatible",
        )),
        other => Err(InfluxqlError::invalid(format!(
            "invalid operation: time and {other:?} are not compatible"
        ))),
    }
}

fn parse_time(s: &str) -> Result<i64, InfluxqlError> {
    influxql::parse_time_literal(s).ok_or_else(|| {
        InfluxqlError::invalid(
            "invalid operation: time and *influxql.StringLiteral are not compatible",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use influxql::ast::Duration;

    fn time() -> Box<Expr> {
        Box::new(Expr::VarRef {
            name: "time".into(),
            data_type: None,
        })
    }

    fn bin(op: BinaryOp, lhs: Box<Expr>, rhs: Box<Expr>) -> Box<Expr> {
        Box::new(Expr::Binary { op, lhs, rhs })
    }

    #[test]
    fn bounds_from_comparisons_in_either_order() {
        let now = 10_000_000_000;
        let hour = Box::new(Expr::Literal(Literal::Duration(Duration(1_000_000_000))));
        let now_minus = bin(
            BinaryOp::Sub,
            Box::new(Expr::Call {
                name: "now".into(),
                args: vec![],
            }),
            hour,
        );
        let e = bin(
            BinaryOp::And,
            bin(BinaryOp::Gt, time(), now_minus),
            bin(
                BinaryOp::GtEq,
                Box::new(Expr::Literal(Literal::Integer(9_500_000_000))),
                time(),
            ),
        );
        let w = split(Some(&e), now).unwrap();
        assert_eq!(
            w.range,
            TimeRange {
                min: Some(9_000_000_001),
                max: Some(9_500_000_000)
            }
        );
        assert!(w.rest.is_empty());
    }

    #[test]
    fn time_under_or_narrows_the_range_as_influxdb_does() {
        let e = bin(
            BinaryOp::Or,
            bin(
                BinaryOp::Gt,
                time(),
                Box::new(Expr::Literal(Literal::Integer(1))),
            ),
            bin(
                BinaryOp::Eq,
                Box::new(Expr::VarRef {
                    name: "host".into(),
                    data_type: None,
                }),
                Box::new(Expr::Literal(Literal::String("a".into()))),
            ),
        );
        let w = split(Some(&e), 0).unwrap();
        assert_eq!(w.range.min, Some(2));
        assert!(matches!(
            &w.rest[0],
            Expr::Binary { op: BinaryOp::Or, lhs, .. } if **lhs == Expr::Literal(Literal::Boolean(true))
        ));
    }

    #[test]
    fn offset_less_literals_are_times_in_the_statement_zone() {
        let zone = TimeZone::load("America/Chicago").expect("zoneinfo");
        let cond = |lit: &str| {
            bin(
                BinaryOp::GtEq,
                time(),
                Box::new(Expr::Literal(Literal::String(lit.into()))),
            )
        };
        let min = |lit: &str| {
            split_in(Some(&cond(lit)), 0, Some(&zone))
                .unwrap()
                .range
                .min
        };
        const S: i64 = 1_000_000_000;
        // CDT is UTC-5 in September: 07:00 there is 12:00 UTC.
        assert_eq!(min("2020-09-13 07:00:00"), Some(1_599_998_400 * S));
        assert_eq!(min("2020-09-13"), Some((1_599_955_200 + 5 * 3600) * S));
        // An instant named with its offset stays that instant.
        assert_eq!(min("2020-09-13T07:00:00Z"), Some(1_599_980_400 * S));
        // Without tz(): UTC, as before.
        assert_eq!(
            split(Some(&cond("2020-09-13 07:00:00")), 0)
                .unwrap()
                .range
                .min,
            Some(1_599_980_400 * S)
        );
    }
}
