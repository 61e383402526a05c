//! A raw answer's rows as the hot store read them (`hot/raw.rs`, issue #44):
//! each row points at its source (a series' cells that are the same in every
//! row of it: its tags, a field it lacks) and holds its fields in typed
//! columns, instead of a `Vec<Value>` per row. TSBS `high-cpu-1` (~500 rows
//! of 21 cells, ten of them tags) spent a fifth of the server's time building
//! those vectors, cloning and dropping each tag's `Arc` per row, moving every
//! row to put its time first, and freeing them all.
//!
//! Only the JSON renderer reads this form (`server/src/query/render/`); a
//! statement run for anyone else (a subquery, `integral()`, `SELECT INTO`,
//! Prometheus) gets plain rows ([`crate::InfluxqlRequest::packed`]), and
//! [`Packed::rows`] gives the same rows plain, cell for cell.

use std::sync::Arc;

use super::series::Value;

/// Where one shown column's cell of a row comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The row's source's fixed cell at this index ([`Source::fixed`]).
    Fixed(usize),
    /// Field column at this index ([`Packed::fields`]).
    Field(usize),
}

/// The cells a source's rows share.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// By the [`Slot::Fixed`] indexes: a tag's value (`Value::String`), or
    /// `Value::Null` (a tag or a field the series lacks).
    pub fixed: Vec<Value>,
}

/// One field's values, a row each (a row without it: not valid).
#[derive(Debug, Clone, PartialEq)]
pub enum FieldCells {
    /// A float field's.
    Float(Vec<f64>),
    /// An integer field's.
    Integer(Vec<i64>),
    /// An unsigned field's.
    Unsigned(Vec<u64>),
    /// A boolean field's.
    Boolean(Vec<bool>),
    /// A string field's.
    String(Vec<Arc<str>>),
}

/// A field's column of the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldColumn {
    /// Its values (any where not valid).
    pub cells: FieldCells,
    /// Whether the row has a value (else it shows `null`).
    pub valid: Vec<bool>,
}

impl FieldColumn {
    /// Row `i`'s cell as a plain value.
    pub fn value(&self, i: usize) -> Value {
        if !self.valid[i] {
            return Value::Null;
        }
        match &self.cells {
            FieldCells::Float(v) => Value::Float(v[i]),
            FieldCells::Integer(v) => Value::Integer(v[i]),
            FieldCells::Unsigned(v) => Value::Unsigned(v[i]),
            FieldCells::Boolean(v) => Value::Boolean(v[i]),
            FieldCells::String(v) => Value::String(v[i].clone()),
        }
    }
}

/// One series' rows of a raw answer (see the module's documentation): row
/// `i` is the time `times[i]`, then one cell per [`Packed::slots`] entry.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Packed {
    /// The shown columns after the time, in order.
    pub slots: Vec<Slot>,
    /// The rows' sources.
    pub sources: Vec<Source>,
    /// Per row: its time, ns.
    pub times: Vec<i64>,
    /// Per row: its source (index into `sources`).
    pub source_of: Vec<u32>,
    /// The field columns, a value per row.
    pub fields: Vec<FieldColumn>,
}

impl Packed {
    /// Rows held.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Whether it holds no row.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// Row `i` as plain cells, its time first.
    pub fn row(&self, i: usize) -> Vec<Value> {
        let source = &self.sources[self.source_of[i] as usize];
        let mut row = Vec::with_capacity(self.slots.len() + 1);
        row.push(Value::Time(self.times[i]));
        row.extend(self.slots.iter().map(|s| match *s {
            Slot::Fixed(k) => source.fixed[k].clone(),
            Slot::Field(j) => self.fields[j].value(i),
        }));
        row
    }

    /// Every row as plain cells (what the answer holds without this form).
    pub fn rows(&self) -> Vec<Vec<Value>> {
        (0..self.len()).map(|i| self.row(i)).collect()
    }
}
