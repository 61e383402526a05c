//! Issue #25, retention policies besides the default on a ClickHouse cluster end to end: two
//! chingest nodes over two real ClickHouse servers (Debian's 18.16, on loopback). A policy
//! created, altered or dropped on one node is the other's within seconds; a policy's points
//! are in one shard database whichever node wrote them, read through either node by the
//! policy's name and never mixed with another policy's; a policy's duration is enforced by
//! either node's door; `DROP RETENTION POLICY` and `DROP DATABASE` take the policy's points
//! from every shard and the policy from every node.

use std::time::Duration;

use serde_json::{json, Value};

use crate::cluster::{cluster_config_named, two_shard_cluster, wait_delivered, wait_listed};
use crate::util::*;

/// Statements on database d, times as integers (ns).
const ON_D: &str = "/query?db=d&epoch=ns";

fn influxql(s: &Server, q: &str) -> Value {
    crate::cluster::statement_at(s, ON_D, q)
}

fn ok(s: &Server, q: &str) {
    let r = influxql(s, q);
    assert!(r["results"][0].get("error").is_none(), "{q}: {r}");
}

/// Polls until `s` answers `q` with `want` as its first series' values.
fn wait_answer(s: &Server, q: &str, want: Value) {
    crate::cluster::wait_values(s, ON_D, q, want)
}

#[test]
fn retention_policies_on_a_cluster_are_every_nodes() {
    let test = "retention_policies_on_a_cluster_are_every_nodes";
    let Some((_dir, shards)) = two_shard_cluster(test) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let (dir_a, dir_b) = (data_dir(), data_dir());
    let a = Spawn::new(dir_a.path())
        .config(&(cluster_config_named(&[s0, s1], "a") + "delete_wait_secs = 25\n"))
        .start();
    let b = Spawn::new(dir_b.path())
        .config(&cluster_config_named(&[s0, s1], "b"))
        .start();
    a.query("CREATE DATABASE d");
    wait_listed(&b, "d");

    // Created on a, b has it.
    ok(
        &a,
        "CREATE RETENTION POLICY one_day ON d DURATION 1d REPLICATION 1",
    );
    let both = json!([
        ["autogen", "0s", "168h0m0s", 1, true],
        ["one_day", "24h0m0s", "1h0m0s", 1, false]
    ]);
    wait_answer(&b, "SHOW RETENTION POLICIES ON d", both.clone());

    // Each node writes one policy; each policy's points through either node, unmixed.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let t = now - now % 1_000_000_000;
    let r = b.post("/write?db=d&rp=one_day", format!("m,host=b v=1i {t}"));
    assert_eq!(r.status(), 204, "{:?}", r.text());
    let r = a.post("/write?db=d", format!("m,host=a v=2i {t}"));
    assert_eq!(r.status(), 204, "{:?}", r.text());
    let r = a.post("/write?db=d&rp=one_day", format!("m,host=a1 v=3i {t}"));
    assert_eq!(r.status(), 204, "{:?}", r.text());
    wait_delivered(&[&a, &b], Duration::from_secs(60));
    for node in [&a, &b] {
        wait_answer(node, "SELECT count(v) FROM d.one_day.m", json!([[0, 2]]));
        wait_answer(
            node,
            "SELECT host, v FROM d.autogen.m",
            json!([[t, "a", 2]]),
        );
        let r = influxql(node, "SELECT host, v FROM d.one_day.m");
        assert_eq!(
            r["results"][0]["series"][0]["values"],
            json!([[t, "a1", 3], [t, "b", 1]]),
            "{r}"
        );
    }
    // One shard database holds the policy's points, whichever node wrote them.
    let policy_tables = || -> Vec<String> {
        let mut names: Vec<String> = [s0, s1]
            .iter()
            .flat_map(|s| {
                s.query(
                    "SELECT DISTINCT database FROM system.tables \
                     WHERE startsWith(database, '__shard___rp_') AND name = 'm'",
                )
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
            })
            .collect();
        names.sort();
        names.dedup();
        names
    };
    assert_eq!(policy_tables().len(), 1, "{:?}", policy_tables());
    // The policy's duration at either node's door.
    let old = t - 2 * 86_400 * 1_000_000_000;
    for node in [&a, &b] {
        let r = node.post("/write?db=d&rp=one_day", format!("m,host=old v=1i {old}"));
        assert_eq!(r.status(), 400, "{:?}", r.text());
        assert!(r.text().unwrap().contains("beyond retention policy"));
    }

    // The default changed on b: a's writes without a policy go to one_day.
    ok(&b, "ALTER RETENTION POLICY one_day ON d DEFAULT");
    wait_answer(
        &a,
        "SHOW RETENTION POLICIES ON d",
        json!([
            ["autogen", "0s", "168h0m0s", 1, false],
            ["one_day", "24h0m0s", "1h0m0s", 1, true]
        ]),
    );
    let r = a.post("/write?db=d", format!("m,host=a2 v=4i {t}"));
    assert_eq!(r.status(), 204, "{:?}", r.text());
    wait_delivered(&[&a], Duration::from_secs(60));
    for node in [&a, &b] {
        wait_answer(node, "SELECT count(v) FROM m", json!([[0, 3]]));
    }

    // SELECT INTO another policy (what a continuous query runs) through b, read through a.
    let minute = 60_000_000_000;
    ok(
        &b,
        &format!(
            "SELECT max(v) INTO d.one_day.m_max FROM d.autogen.m WHERE time >= {} AND time < {} \
             GROUP BY time(1m)",
            t - t % minute,
            t - t % minute + minute
        ),
    );
    wait_delivered(&[&b], Duration::from_secs(60));
    wait_answer(
        &a,
        "SELECT max FROM d.one_day.m_max",
        json!([[t - t % minute, 2]]),
    );

    // Dropped on a: gone from b, and its points from every shard.
    ok(&a, "DROP RETENTION POLICY one_day ON d");
    wait_answer(
        &b,
        "SHOW RETENTION POLICIES ON d",
        json!([["autogen", "0s", "168h0m0s", 1, false]]),
    );
    assert!(policy_tables().is_empty(), "{:?}", policy_tables());
    let r = b.post("/write?db=d&rp=one_day", format!("m,host=b v=1i {t}"));
    assert_eq!(r.status(), 404, "{:?}", r.text());
    assert!(r.text().unwrap().contains("retention policy not found"));

    // A hostile policy name is a name: listed, written to and dropped across the nodes,
    // nothing else touched.
    let hostile = r#"p'"; DROP DATABASE d; --"#;
    ok(
        &b,
        r#"CREATE RETENTION POLICY "p'\"; DROP DATABASE d; --" ON d DURATION 1d REPLICATION 1"#,
    );
    wait_answer(
        &a,
        "SHOW RETENTION POLICIES ON d",
        json!([
            ["autogen", "0s", "168h0m0s", 1, false],
            [hostile, "24h0m0s", "1h0m0s", 1, false]
        ]),
    );
    let r = a
        .client
        .post(a.url("/write"))
        .query(&[("db", "d"), ("rp", hostile)])
        .body(format!("m,host=h v=9i {t}"))
        .send()
        .unwrap();
    assert_eq!(r.status(), 204, "{:?}", r.text());
    wait_delivered(&[&a], Duration::from_secs(60));
    assert_eq!(policy_tables().len(), 1, "{:?}", policy_tables());
    ok(
        &a,
        r#"DROP RETENTION POLICY "p'\"; DROP DATABASE d; --" ON d"#,
    );
    wait_answer(
        &b,
        "SHOW RETENTION POLICIES ON d",
        json!([["autogen", "0s", "168h0m0s", 1, false]]),
    );
    assert!(policy_tables().is_empty(), "{:?}", policy_tables());
    wait_answer(&b, "SELECT count(v) FROM d.autogen.m", json!([[0, 1]]));

    // Created again through b, then the database dropped on a: no node keeps a policy.
    ok(
        &b,
        "CREATE RETENTION POLICY two_days ON d DURATION 2d REPLICATION 1 DEFAULT",
    );
    wait_answer(
        &a,
        "SHOW RETENTION POLICIES ON d",
        json!([
            ["autogen", "0s", "168h0m0s", 1, false],
            ["two_days", "48h0m0s", "24h0m0s", 1, true]
        ]),
    );
    let r = a.post("/write?db=d", format!("m,host=a3 v=5i {t}"));
    assert_eq!(r.status(), 204, "{:?}", r.text());
    wait_delivered(&[&a], Duration::from_secs(60));
    ok(&a, "DROP DATABASE d");
    assert!(policy_tables().is_empty(), "{:?}", policy_tables());
    ok(&a, "CREATE DATABASE d");
    wait_listed(&b, "d");
    for node in [&a, &b] {
        wait_answer(
            node,
            "SHOW RETENTION POLICIES ON d",
            json!([["autogen", "0s", "168h0m0s", 1, true]]),
        );
    }
}
