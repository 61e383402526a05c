//! Issue #43, the small-statement floor: a statement is answered from a cluster catalog at
//! most 1 s old; one that finds it older than 0.5 s has the catalog thread read it at once,
//! so while statements keep coming none waits for the shards' catalog statements (about
//! one a second did before: the thread reads every 2 s). Two real 18.16 shards.

use std::time::{Duration, Instant};

use crate::cluster::{cluster_config_named, statement_at, two_shard_cluster, wait_delivered};
use crate::util::*;

/// `chingest_cluster_catalog_refreshes_total{by="<by>"}` on `s` (0 when not exported).
fn refreshes(s: &Server, by: &str) -> u64 {
    let text = s.get("/metrics").text().unwrap();
    let prefix = format!("chingest_cluster_catalog_refreshes_total{{by=\"{by}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

#[test]
fn statements_in_a_stream_never_wait_for_the_cluster_catalog() {
    const TEST: &str = "statements_in_a_stream_never_wait_for_the_cluster_catalog";
    let Some((_dir, shards)) = two_shard_cluster(TEST) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let dir = data_dir();
    let node = Spawn::new(dir.path())
        .config(&cluster_config_named(&[s0, s1], "n1"))
        .start();
    node.query("CREATE DATABASE d");
    assert_eq!(
        node.post(
            "/write?db=d",
            "cpu,host=a v=1 1000000000\ncpu,host=b v=2 2000000000\n"
        )
        .status(),
        204
    );
    wait_delivered(&[&node], Duration::from_secs(60));
    let q = "SELECT count(v) FROM cpu";
    let want = statement_at(&node, "/query?db=d", q);
    assert_eq!(want["results"][0]["series"][0]["values"][0][1], 2, "{want}");

    // A statement every 100 ms for 4 s: the catalog passes 0.5 s every half second, 1 s
    // (where a statement reads it itself) never but maybe at the first.
    let (waited, ahead) = (refreshes(&node, "statement"), refreshes(&node, "ahead"));
    let until = Instant::now() + Duration::from_secs(4);
    let mut statements = 0;
    while Instant::now() < until {
        assert_eq!(statement_at(&node, "/query?db=d", q), want);
        statements += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    let waited = refreshes(&node, "statement") - waited;
    let ahead = refreshes(&node, "ahead") - ahead;
    assert!(
        waited <= 1,
        "{waited} of {statements} statements read the catalog themselves ({ahead} ahead)"
    );
    assert!(ahead >= 2, "{ahead} reads ahead over 4 s");
}
