//! `SHOW QUERIES` and `KILL QUERY` (issue #24 item 4): the running queries as InfluxDB 1.6.7
//! lists them (one entry per request, its statements joined, ids in order), `no such query id`
//! for one that is not running, and a killed query answering `query interrupted`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::influxql_diff::step_answer;
use crate::util::*;

/// The answer with every `SHOW QUERIES` duration replaced by `"?"` (timing differs).
fn without_durations((status, mut body): (u16, Value)) -> (u16, Value) {
    if let Some(results) = body["results"].as_array_mut() {
        for r in results {
            if let Some(series) = r["series"].as_array_mut() {
                for s in series {
                    if s["columns"][3] == "duration" {
                        for row in s["values"].as_array_mut().into_iter().flatten() {
                            row[3] = json!("?");
                        }
                    }
                }
            }
        }
    }
    (status, body)
}

#[test]
fn show_queries_and_kill_query_answer_as_influxdb_1x() {
    let test = "show_queries_and_kill_query_answer_as_influxdb_1x";
    let Some(oracle) = crate::influxql_diff::Influxd::for_test(test) else {
        return;
    };
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    let http = crate::influxql_diff::client();
    // The same requests to both, in order: the ids count the same queries.
    for (i, (kind, text)) in [
        ("q", "CREATE DATABASE d"),
        ("q", "SHOW QUERIES"),
        ("nodb", "SHOW QUERIES"),
        ("q", "SHOW DATABASES; SHOW QUERIES"),
        ("q", "KILL QUERY 99"),
        ("q", "KILL QUERY 1 ON \"localhost:8088\""),
        ("q", "KILL QUERY abc"),
        ("q", "SHOW QUERIES"),
    ]
    .iter()
    .enumerate()
    {
        let want = without_durations(step_answer(&http, &oracle.base, kind, text));
        let got = without_durations(step_answer(&http, &s.base, kind, text));
        assert_eq!(got, want, "step {i}: {text}");
    }
    // The duration reads as InfluxDB prints it (a short one: µs).
    let (_, v) = step_answer(&http, &s.base, "q", "SHOW QUERIES");
    let d = v["results"][0]["series"][0]["values"][0][3]
        .as_str()
        .unwrap();
    assert!(
        d.ends_with("µs") || d.ends_with("ms"),
        "{d}: not a Go duration"
    );
    // Unlike InfluxDB, a GET cannot kill a query (a link on any web page could).
    let r = s
        .client
        .get(s.url("/query"))
        .query(&[("q", "KILL QUERY 1")])
        .send()
        .unwrap();
    assert_eq!(r.status(), 405);
}

#[test]
fn a_killed_query_answers_query_interrupted_and_leaves_the_list() {
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    s.query("CREATE DATABASE d");
    // Enough points that reading them all back takes a while.
    for chunk in 0..4 {
        let body: String = (0..100_000)
            .map(|i| {
                let t = chunk * 100_000 + i + 1;
                format!("m,k=a v={t} {t}\n")
            })
            .collect();
        let r = s.post("/write?db=d&precision=s", body);
        assert_eq!(r.status(), 204);
    }
    let slow = "SELECT v FROM m";
    let show = |s: &Server| -> Vec<Value> {
        let (_, v) = step_answer(&s.client, &s.base, "q", "SHOW QUERIES");
        v["results"][0]["series"][0]["values"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut killed = false;
    while !killed {
        assert!(Instant::now() < deadline, "never caught the query running");
        std::thread::scope(|scope| {
            let reader = scope.spawn(|| step_answer(&s.client, &s.base, "q", slow));
            // Find it while it runs, and kill it.
            while !reader.is_finished() {
                if let Some(row) = show(&s).into_iter().find(|r| r[1] == slow) {
                    assert_eq!(row[2], "d");
                    assert_eq!(row[4], "running");
                    let id = row[0].as_i64().unwrap();
                    let (status, v) =
                        step_answer(&s.client, &s.base, "q", &format!("KILL QUERY {id}"));
                    assert_eq!(status, 200);
                    if v["results"][0]["error"].is_null() {
                        let (status, answer) = reader.join().unwrap();
                        assert_eq!(status, 200);
                        assert_eq!(
                            answer["results"][0]["error"], "query interrupted",
                            "{answer}"
                        );
                        killed = true;
                        return;
                    }
                    // It ended between the two requests: try again.
                    assert_eq!(v["results"][0]["error"], format!("no such query id: {id}"));
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            let _ = reader.join();
        });
    }
    // Gone from the list once it answered.
    assert!(show(&s).iter().all(|r| r[1] != slow));
}
