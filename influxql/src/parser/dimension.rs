//! `GROUP BY` expressions as [`Dimension`]s, with the errors InfluxDB gives
//! when it compiles them (statement errors, not parse errors).

use crate::ast::{Dimension, Duration, Expr, Literal};
use crate::error::ParseError;

/// Checks and converts the parsed `GROUP BY` expressions.
pub(super) fn dimensions(exprs: Vec<Expr>) -> Result<Vec<Dimension>, ParseError> {
    let mut out = Vec::with_capacity(exprs.len());
    let mut has_time = false;
    for e in exprs {
        let d = dimension(e)?;
        if matches!(d, Dimension::Time { .. }) {
            if has_time {
                return Err(statement("multiple time dimensions not allowed"));
            }
            has_time = true;
        }
        out.push(d);
    }
    Ok(out)
}

fn statement(msg: &str) -> ParseError {
    ParseError::Statement(msg.to_owned())
}

fn dimension(e: Expr) -> Result<Dimension, ParseError> {
    match e {
        Expr::VarRef { name, .. } if name.eq_ignore_ascii_case("time") => Err(statement(
            "time() is a function and expects at least one argument",
        )),
        Expr::VarRef { name, .. } => Ok(Dimension::Tag(name)),
        Expr::Wildcard(_) => Ok(Dimension::Wildcard),
        Expr::Literal(Literal::Regex(re)) => Ok(Dimension::Regex(re)),
        Expr::Call { name, args } if name == "time" => time(args),
        Expr::Call { .. } => Err(statement("only time() calls allowed in dimensions")),
        _ => Err(statement("only time and tag dimensions allowed")),
    }
}

/// `time(interval[, offset])`.
fn time(args: Vec<Expr>) -> Result<Dimension, ParseError> {
    if args.is_empty() || args.len() > 2 {
        return Err(statement("time dimension expected 1 or 2 arguments"));
    }
    let Expr::Literal(Literal::Duration(interval)) = args[0] else {
        return Err(statement("time dimension must have duration argument"));
    };
    let offset = match args.get(1) {
        None => None,
        Some(Expr::Literal(Literal::Duration(d))) => Some(Duration(d.0)),
        Some(Expr::Call { name, args }) if name == "now" => {
            if !args.is_empty() {
                return Err(statement(
                    "time dimension offset now() function requires no arguments",
                ));
            }
            return Err(statement("GROUP BY time(interval, now()) is not supported"));
        }
        Some(Expr::Call { .. }) => {
            return Err(statement("time dimension offset function must be now()"))
        }
        Some(_) => return Err(statement("time dimension offset must be duration or now()")),
    };
    Ok(Dimension::Time { interval, offset })
}
