//! Issue #25, the write path end to end: chingest with `[storage] engine = "clickhouse"`
//! delivers what `/write` acknowledged to two real ClickHouse servers (Debian's 18.16, on
//! loopback) as shards, exactly once, through a `kill -9` of chingest and a shard stopped
//! and restarted mid-stream; InfluxQL reads them back from the shards, and `/api/v1/sql`
//! through the shards' `Distributed` tables.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "../../../cluster/tests/it/clickhouse_server.rs"]
pub(crate) mod clickhouse_server;

use clickhouse_server::{server_binary, Shard, CLUSTER, READER_OF_A};

/// `[storage] engine = "clickhouse"` over `shards`, this node named `node`.
pub(crate) fn cluster_config_named(shards: &[&Shard], node: &str) -> String {
    let list: Vec<String> = shards.iter().map(|s| format!("\"{}\"", s.url())).collect();
    format!(
        "[storage]\nengine = \"clickhouse\"\n\n[storage.clickhouse]\nshards = [{}]\nnode = \"{node}\"\ntimeout_secs = 5\n",
        list.join(", ")
    )
}

use crate::util::*;

/// Two shards on loopback knowing each other as the cluster [`CLUSTER`], their data in a
/// dir of their own (`None`: no server installed here; the test skips, loudly).
pub(crate) fn two_shard_cluster(test: &str) -> Option<(tempfile::TempDir, Vec<Shard>)> {
    let bin = server_binary(test)?;
    let dir = data_dir();
    let shards = Shard::start_cluster(
        &bin,
        &[dir.path().join("shard0"), dir.path().join("shard1")],
    );
    Some((dir, shards))
}

fn config(shards: &[&Shard]) -> String {
    cluster_config_named(shards, "n1")
}

/// Every stored point of `d.cpu` over both shards: (host, time) → times stored, value.
/// A shard that cannot answer fails the test (it is not a shard without points).
fn stored(shards: &[&Shard]) -> BTreeMap<(String, i64), (u32, f64)> {
    let mut out: BTreeMap<(String, i64), (u32, f64)> = BTreeMap::new();
    for s in shards {
        let text = s
            .query("SELECT host, time, v FROM __shard_d.cpu")
            .unwrap_or_else(|e| panic!("{}: {e}", s.url()));
        for line in text.lines() {
            let mut f = line.split('\t');
            let (host, time, v) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
            let e = out
                .entry((host.to_string(), time.parse().unwrap()))
                .or_insert((0, v.parse().unwrap()));
            e.0 += 1;
        }
    }
    out
}

/// Batch `i` of the hosts named `prefix`: 50 points, hosts `<prefix>0..49` at time i (s),
/// value i * 1000 + host.
fn batch(prefix: &str, i: i64) -> String {
    (0..50)
        .map(|h| {
            format!(
                "cpu,host={prefix}{h} v={} {}\n",
                i * 1000 + h,
                i * 1_000_000_000
            )
        })
        .collect()
}

/// An InfluxQL statement POSTed to `path` (`/query?db=…`) on `s`, its answer.
pub(crate) fn statement_at(s: &Server, path: &str, q: &str) -> Value {
    s.client
        .post(s.url(path))
        .query(&[("q", q)])
        .send()
        .unwrap()
        .json()
        .unwrap()
}

/// Polls until `s` answers `q` (POSTed to `path`) with `want` as its first series' values
/// (`null`: no series). An answer with an error is never what is waited for (an error has
/// no series either): the wait goes on, and fails with it at the deadline.
pub(crate) fn wait_values(s: &Server, path: &str, q: &str, want: Value) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = statement_at(s, path, q);
        if r["results"][0].get("error").is_none() && r["results"][0]["series"][0]["values"] == want
        {
            return;
        }
        assert!(Instant::now() < deadline, "{q}: never {want}: {r}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Polls `s` (`SHOW DATABASES`) until it lists `db`.
pub(crate) fn wait_listed(s: &Server, db: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = s.query("SHOW DATABASES");
        let listed = r["results"][0]["series"][0]["values"]
            .as_array()
            .is_some_and(|v| v.iter().any(|d| d[0] == db));
        if listed {
            return;
        }
        assert!(Instant::now() < deadline, "{db} never listed: {r}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn unflushed(s: &Server) -> u64 {
    let h: Value = s.get("/health").json().unwrap();
    h["wal"]["unflushed_points"].as_u64().unwrap_or(u64::MAX)
}

/// Polls until every node's acknowledged points are on the shards (writes have stopped).
pub(crate) fn wait_delivered(nodes: &[&Server], within: Duration) {
    let deadline = Instant::now() + within;
    for node in nodes {
        while unflushed(node) != 0 {
            assert!(
                Instant::now() < deadline,
                "not delivered: {}\n{}",
                node.get("/health").text().unwrap(),
                node.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
fn clickhouse_backend_delivers_every_acknowledged_point_once_through_kills_and_a_shard_down() {
    let test =
        "clickhouse_backend_delivers_every_acknowledged_point_once_through_kills_and_a_shard_down";
    let Some(bin) = server_binary(test) else {
        return;
    };
    let dir = data_dir();
    let s0 = Shard::start(&bin, dir.path().join("shard0"));
    let mut s1 = Shard::start(&bin, dir.path().join("shard1"));
    let cfg = config(&[&s0, &s1]);
    let mut s = Spawn::new(dir.path()).config(&cfg).start();
    // A second ingest node writing the same database (hosts g*), never killed: it learns
    // the database node n1 created from the cluster.
    let dir_b = data_dir();
    let b = Spawn::new(dir_b.path())
        .config(&cluster_config_named(&[&s0, &s1], "n2"))
        .start();
    s.query("CREATE DATABASE d");
    wait_listed(&b, "d");
    let mut acked: Vec<i64> = Vec::new();
    let mut sent_unacked: Vec<i64> = Vec::new();
    let mut acked_b: Vec<i64> = Vec::new();
    for i in 1..=60i64 {
        match i {
            // chingest killed: what it acknowledged is in its WAL; a restart delivers the
            // rest, and what a shard already holds is not sent again. At 30 a shard is
            // down: the WAL holds entries whose rows one shard has and the other lacks,
            // and the node starts anyway.
            20 | 30 | 45 => {
                if i == 30 {
                    // The kill lands after a delivery that reached shard 0 and not the
                    // stopped shard 1: the replay must ask shard 0 before sending again.
                    let deadline = Instant::now() + Duration::from_secs(30);
                    let on_shard0 = || {
                        s0.query("SELECT count() FROM __shard_d.cpu WHERE time = 29000000000")
                            .ok()
                            .and_then(|n| n.trim().parse::<u64>().ok())
                            .unwrap_or(0)
                    };
                    while on_shard0() == 0 {
                        assert!(
                            Instant::now() < deadline,
                            "batch 29 never reached shard 0: {:?} {}\n{}",
                            s0.query("SELECT max(time), count() FROM __shard_d.cpu"),
                            s.get("/health").text().unwrap(),
                            s.log_text()
                        );
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
                s.signal("KILL");
                let _ = s.terminate_wait();
                drop(s);
                s = Spawn::new(dir.path()).config(&cfg).start();
            }
            // A shard down: writes are still acknowledged (the WAL holds them).
            25 => s1.stop(),
            35 => {
                // Meanwhile /metrics shows the shard down and its failed deliveries.
                let deadline = Instant::now() + Duration::from_secs(30);
                loop {
                    let text = s.get("/metrics").text().unwrap();
                    let down = text
                        .lines()
                        .any(|l| l == "chingest_cluster_shard_up{shard=\"1\"} 0");
                    let failed = text.lines().any(|l| {
                        l.starts_with("chingest_cluster_failures_total{")
                            && l.contains("shard=\"1\"")
                            && l.contains("reason=\"unreachable\"")
                    });
                    // Its lag: deliveries waiting for it, the oldest for a while.
                    let lagging = text.lines().any(|l| {
                        l.strip_prefix("chingest_cluster_shard_waiting_seconds{shard=\"1\"} ")
                            .and_then(|v| v.parse::<f64>().ok())
                            .is_some_and(|v| v > 0.0)
                    });
                    let h: Value = s.get("/health").json().unwrap();
                    let shown = h["cluster"][1]["up"] == false
                        && h["cluster"][1]["last_error"]
                            .as_str()
                            .is_some_and(|e| e.contains("unreachable"))
                        && h["cluster"][1]["waiting_deliveries"]
                            .as_u64()
                            .is_some_and(|n| n > 0)
                        && h["cluster"][1]["waiting_rows"]
                            .as_u64()
                            .is_some_and(|n| n > 0)
                        && h["cluster"][1]["oldest_waiting_secs"]
                            .as_f64()
                            .is_some_and(|t| t > 0.0)
                        && h["cluster"][0]["up"] == true;
                    if down && failed && lagging && shown {
                        break;
                    }
                    assert!(Instant::now() < deadline, "shard 1 not shown down:\n{text}");
                    std::thread::sleep(Duration::from_millis(100));
                }
                s1.spawn(&bin);
            }
            _ => {}
        }
        let r = s
            .client
            .post(s.url("/write?db=d"))
            .body(batch("h", i))
            .send();
        match r {
            Ok(r) if r.status() == 204 => acked.push(i),
            _ => sent_unacked.push(i),
        }
        let r = b
            .client
            .post(b.url("/write?db=d"))
            .body(batch("g", i))
            .send();
        if r.is_ok_and(|r| r.status() == 204) {
            acked_b.push(i);
        }
    }
    assert_eq!(acked_b.len(), 60, "node n2 refused writes: {acked_b:?}");
    assert!(
        acked.len() >= 55,
        "acknowledged {acked:?}; not {sent_unacked:?}"
    );
    assert!(
        acked.contains(&28) && acked.contains(&31),
        "writes are acknowledged while a shard is down"
    );

    // Everything delivered once the shard is back.
    wait_delivered(&[&s, &b], Duration::from_secs(90));
    let points = stored(&[&s0, &s1]);
    let twice: Vec<_> = points.iter().filter(|(_, (n, _))| *n > 1).collect();
    assert!(
        twice.is_empty(),
        "stored more than once: {:?}",
        &twice[..twice.len().min(5)]
    );
    for (prefix, acked) in [("h", &acked), ("g", &acked_b)] {
        for i in acked {
            for h in 0..50 {
                let key = (format!("{prefix}{h}"), i * 1_000_000_000);
                assert_eq!(
                    points.get(&key).map(|(_, v)| *v),
                    Some((i * 1000 + h) as f64),
                    "acknowledged point {key:?} missing or wrong"
                );
            }
        }
    }
    assert!(points.len() >= (acked.len() + acked_b.len()) * 50);
    // Both shards hold some series, each series on one shard only.
    let per_shard: Vec<usize> = [&s0, &s1]
        .iter()
        .map(|sh| {
            sh.query("SELECT count() FROM __shard_d.cpu")
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        })
        .collect();
    assert!(per_shard.iter().all(|n| *n > 0), "{per_shard:?}");

    // InfluxQL reads the points from the shards (with point identity): every stored point
    // once.
    for node in [&s, &b] {
        let r = node.query("SELECT count(v) FROM d.autogen.cpu");
        assert_eq!(
            r["results"][0]["series"][0]["values"][0][1].as_u64(),
            Some(points.len() as u64),
            "{r}"
        );
    }
    // SQL reads the cluster's Distributed tables, which this node was not told of.
    let sql = s.post("/api/v1/sql", "SELECT 1");
    assert_eq!(sql.status(), 400);
    let text = sql.text().unwrap();
    assert!(text.contains("[storage.clickhouse] distributed"), "{text}");
    // Per shard in /metrics: rows confirmed by both, shard 1 up again after its failures.
    let text = s.get("/metrics").text().unwrap();
    let value = |series: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{series} not in /metrics:\n{text}"))
    };
    for k in 0..2 {
        assert!(value(&format!("chingest_cluster_rows_total{{shard=\"{k}\"}}")) > 0.0);
        assert_eq!(
            value(&format!("chingest_cluster_shard_up{{shard=\"{k}\"}}")),
            1.0
        );
    }
    let h: Value = s.get("/health").json().unwrap();
    for k in 0..2 {
        assert_eq!(h["cluster"][k]["up"], true, "{h}");
        assert_eq!(h["cluster"][k]["last_error"], Value::Null, "{h}");
        assert!(
            h["cluster"][k]["confirmed_secs_ago"].as_f64().is_some(),
            "{h}"
        );
        // Every delivery confirmed: no shard lags.
        assert_eq!(h["cluster"][k]["waiting_deliveries"], 0, "{h}");
        assert_eq!(h["cluster"][k]["waiting_rows"], 0, "{h}");
        assert_eq!(h["cluster"][k]["oldest_waiting_secs"], 0.0, "{h}");
        assert_eq!(
            value(&format!(
                "chingest_cluster_shard_waiting_seconds{{shard=\"{k}\"}}"
            )),
            0.0
        );
        assert_eq!(
            value(&format!(
                "chingest_cluster_shard_waiting_rows{{shard=\"{k}\"}}"
            )),
            0.0
        );
    }
    // The failures counted since the last restart (at 45, after the shard came back) may be
    // none: the counter exists only once recorded.
    // The catalog's answers still work.
    let r = s.query("SHOW MEASUREMENTS ON d");
    assert_eq!(
        r["results"][0]["series"][0]["values"],
        serde_json::json!([["cpu"]]),
        "{r}"
    );
}

/// Two ingest nodes agree through the cluster: a database created on one is written
/// through the other; a field one node stored as an integer is refused as a float by the
/// other with InfluxDB's `field type conflict` (not accepted and then quarantined), and
/// the same type is taken; a field the second node adds is listed by the first; both
/// answer the same points.
#[test]
fn two_nodes_agree_on_databases_and_field_types_through_the_cluster() {
    let test = "two_nodes_agree_on_databases_and_field_types_through_the_cluster";
    let Some((_dir, shards)) = two_shard_cluster(test) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let (dir_a, dir_b) = (data_dir(), data_dir());
    // Both keep Distributed tables over the shards' tables (the servers' cluster name).
    let distributed = format!("distributed = \"{CLUSTER}\"\n");
    let a = Spawn::new(dir_a.path())
        .config(&(cluster_config_named(&[s0, s1], "a") + &distributed))
        .start();
    let b = Spawn::new(dir_b.path())
        .config(&(cluster_config_named(&[s0, s1], "b") + &distributed))
        .start();
    // Before the database exists anywhere: b refuses as InfluxDB does.
    let r = b.post("/write?db=shared", "m f=0i 0");
    assert_eq!(r.status(), 404, "{:?}", r.text());
    a.query("CREATE DATABASE shared");
    wait_listed(&b, "shared");

    let r = a.post("/write?db=shared", "m,host=x f=1i 1");
    assert_eq!(r.status(), 204);
    // b learns f's type once a delivered it.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = b.query("SHOW FIELD KEYS ON shared FROM m");
        if r["results"][0]["series"][0]["values"] == serde_json::json!([["f", "integer"]]) {
            break;
        }
        assert!(Instant::now() < deadline, "b never learned f: {r}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let r = b.post("/write?db=shared", "m,host=y f=2.5 2");
    assert_eq!(r.status(), 400);
    let text = r.text().unwrap();
    assert!(
        text.contains("field type conflict")
            && text.contains("input field \\\"f\\\" on measurement \\\"m\\\" is type float, already exists as type integer"),
        "{text}"
    );
    let r = b.post("/write?db=shared", "m,host=y f=3i,g=0.5 3");
    assert_eq!(r.status(), 204, "{:?}", r.text());
    wait_delivered(&[&a, &b], Duration::from_secs(60));
    // Nothing quarantined: no node stored a type the shards refuse.
    for node in [&a, &b] {
        let h: Value = node.get("/health").json().unwrap();
        assert_eq!(h["quarantine"].as_array().map_or(0, Vec::len), 0, "{h}");
    }
    // a lists the field b added, and both nodes answer the same points.
    std::thread::sleep(Duration::from_millis(1100));
    let r = a.query("SHOW FIELD KEYS ON shared FROM m");
    assert_eq!(
        r["results"][0]["series"][0]["values"],
        serde_json::json!([["f", "integer"], ["g", "float"]]),
        "{r}"
    );
    let want = serde_json::json!([
        ["1970-01-01T00:00:00.000000001Z", 1, null, "x"],
        ["1970-01-01T00:00:00.000000003Z", 3, 0.5, "y"]
    ]);
    for node in [&a, &b] {
        let r = node.query("SELECT f, g, host FROM shared.autogen.m");
        assert_eq!(r["results"][0]["series"][0]["values"], want, "{r}");
    }
    // SQL on any shard reads the whole cluster through the Distributed table, with the
    // field b added; it is not a database or measurement of chingest's.
    for shard in [s0, s1] {
        assert_eq!(
            shard
                .query("SELECT time, f, g, host FROM shared.m ORDER BY time")
                .unwrap(),
            "1\t1\t\\N\tx\n3\t3\t0.5\ty\n"
        );
    }
    // With auth off everyone reads every database (read-only), as in the embedded engine.
    let r = a.post(
        "/api/v1/sql?format=csv",
        "SELECT count() AS n FROM shared.m",
    );
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().unwrap(), "\"n\"\n2\n");
    for node in [&a, &b] {
        let r = node.query("SHOW DATABASES");
        let names = r["results"][0]["series"][0]["values"].to_string();
        assert!(
            names.contains("\"shared\"") && !names.contains("__shard"),
            "{r}"
        );
    }
}

/// `/api/v1/sql` on a cluster: the statement runs on a shard over the `Distributed`
/// tables (every shard's rows), read-only and within `[sql]`'s limits as that server
/// enforces them; an admin as chingest's user there, a non-admin as the shards' reader of
/// the database it names, whose server refuses every other database.
#[test]
fn sql_on_a_cluster_reads_every_shard_read_only_within_the_limits() {
    let test = "sql_on_a_cluster_reads_every_shard_read_only_within_the_limits";
    let Some((_dir, mut shards)) = two_shard_cluster(test) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let node_dir = data_dir();
    let config = format!(
        "{}distributed = \"{CLUSTER}\"\n\n[[storage.clickhouse.readers]]\ndatabase = \"a\"\n\
         user = \"{}\"\npassword = \"{}\"\n\n[[storage.clickhouse.readers]]\ndatabase = \"b\"\n\
         user = \"reader_a\"\npassword = \"not-its-password\"\n\n[auth]\nenabled = true\n\n[[auth.users]]\n\
         name = \"admin\"\npassword_hash = \"{}\"\nadmin = true\n\n[[auth.users]]\nname = \"reader\"\n\
         password_hash = \"{}\"\nread = [\"a\"]\n\n[[auth.users]]\nname = \"reader_b\"\n\
         password_hash = \"{}\"\nread = [\"b\"]\n\n[[auth.users]]\nname = \"reader_c\"\n\
         password_hash = \"{}\"\nread = [\"c\"]\n\n[sql]\nmax_result_rows = 1000\n",
        cluster_config_named(&[s0, s1], "n1"),
        READER_OF_A.0,
        READER_OF_A.1,
        hash("adminpw"),
        hash("readerpw"),
        hash("readerpw"),
        hash("readerpw")
    );
    let node = Spawn::new(node_dir.path()).config(&config).start();
    let as_admin =
        |req: reqwest::blocking::RequestBuilder| req.basic_auth("admin", Some("adminpw"));
    // An InfluxQL statement as the admin, its answer.
    let q = |q: &str| -> Value {
        let r = as_admin(node.client.post(node.url("/query")))
            .form(&[("q", q)])
            .send()
            .unwrap();
        assert_eq!(r.status(), 200, "{q}");
        r.json().unwrap()
    };
    q("CREATE DATABASE a");
    let body: String = (0..50)
        .map(|i| format!("m,host=h{i} v={i}i {i}\n"))
        .collect();
    let r = as_admin(node.client.post(node.url("/write?db=a")))
        .body(body)
        .send()
        .unwrap();
    assert_eq!(r.status(), 204, "{:?}", r.text());
    wait_delivered(&[&node], Duration::from_secs(60));
    let sql = |who: Option<(&str, &str)>, sql: &str| {
        let mut req = node
            .client
            .post(node.url("/api/v1/sql?format=jsoneachrow"))
            .body(sql.to_string());
        if let Some((u, p)) = who {
            req = req.basic_auth(u, Some(p));
        }
        let r = req.send().unwrap();
        (r.status().as_u16(), r.text().unwrap())
    };
    let admin = Some(("admin", "adminpw"));

    // Every shard's rows, though each shard holds some of them.
    let (status, text) = sql(admin, "SELECT count() AS n, sum(v) AS s FROM a.m");
    assert_eq!(status, 200, "{text}");
    let row: Value = serde_json::from_str(text.trim()).unwrap();
    let num = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    assert_eq!(
        (num(&row["n"]), num(&row["s"])),
        ("50".into(), "1225".into()),
        "{text}"
    );
    for shard in [s0, s1] {
        let held: u64 = shard
            .query("SELECT count() FROM __shard_a.m")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!((1..50).contains(&held), "{held}");
    }

    // Read-only and within the limits, whatever the statement tries.
    for (statement, want) in [
        ("INSERT INTO a.m (time, series_id, __node, __seq, __row, host, v) VALUES (1, 1, 'x', 1, 0, 'h', 1)", "readonly"),
        ("INSERT INTO __shard_a.m (time, series_id, __node, __seq, __row, host, v) VALUES (1, 1, 'x', 1, 0, 'h', 1)", "readonly"),
        ("DROP TABLE __shard_a.m", "readonly"),
        ("CREATE TABLE a.t (x UInt8) ENGINE = Memory", "readonly"),
        ("SELECT * FROM numbers(10)", "Table functions are forbidden"),
        ("SELECT count() FROM a.m SETTINGS max_result_rows = 0", "readonly"),
    ] {
        let (status, text) = sql(admin, statement);
        assert_eq!(status, 403, "{statement}: {text}");
        assert!(text.contains(want), "{statement}: {text}");
    }
    let (status, text) = sql(admin, "SELECT number FROM system.numbers LIMIT 5000");
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("max_result_rows"), "{text}");
    // Nothing was written through SQL, and writes keep flowing to every shard after it.
    let (_, text) = sql(admin, "SELECT count() AS n FROM a.m");
    assert!(text.contains("50"), "{text}");
    let more: String = (50..60)
        .map(|i| format!("m,host=h{i} v={i}i {i}\n"))
        .collect();
    let r = as_admin(node.client.post(node.url("/write?db=a")))
        .body(more)
        .send()
        .unwrap();
    assert_eq!(r.status(), 204, "{:?}", r.text());
    wait_delivered(&[&node], Duration::from_secs(60));
    let (status, text) = sql(admin, "SELECT count() AS n FROM a.m");
    assert_eq!(status, 200, "{text}");
    let row: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(num(&row["n"]), "60", "{text}");

    // A reader of a runs as the shards' reader of a: a's rows, its default database a; the
    // server refuses every other database however the statement reaches it, and lists
    // none of their tables.
    q("CREATE DATABASE b");
    let r = as_admin(node.client.post(node.url("/write?db=b")))
        .body("m,host=secret v=1i 1")
        .send()
        .unwrap();
    assert_eq!(r.status(), 204, "{:?}", r.text());
    wait_delivered(&[&node], Duration::from_secs(60));
    let reader = Some(("reader", "readerpw"));
    let sql_on = |who: Option<(&str, &str)>, db: &str, sql: &str| {
        let r = node
            .client
            .post(node.url(&format!("/api/v1/sql?format=csv&db={db}")))
            .basic_auth(who.unwrap().0, Some(who.unwrap().1))
            .body(sql.to_string())
            .send()
            .unwrap();
        (r.status().as_u16(), r.text().unwrap())
    };
    for statement in ["SELECT count() AS n FROM a.m", "SELECT count() AS n FROM m"] {
        let (status, text) = sql_on(reader, "a", statement);
        assert_eq!((status, text.as_str()), (200, "\"n\"\n60\n"), "{statement}");
    }
    for statement in [
        "SELECT count() FROM b.m",
        "SELECT count() FROM __shard_b.m",
        "SELECT count() FROM a.m WHERE host IN (SELECT host FROM b.m)",
        "SELECT count() FROM a.m ALL INNER JOIN b.m USING host",
        "SELECT count() FROM (SELECT * FROM b.m)",
        "SELECT count() FROM __chingest.databases",
        "DESCRIBE TABLE b.m",
    ] {
        let (status, text) = sql_on(reader, "a", statement);
        assert_eq!(status, 403, "{statement}: {text}");
        assert!(
            text.contains("Access denied to database"),
            "{statement}: {text}"
        );
    }
    let (status, text) = sql_on(
        reader,
        "a",
        "SELECT count() AS n FROM system.columns WHERE database IN ('b', '__shard_b', '__chingest')",
    );
    assert_eq!((status, text.as_str()), (200, "\"n\"\n0\n"));
    let (status, text) = sql_on(reader, "a", "SELECT * FROM numbers(3)");
    assert_eq!(status, 403, "{text}");
    let (status, text) = sql_on(
        reader,
        "a",
        "INSERT INTO a.m (time, series_id, __node, __seq, __row, host, v) VALUES (1, 1, 'x', 1, 0, 'h', 1)",
    );
    assert!(status == 403 && text.contains("readonly"), "{text}");
    // The database must be named, readable by the caller, and have a reader on the shards.
    let (status, text) = sql(reader, "SELECT count() FROM a.m");
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("name it with db=a"), "{text}");
    let (status, text) = sql_on(reader, "b", "SELECT count() FROM b.m");
    assert_eq!(status, 403, "{text}");
    assert!(
        text.contains(r#"not authorized to read database \"b\""#),
        "{text}"
    );
    let (status, text) = sql_on(
        Some(("reader_b", "readerpw")),
        "b",
        "SELECT count() FROM b.m",
    );
    // A reader whose credentials the shards refuse is the configuration's fault: 503 naming
    // it, its password nowhere in the answer.
    assert_eq!(status, 503, "{text}");
    assert!(
        text.contains("refused the credentials of the reader of database"),
        "{text}"
    );
    assert!(!text.contains("not-its-password"), "{text}");
    let (status, text) = sql_on(Some(("reader_c", "readerpw")), "c", "SELECT 1");
    assert_eq!(status, 403, "{text}");
    assert!(text.contains(r#"none is configured for \"c\""#), "{text}");
    let (status, _) = sql(None, "SELECT count() FROM a.m");
    assert_eq!(status, 401);

    // A shard down: whichever shard gets the statement cannot read the other's rows, which
    // is the cluster's state, not the statement's fault: 503 (retry), never a partial answer.
    shards[1].stop();
    for _ in 0..2 {
        let (status, text) = sql(admin, "SELECT count() FROM a.m");
        assert_eq!(status, 503, "{text}");
    }
}
