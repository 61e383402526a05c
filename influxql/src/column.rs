//! Output column names, by InfluxDB's rule (`Field.Name()`): an alias; else a
//! call's function name; else a name; else the names in an arithmetic
//! expression joined with `_`.

use crate::ast::{Expr, Field};

impl Expr {
    /// The column this expression is answered under when it has no alias:
    /// `value` → `value`; `mean(value)` → `mean`; `percentile(v, 90)` →
    /// `percentile`; `a + b` → `a_b`; `mean(a) * 2` → `mean`; `(x)` → `x`;
    /// literals and wildcards → empty.
    pub fn column_name(&self) -> String {
        match self {
            Expr::Call { name, .. } => name.clone(),
            Expr::VarRef { name, .. } => name.clone(),
            Expr::Paren(inner) => inner.column_name(),
            Expr::Binary { .. } => {
                let mut names = Vec::new();
                binary_names(self, &mut names);
                names.join("_")
            }
            Expr::Wildcard(_) | Expr::Literal(_) => String::new(),
        }
    }
}

/// The names and function names in `e`, left to right, not looking inside calls.
fn binary_names(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::VarRef { name, .. } | Expr::Call { name, .. } => out.push(name.clone()),
        Expr::Binary { lhs, rhs, .. } => {
            binary_names(lhs, out);
            binary_names(rhs, out);
        }
        Expr::Paren(inner) => binary_names(inner, out),
        Expr::Wildcard(_) | Expr::Literal(_) => {}
    }
}

impl Field {
    /// The field's column name: its alias, else [`Expr::column_name`].
    pub fn name(&self) -> String {
        match &self.alias {
            Some(a) => a.clone(),
            None => self.expr.column_name(),
        }
    }
}
