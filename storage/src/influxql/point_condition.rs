//! A raw read's field condition on the shards (issue #43: TSBS `high-cpu-*`, `SELECT * …
//! WHERE usage_user > 90`): the statement's condition (time taken out) with its field
//! comparisons, as SQL a shard applies to the rows of series none of whose points was
//! written twice — there a row is a point — so only matching points cross the network
//! (`cluster::RowSelection::pointwise`). The node still applies the whole condition to the
//! merged points; what is sent must only never be narrower than what it keeps.

use engine::quote_ident;
use engine::table::ColumnKind;
use influxql::ast::{BinaryOp, DataType, Expr, Literal};
use ingest::{FieldType, MeasurementSchema};

use super::cluster::{shard_condition, strip};

/// The conjuncts of `rest` that compare a float or integer field read by the statement
/// (one of `read`) with a number — with tag conditions, under `AND` and `OR` — as one SQL
/// condition; `None` when it holds no field comparison (the tag conditions alone are
/// [`shard_condition`]'s) or none qualifies.
pub(crate) fn point_condition(
    rest: &[Expr],
    schema: &MeasurementSchema,
    read: &[(String, ColumnKind)],
) -> Option<String> {
    let pushed: Vec<String> = rest
        .iter()
        .filter_map(|e| condition(e, schema, read, false))
        .collect();
    let sql = (!pushed.is_empty()).then(|| pushed.join(" AND "))?;
    (Some(&sql) != shard_condition(rest, schema).as_ref()).then_some(sql)
}

/// [`point_condition`] when it is the whole of `rest`, no conjunct left out: a point of a
/// series the shards applied it to is then one the statement keeps, with nothing left for
/// the node to test (`cluster_raw.rs`).
pub(crate) fn exact_point_condition(
    rest: &[Expr],
    schema: &MeasurementSchema,
    read: &[(String, ColumnKind)],
) -> Option<String> {
    rest.iter()
        .try_for_each(|e| condition(e, schema, read, true).map(drop))?;
    point_condition(rest, schema, read)
}

/// `e` as SQL over one row of a point (a conjunct left out of an `AND` widens it, unless
/// `strict`: then none is).
fn condition(
    e: &Expr,
    schema: &MeasurementSchema,
    read: &[(String, ColumnKind)],
    strict: bool,
) -> Option<String> {
    let condition = |e: &Expr| condition(e, schema, read, strict);
    match e {
        Expr::Paren(inner) => condition(inner),
        Expr::Binary {
            op: BinaryOp::And,
            lhs,
            rhs,
        } => match (condition(lhs), condition(rhs)) {
            (Some(l), Some(r)) => Some(format!("({l} AND {r})")),
            (Some(one), None) | (None, Some(one)) if !strict => Some(one),
            _ => None,
        },
        Expr::Binary {
            op: BinaryOp::Or,
            lhs,
            rhs,
        } => Some(format!("({} OR {})", condition(lhs)?, condition(rhs)?)),
        Expr::Binary { op, lhs, rhs } => comparison(*op, lhs, rhs, schema, read)
            .or_else(|| shard_condition(std::slice::from_ref(e), schema)),
        _ => None,
    }
}

/// `field <op> number` (either way round) over a float or integer field: SQL's comparison
/// of a `Nullable` column is false where the row lacks the field, as InfluxQL's is.
fn comparison(
    op: BinaryOp,
    lhs: &Expr,
    rhs: &Expr,
    schema: &MeasurementSchema,
    read: &[(String, ColumnKind)],
) -> Option<String> {
    let (name, cast, literal, flipped) = match (strip(lhs), strip(rhs)) {
        (Expr::VarRef { name, data_type }, Expr::Literal(l)) => (name, *data_type, l, false),
        (Expr::Literal(l), Expr::VarRef { name, data_type }) => (name, *data_type, l, true),
        _ => return None,
    };
    let sym = match (op, flipped) {
        (BinaryOp::Eq, _) => "=",
        (BinaryOp::NotEq, _) => "!=",
        (BinaryOp::Lt, false) | (BinaryOp::Gt, true) => "<",
        (BinaryOp::LtEq, false) | (BinaryOp::GtEq, true) => "<=",
        (BinaryOp::Gt, false) | (BinaryOp::Lt, true) => ">",
        (BinaryOp::GtEq, false) | (BinaryOp::LtEq, true) => ">=",
        _ => return None,
    };
    let tag = schema.tag_keys.iter().any(|k| k == name);
    let (_, kind) = schema.fields.iter().find(|(f, _)| f == name)?;
    if !matches!(cast, Some(DataType::Field) | None) || (tag && cast.is_none()) {
        return None;
    }
    if !read.iter().any(|(c, k)| c == name && *k != ColumnKind::Tag) {
        return None;
    }
    // Only where both engines compare exactly as the node's statement will: a float field
    // with a finite number, an integer field with an integer.
    let value = match (kind, literal) {
        (FieldType::Float, Literal::Float(f)) if f.is_finite() => format!("{f:?}"),
        (FieldType::Float | FieldType::Integer, Literal::Integer(i)) => i.to_string(),
        // An integer field against a float (TSBS writes integers and asks `usage_user >
        // 90.0`): the integer bound that keeps exactly the same integers, so no float
        // comparison is left to either engine.
        (FieldType::Integer, Literal::Float(f)) if f.is_finite() && f.abs() < 9.0e18 => {
            let bound = match sym {
                ">" | "<=" => f.floor(),
                ">=" | "<" => f.ceil(),
                "=" if f.fract() == 0.0 => *f,
                _ => return None,
            };
            // In range (checked above): the cast is exact for an integral value.
            (bound as i64).to_string()
        }
        _ => return None,
    };
    Some(format!("{} {sym} {value}", quote_ident(name)))
}

#[cfg(test)]
mod tests {
    use influxql::ast::Statement;

    use super::*;

    fn pushed(q: &str) -> Option<String> {
        pushed_with(q, point_condition)
    }

    type Render = fn(&[Expr], &MeasurementSchema, &[(String, ColumnKind)]) -> Option<String>;

    fn pushed_with(q: &str, render: Render) -> Option<String> {
        let Statement::Select(stmt) = influxql::parse_statement(q).unwrap() else {
            panic!("not a SELECT: {q}");
        };
        let filter = super::super::range::split(stmt.condition.as_ref(), 0).unwrap();
        let schema = MeasurementSchema {
            name: "cpu".into(),
            tag_keys: vec!["both".into(), "host".into()],
            fields: vec![
                ("both".into(), FieldType::Float),
                ("v".into(), FieldType::Float),
                ("n".into(), FieldType::Integer),
                ("s".into(), FieldType::String),
            ],
        };
        let read = [
            ("v".to_string(), ColumnKind::Float),
            ("n".to_string(), ColumnKind::Integer),
            ("s".to_string(), ColumnKind::String),
        ];
        render(&filter.rest, &schema, &read)
    }

    #[test]
    fn numeric_field_comparisons_reach_the_shards_with_the_tags_and_nothing_narrower() {
        assert_eq!(
            pushed("SELECT * FROM cpu WHERE v > 90 AND time > 0").as_deref(),
            Some("`v` > 90")
        );
        assert_eq!(
            pushed("SELECT * FROM cpu WHERE 90.5 <= v AND host = 'a'").as_deref(),
            Some("`v` >= 90.5 AND `host` = 'a'")
        );
        assert_eq!(
            pushed("SELECT * FROM cpu WHERE (v < 1 OR n != -3) AND s = 'x'").as_deref(),
            Some("(`v` < 1 OR `n` != -3)")
        );
        // Tags only: the tag condition's business. A string field, a field the statement
        // does not read, a name that is a tag too:
        // not pushed (under OR: the whole OR is not).
        assert_eq!(pushed("SELECT * FROM cpu WHERE host = 'a'"), None);
        assert_eq!(pushed("SELECT * FROM cpu WHERE s = 'x'"), None);
        // An integer field against a float: the integer bound that keeps the same integers.
        assert_eq!(
            pushed("SELECT * FROM cpu WHERE n > 90.0").as_deref(),
            Some("`n` > 90")
        );
        assert_eq!(
            pushed("SELECT * FROM cpu WHERE n > 1.5").as_deref(),
            Some("`n` > 1")
        );
        assert_eq!(
            pushed("SELECT * FROM cpu WHERE n >= 1.5").as_deref(),
            Some("`n` >= 2")
        );
        assert_eq!(
            pushed("SELECT * FROM cpu WHERE n < -1.5").as_deref(),
            Some("`n` < -1")
        );
        assert_eq!(
            pushed("SELECT * FROM cpu WHERE n <= -1.5").as_deref(),
            Some("`n` <= -2")
        );
        assert_eq!(
            pushed("SELECT * FROM cpu WHERE n = 3.0").as_deref(),
            Some("`n` = 3")
        );
        assert_eq!(pushed("SELECT * FROM cpu WHERE n = 3.5"), None);
        assert_eq!(pushed("SELECT * FROM cpu WHERE n != 3.0"), None);
        assert_eq!(
            pushed("SELECT * FROM cpu WHERE n > 10000000000000000000.0"),
            None
        );
        assert_eq!(pushed("SELECT * FROM cpu WHERE both > 1"), None);
        assert_eq!(pushed("SELECT * FROM cpu WHERE v > 1 OR s = 'x'"), None);
        assert_eq!(
            pushed("SELECT * FROM cpu WHERE both::field > 1 OR host = 'b'"),
            None,
            "`both` is not read"
        );
    }

    #[test]
    fn an_exact_condition_is_the_whole_condition_or_none() {
        let exact = |q: &str| pushed_with(q, exact_point_condition);
        assert_eq!(
            exact("SELECT * FROM cpu WHERE v > 90 AND time > 0").as_deref(),
            Some("`v` > 90")
        );
        assert_eq!(
            exact("SELECT * FROM cpu WHERE (v < 1 OR n > 2) AND host = 'a'").as_deref(),
            Some("(`v` < 1 OR `n` > 2) AND `host` = 'a'")
        );
        // A conjunct the shards cannot apply (a string field, arithmetic) would be left
        // out: not exact.
        assert_eq!(exact("SELECT * FROM cpu WHERE v > 90 AND s = 'x'"), None);
        assert_eq!(
            exact("SELECT * FROM cpu WHERE v > 90 AND (n > 1 AND s = 'x')"),
            None
        );
        assert_eq!(exact("SELECT * FROM cpu WHERE v + 1 > 90"), None);
        assert!(pushed("SELECT * FROM cpu WHERE v > 90 AND s = 'x'").is_some());
        // Tags only or no condition: none (not a point condition at all).
        assert_eq!(exact("SELECT * FROM cpu WHERE host = 'a'"), None);
        assert_eq!(exact("SELECT * FROM cpu"), None);
    }
}
