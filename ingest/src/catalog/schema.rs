//! Schema answers (`SHOW MEASUREMENTS`, `SHOW TAG KEYS`, `SHOW FIELD KEYS`).

use std::collections::{BTreeMap, BTreeSet};

use super::Catalog;
use crate::point::FieldType;

/// One measurement of a database as the schema statements show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeasurementSchema {
    /// Measurement name (lossy UTF-8).
    pub name: String,
    /// Tag keys, sorted.
    pub tag_keys: Vec<String>,
    /// Fields and their types, sorted by name.
    pub fields: Vec<(String, FieldType)>,
}

impl Catalog {
    /// The measurements of `db` with their tag keys and field types, sorted by name; empty
    /// for a database without any. Names that are not UTF-8 are shown lossily (two such
    /// names that read the same are shown as one).
    pub fn schema(&self, db: &str) -> Vec<MeasurementSchema> {
        let Some(db) = self.existing(db) else {
            return Vec::new();
        };
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let mut out: BTreeMap<String, (BTreeSet<String>, BTreeMap<String, FieldType>)> =
            BTreeMap::new();
        for (name, m) in db.schema.read().iter() {
            let (tags, fields) = out.entry(lossy(name)).or_default();
            tags.extend(m.tag_keys.iter().map(|k| lossy(k)));
            fields.extend(m.fields.iter().map(|(k, t)| (lossy(k), *t)));
        }
        out.into_iter()
            .map(|(name, (tags, fields))| MeasurementSchema {
                name,
                tag_keys: tags.into_iter().collect(),
                fields: fields.into_iter().collect(),
            })
            .collect()
    }
}
