//! Issue #43: a shard down during a read answers as InfluxDB Enterprise does: an error
//! naming the shard (its number and address), never a silently partial answer.

use std::time::Duration;

use crate::cluster::{
    cluster_config_named, statement_at, two_shard_cluster, wait_delivered, wait_values,
};
use crate::util::*;

/// Points on both shards; one shard killed (`kill -9`): an InfluxQL read through `/query`
/// (its points or its series) fails with 503 and an error naming that shard's number and
/// address and what the node met there, not the other shard's points alone; with the shard
/// back the read answers every point again. (`SHOW MEASUREMENTS`, `SHOW FIELD KEYS` answer
/// from the node's catalog, as InfluxDB Enterprise's from its meta nodes.)
#[test]
fn a_read_with_a_shard_down_names_the_shard_and_is_not_partial() {
    let test = "a_read_with_a_shard_down_names_the_shard_and_is_not_partial";
    let Some((_dir, mut shards)) = two_shard_cluster(test) else {
        return;
    };
    let dir = data_dir();
    let s = Spawn::new(dir.path())
        .config(&cluster_config_named(&[&shards[0], &shards[1]], "n1"))
        .start();
    s.query("CREATE DATABASE d");
    let body: String = (0..40)
        .map(|h| format!("cpu,host=h{h} v={h} {}\n", 1_000_000_000 + h))
        .collect();
    assert_eq!(s.post("/write?db=d", body).status(), 204);
    wait_delivered(&[&s], Duration::from_secs(60));
    let count = "SELECT count(v) FROM d.autogen.cpu";
    wait_values(
        &s,
        "/query",
        count,
        serde_json::json!([["1970-01-01T00:00:00Z", 40]]),
    );
    for sh in &shards {
        let n = sh.query("SELECT count() FROM __shard_d.cpu").unwrap();
        assert_ne!(n.trim(), "0", "every shard holds some of the series");
    }

    // Each host's last point, kept by the node once read (`last_points.rs`): with the shard
    // down its listing fails the read too, not the kept rows answering.
    let last = "SELECT * FROM d.autogen.cpu GROUP BY * ORDER BY time DESC LIMIT 1";
    let answer = statement_at(&s, "/query", last);
    assert_eq!(answer["results"][0]["series"].as_array().unwrap().len(), 40);
    // Statements pruned to one host's series (`series_of_tags.rs`), each shard's map loaded:
    // a shard holding none of them is still asked (for the listing), so it fails the read.
    let pruned = [
        "SELECT max(v) FROM d.autogen.cpu WHERE host = 'h1' AND time >= 0s AND time < 10s GROUP BY time(1s)",
        "SELECT * FROM d.autogen.cpu WHERE v > 0 AND (host = 'h1' OR host = 'h2')",
    ];
    for q in pruned {
        let answer = statement_at(&s, "/query", q);
        assert!(answer["results"][0]["series"].is_array(), "{q}: {answer}");
    }
    // `top()`'s candidates (`top_candidates.rs`), read once with both shards up.
    let top = "SELECT top(v, 3), host FROM d.autogen.cpu WHERE time >= 0s GROUP BY time(1s)";
    let answer = statement_at(&s, "/query", top);
    assert!(answer["results"][0]["series"].is_array(), "{top}: {answer}");
    let down = shards[1].url();
    shards[1].stop();
    for q in [
        count,
        "SELECT v FROM d.autogen.cpu WHERE host = 'h1'",
        "SELECT last(v) FROM d.autogen.cpu GROUP BY host",
        last,
        "SELECT mean(v) FROM d.autogen.cpu WHERE time >= 0 GROUP BY time(1s)",
        "SHOW TAG VALUES ON d FROM cpu WITH KEY = host",
        "SHOW SERIES ON d",
        pruned[0],
        pruned[1],
        top,
    ] {
        let r = s
            .client
            .post(s.url("/query"))
            .query(&[("q", q)])
            .send()
            .unwrap();
        let status = r.status();
        let text = r.text().unwrap();
        assert_eq!(status, 503, "{q}: {text}");
        // The shard by its number and address, and what the node met there.
        assert!(
            text.contains(&format!("shard 1 ({down}/) unreachable")),
            "{q}: {text}"
        );
        assert!(
            text.to_lowercase().contains("connection refused"),
            "{q}: {text}"
        );
        assert!(
            !text.contains("\"series\""),
            "{q}: a partial answer: {text}"
        );
    }

    let bin = crate::cluster::clickhouse_server::server_binary(test).unwrap();
    shards[1].spawn(&bin);
    wait_values(
        &s,
        "/query",
        count,
        serde_json::json!([["1970-01-01T00:00:00Z", 40]]),
    );
}
