//! Issue #25, `DROP DATABASE` on a ClickHouse cluster end to end: two chingest nodes over
//! two real ClickHouse servers (Debian's 18.16, on loopback), one delivering every 8 s. A
//! drop run on one node removes the points every node acknowledged before it, those still
//! in the slow node's WAL included (they never reach a shard), and leaves no table of the
//! database on any shard; both nodes then refuse its writes as InfluxDB does, until it is
//! created again, empty. A node down holds the drop's last step back (503 naming it): the
//! database is gone meanwhile, and a `CREATE DATABASE` of the name refused until a drop
//! completes; a node gone for good is forgotten by an admin, and drops stop waiting for it.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cluster::{clickhouse_server::Shard, two_shard_cluster};
use crate::cluster::{wait_delivered, wait_listed};
use crate::cluster_delete::{slow_node, two_nodes_one_slow};
use crate::util::*;

/// `q` on `s` (POST /query), its answer.
fn influxql(s: &Server, db: &str, q: &str) -> Value {
    crate::cluster::statement_at(s, &format!("/query?db={db}"), q)
}

fn ok(r: &Value) {
    assert!(r["results"][0].get("error").is_none(), "{r}");
}

/// The chingest tables of database `db` over both shards: shard tables and `Distributed`.
fn tables_of(shards: [&Shard; 2], db: &str) -> u64 {
    shards
        .iter()
        .map(|s| {
            s.query(&format!(
                "SELECT count() FROM system.tables WHERE database IN ('__shard_{db}', '{db}')"
            ))
            .unwrap()
            .trim()
            .parse::<u64>()
            .unwrap()
        })
        .sum()
}

/// The databases `s` lists (`SHOW DATABASES`); a failed statement fails the test, never
/// lists none.
fn databases(s: &Server) -> Vec<String> {
    let r = s.query("SHOW DATABASES");
    assert!(r["results"][0].get("error").is_none(), "{r}");
    r["results"][0]["series"][0]["values"]
        .as_array()
        .map(|v| {
            v.iter()
                .map(|d| d[0].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Polls until `s` answers `q` on `db` with `want` as its first series' values.
fn wait_answer(s: &Server, db: &str, q: &str, want: Value) {
    crate::cluster::wait_values(s, &format!("/query?db={db}"), q, want)
}

#[test]
fn drop_database_on_a_cluster_drops_every_nodes_points_and_refuses_its_writes() {
    let test = "drop_database_on_a_cluster_drops_every_nodes_points_and_refuses_its_writes";
    let Some((_dir, shards)) = two_shard_cluster(test) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let (dir_b, a, b, _dir_a) = two_nodes_one_slow(s0, s1);
    a.query("CREATE DATABASE keep");
    wait_listed(&b, "keep");
    let points: String = (0..20)
        .map(|h| format!("m,host=h{h} v={h}i {}\n", 1000 + h))
        .collect();
    assert_eq!(a.post("/write?db=d", points.clone()).status(), 204);
    assert_eq!(a.post("/write?db=keep", points.clone()).status(), 204);
    // b's sit in its WAL (it delivers every 8 s) when the drop runs.
    assert_eq!(b.post("/write?db=d", "m,host=b v=1i 5000").status(), 204);
    wait_answer(
        &a,
        "d",
        "SELECT count(v) FROM m",
        serde_json::json!([["1970-01-01T00:00:00Z", 20]]),
    );

    ok(&influxql(&a, "", "DROP DATABASE d"));
    // The drop answered once b applied it: b refuses the database's writes at once.
    let r = b.post("/write?db=d", "m,host=b v=2i 6000");
    assert_eq!(r.status(), 404, "{:?}", r.text());
    assert!(r.text().unwrap().contains("database not found"));
    let r = a.post("/write?db=d", "m,host=a v=2i 6000");
    assert_eq!(r.status(), 404);
    assert_eq!(tables_of([s0, s1], "d"), 0);
    // What b acknowledged before the drop never reaches a shard: its WAL let it go.
    wait_delivered(&[&a, &b], Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(tables_of([s0, s1], "d"), 0, "{}", b.log_text());
    for node in [&a, &b] {
        assert_eq!(databases(node), ["keep"]);
        let r = influxql(node, "d", "SELECT count(v) FROM m");
        assert_eq!(r["results"][0]["error"], "database not found: d", "{r}");
    }
    // The other database keeps its points; a hostile name is a name, nothing else goes.
    ok(&influxql(
        &a,
        "",
        r#"DROP DATABASE "keep`; DROP DATABASE __shard_keep; --""#,
    ));
    ok(&influxql(&b, "", "DROP DATABASE \"keep'\""));
    wait_answer(
        &b,
        "keep",
        "SELECT count(v) FROM m",
        serde_json::json!([["1970-01-01T00:00:00Z", 20]]),
    );

    // Created again through b, written through a: empty but for the new point.
    ok(&influxql(&b, "", "CREATE DATABASE d"));
    wait_listed(&a, "d");
    assert_eq!(a.post("/write?db=d", "m,host=new v=7i 9000").status(), 204);
    wait_delivered(&[&a], Duration::from_secs(60));
    for node in [&a, &b] {
        wait_answer(
            node,
            "d",
            "SELECT v, host FROM m",
            serde_json::json!([["1970-01-01T00:00:00.000009Z", 7, "new"]]),
        );
    }
    // A restart applies no drop twice: b keeps the database created again.
    drop(b);
    let b = slow_node(&dir_b, s0, s1);
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(databases(&b), ["d", "keep"]);
    assert!(
        !b.log_text().contains("database drop applied"),
        "{}",
        b.log_text()
    );

    // b down: the drop waits for it (a's delete_wait_secs, 25), then answers 503 naming
    // it; the database is gone for a at once, and cannot be created again meanwhile.
    drop(b);
    let r = a
        .client
        .post(a.url("/query"))
        .query(&[("q", "DROP DATABASE d")])
        .send()
        .unwrap();
    assert_eq!(r.status(), 503);
    let text = r.text().unwrap();
    assert!(text.contains("node(s) b "), "{text}");
    assert_eq!(databases(&a), ["keep"]);
    assert_eq!(a.post("/write?db=d", "m v=1i 1").status(), 404);
    let r = influxql(&a, "", "CREATE DATABASE d");
    let err = r["results"][0]["error"].as_str().unwrap_or_default();
    assert!(err.contains("run DROP DATABASE \"d\" again"), "{r}");
    // b back: its first refreshes apply the drop; run again, it completes.
    let b = slow_node(&dir_b, s0, s1);
    let deadline = Instant::now() + Duration::from_secs(60);
    while databases(&b).contains(&"d".to_string()) {
        assert!(Instant::now() < deadline, "{}", b.log_text());
        std::thread::sleep(Duration::from_millis(100));
    }
    ok(&influxql(&a, "", "DROP DATABASE d"));
    assert_eq!(tables_of([s0, s1], "d"), 0);
    ok(&influxql(&a, "", "CREATE DATABASE d"));
    wait_listed(&b, "d");
    let r = influxql(&b, "d", "SELECT count(v) FROM m");
    assert!(r["results"][0]["series"].is_null(), "{r}");

    // b gone for good: an admin forgets it (here anyone: auth is off), and a drop no longer
    // waits for it. A node cannot forget itself; an unknown one is no error.
    drop(b);
    let forget = |node: &str| {
        let r = a
            .client
            .post(a.url("/api/v1/cluster/forget-node"))
            .query(&[("node", node)])
            .send()
            .unwrap();
        (r.status().as_u16(), r.text().unwrap())
    };
    let (status, text) = forget("a");
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("is this node"), "{text}");
    let began = Instant::now();
    assert_eq!(
        forget("b"),
        (200, r#"{"forgotten":true,"node":"b"}"#.to_string())
    );
    ok(&influxql(&a, "", "DROP DATABASE d"));
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(databases(&a), ["keep"]);
    assert_eq!(
        forget("nobody"),
        (200, r#"{"forgotten":false,"node":"nobody"}"#.to_string())
    );
    // A hostile name is a name: nothing by it is listed, a stays listed on every shard, and
    // writes flow after.
    let (status, text) = forget("x' OR node != '");
    assert_eq!(status, 200, "{text}");
    assert!(text.contains(r#""forgotten":false"#), "{text}");
    for shard in [s0, s1] {
        let listed = shard
            .query("SELECT count() FROM __chingest.nodes WHERE node = 'a'")
            .unwrap();
        assert_ne!(listed.trim(), "0");
    }
    assert_eq!(a.post("/write?db=keep", "m,host=z v=1i 1").status(), 204);
}
