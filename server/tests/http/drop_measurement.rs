//! `DROP MEASUREMENT` (issue #24 item 3) against the real binary: the measurement's rows,
//! schema, tags and series go (flushed or still in the WAL), durably across a clean restart
//! and a `kill -9`; later writes create it anew with any field types; other measurements are
//! untouched; under concurrent writes a point written after the drop answered is never lost
//! and a point acknowledged before it was sent is never seen again.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::*;

/// `/query?db=d&epoch=s` (POST), the whole answer.
pub(crate) fn q(s: &Server, query: &str) -> Value {
    let r = s
        .client
        .post(s.url("/query?db=d&epoch=s"))
        .query(&[("q", query)])
        .send()
        .unwrap();
    assert_eq!(r.status(), 200, "{query}");
    r.json().unwrap()
}

/// The values of the first series of the first statement (null when it has none).
pub(crate) fn values(v: &Value) -> Value {
    v["results"][0]["series"][0]["values"].clone()
}

/// The times (seconds) of `SELECT v FROM <m>` (reads see unflushed points at once).
fn times_of(s: &Server, m: &str) -> BTreeSet<i64> {
    let v = q(s, &format!("SELECT v FROM \"{m}\""));
    values(&v)
        .as_array()
        .map(|rows| rows.iter().map(|r| r[0].as_i64().unwrap()).collect())
        .unwrap_or_default()
}

/// A server on `dir` whose flusher inserts nothing on its own (a read, a drop or a delete
/// must bring what it needs to the engine, and replay must honour it).
pub(crate) fn spawn_not_flushing(dir: &std::path::Path) -> Server {
    Spawn::new(dir)
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .env("CHINGEST_FLUSH__MAX_POINTS_PER_BATCH", "1000000")
        .start()
}

/// Writes `body` to `d` (times in seconds), asserting 204.
pub(crate) fn write(s: &Server, body: &str) {
    let r = s.post("/write?db=d&precision=s", body.to_string());
    assert_eq!(r.status(), 204, "{body}: {}", r.text().unwrap());
}

#[test]
fn drop_measurement_forgets_rows_schema_and_series_durably_and_writes_create_it_anew() {
    let dir = data_dir();
    // Nothing flushes on its own: the second batch of cpu points is still in the WAL when
    // the measurement is dropped, so the flusher, the reads and replay must all honour it.
    let spawn = spawn_not_flushing;
    let mut s = spawn(dir.path());
    s.query("CREATE DATABASE d");
    write(
        &s,
        "cpu,host=a v=1 1\ncpu,host=b v=2 2\nmem,host=a v=10 1\n",
    );
    write(&s, "cpu,host=c v=3 3\n");
    assert_eq!(times_of(&s, "cpu").len(), 3);

    // A GET cannot drop anything; the statement needs a database.
    let r = s
        .client
        .get(s.url("/query?db=d"))
        .query(&[("q", "DROP MEASUREMENT cpu")])
        .send()
        .unwrap();
    assert_eq!(r.status(), 405);
    let r = s
        .client
        .post(s.url("/query"))
        .query(&[("q", "DROP MEASUREMENT cpu")])
        .send()
        .unwrap();
    assert_eq!(
        r.json::<Value>().unwrap()["results"][0]["error"],
        "database not found: "
    );

    assert_eq!(
        q(&s, "DROP MEASUREMENT cpu"),
        json!({"results": [{"statement_id": 0}]})
    );
    // Dropping it again is no error (as in InfluxDB 1.6.7).
    assert_eq!(
        q(&s, "DROP MEASUREMENT cpu"),
        json!({"results": [{"statement_id": 0}]})
    );
    let gone = |s: &Server| {
        assert_eq!(times_of(s, "cpu"), BTreeSet::new());
        assert_eq!(values(&q(s, "SHOW MEASUREMENTS")), json!([["mem"]]));
        assert_eq!(values(&q(s, "SHOW SERIES")), json!([["mem,host=a"]]));
        assert_eq!(values(&q(s, "SHOW FIELD KEYS FROM cpu")), Value::Null);
        assert_eq!(
            values(&q(s, "SHOW TAG VALUES FROM cpu WITH KEY = host")),
            Value::Null
        );
        assert_eq!(times_of(s, "mem"), BTreeSet::from([1]));
    };
    gone(&s);

    // A kill -9 right after: nothing of cpu comes back from the WAL.
    s.signal("KILL");
    let _ = s.terminate_wait();
    drop(s);
    let mut s = spawn(dir.path());
    gone(&s);

    // Written again, with another type for `v` and another tag: a new measurement.
    write(&s, "cpu,dc=x v=\"text\" 7\n");
    assert_eq!(
        values(&q(&s, "SELECT * FROM cpu")),
        json!([[7, "x", "text"]])
    );
    assert_eq!(
        values(&q(&s, "SHOW FIELD KEYS FROM cpu")),
        json!([["v", "string"]])
    );
    assert_eq!(
        values(&q(&s, "SHOW SERIES")),
        json!([["cpu,dc=x"], ["mem,host=a"]])
    );

    // Durable across a clean restart (which flushes) and a kill -9 after it.
    assert!(s.terminate().success());
    drop(s);
    let mut s = spawn(dir.path());
    assert_eq!(
        values(&q(&s, "SELECT * FROM cpu")),
        json!([[7, "x", "text"]])
    );
    s.signal("KILL");
    let _ = s.terminate_wait();
    drop(s);
    let s = spawn(dir.path());
    assert_eq!(
        values(&q(&s, "SELECT * FROM cpu")),
        json!([[7, "x", "text"]])
    );
    assert_eq!(times_of(&s, "mem"), BTreeSet::from([1]));
}

#[test]
fn drop_measurement_under_writes_loses_nothing_written_after_it() {
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    s.query("CREATE DATABASE d");
    let dropping = AtomicBool::new(false);
    let dropped = AtomicBool::new(false);
    // (time, sent after the drop answered, acknowledged before it was sent)
    let acked = Mutex::new(Vec::<(i64, bool, bool)>::new());
    let keep_acked = Mutex::new(BTreeSet::<i64>::new());
    std::thread::scope(|scope| {
        for w in 0..3i64 {
            let (s, dropping, dropped, acked, keep_acked) =
                (&s, &dropping, &dropped, &acked, &keep_acked);
            scope.spawn(move || {
                for i in 0..300i64 {
                    let t = 1 + i * 3 + w;
                    loop {
                        let sent_after = dropped.load(Ordering::SeqCst);
                        let body = format!("cpu,w=w{w} v={t} {t}\nkeep,w=w{w} v={t} {t}\n");
                        let r = s.post("/write?db=d&precision=s", body);
                        match r.status().as_u16() {
                            204 => {
                                let before = !dropping.load(Ordering::SeqCst);
                                acked.lock().unwrap().push((t, sent_after, before));
                                keep_acked.lock().unwrap().insert(t);
                                break;
                            }
                            // A loaded machine may refuse while the drop holds writes back;
                            // the point is sent again (and judged by that send).
                            429 | 503 => std::thread::sleep(Duration::from_millis(20)),
                            st => panic!("{st}: {}", r.text().unwrap()),
                        }
                    }
                }
            });
        }
        // Let the writers run (at least 100 points in), then drop while they go on.
        let deadline = Instant::now() + Duration::from_secs(60);
        while acked.lock().unwrap().len() < 100 {
            assert!(Instant::now() < deadline, "writes never got going");
            std::thread::sleep(Duration::from_millis(5));
        }
        dropping.store(true, Ordering::SeqCst);
        assert_eq!(
            q(&s, "DROP MEASUREMENT cpu"),
            json!({"results": [{"statement_id": 0}]})
        );
        dropped.store(true, Ordering::SeqCst);
    });
    let acked = acked.into_inner().unwrap();
    let after: BTreeSet<i64> = acked.iter().filter(|a| a.1).map(|a| a.0).collect();
    let before: BTreeSet<i64> = acked.iter().filter(|a| a.2).map(|a| a.0).collect();
    assert!(!after.is_empty() && !before.is_empty(), "{acked:?}");
    let check = |s: &Server| {
        let present = times_of(s, "cpu");
        let lost: Vec<_> = after.difference(&present).collect();
        assert!(lost.is_empty(), "written after the drop, lost: {lost:?}");
        let back: Vec<_> = before.intersection(&present).collect();
        assert!(
            back.is_empty(),
            "acknowledged before the drop, still there: {back:?}"
        );
        assert_eq!(times_of(s, "keep"), *keep_acked.lock().unwrap());
    };
    check(&s);
    // The same after a restart.
    let mut s = s;
    assert!(s.terminate().success());
    drop(s);
    let s = Spawn::new(dir.path()).start();
    check(&s);
}

/// The same statements and writes to InfluxDB 1.6.7 and chingest, every answer compared
/// exactly: the drop itself, dropping what is not there, what `SHOW` and `SELECT` answer
/// after it, and the measurement written again with another field type.
#[test]
fn drop_measurement_answers_as_influxdb_1x() {
    let test = "drop_measurement_answers_as_influxdb_1x";
    let Some(oracle) = crate::influxql_diff::Influxd::for_test(test) else {
        return;
    };
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    let http = crate::influxql_diff::client();
    // (write body) or (query, with db?): each step's answer, status and JSON body.
    let steps: &[(&str, &str)] = &[
        ("q", "CREATE DATABASE d"),
        (
            "w",
            "cpu,host=a v=1 1\ncpu,host=b v=2 2\nmem,host=a v=10 1\nmem,host=b v=11 2\n",
        ),
        ("q", "SHOW MEASUREMENTS"),
        ("q", "DROP MEASUREMENT cpu"),
        ("q", "DROP MEASUREMENT cpu"),
        ("q", "DROP MEASUREMENT nosuch"),
        ("q", "SHOW MEASUREMENTS"),
        ("q", "SHOW SERIES"),
        ("q", "SHOW FIELD KEYS"),
        ("q", "SHOW TAG KEYS"),
        ("q", "SHOW TAG VALUES WITH KEY = host"),
        ("q", "SELECT * FROM cpu"),
        ("q", "SELECT * FROM mem"),
        ("q", "SELECT count(v) FROM /.*/"),
        ("w", "cpu,dc=x v=\"text\" 7\n"),
        ("q", "SHOW FIELD KEYS FROM cpu"),
        ("q", "SHOW TAG KEYS FROM cpu"),
        ("q", "SELECT * FROM cpu"),
        ("q", "SHOW SERIES"),
        // A name the engine's quoting must carry whole (space, quote, backtick, semicolon).
        ("w", "we\\ ird\"q`x;DROP\\ DATABASE\\ d v=1 3\n"),
        ("q", "SHOW MEASUREMENTS"),
        ("q", "DROP MEASUREMENT \"we ird\\\"q`x;DROP DATABASE d\""),
        ("q", "SHOW MEASUREMENTS"),
        ("q", "DROP MEASUREMENT \"mem\""),
        ("q", "SHOW MEASUREMENTS"),
        ("q", "SELECT * FROM mem"),
        ("nodb", "DROP MEASUREMENT cpu"),
        ("nosuchdb", "DROP MEASUREMENT cpu"),
    ];
    for (i, (kind, text)) in steps.iter().enumerate() {
        let answer = |base: &str| crate::influxql_diff::step_answer(&http, base, kind, text);
        let want = answer(&oracle.base);
        let got = answer(&s.base);
        assert_eq!(got, want, "step {i}: {kind} {text}");
        if *kind == "w" {
            assert_eq!(got.0, 204, "step {i}: {text}");
        }
    }
}

/// The engine refuses the `DROP TABLE` (a dictionary an admin made reads the table): the statement answers the engine's error, writes go on and create the measurement
/// anew, and the drop finishes at the next start — deleting only what was written before it.
#[test]
fn a_drop_the_engine_refused_finishes_at_start_and_keeps_what_was_written_after_it() {
    let dir = data_dir();
    let config = format!(
        "[auth]\nenabled = true\n\n[[auth.users]]\nname = \"admin\"\npassword_hash = \"{}\"\nadmin = true\n",
        hash("adminpw")
    );
    let as_admin = |_: &Server, r: reqwest::blocking::RequestBuilder| {
        r.basic_auth("admin", Some("adminpw")).send().unwrap()
    };
    let query = |s: &Server, q: &str| -> Value {
        let r = as_admin(
            s,
            s.client
                .post(s.url("/query?db=d&epoch=s"))
                .query(&[("q", q)]),
        );
        assert_eq!(r.status(), 200, "{q}");
        r.json().unwrap()
    };
    let sql = |s: &Server, q: &str| {
        let r = as_admin(s, s.client.post(s.url("/api/v1/sql")).body(q.to_string()));
        assert_eq!(r.status(), 200, "{q}: {}", r.text().unwrap());
    };
    let write = |s: &Server, body: &str| {
        let r = as_admin(
            s,
            s.client
                .post(s.url("/write?db=d&precision=s"))
                .body(body.to_string()),
        );
        assert_eq!(r.status(), 204, "{body}");
    };
    let times = |s: &Server| -> Value { values(&query(s, "SELECT v FROM cpu")) };

    let mut s = Spawn::new(dir.path()).config(&config).start();
    query(&s, "CREATE DATABASE d");
    write(&s, "cpu,host=a v=1 1\ncpu,host=b v=2 2\n");
    // Flushed, so the engine has the table a view can depend on.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = as_admin(
            &s,
            s.client
                .post(s.url("/api/v1/sql?format=jsoneachrow"))
                .body("SELECT count() AS n FROM d.cpu"),
        );
        if r.status() == 200 && r.text().unwrap().contains("\"n\":2") {
            break;
        }
        assert!(Instant::now() < deadline, "never flushed");
        std::thread::sleep(Duration::from_millis(50));
    }
    sql(
        &s,
        "CREATE DICTIONARY d.dict (host String, v Float64) PRIMARY KEY host \
         SOURCE(CLICKHOUSE(DB 'd' TABLE 'cpu')) LAYOUT(COMPLEX_KEY_HASHED()) LIFETIME(0)",
    );
    let refused = query(&s, "DROP MEASUREMENT cpu");
    let error = refused["results"][0]["error"].as_str().unwrap_or_default();
    assert!(
        !error.is_empty(),
        "the engine dropped a table a dictionary depends on: {refused}"
    );
    // The catalog forgot it (the engine kept its rows: the statement said it failed).
    assert_eq!(values(&query(&s, "SHOW MEASUREMENTS")), Value::Null);
    // Written again after the failed drop: kept, now and after the drop finishes.
    write(&s, "cpu,host=z v=5 5\n");
    let now = times(&s);
    assert!(now.as_array().unwrap().contains(&json!([5, 5])), "{now}");
    sql(&s, "DROP DICTIONARY d.dict");
    assert!(s.terminate().success());
    drop(s);
    let s = Spawn::new(dir.path()).config(&config).start();
    assert_eq!(times(&s), json!([[5, 5]]));
    assert_eq!(values(&query(&s, "SHOW SERIES")), json!([["cpu,host=z"]]));
}
