//! Issue #43: a pushed-down aggregate grouped by tags with about one series per group
//! (`GROUP BY time(1m), host`, `GROUP BY *`) is grouped by series on the 18.16 shards, no tag
//! read there, and each series' tag values put back on the node (`cluster/src/series_tags.rs`);
//! one grouped by a tag of few values (`dc`) stays grouped by the tag. On two real 18.16
//! shards written by two nodes, every statement answers as the embedded engine on the same
//! points — through series another node writes (ids the reading node's maps do not hold
//! until it reads the listing its read carried) and a measurement dropped and made again
//! with other series — and `chingest_cluster_pushdown_groups_total` shows which way.

use crate::cluster::wait_values;
use crate::cluster_oracle::{counter, on_d, points, NodesAndOracle};
use crate::util::*;

/// `chingest_cluster_pushdown_groups_total{by="<by>"}` on `s`.
fn grouped(s: &Server, by: &str) -> u64 {
    counter(
        s,
        &format!("chingest_cluster_pushdown_groups_total{{by=\"{by}\"}}"),
    )
}

/// One series per group: grouped by series on the shards.
const BY_SERIES: &[&str] = &[
    // TSBS double-groupby's shape.
    "SELECT mean(v), mean(n), count(n), sum(n), min(v), max(v), spread(n) FROM cpu \
     WHERE time >= 0s AND time < 400s GROUP BY time(1m), host",
    // Picked points: each series' partial, then the group's.
    "SELECT first(v), last(n) FROM cpu WHERE time < 400s GROUP BY time(2m), host",
    "SELECT last(v) FROM cpu GROUP BY host",
    // Two tags, and a tag the measurement lacks.
    "SELECT max(v), count(DISTINCT n) FROM cpu GROUP BY *",
    "SELECT median(v), percentile(n, 90) FROM cpu GROUP BY host, dc",
    "SELECT count(v) FROM cpu GROUP BY host, nope",
    // Pruned to the series of two hosts too.
    "SELECT mean(v) FROM cpu WHERE (host = 'h3' OR host = 'h5') AND time < 400s \
     GROUP BY time(1m), host fill(0)",
];

/// Four dcs over the shards' hosts: grouped by the tag.
const BY_TAGS: &[&str] =
    &["SELECT mean(v), count(n) FROM cpu WHERE time < 400s GROUP BY time(1m), dc"];

/// Every statement answers on each node as on `embedded`.
fn check(step: &str, nodes: &[&Server], embedded: &Server) {
    for node in nodes {
        let fields = "SHOW FIELD KEYS FROM cpu";
        let want = on_d(embedded, fields)["results"][0]["series"][0]["values"].clone();
        wait_values(node, "/query?db=d", fields, want);
        for q in BY_SERIES.iter().chain(BY_TAGS) {
            let want = on_d(embedded, q);
            assert!(want["results"][0].get("error").is_none(), "{q}: {want}");
            assert!(want["results"][0].get("series").is_some(), "{q}: {want}");
            assert_eq!(on_d(node, q), want, "{step}: {q}");
        }
    }
}

#[test]
fn reads_grouped_by_series_answer_as_the_engine_through_new_series_and_a_table_made_again() {
    const TEST: &str =
        "reads_grouped_by_series_answer_as_the_engine_through_new_series_and_a_table_made_again";
    let Some(c) = NodesAndOracle::start(TEST) else {
        return;
    };
    let (n1, n2, embedded) = (&c.n1, &c.n2, &c.embedded);
    let nodes = c.nodes();
    let write = |node: &Server, body: String| c.write(node, body);
    let hosts: Vec<i64> = (0..20).collect();
    write(n1, points(&hosts, 0, 30));
    check("points once", &nodes, embedded);

    // Which way each statement went, on a node that ran nothing else since.
    let (series, tags) = (grouped(n1, "series"), grouped(n1, "tags"));
    for q in BY_SERIES {
        on_d(n1, q);
    }
    assert!(
        grouped(n1, "series") >= series + 2 * BY_SERIES.len() as u64,
        "both shards grouped each statement by series"
    );
    assert_eq!(grouped(n1, "tags"), tags, "no statement grouped by the tag");
    let series = grouped(n1, "series");
    for q in BY_TAGS {
        on_d(n1, q);
    }
    assert_eq!(
        grouped(n1, "series"),
        series,
        "a tag of 4 values, not by series"
    );
    assert!(
        grouped(n1, "tags") >= tags + 2,
        "both shards grouped by the tag"
    );

    // The other node writes new series (a host of another dc, a new host): n1's maps learn
    // their ids from the listing its read carries.
    write(
        n2,
        "cpu,host=h3,dc=dc9 v=100,n=1i 5000000000\ncpu,host=h30,dc=dc1 v=7,n=2i 70000000000\n"
            .into(),
    );
    check("new series by another node", &nodes, embedded);
    assert_eq!(grouped(n1, "tags_again"), 0, "every id was found");

    // Dropped and made again by the other node, other series under the same hosts.
    for s in [n2, embedded] {
        let r = on_d(s, "DROP MEASUREMENT cpu");
        assert!(r["results"][0].get("error").is_none(), "{r}");
    }
    let made_again: String = points(&[1, 2, 3, 5, 6, 7, 8], 3, 5).replace(",dc=dc", ",dc=x");
    write(n2, made_again);
    check("made again", &nodes, embedded);
    assert_eq!(grouped(n1, "tags_again"), 0, "every id was found");
}
