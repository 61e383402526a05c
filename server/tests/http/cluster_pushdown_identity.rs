//! Issue #43: pushed-down aggregates group by `(series_id, time)` only the series a shard's
//! index lists as holding a point written more than once (`cluster/src/identity.rs`), on two
//! real 18.16 shards written by two nodes. Each step writes points twice in another way —
//! by the same node, by the other node, by a shard insert no node made (a delivery landing
//! twice), after the shards merged their parts, into a table dropped and made again — and
//! every aggregate answers what the embedded engine answers with each point written once
//! per write, through the index (`chingest_cluster_pushdown_grouping_total{grouped=
//! "rewritten"}`), never counting a point twice; and reads on one node while the other
//! delivers rewrites never count a point twice either.

use std::time::Duration;

use serde_json::Value;

use crate::cluster::clickhouse_server::Shard;
use crate::cluster::{
    cluster_config_named, statement_at, two_shard_cluster, wait_delivered, wait_listed, wait_values,
};
use crate::util::*;

/// `chingest_cluster_pushdown_grouping_total{grouped="<grouped>"}` on `s`.
fn grouping(s: &Server, grouped: &str) -> u64 {
    let text = s.get("/metrics").text().unwrap();
    let prefix = format!("chingest_cluster_pushdown_grouping_total{{grouped=\"{grouped}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |v| v.trim().parse::<f64>().unwrap() as u64)
}

/// 40 hosts in 4 dcs, a point every 10 s for 30 intervals, float `v`, integer `n`.
fn points() -> String {
    points_of(&(0..40).collect::<Vec<_>>())
}

/// The points of [`points`] of `hosts` only.
fn points_of(hosts: &[i64]) -> String {
    let mut out = String::new();
    for i in 0..30i64 {
        for &h in hosts {
            out.push_str(&format!(
                "cpu,host=h{h},dc=dc{} v={},n={}i {}\n",
                h % 4,
                i as f64 + h as f64 / 8.0,
                i * h,
                i * 10_000_000_000 + h * 1_000_000
            ));
        }
    }
    out
}

/// Points of `hosts` written again at every third interval: `v` only, `scale` times the
/// interval, negative (so `min`, `first` and `last` see the new values).
fn rewrites(hosts: &[i64], scale: f64) -> String {
    let mut out = String::new();
    for i in (0..30i64).step_by(3) {
        for h in hosts {
            out.push_str(&format!(
                "cpu,host=h{h},dc=dc{} v={} {}\n",
                h % 4,
                -(i as f64) * scale - 1.0,
                i * 10_000_000_000 + h * 1_000_000
            ));
        }
    }
    out
}

const STATEMENTS: &[&str] = &[
    "SELECT count(v), count(n) FROM cpu",
    "SELECT sum(v), min(v), max(v), first(v), mean(n) FROM cpu GROUP BY dc",
    "SELECT last(v), count(v) FROM cpu GROUP BY host",
    "SELECT count(v), sum(v), spread(v) FROM cpu WHERE time >= 0s AND time < 300s \
     GROUP BY time(50s), dc fill(0)",
    "SELECT first(v), last(n) FROM cpu WHERE host =~ /h[1-3]/",
];

/// Raw reads whose field condition the shards apply to the points they know to be one
/// row (`storage/src/influxql/point_condition.rs`): a rewrite makes `v` negative.
const RAW: &[&str] = &[
    "SELECT * FROM cpu WHERE v > 20",
    "SELECT * FROM cpu WHERE v < 0",
    "SELECT v, n FROM cpu WHERE v >= 25 OR n = 0",
    // An integer field against a float, as TSBS asks `usage_user > 90.0`.
    "SELECT * FROM cpu WHERE n > 40.5",
    "SELECT v, n FROM cpu WHERE n <= 12.5 AND n >= 3.0",
];

fn on_d(s: &Server, q: &str) -> Value {
    statement_at(s, "/query?db=d", q)
}

/// Every statement answers on each node as on `embedded`, the shards grouping only the
/// rewritten series.
fn check(step: &str, nodes: &[&Server], embedded: &Server) {
    for node in nodes {
        // A node learns another's measurements and fields from the shards, within seconds.
        let fields = "SHOW FIELD KEYS FROM cpu";
        let want = on_d(embedded, fields)["results"][0]["series"][0]["values"].clone();
        wait_values(node, "/query?db=d", fields, want);
        for q in STATEMENTS {
            let want = on_d(embedded, q);
            assert!(want["results"][0].get("error").is_none(), "{q}: {want}");
            // Through the index: grouping the rewritten series, or read again when a rewrite
            // another node wrote was found only after the read (its first read after it).
            let indexed = || grouping(node, "rewritten") + grouping(node, "again");
            let before = indexed();
            assert_eq!(on_d(node, q), want, "{step}: {q}");
            let on = std::env::var("CHINGEST_CLUSTER_IDENTITY_INDEX").as_deref() != Ok("0");
            assert_eq!(
                indexed(),
                before + u64::from(on),
                "{step}: {q} should have used the shards' index"
            );
        }
        for q in RAW {
            assert_eq!(on_d(node, q), on_d(embedded, q), "{step}: {q}");
        }
    }
}

/// Nodes `n1` and `n2` over both shards (`n2` as `n2_spawn` makes it) and an embedded
/// server, the answers' reference; their data directories live as long as they do.
struct Servers {
    n1: Server,
    n2: Server,
    embedded: Server,
    _dirs: [tempfile::TempDir; 3],
}

impl Servers {
    fn start(shards: &[Shard], n2_spawn: impl FnOnce(Spawn) -> Spawn) -> Servers {
        let (s0, s1) = (&shards[0], &shards[1]);
        let dirs = [data_dir(), data_dir(), data_dir()];
        let n1 = Spawn::new(dirs[0].path())
            .config(&cluster_config_named(&[s0, s1], "n1"))
            .start();
        let n2 =
            n2_spawn(Spawn::new(dirs[1].path()).config(&cluster_config_named(&[s0, s1], "n2")))
                .start();
        let embedded = Spawn::new(dirs[2].path()).start();
        Servers {
            n1,
            n2,
            embedded,
            _dirs: dirs,
        }
    }
}

fn on_shards(shards: &[Shard], sql: &str) {
    for s in shards {
        s.query(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

#[test]
fn points_written_twice_by_one_node_by_two_nodes_or_behind_them_count_once() {
    const TEST: &str = "points_written_twice_by_one_node_by_two_nodes_or_behind_them_count_once";
    let Some((_dir, shards)) = two_shard_cluster(TEST) else {
        return;
    };
    let servers = Servers::start(&shards, |n2| n2);
    let (n1, n2, embedded) = (&servers.n1, &servers.n2, &servers.embedded);
    let nodes = [n1, n2];
    let write = |node: &Server, body: String| {
        for s in [node, embedded] {
            assert_eq!(s.post("/write?db=d", body.clone()).status(), 204);
        }
        wait_delivered(&nodes, Duration::from_secs(60));
    };
    for s in [&n1, &embedded] {
        s.query("CREATE DATABASE d");
    }
    wait_listed(n2, "d");
    write(n1, points());
    check("points once", &nodes, embedded);

    // The same node writes points of h1 and h5 again (indexes loaded: checked anew).
    write(n1, rewrites(&[1, 5], 1.0));
    check("rewritten by the node that wrote them", &nodes, embedded);

    // The other node writes points of h2 and h5 again, as they are (which of two nodes'
    // writes of a point is the later is not defined: `__seq` is each node's own).
    write(n2, points_of(&[2]) + &rewrites(&[5], 1.0));
    check("rewritten by another node", &nodes, embedded);

    // A delivery that lands twice (no node sees it): h7's rows copied on its shard.
    on_shards(
        &shards,
        "INSERT INTO __shard_d.cpu SELECT * FROM __shard_d.cpu WHERE host = 'h7'",
    );
    check("h7's rows on its shard twice", &nodes, embedded);

    // Merged into one part per partition: the merged parts' blocks were checked.
    on_shards(&shards, "OPTIMIZE TABLE __shard_d.cpu FINAL");
    write(n2, points_of(&[9, 10]));
    check("after a merge, then a rewrite", &nodes, embedded);

    // Dropped and made again by the other node, points written twice in one write.
    for s in [&n2, &embedded] {
        s.query("DROP MEASUREMENT cpu");
    }
    let twice = points() + &rewrites(&[3], 4.0);
    write(n2, twice);
    check("made again", &nodes, embedded);
}

/// Deliveries in flight: one node writes points of every host again, as they are, one host
/// after another, while the other reads. Each delivery adds a rewrite a read may have
/// started without; no answer may count one twice (the answer never changes: same values).
#[test]
fn reads_while_another_node_rewrites_points_never_count_one_twice() {
    const TEST: &str = "reads_while_another_node_rewrites_points_never_count_one_twice";
    let Some((_dir, shards)) = two_shard_cluster(TEST) else {
        return;
    };
    let servers = Servers::start(&shards, |n2| n2.env("CHINGEST_FLUSH__MAX_AGE_MS", "20"));
    let (n1, n2, embedded) = (&servers.n1, &servers.n2, &servers.embedded);
    for s in [&n1, &embedded] {
        s.query("CREATE DATABASE d");
        assert_eq!(s.post("/write?db=d", points()).status(), 204);
    }
    wait_listed(n2, "d");
    wait_delivered(&[n1], Duration::from_secs(60));
    let want: Vec<Value> = STATEMENTS.iter().map(|q| on_d(embedded, q)).collect();
    let done = std::sync::atomic::AtomicBool::new(false);
    let mut reads = 0;
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for h in 0..40 {
                assert_eq!(n2.post("/write?db=d", points_of(&[h])).status(), 204);
                std::thread::sleep(Duration::from_millis(100));
            }
            wait_delivered(&[n2], Duration::from_secs(60));
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            for (q, want) in STATEMENTS.iter().zip(&want) {
                assert_eq!(&on_d(n1, q), want, "{q}, read {reads}");
                reads += 1;
            }
        }
    });
    // Once every rewrite is delivered: each host rewritten, the shards group every row of
    // the 40 series — through the index (40 series listed), answers unchanged.
    for (q, want) in STATEMENTS.iter().zip(&want) {
        assert_eq!(&on_d(n1, q), want, "{q}, after");
    }
    eprintln!(
        "{reads} reads during the rewrites; read again: {}, every row grouped: {}",
        grouping(n1, "again"),
        grouping(n1, "all")
    );
}
