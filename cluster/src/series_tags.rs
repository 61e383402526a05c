//! Partials grouped by series on the shards, their tags put back on the node (issue #43).
//!
//! A pushed-down aggregate grouped by tags (`GROUP BY time(1h), hostname`) made every 18.16
//! shard read each row's tag strings and hash them to group its rows. Where the groups are
//! about the series (each series a group of its own, as with TSBS's `hostname`), the shard
//! groups by `(interval, series_id)` instead — two integers, no string column read — and
//! sends the series id in each group tag's column; the node puts each id's value of the tag
//! back ([`crate::series_of_tags`]' maps, which hold each series' value of a tag: a series'
//! tags are its key, so the value never changes), and the partial rows reach the combination
//! as the tag-grouped statement's would (rows of one group from several series are combined
//! there as rows of one group from several shards are). TSBS `double-groupby-all`, both
//! 18.16 shards at once on two cores: the shards' statement 116 → 101 ms (min of 31
//! interleaved rounds; `test_results/latest/tsbs_cluster.md`, run 16).
//!
//! Only where it pays: a group tag's values are at least [`SERIES_PER_VALUE`]'s share of the
//! shard table's series (the map's counts; a low-cardinality `GROUP BY` would send a row per
//! series, not per group), every group tag's map kept (not past its bound, no replicas,
//! series pruning not turned off). Exact: an id the map does not hold is looked up with the
//! listing the read carried (taken after its parts, `identified.rs`: every part the read saw,
//! or the merged part holding its rows, is in it); an id still unknown reads the shard again
//! grouped by the tags (`chingest_cluster_pushdown_groups_total{by="tags_again"}`).

use std::collections::{BTreeSet, HashMap};

use crate::folded::{self, Cell};
use crate::row_binary::{write_string, RowBinary};
use crate::{Cluster, ClusterError};

/// A shard groups by series when its series are at most this many per value of the group
/// tag with the most values (`series ≤ values × 5 / 4`): the rows it sends are then at most
/// a quarter more than grouped by the tags.
pub const SERIES_PER_VALUE: (usize, usize) = (5, 4);

/// A column of a partial row holding a group tag: its index in the row, the tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupTag {
    /// The column's index in the partial row.
    pub column: usize,
    /// The tag.
    pub tag: String,
}

/// How shard reads' partials were grouped (the label of
/// `chingest_cluster_pushdown_groups_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupedBy {
    /// By series on the shard, the tags put back on the node.
    Series,
    /// By the tags on the shard.
    Tags,
    /// By series, then again by the tags: an id no map knew.
    TagsAgain,
}

impl GroupedBy {
    pub(crate) fn count(self) {
        let label = match self {
            GroupedBy::Series => "series",
            GroupedBy::Tags => "tags",
            GroupedBy::TagsAgain => "tags_again",
        };
        metrics::counter!("chingest_cluster_pushdown_groups_total", "by" => label).increment(1);
    }
}

/// Whether grouping by series pays for `series` series and `values` values of a tag.
fn pays(series: usize, values: usize) -> bool {
    let (num, den) = SERIES_PER_VALUE;
    series.saturating_mul(den) <= values.saturating_mul(num)
}

/// Turns off grouping by series (`CHINGEST_CLUSTER_GROUP_BY_SERIES=0`: for comparisons).
fn enabled() -> bool {
    std::env::var("CHINGEST_CLUSTER_GROUP_BY_SERIES").as_deref() != Ok("0")
}

impl Cluster {
    /// Whether shard `k` groups a statement with the group tags `tags` by series.
    pub(crate) fn groups_by_series(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        tags: &[GroupTag],
    ) -> Result<bool, ClusterError> {
        if tags.is_empty() || !enabled() {
            return Ok(false);
        }
        let (mut series, mut values) = (0, 0);
        for g in tags {
            let Some((s, v)) = self.series_and_values(k, db, measurement, &g.tag)? else {
                return Ok(false);
            };
            (series, values) = (series.max(s), values.max(v));
        }
        Ok(pays(series, values))
    }

    /// Shard `k`'s partial rows `rows` (columns `cells`) with each group tag column's series
    /// id replaced by the series' value of the tag; `None` when a series is not known even
    /// after the map was brought up to date with `listed`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn tags_of_series(
        &self,
        k: usize,
        db: &str,
        measurement: &str,
        tags: &[GroupTag],
        cells: &[Cell],
        rows: &[u8],
        listed: Option<&str>,
    ) -> Result<Option<Vec<u8>>, ClusterError> {
        let unexpected = |m| self.unexpected_answer(k, m);
        let ids = ids_in(rows, cells, tags).map_err(unexpected)?;
        let mut values = Vec::with_capacity(tags.len());
        for g in tags {
            match self.values_of_series(k, db, measurement, &g.tag, &ids, listed)? {
                Some(v) => values.push(v),
                None => return Ok(None),
            }
        }
        with_tags(rows, cells, tags, &values)
            .map(Some)
            .map_err(unexpected)
    }
}

/// The column index of each group tag's column among `cells`, as a lookup.
fn tag_of_column(tags: &[GroupTag], n: usize) -> Vec<Option<usize>> {
    let mut out = vec![None; n];
    for (g, t) in tags.iter().enumerate() {
        if let Some(c) = out.get_mut(t.column) {
            *c = Some(g);
        }
    }
    out
}

/// A group tag column's cell: the series id as the shard wrote it (`CAST(series_id AS
/// String)`).
fn id_cell(r: &mut RowBinary<'_>) -> Result<u64, String> {
    let s = r.string()?;
    s.parse()
        .map_err(|_| format!("a series id expected, {s:?} read"))
}

/// Every series id the group tag columns of `rows` hold.
fn ids_in(rows: &[u8], cells: &[Cell], tags: &[GroupTag]) -> Result<BTreeSet<u64>, String> {
    let of = tag_of_column(tags, cells.len());
    let mut ids = BTreeSet::new();
    let mut r = RowBinary { bytes: rows, at: 0 };
    while !r.done() {
        for (cell, g) in cells.iter().zip(&of) {
            match g {
                Some(_) => {
                    ids.insert(id_cell(&mut r)?);
                }
                None => folded::skip(&mut r, *cell)?,
            }
        }
    }
    Ok(ids)
}

/// `rows` with each group tag column's id replaced by its value (`values[g]` of tag `g`).
fn with_tags(
    rows: &[u8],
    cells: &[Cell],
    tags: &[GroupTag],
    values: &[HashMap<u64, String>],
) -> Result<Vec<u8>, String> {
    let of = tag_of_column(tags, cells.len());
    let mut out = Vec::with_capacity(rows.len() * 2);
    let mut r = RowBinary { bytes: rows, at: 0 };
    while !r.done() {
        for (cell, g) in cells.iter().zip(&of) {
            let start = r.at;
            match g {
                Some(g) => {
                    let id = id_cell(&mut r)?;
                    let value = values[*g]
                        .get(&id)
                        .ok_or_else(|| format!("series {id} not looked up"))?;
                    write_string(&mut out, value);
                }
                None => {
                    folded::skip(&mut r, *cell)?;
                    out.extend_from_slice(&rows[start..r.at]);
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::table::ColumnKind;

    fn tags() -> Vec<GroupTag> {
        vec![
            GroupTag {
                column: 1,
                tag: "host".into(),
            },
            GroupTag {
                column: 2,
                tag: "dc".into(),
            },
        ]
    }

    fn cells() -> Vec<Cell> {
        vec![
            Cell::Column(ColumnKind::Integer),
            Cell::Column(ColumnKind::Tag),
            Cell::Column(ColumnKind::Tag),
            Cell::Column(ColumnKind::Float),
        ]
    }

    /// A partial row: `b`, the series id in both tag columns, a nullable float.
    fn row(out: &mut Vec<u8>, b: i64, id: &str, v: Option<f64>) {
        out.push(0);
        out.extend_from_slice(&b.to_le_bytes());
        write_string(out, id);
        write_string(out, id);
        match v {
            Some(v) => {
                out.push(0);
                out.extend_from_slice(&v.to_bits().to_le_bytes());
            }
            None => out.push(1),
        }
    }

    #[test]
    fn each_tag_column_gets_its_series_value_and_the_rest_stays_as_it_was() {
        let mut rows = Vec::new();
        row(&mut rows, 10, "7", Some(1.5));
        row(&mut rows, 20, "12345678901234567890", None);
        let ids = ids_in(&rows, &cells(), &tags()).unwrap();
        assert_eq!(ids, BTreeSet::from([7, 12345678901234567890]));
        let long = "h".repeat(200); // a two-byte length
        let values = vec![
            HashMap::from([(7, "a".to_string()), (12345678901234567890, long.clone())]),
            HashMap::from([(7, "eu".to_string()), (12345678901234567890, String::new())]),
        ];
        let out = with_tags(&rows, &cells(), &tags(), &values).unwrap();
        let mut want = Vec::new();
        for (b, host, dc, v) in [(10, "a", "eu", Some(1.5)), (20, long.as_str(), "", None)] {
            want.push(0);
            want.extend_from_slice(&i64::to_le_bytes(b));
            write_string(&mut want, host);
            write_string(&mut want, dc);
            match v {
                Some(v) => {
                    want.push(0);
                    want.extend_from_slice(&f64::to_bits(v).to_le_bytes());
                }
                None => want.push(1),
            }
        }
        assert_eq!(out, want);
    }

    #[test]
    fn an_id_not_looked_up_or_not_a_number_is_an_error_not_a_value() {
        let mut rows = Vec::new();
        row(&mut rows, 10, "7", None);
        let none = vec![HashMap::new(), HashMap::new()];
        let err = with_tags(&rows, &cells(), &tags(), &none).unwrap_err();
        assert!(err.contains("series 7 not looked up"), "{err}");
        let mut bad = Vec::new();
        row(&mut bad, 10, "host_7", None);
        let err = ids_in(&bad, &cells(), &tags()).unwrap_err();
        assert!(err.contains("a series id expected"), "{err}");
    }

    #[test]
    fn grouping_by_series_pays_only_about_one_series_per_value() {
        assert!(pays(100, 100));
        assert!(pays(125, 100));
        assert!(!pays(126, 100));
        assert!(
            !pays(100, 3),
            "GROUP BY region: a row per series, not per region"
        );
        assert!(!pays(1, 0));
    }
}
