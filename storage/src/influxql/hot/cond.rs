//! The `WHERE` conditions (time taken out) the evaluator tests on a series'
//! tags: `=`/`!=` against a string, `=~`/`!~` against a regex (`pattern.rs`),
//! joined by `AND`/`OR`. A series without the tag has `""`, as the engine's tag
//! column reads.

use influxql::ast::{BinaryOp, DataType, Expr, Literal};
use ingest::MeasurementSchema;

use super::pattern::TagMatch;
use crate::hot::table::Series;
use crate::influxql::expr::strip_parens;

/// A tag condition.
#[derive(Debug)]
pub(super) enum Cond {
    /// `tag = 'v'` (true) or `tag != 'v'` (false).
    Eq(String, String, bool),
    /// `tag =~ /re/` (true) or `tag !~ /re/` (false).
    Match(String, TagMatch, bool),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
}

impl Cond {
    /// `e` as a tag condition of `schema`, `None` where it is anything else.
    pub(super) fn of(e: &Expr, schema: &MeasurementSchema) -> Option<Cond> {
        let Expr::Binary { op, lhs, rhs } = strip_parens(e) else {
            return None;
        };
        match op {
            BinaryOp::And => Some(Cond::And(
                Box::new(Cond::of(lhs, schema)?),
                Box::new(Cond::of(rhs, schema)?),
            )),
            BinaryOp::Or => Some(Cond::Or(
                Box::new(Cond::of(lhs, schema)?),
                Box::new(Cond::of(rhs, schema)?),
            )),
            BinaryOp::Eq | BinaryOp::NotEq => {
                let text = |e: &Expr| match strip_parens(e) {
                    Expr::Literal(Literal::String(s)) => Some(s.clone()),
                    _ => None,
                };
                let (t, v) = match (tag(lhs, schema), text(rhs)) {
                    (Some(t), Some(v)) => (t, v),
                    _ => (tag(rhs, schema)?, text(lhs)?),
                };
                Some(Cond::Eq(t, v, *op == BinaryOp::Eq))
            }
            // The engine takes the regex on the right only (an error otherwise).
            BinaryOp::EqRegex | BinaryOp::NotEqRegex => {
                let Expr::Literal(Literal::Regex(re)) = strip_parens(rhs) else {
                    return None;
                };
                Some(Cond::Match(
                    tag(lhs, schema)?,
                    TagMatch::new(&re.0)?,
                    *op == BinaryOp::EqRegex,
                ))
            }
            _ => None,
        }
    }

    pub(super) fn holds(&self, s: &Series) -> bool {
        match self {
            Cond::Eq(t, v, eq) => (s.tag(t) == v) == *eq,
            Cond::Match(t, m, eq) => m.is_match(s.tag(t)) == *eq,
            Cond::And(a, b) => a.holds(s) && b.holds(s),
            Cond::Or(a, b) => a.holds(s) || b.holds(s),
        }
    }
}

/// The tag `e` names: a tag key of `schema` that is not also a field (`::tag`
/// or no cast).
fn tag(e: &Expr, schema: &MeasurementSchema) -> Option<String> {
    match strip_parens(e) {
        Expr::VarRef { name, data_type }
            if schema.tag_keys.contains(name)
                && !schema.fields.iter().any(|(f, _)| f == name)
                && matches!(data_type, None | Some(DataType::Tag)) =>
        {
            Some(name.clone())
        }
        _ => None,
    }
}
