//! InfluxDB's checks of a `SELECT` that need no schema: what may be
//! aggregated, transformed or selected together, before any name is resolved.

use super::*;

/// InfluxDB's statement checks that need no schema.
pub(crate) fn check(stmt: &SelectStatement) -> Result<Shape, InfluxqlError> {
    if stmt.into.is_some() {
        return Err(InfluxqlError::unsupported("SELECT ... INTO"));
    }
    let window = stmt
        .dimensions
        .iter()
        .any(|d| matches!(d, Dimension::Time { .. }));
    let mut calls = 0;
    let mut raw = 0;
    for f in &stmt.fields {
        if !has_variable(&f.expr) {
            return Err(InfluxqlError::invalid(
                "field must contain at least one variable",
            ));
        }
        let (c, r) = count_calls(&f.expr, window)?;
        calls += c;
        raw += r;
    }
    if calls == 0 && window {
        return Err(InfluxqlError::invalid(
            "GROUP BY requires at least one aggregate function",
        ));
    }
    if calls > 0 && raw > 0 && !lone_selector(stmt) && lone_top(stmt).is_none() {
        return Err(InfluxqlError::invalid(
            "mixing aggregate and non-aggregate queries is not supported",
        ));
    }
    Ok(Shape {
        aggregate: calls > 0,
    })
}

/// (calls, bare names) in a selected expression; unknown functions refused.
pub(super) fn count_calls(e: &Expr, window: bool) -> Result<(usize, usize), InfluxqlError> {
    Ok(match e {
        Expr::Call { name, args } if agg::TRANSFORMS.contains(&name.as_str()) => {
            check_transform(name, args, window)?
        }
        Expr::Call { name, args } => {
            if agg::UNSUPPORTED.contains(&name.as_str()) {
                return Err(InfluxqlError::unsupported(format!("{name}()")));
            }
            if !agg::AGGREGATES.contains(&name.as_str()) {
                return Err(InfluxqlError::invalid(format!(
                    "undefined function {name}()"
                )));
            }
            if let Some(Expr::Call { name: inner, .. }) = args.first().map(strip_parens) {
                if !(name == "count" && inner == "distinct") {
                    return Err(InfluxqlError::unsupported(format!(
                        "{inner}() inside {name}()"
                    )));
                }
            }
            (1, 0)
        }
        Expr::Binary { lhs, rhs, .. } => {
            let (a, b) = count_calls(lhs, window)?;
            let (c, d) = count_calls(rhs, window)?;
            (a + c, b + d)
        }
        Expr::Paren(inner) => count_calls(inner, window)?,
        Expr::VarRef { name, .. } if name.eq_ignore_ascii_case("time") => (0, 0),
        Expr::VarRef { .. } | Expr::Wildcard(_) | Expr::Literal(Literal::Regex(_)) => (0, 1),
        Expr::Literal(_) => (0, 0),
    })
}

/// A transformation's arguments, InfluxDB's checks: of points without
/// `GROUP BY time`, of an aggregate with it. Counts as what it transforms.
pub(super) fn check_transform(
    name: &str,
    args: &[Expr],
    window: bool,
) -> Result<(usize, usize), InfluxqlError> {
    let (min, max) = match name {
        "derivative" | "non_negative_derivative" | "elapsed" => (1, 2),
        "moving_average" => (2, 2),
        _ => (1, 1),
    };
    if args.len() < min || args.len() > max {
        let expected = if min == max {
            min.to_string()
        } else {
            format!("{min} or {max}")
        };
        return Err(InfluxqlError::invalid(format!(
            "invalid number of arguments for {name}, expected {expected}, got {}",
            args.len()
        )));
    }
    match strip_parens(&args[0]) {
        Expr::VarRef { .. } if window => Err(InfluxqlError::invalid(format!(
            "aggregate function required inside the call to {name}"
        ))),
        Expr::VarRef { .. } => Ok((0, 1)),
        inner @ Expr::Call { .. } => {
            if !window {
                return Err(InfluxqlError::invalid(format!(
                    "{name} aggregate requires a GROUP BY interval"
                )));
            }
            let (c, _) = count_calls(inner, window)?;
            Ok((c, 0))
        }
        Expr::Wildcard(_) | Expr::Literal(Literal::Regex(_)) if !window => Ok((0, 1)),
        _ => Err(InfluxqlError::unsupported(format!(
            "{name}() of this argument"
        ))),
    }
}

/// `derivative(...)`, maybe inside literal arithmetic (`derivative(...) * 8`):
/// the call, its arguments and the arithmetic, innermost first.
pub(crate) fn transform_parts(e: &Expr) -> Option<(&str, &[Expr], Scale)> {
    match strip_parens(e) {
        Expr::Call { name, args } if agg::TRANSFORMS.contains(&name.as_str()) => {
            Some((name.as_str(), args.as_slice(), Vec::new()))
        }
        Expr::Binary { op, lhs, rhs } if expr::is_arithmetic(*op) => {
            let number = |e: &Expr| match strip_parens(e) {
                Expr::Literal(Literal::Integer(i)) => Some(*i as f64),
                Expr::Literal(Literal::Float(f)) => Some(*f),
                _ => None,
            };
            let (inner, lit, lit_left) = match (number(lhs), number(rhs)) {
                (None, Some(r)) => (lhs, r, false),
                (Some(l), None) => (rhs, l, true),
                _ => return None,
            };
            let (name, args, mut scale) = transform_parts(inner)?;
            scale.push((*op, lit, lit_left));
            Some((name, args, scale))
        }
        _ => None,
    }
}

/// The transformation of `derivative(x, 1s)`-like arguments.
pub(super) fn transform_of(
    name: &str,
    args: &[Expr],
    scale: Scale,
) -> Result<Transform, InfluxqlError> {
    let second = args.get(1).map(strip_parens);
    let unit = match second {
        Some(Expr::Literal(Literal::Duration(d))) => Some(d.0),
        _ => None,
    };
    let n = match (name, second) {
        ("moving_average", Some(Expr::Literal(Literal::Integer(n)))) if *n > 1 => *n as usize,
        ("moving_average", _) => {
            return Err(InfluxqlError::invalid(
                "moving_average window must be greater than 1",
            ))
        }
        _ => 0,
    };
    Ok(Transform {
        function: name.to_string(),
        unit,
        n,
        scale,
    })
}

/// `SELECT top(x, 3), host`: one `top`/`bottom` call, and bare names that
/// take the picked points' values.
pub(super) fn lone_top(stmt: &SelectStatement) -> Option<(&str, &[Expr])> {
    match not_bare_names(stmt).as_slice() {
        [Expr::Call { name, args }] if name == "top" || name == "bottom" => {
            Some((name.as_str(), args.as_slice()))
        }
        _ => None,
    }
}

/// Whether `e` names anything (a field, a tag, a wildcard, a call).
pub(super) fn has_variable(e: &Expr) -> bool {
    match e {
        Expr::VarRef { .. } | Expr::Wildcard(_) | Expr::Call { .. } => true,
        Expr::Literal(Literal::Regex(_)) => true,
        Expr::Literal(_) => false,
        Expr::Binary { lhs, rhs, .. } => has_variable(lhs) || has_variable(rhs),
        Expr::Paren(inner) => has_variable(inner),
    }
}

/// Whether a call reads one named field (not `*` or a regex).
pub(super) fn on_one_field(args: &[Expr]) -> bool {
    matches!(args.first().map(strip_parens), Some(Expr::VarRef { .. }))
}

/// `SELECT max(f), host, g`: one selector call and bare names, which take
/// the picked point's values.
pub(super) fn lone_selector(stmt: &SelectStatement) -> bool {
    matches!(not_bare_names(stmt).as_slice(), [Expr::Call { name, args }]
        if agg::is_selector(name) && name != "percentile" && on_one_field(args))
}

/// The statement's fields that are not bare names (calls, expressions), parentheses off.
fn not_bare_names(stmt: &SelectStatement) -> Vec<&Expr> {
    stmt.fields
        .iter()
        .map(|f| strip_parens(&f.expr))
        .filter(|e| !matches!(e, Expr::VarRef { .. }))
        .collect()
}
