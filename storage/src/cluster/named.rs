//! A statement naming a measurement this node's catalog lacks, with the points on a
//! ClickHouse cluster (issue #43). The catalog learns what other nodes wrote by reading the
//! cluster's (every 2 s, and before a statement when older than 1 s: `catalog.rs`), so a
//! measurement another node made — or dropped and made again — after the last read is not
//! in it yet, and the statement would answer as if the shards did not hold it. Before
//! answering that there is none, the statement asks the shards whether they hold its table
//! (one small statement per shard) and, if one does, reads the catalog again, in a read
//! that begins after that answer (statements asking at once share it).
//!
//! Measurements named by a regex (`FROM /cpu.*/`) and `SHOW` statements answer from the
//! catalog as last read.

use std::time::Instant;

use influxql::ast::{NameMatch, Source};
use ingest::MeasurementSchema;

use crate::Storage;

/// The measurements `sources` name outright (not by a regex) in `db` that `known` lacks.
fn missing<'a>(db: &str, sources: &'a [Source], known: &[MeasurementSchema]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for s in sources {
        let Source::Measurement(m) = s else {
            continue;
        };
        let NameMatch::Name(name) = &m.name else {
            continue;
        };
        let in_db = m
            .database
            .as_deref()
            .is_none_or(|d| d.is_empty() || d == db);
        if in_db && !known.iter().any(|k| k.name == *name) && !out.contains(&name.as_str()) {
            out.push(name);
        }
    }
    out
}

impl Storage {
    /// `db`'s measurements for a statement reading `sources`: the catalog's, read again
    /// first on a cluster whose shards hold a measurement named there that the catalog
    /// lacks (see the [module](self)).
    pub(crate) fn statement_schema(&self, db: &str, sources: &[Source]) -> Vec<MeasurementSchema> {
        let known = self.catalog.schema(db);
        let (Some(cluster), Some(sync)) = (&self.cluster, &self.cluster_sync) else {
            return known;
        };
        let missing = missing(db, sources, &known);
        if missing.is_empty() {
            return known;
        }
        match cluster.holds_any_table(db, &missing) {
            Ok(true) => {
                // A read begun before the table was made may have missed it: one begun now.
                sync.refresh_since(Instant::now());
                self.catalog.schema(db)
            }
            Ok(false) => known,
            // As before this check: the catalog's answer (a shard down fails the reads of
            // the measurements the catalog has, not the answer that there is none).
            Err(e) => {
                tracing::debug!(db, error = %e, "cannot ask the shards for a measurement the catalog lacks");
                known
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use influxql::ast::MeasurementName;

    fn source(db: Option<&str>, name: NameMatch) -> Source {
        Source::Measurement(MeasurementName {
            database: db.map(str::to_string),
            retention_policy: None,
            name,
        })
    }

    #[test]
    fn only_names_the_catalog_lacks_in_the_database_are_asked_for() {
        let known = vec![MeasurementSchema {
            name: "cpu".into(),
            tag_keys: Vec::new(),
            fields: Vec::new(),
        }];
        let sources = [
            source(None, NameMatch::Name("cpu".into())),
            source(None, NameMatch::Name("mem".into())),
            source(Some("d"), NameMatch::Name("mem".into())),
            source(Some("other"), NameMatch::Name("disk".into())),
            source(None, NameMatch::Regex(influxql::ast::Regex("n.*".into()))),
            source(Some("d"), NameMatch::Name("net".into())),
        ];
        assert_eq!(missing("d", &sources, &known), ["mem", "net"]);
    }
}
