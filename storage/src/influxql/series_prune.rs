//! The values of one tag that a statement's condition confines its rows to (`host = 'h3'`,
//! `host = 'a' OR host = 'b'`, `host =~ /^(a|b)$/`): on a cluster the shards are then asked
//! only for the series holding them (`cluster/src/series_of_tags.rs`, issue #43), the
//! primary key `(series_id, time)` skipping the rest of the table.
//!
//! Only conditions the node's map decides exactly: equality with a string (a series holds
//! one value of each tag for all its rows, `''` where it lacks the tag) and regular
//! expressions that are literal alternatives anchored at both ends. A conjunct of the
//! statement's condition (time taken out) holds for every row it keeps, so its series are
//! the only ones that can answer.

use cluster::TagValues;
use influxql::ast::{BinaryOp, Expr, Literal};
use ingest::MeasurementSchema;

use super::cluster::{strip, tag_of};

/// The values of a tag some conjunct of `rest` confines every row to; `None` when no
/// conjunct does.
pub(crate) fn tag_values(rest: &[Expr], schema: &MeasurementSchema) -> Option<TagValues> {
    rest.iter().find_map(|e| conjunct(e, schema))
}

fn conjunct(e: &Expr, schema: &MeasurementSchema) -> Option<TagValues> {
    if let Expr::Binary {
        op: BinaryOp::And,
        lhs,
        rhs,
    } = strip(e)
    {
        return conjunct(lhs, schema).or_else(|| conjunct(rhs, schema));
    }
    let mut out = TagValues {
        tag: String::new(),
        values: Vec::new(),
    };
    disjunction(e, schema, &mut out).then_some(out)
}

/// Whether `e` is an `OR` of one tag's values (all added to `out`).
fn disjunction(e: &Expr, schema: &MeasurementSchema, out: &mut TagValues) -> bool {
    let Expr::Binary { op, lhs, rhs } = strip(e) else {
        return false;
    };
    let (tag, values) = match op {
        BinaryOp::Or => return disjunction(lhs, schema, out) && disjunction(rhs, schema, out),
        BinaryOp::Eq => match (strip(lhs), strip(rhs)) {
            (Expr::VarRef { name, data_type }, Expr::Literal(Literal::String(v)))
            | (Expr::Literal(Literal::String(v)), Expr::VarRef { name, data_type }) => {
                (tag_of(name, *data_type, schema), vec![v.clone()])
            }
            _ => return false,
        },
        BinaryOp::EqRegex => match (strip(lhs), strip(rhs)) {
            (Expr::VarRef { name, data_type }, Expr::Literal(Literal::Regex(re))) => {
                let Some(values) = alternatives(&re.0) else {
                    return false;
                };
                (tag_of(name, *data_type, schema), values)
            }
            _ => return false,
        },
        _ => return false,
    };
    let Some(tag) = tag else {
        return false;
    };
    if out.tag.is_empty() {
        out.tag = tag.to_string();
    }
    out.tag == tag && {
        out.values.extend(values);
        true
    }
}

/// The strings `^a$`, `^(a|b)$` match exactly, each alternative free of regex syntax.
fn alternatives(re: &str) -> Option<Vec<String>> {
    let body = re.strip_prefix('^')?.strip_suffix('$')?;
    let body = match body.strip_prefix('(') {
        Some(inner) => inner.strip_suffix(')')?,
        None => body,
    };
    let literal = |s: &&str| !s.contains(|c: char| "\\.^$|?*+()[]{}".contains(c));
    let values: Vec<&str> = body.split('|').collect();
    if body.starts_with("?:") || !values.iter().all(literal) {
        return None;
    }
    // `^a|b$` is `^a` or `b$`: only with the group are both ends anchored for each.
    (values.len() == 1 || re.starts_with("^("))
        .then(|| values.into_iter().map(String::from).collect())
}

#[cfg(test)]
mod tests {
    use influxql::ast::Statement;
    use ingest::FieldType;

    use super::*;

    fn values(condition: &str) -> Option<(String, Vec<String>)> {
        let schema = MeasurementSchema {
            name: "cpu".into(),
            tag_keys: vec!["host".into(), "dc".into(), "both".into()],
            fields: vec![
                ("v".into(), FieldType::Float),
                ("both".into(), FieldType::Float),
            ],
        };
        let q = format!("SELECT v FROM cpu WHERE {condition}");
        let Statement::Select(stmt) = influxql::parse_statement(&q).unwrap() else {
            panic!("a select");
        };
        let filter = super::super::range::split(stmt.condition.as_ref(), 0).unwrap();
        tag_values(&filter.rest, &schema).map(|t| (t.tag, t.values))
    }

    fn some(tag: &str, v: &[&str]) -> Option<(String, Vec<String>)> {
        Some((tag.into(), v.iter().map(|s| s.to_string()).collect()))
    }

    #[test]
    fn equalities_and_their_disjunctions_on_one_tag_name_its_values() {
        assert_eq!(values("host = 'h1'"), some("host", &["h1"]));
        assert_eq!(values("'h1' = host"), some("host", &["h1"]));
        assert_eq!(
            values("(host = 'h1' OR host = 'h2') AND time > 0 AND v > 3"),
            some("host", &["h1", "h2"])
        );
        assert_eq!(values("v > 3 AND dc = ''"), some("dc", &[""]));
        assert_eq!(values("host = 'h1' OR dc = 'x'"), None, "two tags");
        assert_eq!(values("host = 'h1' OR v > 1"), None);
        assert_eq!(values("host != 'h1'"), None);
        assert_eq!(values("both = 'x'"), None, "a field too");
        assert_eq!(values("both::tag = 'x'"), some("both", &["x"]));
        assert_eq!(values("v > 1"), None);
    }

    #[test]
    fn only_anchored_literal_alternatives_are_values() {
        assert_eq!(values("host =~ /^h1$/"), some("host", &["h1"]));
        assert_eq!(values("host =~ /^(h1|h-2)$/"), some("host", &["h1", "h-2"]));
        assert_eq!(
            values("host =~ /^(h1|h2)$/ OR host = 'h3'"),
            some("host", &["h1", "h2", "h3"])
        );
        for re in [
            "/h1/",
            "/^h1/",
            "/^h.$/",
            "/^h1|h2$/",
            "/^(?:h1)$/",
            "/^(h1|h2)x$/",
            "/^(?i)h1$/",
        ] {
            assert_eq!(values(&format!("host =~ {re}")), None, "{re}");
        }
        assert_eq!(values("host !~ /^h1$/"), None);
    }
}
