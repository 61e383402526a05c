//! Rebuilding the catalog from its records, and applying records made durable elsewhere.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use xxhash_rust::xxh3::xxh3_64;

use super::record::Record;
use super::state::shard_of;
use super::{Catalog, Limits};
use crate::error::CatalogError;

impl Catalog {
    /// Rebuilds a catalog from persisted metadata records (any order). Records that are not
    /// the catalog's (see [`Record::decode`]) are ignored. The schema and series records of a
    /// database whose registry record says dropped are ignored too (the drop deletes them in
    /// the same write; this covers records a racing write added after it).
    pub fn load<I, K, V>(limits: Limits, records: I) -> Result<Catalog, CatalogError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let cat = Catalog::new(limits);
        let mut dropped = HashSet::new();
        for (k, v) in records {
            let Some(record) = Record::decode(k.as_ref(), v.as_ref())? else {
                continue;
            };
            match &record {
                Record::Database { name, .. } => {
                    dropped.remove(name);
                }
                Record::DatabaseDropped { name } => {
                    dropped.insert(name.clone());
                }
                _ => {}
            }
            cat.absorb(record);
        }
        for name in &dropped {
            cat.forget(name);
        }
        Ok(cat)
    }

    /// Applies a record that is now durable: a database created or dropped, or a schema or
    /// series record (idempotent; the catalog made those itself in [`Catalog::resolve`]).
    /// Applying [`Record::DatabaseDropped`] forgets the database as
    /// [`Catalog::drop_database`] does.
    pub fn apply(&self, record: &Record) {
        self.absorb(record.clone());
    }

    fn absorb(&self, record: Record) {
        match record {
            Record::Database {
                name,
                retention_secs,
            } => {
                self.registry.write().insert(name, retention_secs);
            }
            Record::DatabaseDropped { name } => self.forget(&name),
            Record::Series { db, id, .. } => {
                let db = self.db(&db);
                if db.series[shard_of(id)].write().insert(id) {
                    db.series_count.fetch_add(1, Ordering::Relaxed);
                }
            }
            schema => self.absorb_schema(schema),
        }
    }

    /// A measurement, field, tag or tag value record.
    fn absorb_schema(&self, record: Record) {
        let (db, measurement) = match &record {
            Record::Measurement { db, measurement }
            | Record::Field {
                db, measurement, ..
            }
            | Record::Tag {
                db, measurement, ..
            }
            | Record::TagValue {
                db, measurement, ..
            } => (self.db(db), measurement.clone()),
            _ => return,
        };
        // The schema lock is released before the tag values' lock is taken: `resolve` takes
        // them in the other order.
        {
            let mut schema = db.schema.write();
            let m = schema.entry(measurement.clone()).or_default();
            match &record {
                Record::Field { field, ty, .. } => {
                    m.add_field(field, *ty);
                }
                Record::Tag { key, .. } | Record::TagValue { key, .. } => {
                    m.add_tag_key(key);
                }
                _ => {}
            }
        }
        if let Record::TagValue { key, value, .. } = record {
            db.slow
                .lock()
                .tag_values
                .entry((measurement, key))
                .or_default()
                .insert(xxh3_64(&value));
        }
    }
}
