//! Issue #25, `DROP MEASUREMENT` on a ClickHouse cluster end to end: two chingest nodes
//! over two real ClickHouse servers (Debian's 18.16, on loopback). A drop run on one node
//! removes the points every node acknowledged before it (the other node delivers slowly
//! here), its table leaves every shard, and the other node forgets its fields: a field may
//! then be written with another type through either node, as in InfluxDB. A restart does
//! not forget the measurement written again.

use std::time::Duration;

use serde_json::Value;

use crate::cluster::{two_shard_cluster, wait_delivered};
use crate::cluster_delete::{on_d, slow_node, two_nodes_one_slow};
use crate::util::*;

/// Polls `s` until `q` answers `want` as its first series' values (`null`: no series).
fn wait_answer(s: &Server, q: &str, want: Value) {
    crate::cluster::wait_values(s, "/query?db=d", q, want)
}

#[test]
fn drop_measurement_on_a_cluster_drops_every_nodes_points_and_field_types() {
    let test = "drop_measurement_on_a_cluster_drops_every_nodes_points_and_field_types";
    let Some((_dir, shards)) = two_shard_cluster(test) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    // b delivers every 8 s: its points sit in its WAL when a's drop begins.
    let (dir_b, a, b, _dir_a) = two_nodes_one_slow(s0, s1);
    assert_eq!(a.post("/write?db=d", "m,host=x f=1i 1000").status(), 204);
    assert_eq!(b.post("/write?db=d", "m,host=y f=2i 1000").status(), 204);
    assert_eq!(
        a.post("/write?db=d", "other,host=x g=1i 1000").status(),
        204
    );

    let r = on_d(&a, "DROP MEASUREMENT m");
    assert!(r["results"][0].get("error").is_none(), "{r}");
    let tables = |name: &str| -> u64 {
        [s0, s1]
            .iter()
            .map(|s| {
                s.query(&format!(
                    "SELECT count() FROM system.tables WHERE database = '__shard_d' AND name = '{name}'"
                ))
                .unwrap()
                .trim()
                .parse::<u64>()
                .unwrap()
            })
            .sum()
    };
    assert_eq!(tables("m"), 0);
    // Nothing b acknowledged before the drop arrives after it; the other measurement stays.
    wait_delivered(&[&a, &b], Duration::from_secs(60));
    assert_eq!(tables("m"), 0);
    assert_eq!(tables("other"), 2);
    // A hostile name is a name: nothing by it exists, nothing else is dropped.
    let r = on_d(
        &a,
        r#"DROP MEASUREMENT "other`; DROP TABLE __shard_d.other; --""#,
    );
    assert!(r["results"][0].get("error").is_none(), "{r}");
    assert_eq!(tables("other"), 2);
    // b forgets the measurement and its field's type.
    wait_answer(&b, "SHOW MEASUREMENTS", serde_json::json!([["other"]]));
    wait_answer(&b, "SHOW FIELD KEYS FROM m", Value::Null);
    assert_eq!(
        on_d(&a, "SHOW MEASUREMENTS")["results"][0]["series"][0]["values"],
        serde_json::json!([["other"]])
    );

    // f as a float now, through both nodes: no field type conflict, both points read back.
    let r = b.post("/write?db=d", "m,host=y f=2.5 2000");
    assert_eq!(r.status(), 204, "{:?}", r.text());
    let r = a.post("/write?db=d", "m,host=x f=3.5 3000");
    assert_eq!(r.status(), 204, "{:?}", r.text());
    wait_delivered(&[&a, &b], Duration::from_secs(60));
    for node in [&a, &b] {
        wait_answer(
            node,
            "SELECT f, host FROM m",
            serde_json::json!([
                ["1970-01-01T00:00:00.000002Z", 2.5, "y"],
                ["1970-01-01T00:00:00.000003Z", 3.5, "x"]
            ]),
        );
        wait_answer(
            node,
            "SHOW FIELD KEYS FROM m",
            serde_json::json!([["f", "float"]]),
        );
    }

    // A restart applies no drop twice: b keeps the measurement written again.
    drop(b);
    let b = slow_node(&dir_b, s0, s1);
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        on_d(&b, "SHOW FIELD KEYS FROM m")["results"][0]["series"][0]["values"],
        serde_json::json!([["f", "float"]])
    );
    assert!(
        !b.log_text().contains("measurement drop learned"),
        "{}",
        b.log_text()
    );
    // A measurement no node or shard has: no error, as in InfluxDB.
    let r = on_d(&b, "DROP MEASUREMENT nope");
    assert!(r["results"][0].get("error").is_none(), "{r}");
}
