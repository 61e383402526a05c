//! The listing of a shard table's active parts and its metadata time: what the node's
//! knowledge of a shard table (the identity index, `identity.rs`; the series of tag values,
//! `series_of_tags.rs`; the kept last points, `last_points.rs`) is checked against before or
//! after each read (issue #43). A MergeTree part never changes under its name, so a listing
//! equal to the one a state was built from proves the state still holds.

use engine::quote_string;

use crate::identity::Part;
use crate::{schema, Cluster, ClusterError};

/// The statement listing a shard table's active parts, each row carrying the table's
/// metadata time too (a scalar subquery; 0 when the table is gone), asked on its own: one
/// round trip (issue #43). No part, no row: an empty table's listing reads as a missing
/// one's (metadata time 0), which only resets what is known of it (nothing). Not the
/// `system.tables` row `UNION ALL` the parts ([`listing_lines_sql`]'s): on 18.16 that took
/// 6.9 ms against 3.9 for this (p50 of 30, interleaved, one server at load 12; `SELECT 1`
/// 1.6), most of what a read from kept last points costs. The metadata time is read before
/// the parts here, as the union's members could be: a table made again between the two with
/// the same part names and row counts goes unseen, as it did (docs/cluster.md).
pub(crate) fn listing_sql(db: &str, measurement: &str) -> String {
    let (database, name) = (
        quote_string(&schema::shard_database(db)),
        quote_string(measurement),
    );
    format!(
        "SELECT name AS n, partition_id AS p, toInt64(min_block_number) AS a, \
         toInt64(max_block_number) AS b, toUInt64(rows) AS r, \
         toUInt64(modification_time) AS m, \
         toUInt64(ifNull((SELECT toUInt64(metadata_modification_time) FROM system.tables \
         WHERE database = {database} AND name = {name}), 0)) AS t FROM system.parts \
         WHERE database = {database} AND table = {name} AND active"
    )
}

/// The listing as a member of a read's `UNION ALL` (`crate::folded`): the parts and, in a row
/// of its own with an empty name (no part has one), the metadata time, both read when the
/// statement runs, after the read took its parts (`identified.rs`), which [`listing_sql`]'s
/// scalar subquery, evaluated while the statement is analysed, would not be.
fn union_listing_sql(db: &str, measurement: &str) -> String {
    let (database, name) = (
        quote_string(&schema::shard_database(db)),
        quote_string(measurement),
    );
    format!(
        "SELECT '' AS n, '' AS p, toInt64(0) AS a, toInt64(0) AS b, toUInt64(0) AS r, \
         toUInt64(metadata_modification_time) AS m FROM system.tables \
         WHERE database = {database} AND name = {name} \
         UNION ALL SELECT name AS n, partition_id AS p, toInt64(min_block_number) AS a, \
         toInt64(max_block_number) AS b, toUInt64(rows) AS r, \
         toUInt64(modification_time) AS m FROM system.parts \
         WHERE database = {database} AND table = {name} AND active"
    )
}

/// The listing as one `String` column, each row a line of its tab-separated answer: what
/// a read appends to its own answer with `UNION ALL` (`crate::folded`), so that the check
/// after the read costs no round trip of its own.
pub(crate) fn listing_lines_sql(db: &str, measurement: &str) -> String {
    format!(
        "SELECT concat(n, '\\t', p, '\\t', toString(a), '\\t', toString(b), '\\t', \
         toString(r), '\\t', toString(m)) AS __l FROM ({})",
        union_listing_sql(db, measurement)
    )
}

/// A listing's answer: the metadata time (0: no table; for [`listing_sql`], no part either)
/// and the parts. Lines of [`listing_sql`] carry the metadata time as a seventh field; those
/// of [`listing_lines_sql`] in a row with an empty name.
pub(crate) fn parse_listing(text: &str) -> Result<(u64, Vec<Part>), String> {
    let mut metadata = 0;
    let mut parts = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let bad = || format!("unexpected system.parts row {line:?}");
        let part = match line.split('\t').count() {
            7 => {
                let (part, table) = line.rsplit_once('\t').ok_or_else(bad)?;
                metadata = table.parse().map_err(|_| bad())?;
                parse_parts(part)?
            }
            _ => parse_parts(line)?,
        };
        for p in part {
            match p.name.is_empty() {
                true => metadata = p.modified,
                false => parts.push(p),
            }
        }
    }
    Ok((metadata, parts))
}

fn parse_parts(text: &str) -> Result<Vec<Part>, String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let bad = || format!("unexpected system.parts row {l:?}");
            if f.len() != 6 {
                return Err(bad());
            }
            Ok(Part {
                name: f[0].to_string(),
                partition: f[1].to_string(),
                min_block: f[2].parse().map_err(|_| bad())?,
                max_block: f[3].parse().map_err(|_| bad())?,
                rows: f[4].parse().map_err(|_| bad())?,
                modified: f[5].parse().map_err(|_| bad())?,
            })
        })
        .collect()
}

impl Cluster {
    /// Shard `k`'s listing of `db`.`measurement` ([`listing_sql`], parsed: the metadata
    /// time and the active parts): `listed`, the answer already in hand (folded into a read),
    /// else asked for.
    pub(crate) fn listing(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        listed: Option<&str>,
    ) -> Result<(u64, Vec<Part>), ClusterError> {
        let listing = listing_sql(db, measurement);
        let asked;
        let answer = match listed {
            Some(answer) => answer,
            None => {
                asked = self.http.statement(k, &listing)?;
                &asked
            }
        };
        parse_listing(answer).map_err(|m| self.unexpected(k, &listing, m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_reads_its_parts_and_the_metadata_time_of_either_form() {
        assert!(parse_parts("p_1_2_1\tp\t1\t2\t10\t99\n").unwrap()[0].max_block == 2);
        assert!(parse_parts("p_1_2_1\tp\t1\n").is_err());
        // Each part's row carries the table's metadata time; none: 0.
        let (metadata, parts) =
            parse_listing("p_1_2_1\tp\t1\t2\t10\t99\t7\np_3_3_0\tp\t3\t3\t1\t98\t7\n").unwrap();
        assert_eq!((metadata, parts.len(), parts[1].rows), (7, 2, 1));
        assert_eq!(parse_listing("").unwrap(), (0, Vec::new()));
        // The folded form: the metadata time in a row with an empty name.
        let (metadata, parts) =
            parse_listing("\t\t0\t0\t0\t5\np_1_2_1\tp\t1\t2\t10\t99\n").unwrap();
        assert_eq!((metadata, parts.len()), (5, 1));
        assert!(parse_listing("p_1_2_1\tp\t1\t2\t10\t99\tx\n").is_err());
    }
}
