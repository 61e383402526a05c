//! The aggregates that combine from parts (`count`, `sum`, `mean`, `min`, `max`, `spread`,
//! `first`, `last`) of one field as written: what the hot store's evaluator (`hot/`) and
//! the cluster's pushdown (`pushdown.rs`) compute without the engine's general statement.

use influxql::ast::Expr;
use ingest::MeasurementSchema;

use super::expr::strip_parens;

/// One of the aggregates both paths compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Count,
    Sum,
    Mean,
    Min,
    Max,
    Spread,
    First,
    Last,
}

impl Func {
    fn of(name: &str) -> Option<Func> {
        Some(match name {
            "count" => Func::Count,
            "sum" => Func::Sum,
            "mean" => Func::Mean,
            "min" => Func::Min,
            "max" => Func::Max,
            "spread" => Func::Spread,
            "first" => Func::First,
            "last" => Func::Last,
            _ => return None,
        })
    }

    /// Whether it reads the field's values (else only whether a point has one).
    pub(crate) fn reads_values(self) -> bool {
        self != Func::Count
    }
}

/// `f(field)` when `e` is one of [`Func`] of a name `schema` does not hold as a tag, read as
/// written (no cast): the function and the name (which may be no field of `schema`).
pub(crate) fn field_call<'e>(
    e: &'e Expr,
    schema: &MeasurementSchema,
) -> Option<(Func, &'e String)> {
    let Expr::Call { name, args } = strip_parens(e) else {
        return None;
    };
    let func = Func::of(name)?;
    let [arg] = args.as_slice() else {
        return None;
    };
    Some((func, plain_field(arg, schema)?))
}

/// The name `arg` refers to, read as written (no cast), when `schema` does not
/// hold it as a tag (it may be no field of `schema`).
pub(crate) fn plain_field<'e>(arg: &'e Expr, schema: &MeasurementSchema) -> Option<&'e String> {
    let Expr::VarRef {
        name: field,
        data_type: None,
    } = strip_parens(arg)
    else {
        return None;
    };
    (!schema.tag_keys.contains(field)).then_some(field)
}
