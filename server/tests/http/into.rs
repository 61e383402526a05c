//! `SELECT … INTO` (issue #24 item 2) statement by statement against a live InfluxDB 1.6.7:
//! tags to fields without `GROUP BY`, aggregates per window and tag into another database,
//! `:MEASUREMENT` over a regex, type conflicts, unknown targets; then durability: what INTO
//! wrote survives a kill -9, and running it again writes the same points, not more.

use serde_json::{json, Value};

use crate::influxql_diff::{client, step_answer, Influxd};
use crate::util::*;

#[test]
fn select_into_answers_and_writes_as_influxdb_does() {
    let Some(oracle) = Influxd::for_test("select_into_answers_and_writes_as_influxdb_does") else {
        return;
    };
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    let http = client();
    let steps: Vec<(&str, &str)> = vec![
        ("nodb", "CREATE DATABASE d; CREATE DATABASE b"),
        (
            "w",
            "cpu,host=h1,region=eu v=1,n=2i,s=\"x\" 10\ncpu,host=h2,region=us v=3,n=4i 20\n\
             cpu,host=h1,region=eu v=5 70\nmem,host=h1 used=7 10\n\
             we\\ ird,k=a\\,b f=1.5 30",
        ),
        ("q", "SELECT * INTO cpu2 FROM cpu"),
        ("q", "SELECT * FROM cpu2"),
        ("q", "SHOW TAG KEYS FROM cpu2"),
        ("q", "SHOW FIELD KEYS FROM cpu2"),
        (
            "q",
            "SELECT mean(v) INTO b..cpu_mean FROM cpu GROUP BY time(1m), host",
        ),
        ("q", "SELECT * FROM b..cpu_mean"),
        ("q", "SHOW TAG KEYS ON b"),
        (
            "q",
            "SELECT max(*) INTO b.autogen.:MEASUREMENT FROM /^(cpu|mem)$/ GROUP BY time(1m), *",
        ),
        ("q", "SELECT * FROM b..cpu"),
        ("q", "SELECT * FROM b..mem"),
        ("q", "SELECT v INTO nodb..x FROM cpu"),
        ("q", "SELECT v INTO d.weekly.x FROM cpu"),
        ("q", "SELECT count(v) INTO cnt FROM cpu"),
        ("q", "SELECT * FROM cnt"),
        ("q", "SELECT v INTO cpu2 FROM cpu WHERE time > 1000s"),
        ("q", "SELECT n INTO cpu2 FROM cpu"),
        ("q", "SELECT v::integer INTO cpu2 FROM cpu"),
        (
            "q",
            "SELECT v INTO \"d\".\"autogen\".\"cpu,3\" FROM cpu GROUP BY host",
        ),
        ("q", "SELECT * FROM \"cpu,3\""),
        ("q", "SELECT v, host INTO t3 FROM cpu GROUP BY region"),
        ("q", "SELECT * FROM t3"),
        ("q", "SHOW TAG KEYS FROM t3"),
        ("q", "SELECT * INTO copy FROM \"we ird\" GROUP BY *"),
        ("q", "SELECT * FROM copy GROUP BY *"),
        // Again: the same points, not more.
        ("q", "SELECT * INTO copy FROM \"we ird\" GROUP BY *"),
        ("q", "SELECT count(f) FROM copy"),
        ("q", "SHOW MEASUREMENTS"),
    ];
    for (i, (kind, text)) in steps.iter().enumerate() {
        let want = step_answer(&http, &oracle.base, kind, text);
        let got = step_answer(&http, &s.base, kind, text);
        assert_eq!(got, want, "step {i}: {kind} {text}");
    }
}

#[test]
fn select_into_is_durable_and_needs_write_on_its_target() {
    let dir = data_dir();
    let config = format!(
        "[auth]\nenabled = true\n\n[[auth.users]]\nname = \"admin\"\npassword_hash = \"{}\"\nadmin = true\n\n\
         [[auth.users]]\nname = \"reader\"\npassword_hash = \"{}\"\nread = [\"src\"]\nwrite = [\"src\"]\n",
        hash("adminpw"),
        hash("readerpw")
    );
    // Nothing flushes by itself: INTO's points are in the WAL only when the server dies.
    let start = || {
        Spawn::new(dir.path())
            .config(&config)
            .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
            .env("CHINGEST_FLUSH__MAX_POINTS_PER_BATCH", "1000000")
            .start()
    };
    let mut s = start();
    let q = |s: &Server, who: (&str, &str), q: &str| -> (u16, Value) {
        let r = s
            .client
            .post(s.url("/query?db=src&epoch=s"))
            .basic_auth(who.0, Some(who.1))
            .form(&[("q", q)])
            .send()
            .unwrap();
        (r.status().as_u16(), r.json().unwrap())
    };
    let admin = ("admin", "adminpw");
    assert_eq!(
        q(&s, admin, "CREATE DATABASE src; CREATE DATABASE dst").0,
        200
    );
    let body: String = (0..1_000)
        .map(|i| format!("m,host=h{} v={i} {}\n", i % 7, i))
        .collect();
    let w = s
        .client
        .post(s.url("/write?db=src&precision=s"))
        .basic_auth(admin.0, Some(admin.1))
        .body(body)
        .send()
        .unwrap();
    assert_eq!(w.status(), 204);
    let (status, v) = q(
        &s,
        ("reader", "readerpw"),
        "SELECT * INTO dst..m FROM m GROUP BY host",
    );
    assert_eq!(status, 403);
    assert_eq!(
        v,
        json!({"error": "error authorizing query: reader not authorized to execute statement 'SELECT * INTO dst..m FROM m GROUP BY host', requires WRITE on dst"})
    );
    let into = "SELECT sum(v) INTO dst..sums FROM m GROUP BY time(100s), host";
    // A GET writes nothing (InfluxDB 1.x would run it with a warning).
    let get = s
        .client
        .get(s.url("/query?db=src"))
        .basic_auth(admin.0, Some(admin.1))
        .query(&[("q", into)])
        .send()
        .unwrap();
    assert_eq!(get.status(), 405);
    let (status, v) = q(&s, admin, into);
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        v["results"][0]["series"][0]["values"],
        json!([[0, 70]]),
        "{v}"
    );
    let sums = "SELECT * FROM dst..sums GROUP BY host";
    let (_, before) = q(&s, admin, sums);
    assert_eq!(before["results"][0]["series"].as_array().unwrap().len(), 7);

    s.signal("KILL");
    let _ = s.terminate_wait();
    let s = start();
    assert_eq!(
        q(&s, admin, sums).1,
        before,
        "INTO's points survive a kill -9"
    );
    // Again after the restart: the same points, none doubled.
    assert_eq!(
        q(&s, admin, into).1["results"][0]["series"][0]["values"],
        json!([[0, 70]])
    );
    assert_eq!(q(&s, admin, sums).1, before);
    let (_, n) = q(&s, admin, "SELECT count(sum) FROM dst..sums");
    assert_eq!(n["results"][0]["series"][0]["values"], json!([[0, 70]]));
}
