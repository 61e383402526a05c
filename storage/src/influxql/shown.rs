//! What a raw statement's columns are, read off its plan: a field, a tag or null, as
//! `expr.rs`'s `value_ref` renders them. Shared by the readers that build raw answer
//! rows in Rust rather than through the engine: the hot store's (`hot/raw.rs`) and a
//! cluster's (`cluster_raw.rs`).

use engine::quote_ident;
use ingest::{FieldType, MeasurementSchema};

use super::plan::Plan;

/// One shown column.
pub(crate) enum Col {
    /// A field of the measurement, by name.
    Field(String),
    /// A tag: null where the series lacks it.
    Tag(String),
    /// A name the measurement does not have.
    Null,
}

/// The SQL of each of a measurement's field and tag names, rendered once: not once per
/// column compared with it (TSBS `high-cpu-1`'s `SELECT *`, 10 fields and 10 tags,
/// rendered some 400 names per statement).
pub(crate) struct Names<'s> {
    fields: Vec<(String, &'s String)>,
    tags: Vec<(String, &'s String)>,
}

impl<'s> Names<'s> {
    /// Unsigned fields are left out: the engine path renders them otherwise.
    pub(crate) fn of(schema: &'s MeasurementSchema) -> Names<'s> {
        Names {
            fields: schema
                .fields
                .iter()
                .filter(|(_, t)| *t != FieldType::UInteger)
                .map(|(f, _)| (quote_ident(f), f))
                .collect(),
            tags: schema
                .tag_keys
                .iter()
                .map(|k| (format!("nullIf({}, '')", quote_ident(k)), k))
                .collect(),
        }
    }

    /// The field whose SQL is `sql`.
    pub(crate) fn field(&self, sql: &str) -> Option<String> {
        find(&self.fields, sql)
    }

    /// The plan's columns; `None` when one is neither a field, a tag nor null.
    pub(crate) fn columns(&self, plan: &Plan) -> Option<Vec<Col>> {
        plan.columns
            .iter()
            .map(|c| {
                if c.sql == "NULL" {
                    Some(Col::Null)
                } else if let Some(f) = self.field(&c.sql) {
                    Some(Col::Field(f))
                } else {
                    find(&self.tags, &c.sql).map(Col::Tag)
                }
            })
            .collect()
    }
}

fn find(names: &[(String, &String)], sql: &str) -> Option<String> {
    names
        .iter()
        .find(|(q, _)| q == sql)
        .map(|(_, name)| (*name).clone())
}
