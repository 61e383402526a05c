//! Properties: displaying a tree and parsing it back gives the same tree, and
//! no input makes the parser panic.

use std::collections::HashMap;

use proptest::prelude::*;

use crate::ast::{BinaryOp, DataType, Duration, Expr, Literal, Regex};
use crate::token::Kind;
use crate::{parse_expr, parse_query};

fn name() -> impl Strategy<Value = String> {
    // Any text but `\r` (InfluxDB reads it as a newline, so it cannot round-trip).
    prop_oneof![
        "[a-z_][a-z0-9_]{0,6}",
        "[^\r]{0,8}",
        Just("time".to_string()),
        Just("select".to_string()),
        Just("a.b".to_string()),
    ]
}

fn func_name() -> impl Strategy<Value = String> {
    "[a-z_][a-z0-9_]{0,8}".prop_filter("a keyword is no function name", |n| {
        n == "distinct" || Kind::of_word(n) == Kind::Ident
    })
}

fn data_type() -> impl Strategy<Value = Option<DataType>> {
    prop_oneof![
        Just(None),
        Just(Some(DataType::Float)),
        Just(Some(DataType::Integer)),
        Just(Some(DataType::Unsigned)),
        Just(Some(DataType::String)),
        Just(Some(DataType::Boolean)),
        Just(Some(DataType::Field)),
        Just(Some(DataType::Tag)),
    ]
}

fn regex() -> impl Strategy<Value = Regex> {
    prop_oneof![
        Just("^(a|b)$"),
        Just(r"^disk/io\d+$"),
        Just(".*"),
        Just(r"a\.b"),
        Just("[a-z]+"),
    ]
    .prop_map(|r| Regex(r.to_string()))
}

fn literal() -> impl Strategy<Value = Literal> {
    prop_oneof![
        any::<i64>().prop_map(Literal::Integer),
        ((i64::MAX as u64 + 1)..=u64::MAX).prop_map(Literal::Unsigned),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Literal::Float),
        "[^\r]{0,8}".prop_map(Literal::String),
        any::<bool>().prop_map(Literal::Boolean),
        (i64::MIN + 1..=i64::MAX).prop_map(|d| Literal::Duration(Duration(d))),
    ]
}

fn leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        (name(), data_type()).prop_map(|(name, data_type)| Expr::VarRef { name, data_type }),
        literal().prop_map(Expr::Literal),
        prop_oneof![
            Just(None),
            Just(Some(DataType::Field)),
            Just(Some(DataType::Tag))
        ]
        .prop_map(Expr::Wildcard),
    ]
}

fn op() -> impl Strategy<Value = BinaryOp> {
    use BinaryOp::*;
    prop::sample::select(vec![
        Or, And, Eq, NotEq, Lt, LtEq, Gt, GtEq, EqRegex, NotEqRegex, Add, Sub, Mul, Div, Mod,
        BitAnd, BitOr, BitXor,
    ])
}

/// `e`, parenthesised when it is an operation binding looser than the
/// parser would group it at that side of `op` (left: looser; right: not tighter).
fn operand(e: Expr, op: BinaryOp, right: bool) -> Expr {
    let p = super::expr::precedence(op);
    match &e {
        Expr::Binary { op: inner, .. } => {
            let q = super::expr::precedence(*inner);
            if q < p || (right && q == p) {
                Expr::Paren(Box::new(e))
            } else {
                e
            }
        }
        _ => e,
    }
}

fn expr() -> impl Strategy<Value = Expr> {
    leaf().prop_recursive(5, 48, 3, |inner| {
        prop_oneof![
            (op(), inner.clone(), inner.clone(), regex()).prop_map(|(op, l, r, re)| {
                let rhs = if matches!(op, BinaryOp::EqRegex | BinaryOp::NotEqRegex) {
                    Expr::Literal(Literal::Regex(re))
                } else {
                    operand(r, op, true)
                };
                Expr::Binary {
                    op,
                    lhs: Box::new(operand(l, op, false)),
                    rhs: Box::new(rhs),
                }
            }),
            (
                func_name(),
                prop::collection::vec(inner.clone(), 0..3),
                prop::option::of(regex())
            )
                .prop_map(|(name, mut args, re)| {
                    if let Some(re) = re {
                        args.push(Expr::Literal(Literal::Regex(re)));
                    }
                    Expr::Call { name, args }
                }),
            inner.prop_map(|e| Expr::Paren(Box::new(e))),
        ]
    })
}

/// Float equality that treats `-0.0` and `0.0` alike is what `PartialEq` does;
/// the generator avoids NaN, so plain equality is the property.
fn round_trips(e: &Expr) -> Result<(), TestCaseError> {
    let text = e.to_string();
    let back = parse_expr(&text).map_err(|err| TestCaseError::fail(format!("{text:?}: {err}")))?;
    prop_assert_eq!(&back, e, "text: {:?}", text);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn display_then_parse_is_identity(e in expr()) {
        round_trips(&e)?;
    }

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,64}") {
        let _ = parse_query(&s, &HashMap::new());
    }

    #[test]
    fn token_soup_never_panics(parts in prop::collection::vec(prop::sample::select(vec![
        "SELECT", "FROM", "WHERE", "GROUP", "BY", "fill(", "tz(", "ORDER", "LIMIT", "SHOW",
        "TAG", "VALUES", "WITH", "KEY", "CREATE", "DATABASE", "DROP", "INTO", "AS", "ON",
        "(", ")", ",", ";", ".", "..", "::", ":", "*", "/", "/x/", "'s", "'s'", "\"i", "\"i\"",
        "\\", "$p", "$", "-", "--", "/*", "=~", "!~", "<>", "=", "1", "1.5", "1h", "1x", "µ",
        "time", "now()", "host", "\n", " ", "DISTINCT", "EXACT", "CARDINALITY", "MEASUREMENT",
    ]), 0..24)) {
        let q: String = parts.concat();
        let mut params = HashMap::new();
        params.insert("p".to_string(), Literal::Regex(Regex("x".into())));
        let _ = parse_query(&q, &params);
        let spaced = parts.join(" ");
        let _ = parse_query(&spaced, &params);
    }
}
