//! A partial statement grouped by series where the shard finds that pays
//! (`cluster/src/series_tags.rs`): the group tags' columns hold the series id, no tag is read,
//! and the node puts each series' value of the tags back before combining.

use engine::table::ColumnKind;

use super::Pushdown;

impl Pushdown {
    /// This statement, grouped by series on the shard where `by_series` (the
    /// `cluster::Cluster::read_partials_by_series` contract), else as it is.
    pub(super) fn grouped_by_series(&self, by_series: bool) -> Pushdown {
        Pushdown {
            by_series,
            ..self.clone()
        }
    }

    /// The `GROUP BY` tags the measurement has, with their columns among the partial row's
    /// `kinds` (`partial_kinds`: the interval's start, then one column per group).
    pub(super) fn group_tags(&self, kinds: &[(String, ColumnKind)]) -> Vec<cluster::GroupTag> {
        self.groups
            .iter()
            .enumerate()
            .filter(|(g, (_, known))| {
                *known && kinds.get(g + 1).is_some_and(|(_, k)| *k == ColumnKind::Tag)
            })
            .map(|(g, (tag, _))| cluster::GroupTag {
                column: g + 1,
                tag: tag.clone(),
            })
            .collect()
    }
}

/// Exports how shards grouped partials (`cluster/src/series_tags.rs`) at 0 from the start.
pub(super) fn register_metrics() {
    for by in ["series", "tags", "tags_again"] {
        metrics::counter!("chingest_cluster_pushdown_groups_total", "by" => by).absolute(0);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::pushed;

    #[test]
    fn grouped_by_series_the_shard_reads_no_tag_and_sends_the_series_id_in_its_column() {
        for q in [
            "SELECT mean(v), count(n) FROM cpu WHERE time > 0 AND time < 100 \
             GROUP BY time(10ns), host, nope",
            // Picked points: each series' partial first, then the group's.
            "SELECT last(v), first(n) FROM cpu GROUP BY time(10ns), host, nope",
        ] {
            let p = pushed(q).unwrap();
            let tags = p.group_tags(&p.partial_kinds());
            assert_eq!(
                tags,
                vec![cluster::GroupTag {
                    column: 1,
                    tag: "host".into()
                }],
                "{q}: only the tag the measurement has"
            );
            let by_tags = p.grouped_by_series(false).partial_sql("t", None, Some(&[]));
            assert!(by_tags.contains("`host`"), "{by_tags}");
            let by_series = p.grouped_by_series(true).partial_sql("t", None, Some(&[]));
            assert!(!by_series.contains("`host`"), "no tag read: {by_series}");
            assert!(!by_series.contains("__k0"), "{by_series}");
            assert!(
                by_series.contains("__sid AS __p1") || by_series.contains("__sid AS k0"),
                "the series id in the tag's column: {by_series}"
            );
            assert!(
                by_series.contains("'' AS"),
                "the unknown tag stays empty: {by_series}"
            );
        }
    }
}
