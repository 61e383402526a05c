//! Continuous queries (issue #24 item 2): the statements against a live InfluxDB 1.6.7
//! (texts, the stored form `SHOW CONTINUOUS QUERIES` prints, errors), then runs: on
//! schedule with `RESAMPLE FOR` (each window's answer equal to the same query run by hand),
//! caught up after the server was down, durable, and stopped by `DROP`; their bounds
//! ([`bounds`]).

mod bounds;

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::influxql_diff::{client, step_answer, Influxd};
use crate::util::*;

#[test]
fn continuous_query_statements_answer_as_influxdb_does() {
    let Some(oracle) = Influxd::for_test("continuous_query_statements_answer_as_influxdb_does")
    else {
        return;
    };
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    let http = client();
    let steps: Vec<(&str, &str)> = vec![
        // Created in name order: chingest lists databases by name, InfluxDB in creation order.
        ("nodb", "CREATE DATABASE b; CREATE DATABASE d"),
        ("nodb", "SHOW CONTINUOUS QUERIES"),
        (
            "nodb",
            "CREATE CONTINUOUS QUERY cq1 ON d BEGIN SELECT mean(v) INTO m_mean FROM cpu GROUP BY time(1m) END",
        ),
        (
            "nodb",
            "CREATE CONTINUOUS QUERY cq1 ON d BEGIN SELECT mean(v) INTO m_mean FROM cpu GROUP BY time(1m) END",
        ),
        (
            "nodb",
            "CREATE CONTINUOUS QUERY cq1 ON d BEGIN SELECT max(v) INTO m_mean FROM cpu GROUP BY time(1m) END",
        ),
        (
            "nodb",
            "CREATE CONTINUOUS QUERY \"cq 2\" ON d RESAMPLE EVERY 2m FOR 10m BEGIN SELECT mean(*) INTO b.autogen.:MEASUREMENT FROM /.*/ WHERE host = 'h1' GROUP BY time(1m), * fill(0) END",
        ),
        (
            "nodb",
            "CREATE CONTINUOUS QUERY cq3 ON b RESAMPLE FOR 1h BEGIN SELECT count(v) INTO c FROM d..cpu GROUP BY time(30m) END",
        ),
        (
            "nodb",
            "CREATE CONTINUOUS QUERY cq4 ON b RESAMPLE EVERY 1h BEGIN SELECT count(v) INTO c FROM cpu GROUP BY time(30m, 5m) END",
        ),
        (
            "nodb",
            "CREATE CONTINUOUS QUERY raw ON d BEGIN SELECT v INTO y FROM cpu GROUP BY time(1m) END",
        ),
        ("nodb", "SHOW CONTINUOUS QUERIES"),
        (
            "nodb",
            "CREATE CONTINUOUS QUERY x ON d BEGIN SELECT mean(v) FROM cpu GROUP BY time(1m) END",
        ),
        (
            "nodb",
            "CREATE CONTINUOUS QUERY x ON d BEGIN SELECT mean(v) INTO y FROM cpu END",
        ),
        (
            "nodb",
            "CREATE CONTINUOUS QUERY x ON nodb BEGIN SELECT mean(v) INTO y FROM cpu GROUP BY time(1m) END",
        ),
        (
            "nodb",
            "CREATE CONTINUOUS QUERY x ON d RESAMPLE EVERY 30s FOR 10s BEGIN SELECT mean(v) INTO y FROM cpu GROUP BY time(1m) END",
        ),
        (
            "nodb",
            "CREATE CONTINUOUS QUERY x ON d RESAMPLE BEGIN SELECT mean(v) INTO y FROM cpu GROUP BY time(1m) END",
        ),
        ("nodb", "DROP CONTINUOUS QUERY nope ON d"),
        ("nodb", "DROP CONTINUOUS QUERY cq1 ON b"),
        ("nodb", "DROP CONTINUOUS QUERY cq1 ON d"),
        ("nodb", "DROP CONTINUOUS QUERY cq1"),
        ("nodb", "SHOW CONTINUOUS QUERIES"),
        ("nodb", "DROP DATABASE b"),
        ("nodb", "SHOW CONTINUOUS QUERIES"),
    ];
    for (i, (kind, text)) in steps.iter().enumerate() {
        let want = step_answer(&http, &oracle.base, kind, text);
        let got = step_answer(&http, &s.base, kind, text);
        assert_eq!(got, want, "step {i}: {kind} {text}");
    }
}

const SEC: i64 = 1_000_000_000;

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

fn query(s: &Server, q: &str) -> Value {
    let r = s
        .client
        .post(s.url("/query?db=d&epoch=ns"))
        .form(&[("q", q)])
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().unwrap()
}

/// `(window start, count)` of the target, sorted.
fn windows(s: &Server) -> Vec<(i64, i64)> {
    let v = query(s, "SELECT n FROM per_second");
    v["results"][0]["series"][0]["values"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| (r[0].as_i64().unwrap(), r[1].as_i64().unwrap()))
                .collect()
        })
        .unwrap_or_default()
}

/// What the query computes for the window `[t, t + 1 s)`, asked by hand.
fn by_hand(s: &Server, t: i64) -> i64 {
    let v = query(
        s,
        &format!(
            "SELECT count(v) FROM src WHERE time >= {t} AND time < {}",
            t + SEC
        ),
    );
    v["results"][0]["series"][0]["values"][0][1]
        .as_i64()
        .unwrap_or(0)
}

fn write(s: &Server, body: &str) {
    let r = s.post("/write?db=d", body.to_string());
    assert_eq!(r.status(), 204, "{:?}", r.text());
}

#[test]
fn continuous_queries_run_on_schedule_catch_up_after_downtime_and_stop_when_dropped() {
    let dir = data_dir();
    let start = || Spawn::new(dir.path()).start();
    let mut s = start();
    query(&s, "CREATE DATABASE d");
    // Every second, the count of the last 3 windows (RESAMPLE FOR: a point acknowledged
    // just after its window closed is still counted by the next runs).
    query(
        &s,
        "CREATE CONTINUOUS QUERY per_sec ON d RESAMPLE FOR 3s BEGIN SELECT count(v) AS n INTO per_second FROM src GROUP BY time(1s) END",
    );
    // Points now, for about 4 s.
    let begin = now_ns();
    let mut i = 0;
    while now_ns() < begin + 4 * SEC {
        write(&s, &format!("src,host=h{} v={i} {}", i % 3, now_ns()));
        i += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    // Every window that closed more than 3 s ago is final: equal to the query by hand.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = windows(&s);
        let final_before = now_ns() - 4 * SEC;
        let finals: Vec<_> = got
            .iter()
            .filter(|(t, _)| *t + SEC <= final_before && *t >= begin - SEC)
            .collect();
        if finals.len() >= 2 && finals.iter().all(|(t, n)| by_hand(&s, *t) == *n) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "windows never matched: {got:?} vs by hand {:?}",
            got.iter().map(|(t, _)| by_hand(&s, *t)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // Points stamped 3–5 s ahead, then the server dies before their windows close.
    let ahead = (now_ns() / SEC + 3) * SEC;
    let body: String = (0..20)
        .map(|k| format!("src,host=late v={k} {}\n", ahead + k * SEC / 10))
        .collect();
    write(&s, &body);
    s.signal("KILL");
    let _ = s.terminate_wait();
    std::thread::sleep(Duration::from_secs(6));
    let s = start();
    // The windows that closed while it was down are computed after the restart.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = windows(&s);
        let caught: Vec<_> = got
            .iter()
            .filter(|(t, _)| *t >= ahead && *t < ahead + 2 * SEC)
            .collect();
        if caught.len() == 2
            && caught
                .iter()
                .all(|(t, n)| by_hand(&s, *t) == *n && *n == 10)
        {
            break;
        }
        assert!(Instant::now() < deadline, "never caught up: {got:?}");
        std::thread::sleep(Duration::from_millis(200));
    }

    // Definitions survived the kill; DROP stops the runs.
    let shown = query(&s, "SHOW CONTINUOUS QUERIES");
    assert_eq!(
        shown["results"][0]["series"][0]["values"][0][0],
        json!("per_sec")
    );
    query(&s, "DROP CONTINUOUS QUERY per_sec ON d");
    std::thread::sleep(Duration::from_millis(1_500));
    let before = windows(&s);
    write(&s, &format!("src,host=h v=1 {}", now_ns()));
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(windows(&s), before, "a dropped query ran");
}

/// POSTs `q` to `base`'s `/query` (database `d`, ns times); the JSON answer.
fn ask(http: &reqwest::blocking::Client, base: &str, q: &str) -> Value {
    let r = http
        .post(format!("{base}/query?db=d&epoch=ns"))
        .form(&[("q", q)])
        .send()
        .unwrap();
    assert_eq!(r.status(), 200, "{q}");
    r.json().unwrap()
}

#[test]
fn continuous_queries_write_what_influxdb_1x_writes() {
    const TEST: &str = "continuous_queries_write_what_influxdb_1x_writes";
    let Some(oracle) = Influxd::for_test_with_cqs(TEST) else {
        return;
    };
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    let http = client();
    let bases = [oracle.base.clone(), s.base.clone()];
    // The same continuous query on both, run by each server's own schedule: every second,
    // over the last 5 one-second windows, per host.
    for base in &bases {
        ask(&http, base, "CREATE DATABASE d");
        ask(
            &http,
            base,
            "CREATE CONTINUOUS QUERY c ON d RESAMPLE EVERY 1s FOR 5s BEGIN \
             SELECT count(v) AS n, sum(v) AS total, max(v) AS top, mean(v) AS avg \
             INTO d.autogen.out FROM src GROUP BY time(1s), host END",
        );
    }
    // The same points written to both for about 4 s, stamped now.
    let begin = now_ns();
    let mut i = 0i64;
    let mut last = begin;
    while now_ns() < begin + 4 * SEC {
        last = now_ns();
        let body: String = (0..3)
            .map(|h| format!("src,host=h{h} v={} {last}\n", i * 10 + h))
            .collect();
        for base in &bases {
            let r = http
                .post(format!("{base}/write?db=d"))
                .body(body.clone())
                .send()
                .unwrap();
            assert_eq!(r.status(), 204);
        }
        i += 1;
        std::thread::sleep(Duration::from_millis(40));
    }
    // The windows wholly inside the writes: once every server's runs saw all their points
    // (they are rerun for 5 s after they close), both targets hold the same rows.
    let (from, to) = ((begin / SEC + 1) * SEC, (last / SEC) * SEC);
    let target = format!(
        "SELECT n, total, top, avg FROM out WHERE time >= {from} AND time < {to} GROUP BY host"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let answers: Vec<Value> = bases.iter().map(|b| ask(&http, b, &target)).collect();
        let windows = answers[0]["results"][0]["series"]
            .as_array()
            .map_or(0, |series| {
                series
                    .iter()
                    .map(|s| s["values"].as_array().map_or(0, Vec::len))
                    .sum::<usize>()
            });
        // 3 hosts × every whole second of the writes.
        let expected = 3 * ((to - from) / SEC) as usize;
        if windows == expected && answers[0] == answers[1] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the targets differ ({windows} of {expected} windows in InfluxDB's):\n\
             influxdb: {}\nchingest: {}",
            answers[0],
            answers[1]
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}
