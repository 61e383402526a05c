//! Issue #24 item 3 against the dead-letter queue: a `DELETE` or `DROP SERIES` removes the
//! rows it matches from the quarantined parts written before it too, so an operator's retry
//! after the statement brings none of them back, and a series whose only points sit in a
//! dead letter stays listed until a statement removes them.

use serde_json::Value;

use crate::reliability::{auth_config, health_until, Admin};
use crate::util::*;

/// Runs an InfluxQL statement on `db` as the admin; its first result.
fn influxql(a: &Admin<'_>, db: &str, q: &str) -> Value {
    let r = a.send(
        a.0.client
            .post(a.0.url(&format!("/query?db={db}&epoch=ns")))
            .form(&[("q", q)]),
    );
    assert_eq!(r.status(), 200, "{q}");
    let v: Value = r.json().unwrap();
    let first = v["results"][0].clone();
    assert!(first.get("error").is_none(), "{q}: {v}");
    first
}

/// The series of `c` (`SHOW SERIES`: the catalog).
fn series(a: &Admin<'_>) -> Vec<String> {
    let r = influxql(a, "h", "SHOW SERIES FROM c");
    r["series"][0]["values"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|row| row[0].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Points of `c` in the quarantine (0 when it has none).
fn quarantined(s: &Server) -> u64 {
    let h: Value = s.get("/health").json().unwrap();
    h["quarantine"]
        .as_array()
        .and_then(|q| q.iter().find(|t| t["measurement"] == "c"))
        .and_then(|t| t["points"].as_u64())
        .unwrap_or(0)
}

#[test]
fn deletes_reach_the_dead_letters_so_a_retry_brings_nothing_deleted_back() {
    let dir = data_dir();
    let config = auth_config();
    let mut s = Spawn::new(dir.path()).config(&config).start();
    let a = Admin(&s);
    a.query("CREATE DATABASE h");
    assert_eq!(
        a.post("/write?db=h", "c,host=a v=1 1\nc,host=b v=1 1\n")
            .status(),
        204
    );
    a.count_until("h.c", 2);
    // One acknowledged request the engine refuses deterministically: quarantined whole.
    a.sql("ALTER TABLE h.c ADD CONSTRAINT positive CHECK v > 0")
        .unwrap();
    let poison = "c,host=a v=-1 10\nc,host=a v=-2 20\nc,host=b v=-3 10\nc,host=z v=-4 30\n";
    assert_eq!(a.post("/write?db=h", poison).status(), 204);
    health_until(&s, "the poison is quarantined", |h| {
        h["wal"]["unflushed_points"] == 0
            && h["quarantine"]
                .as_array()
                .is_some_and(|q| q.iter().any(|t| t["points"] == 4))
    });
    assert_eq!(series(&a), ["c,host=a", "c,host=b", "c,host=z"]);

    // A time range of one series: its table row and one of its quarantined rows.
    influxql(&a, "h", "DELETE FROM c WHERE host = 'a' AND time < 15");
    assert_eq!(quarantined(&s), 3);
    // Series b's only table row goes; its quarantined row keeps it listed.
    influxql(&a, "h", "DELETE FROM c WHERE host = 'b' AND time < 5");
    assert_eq!(quarantined(&s), 3);
    assert_eq!(series(&a), ["c,host=a", "c,host=b", "c,host=z"]);
    // A series whose only point is quarantined: gone from both.
    influxql(&a, "h", "DROP SERIES FROM c WHERE host = 'z'");
    assert_eq!(quarantined(&s), 2);
    assert_eq!(series(&a), ["c,host=a", "c,host=b"]);
    // Durable: after a kill -9 the filtered dead letters are what the statements left.
    s.signal("KILL");
    let _ = s.terminate_wait();
    drop(s);
    let s = Spawn::new(dir.path()).config(&config).start();
    let a = Admin(&s);
    assert_eq!(quarantined(&s), 2);
    assert_eq!(series(&a), ["c,host=a", "c,host=b"]);
    // A write after the statements is not theirs to delete.
    assert_eq!(a.post("/write?db=h", "c,host=a v=5 12\n").status(), 204);

    // The cause gone, the retry inserts what the statements left, once.
    a.sql("ALTER TABLE h.c DROP CONSTRAINT positive").unwrap();
    let retry = a.json("/api/v1/quarantine/retry?db=h");
    assert_eq!(retry["inserted_points"], 2, "{retry}");
    assert_eq!(quarantined(&s), 0);
    let r = influxql(&a, "h", "SELECT v FROM c GROUP BY host");
    let rows: Vec<(String, i64, f64)> = r["series"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|series| {
            let host = series["tags"]["host"].as_str().unwrap().to_string();
            series["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |row| {
                    (
                        host.clone(),
                        row[0].as_i64().unwrap(),
                        row[1].as_f64().unwrap(),
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("a".to_string(), 12, 5.0),
            ("a".to_string(), 20, -2.0),
            ("b".to_string(), 10, -3.0)
        ],
        "{r}"
    );
}
