//! `DELETE` and `DROP SERIES` (issue #24 item 3) against the real binary: exactly the
//! matching points go (flushed or still in the WAL when the statement came), series with no
//! point left go from `SHOW` answers, a measurement with no series left goes whole, durably
//! across a `kill -9`; under concurrent writes a point acknowledged before the statement was
//! sent is gone when it answers, and one acknowledged after it answered is kept.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::drop_measurement::{q, spawn_not_flushing, values, write};
use crate::util::*;

/// `q`, asserting the statement succeeded with nothing to show.
fn run(s: &Server, query: &str) {
    assert_eq!(
        q(s, query),
        json!({"results": [{"statement_id": 0}]}),
        "{query}"
    );
}

/// The statement's error text.
fn error(s: &Server, query: &str) -> String {
    q(s, query)["results"][0]["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{query}: no error"))
        .to_string()
}

/// (host, time) of every point of `m` (reads see unflushed points at once).
fn points(s: &Server, m: &str) -> BTreeSet<(String, i64)> {
    let v = q(s, &format!("SELECT host, v FROM \"{m}\""));
    values(&v)
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| (r[1].as_str().unwrap().to_string(), r[0].as_i64().unwrap()))
                .collect()
        })
        .unwrap_or_default()
}

fn set(host: &str, times: impl IntoIterator<Item = i64>) -> BTreeSet<(String, i64)> {
    times.into_iter().map(|t| (host.to_string(), t)).collect()
}

#[test]
fn delete_and_drop_series_remove_exactly_the_matching_points_durably() {
    let dir = data_dir();
    // Nothing flushes on its own: every point is still in the WAL when a statement comes,
    // so the delete must bring them to the engine first.
    let spawn = spawn_not_flushing;
    let mut s = spawn(dir.path());
    s.query("CREATE DATABASE d");
    let mut body = String::new();
    for t in 1..=10 {
        for h in ["a", "b", "c"] {
            body.push_str(&format!("cpu,host={h},dc=x v={t} {t}\n"));
        }
    }
    body.push_str("mem,host=a v=1 1\nmem,host=a v=2 2\nmem,host=z v=3 3\n");
    write(&s, &body);
    // A late rewrite of a point the delete keeps, and of one it removes.
    write(&s, "cpu,host=a,dc=x v=60 6\ncpu,host=a,dc=x v=40 4\n");

    // Refused before anything runs: a GET, a field in the condition, time in DROP SERIES,
    // no database (an unknown one, as InfluxDB 1.6.7 answers).
    let r = s
        .client
        .get(s.url("/query?db=d"))
        .query(&[("q", "DELETE FROM cpu")])
        .send()
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(
        error(&s, "DELETE FROM cpu WHERE v > 1"),
        "fields not supported in WHERE clause during deletion"
    );
    assert_eq!(
        error(&s, "DROP SERIES FROM cpu WHERE time < 5s"),
        "DROP SERIES doesn't support time in WHERE clause"
    );
    let r = s
        .client
        .post(s.url("/query"))
        .query(&[("q", "DELETE FROM cpu")])
        .send()
        .unwrap();
    assert_eq!(
        r.json::<Value>().unwrap()["results"][0]["error"],
        "database not found: "
    );
    assert_eq!(points(&s, "cpu").len(), 30);

    // Points of one series in a time range: the series stays.
    run(&s, "DELETE FROM cpu WHERE host = 'a' AND time < 5s");
    let mut want = set("a", 5..=10);
    want.extend(set("b", 1..=10));
    want.extend(set("c", 1..=10));
    assert_eq!(points(&s, "cpu"), want);
    assert_eq!(
        values(&q(&s, "SELECT v FROM cpu WHERE host = 'a' AND time = 6s")),
        json!([[6, 60]]),
        "the rewrite still merges"
    );
    assert_eq!(
        values(&q(&s, "SHOW SERIES FROM cpu")),
        json!([
            ["cpu,dc=x,host=a"],
            ["cpu,dc=x,host=b"],
            ["cpu,dc=x,host=c"]
        ])
    );

    // All points of one series (no time): the series goes from SHOW answers.
    run(&s, "DELETE FROM cpu WHERE host = 'b'");
    want.retain(|(h, _)| h != "b");
    assert_eq!(points(&s, "cpu"), want);
    // DROP SERIES with a regex source, and a condition on a tag others lack.
    run(&s, "DROP SERIES FROM /^cp/ WHERE host =~ /^c$/");
    want.retain(|(h, _)| h != "c");
    assert_eq!(points(&s, "cpu"), want);
    let state = |s: &Server| {
        (
            points(s, "cpu"),
            points(s, "mem"),
            values(&q(s, "SHOW SERIES")),
            values(&q(s, "SHOW TAG VALUES FROM cpu WITH KEY = host")),
            values(&q(s, "SHOW MEASUREMENTS")),
        )
    };
    assert_eq!(
        values(&q(&s, "SHOW SERIES")),
        json!([["cpu,dc=x,host=a"], ["mem,host=a"], ["mem,host=z"]])
    );
    assert_eq!(
        values(&q(&s, "SHOW TAG VALUES FROM cpu WITH KEY = host")),
        json!([["host", "a"]])
    );

    // Every measurement, a time range: mem's host=a has nothing left and goes; host=z keeps
    // its point.
    run(&s, "DELETE WHERE time <= 2s");
    assert_eq!(points(&s, "mem"), set("z", [3]));
    assert_eq!(
        values(&q(&s, "SHOW SERIES")),
        json!([["cpu,dc=x,host=a"], ["mem,host=z"]])
    );
    // A measurement with no series left goes whole (its field types too).
    run(&s, "DROP SERIES FROM mem WHERE host = 'z'");
    assert_eq!(values(&q(&s, "SHOW MEASUREMENTS")), json!([["cpu"]]));
    let before = state(&s);

    // Durable: a kill -9 brings nothing back (the deleted rows' WAL entries were flushed).
    s.signal("KILL");
    let _ = s.terminate_wait();
    drop(s);
    let mut s = spawn(dir.path());
    assert_eq!(state(&s), before);

    // Written again: the series and the measurement come back, with any field type.
    write(&s, "cpu,host=b,dc=x v=100 2\nmem,host=q v=\"text\" 9\n");
    want.insert(("b".into(), 2));
    assert_eq!(points(&s, "cpu"), want);
    assert_eq!(values(&q(&s, "SELECT v FROM mem")), json!([[9, "text"]]));
    assert_eq!(
        values(&q(&s, "SHOW SERIES")),
        json!([["cpu,dc=x,host=a"], ["cpu,dc=x,host=b"], ["mem,host=q"]])
    );
    s.signal("KILL");
    let _ = s.terminate_wait();
    drop(s);
    let s = spawn(dir.path());
    assert_eq!(points(&s, "cpu"), want);
}

#[test]
fn delete_under_writes_removes_what_was_acknowledged_before_it_and_keeps_what_came_after() {
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    s.query("CREATE DATABASE d");
    let stop = AtomicBool::new(false);
    // (time, acknowledged at)
    let acked = Mutex::new(Vec::<(i64, Instant)>::new());
    let mut deletes = Vec::new();
    std::thread::scope(|scope| {
        let (s2, stop2, acked2) = (&s, &stop, &acked);
        scope.spawn(move || {
            let mut t = 1i64;
            while !stop2.load(Ordering::SeqCst) {
                let r = s2.post(
                    "/write?db=d&precision=s",
                    format!("cpu,host=w v={t} {t}\ncpu,host=keep v={t} {t}\n"),
                );
                match r.status().as_u16() {
                    204 => {
                        acked2.lock().unwrap().push((t, Instant::now()));
                        t += 1;
                    }
                    // A loaded machine may refuse; the point is sent again.
                    429 | 503 => std::thread::sleep(Duration::from_millis(20)),
                    st => panic!("{st}: {}", r.text().unwrap()),
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        for round in 0..3 {
            while acked.lock().unwrap().len() < 50 * (round + 1) {
                assert!(Instant::now() < deadline, "writes never got going");
                std::thread::sleep(Duration::from_millis(5));
            }
            let sent = Instant::now();
            run(&s, "DELETE FROM cpu WHERE host = 'w'");
            let answered = Instant::now();
            // Everything acknowledged before the statement was sent is gone now.
            let left: BTreeSet<i64> = points(&s, "cpu")
                .into_iter()
                .filter(|(h, _)| h == "w")
                .map(|(_, t)| t)
                .collect();
            for (t, at) in acked.lock().unwrap().iter() {
                if *at < sent {
                    assert!(
                        !left.contains(t),
                        "round {round}: {t} acknowledged before the delete"
                    );
                }
            }
            deletes.push((sent, answered));
        }
        // Let some writes land after the last delete answered.
        let n = acked.lock().unwrap().len();
        while acked.lock().unwrap().len() < n + 30 {
            assert!(
                Instant::now() < deadline + Duration::from_secs(60),
                "writes stopped"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::SeqCst);
    });
    let (last_sent, last_answered) = *deletes.last().unwrap();
    let acked = acked.into_inner().unwrap();
    let all = points(&s, "cpu");
    for (t, at) in &acked {
        // The other series loses nothing.
        assert!(all.contains(&("keep".to_string(), *t)), "keep {t} lost");
        let w = all.contains(&("w".to_string(), *t));
        if *at < last_sent {
            assert!(
                !w,
                "{t} acknowledged before the last delete was sent is back"
            );
        }
        if *at > last_answered {
            assert!(
                w,
                "{t} acknowledged after the last delete answered was lost"
            );
        }
    }
    assert!(
        acked.iter().any(|(_, at)| *at > last_answered),
        "no write after the last delete"
    );
}

/// The same statements and writes to InfluxDB 1.6.7 and chingest, every answer compared
/// exactly: deletes of time ranges, of whole series and of every measurement, `DROP SERIES`,
/// the refusals, what `SHOW` and `SELECT` answer after each, and series written again.
#[test]
fn delete_and_drop_series_answer_as_influxdb_1x() {
    let test = "delete_and_drop_series_answer_as_influxdb_1x";
    let Some(oracle) = crate::influxql_diff::Influxd::for_test(test) else {
        return;
    };
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    let http = crate::influxql_diff::client();
    let shows = [
        "SELECT * FROM cpu",
        "SELECT * FROM mem",
        "SHOW SERIES",
        "SHOW MEASUREMENTS",
        "SHOW TAG VALUES WITH KEY = host",
        "SHOW TAG KEYS",
    ];
    let mut steps: Vec<(&str, String)> = vec![
        ("q", "CREATE DATABASE d".into()),
        (
            "w",
            "cpu,host=a,dc=x v=1 1\ncpu,host=a,dc=x v=2 2\ncpu,host=a,dc=x v=3 3\n\
             cpu,host=b,dc=y v=4 1\ncpu,host=b,dc=y v=5 5\ncpu,host=c v=6 6\n\
             mem,host=a v=10 1\nmem,host=z v=11 2\n"
                .into(),
        ),
        ("q", "DELETE FROM cpu WHERE v > 1".into()),
        ("q", "DROP SERIES FROM cpu WHERE time < 3s".into()),
        ("q", "DELETE FROM db..cpu".into()),
        ("q", "DELETE".into()),
        ("nodb", "DELETE FROM cpu".into()),
        ("nosuchdb", "DELETE FROM cpu".into()),
        ("q", "DELETE FROM nosuch WHERE host = 'a'".into()),
        (
            "q",
            "DELETE FROM cpu WHERE host = 'a' AND time >= 2s AND time < 3s".into(),
        ),
    ];
    steps.extend(shows.iter().map(|q| ("q", q.to_string())));
    steps.push(("q", "DELETE FROM cpu WHERE dc = 'y'".into()));
    steps.extend(shows.iter().map(|q| ("q", q.to_string())));
    steps.push(("q", "DROP SERIES FROM /c.u/ WHERE host = 'c'".into()));
    steps.extend(shows.iter().map(|q| ("q", q.to_string())));
    steps.push(("q", "DELETE WHERE time <= 1s".into()));
    steps.extend(shows.iter().map(|q| ("q", q.to_string())));
    steps.push(("q", "DROP SERIES FROM mem".into()));
    steps.extend(shows.iter().map(|q| ("q", q.to_string())));
    steps.push(("w", "cpu,host=b,dc=y v=7 7\nmem,host=q v=12 8\n".into()));
    steps.extend(shows.iter().map(|q| ("q", q.to_string())));
    // Every series left goes. InfluxDB 1.6.7 then answers no series and no points, yet still
    // lists `cpu` in SHOW MEASUREMENTS and `host=a` (a series with earlier deletes) in SHOW TAG
    // VALUES: a stale index entry. chingest answers what its SHOW SERIES says (nothing):
    // docs/influxql.md lists the deviation.
    // A tag key no series has any more leaves SHOW TAG KEYS (dc after host=a goes, rack
    // after host=c's points are deleted), as in 1.6.7.
    steps.push((
        "w",
        "tk,host=a,dc=x v=1 1\ntk,host=b v=2 2\ntk,host=c,rack=r v=3 3\n".into(),
    ));
    steps.push(("q", "SHOW TAG KEYS FROM tk".into()));
    steps.push(("q", "DROP SERIES FROM tk WHERE host = 'a'".into()));
    steps.push(("q", "SHOW TAG KEYS FROM tk".into()));
    steps.push(("q", "DELETE FROM tk WHERE host = 'c'".into()));
    steps.push(("q", "SHOW TAG KEYS FROM tk".into()));
    steps.push(("q", "SHOW SERIES FROM tk".into()));
    steps.push(("q", "DROP MEASUREMENT tk".into()));
    let last_drop = steps.len();
    steps.push(("q", "DROP SERIES WHERE host != ''".into()));
    steps.extend(shows.iter().map(|q| ("q", q.to_string())));
    for (i, (kind, text)) in steps.iter().enumerate() {
        let answer = |base: &str| crate::influxql_diff::step_answer(&http, base, kind, text);
        let want = unshard(answer(&oracle.base));
        let got = answer(&s.base);
        if i > last_drop && (text == "SHOW MEASUREMENTS" || text.starts_with("SHOW TAG VALUES")) {
            assert!(
                want.1["results"][0]["series"].is_array(),
                "step {i}: {want:?}"
            );
            assert_eq!(
                got,
                (200, json!({"results": [{"statement_id": 0}]})),
                "step {i}: {text}"
            );
            continue;
        }
        assert_eq!(got, want, "step {i}: {kind} {text}");
        if *kind == "w" {
            assert_eq!(got.0, 204, "step {i}: {text}");
        }
    }
}

/// InfluxDB's answer without the `shard <n>: ` its storage errors start with (chingest has
/// no shards; the rest of the text is InfluxDB's).
fn unshard((status, mut body): (u16, Value)) -> (u16, Value) {
    if let Some(e) = body
        .pointer_mut("/results/0/error")
        .and_then(|e| e.as_str().map(str::to_string).zip(Some(e)))
    {
        let (text, slot) = e;
        if let Some(rest) = text.strip_prefix("shard ") {
            if let Some((n, tail)) = rest.split_once(": ") {
                if n.chars().all(|c| c.is_ascii_digit()) {
                    *slot = Value::String(tail.to_string());
                }
            }
        }
    }
    (status, body)
}

#[test]
fn deletes_of_hostile_names_remove_exactly_those_series() {
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    run(&s, "CREATE DATABASE d");
    // A measurement and tag values with every character an identifier or string could be
    // broken out of with: quotes, backticks, backslashes, semicolons, SQL comments.
    // (Line protocol has no escape for a backslash before a space or at a name's end, so the
    // backslash stands before a quote here.)
    let m = "m'\"`;-- x";
    let lp_m = "m'\"`;--\\ x";
    let hostile = ["a'b", "a\\'b", "x`; DROP TABLE d.m; --", "q\"q", "/*"];
    let mut body = String::new();
    for (i, h) in hostile.iter().enumerate() {
        let tag = h.replace(' ', "\\ ");
        body.push_str(&format!("{lp_m},host={tag} v={i} {}\n", i + 1));
    }
    body.push_str(&format!("{lp_m},host=plain v=9 9\n"));
    write(&s, &body);
    let quoted_m = influxql::quote_ident(m);
    let hosts = || -> BTreeSet<String> {
        let v = q(&s, &format!("SELECT host, v FROM {quoted_m}"));
        values(&v)
            .as_array()
            .map(|rows| {
                rows.iter()
                    .map(|r| r[1].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let all = hosts();
    assert_eq!(all.len(), hostile.len() + 1, "{all:?}");
    for (i, h) in hostile.iter().enumerate() {
        let cond = influxql::quote_string(h);
        let statement = if i % 2 == 0 {
            format!("DELETE FROM {quoted_m} WHERE host = {cond}")
        } else {
            format!("DROP SERIES FROM {quoted_m} WHERE host = {cond}")
        };
        run(&s, &statement);
        let left = hosts();
        let want: BTreeSet<String> = hostile[i + 1..]
            .iter()
            .map(|h| h.to_string())
            .chain(["plain".to_string()])
            .collect();
        assert_eq!(left, want, "{statement}");
    }
    // The rest of the database is untouched and the engine still answers.
    assert_eq!(hosts(), BTreeSet::from(["plain".to_string()]));
    assert_eq!(
        error(&s, &format!("DELETE FROM {quoted_m} WHERE v = 1")),
        "fields not supported in WHERE clause during deletion"
    );
}
