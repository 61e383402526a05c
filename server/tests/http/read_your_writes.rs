//! Read-your-writes: a point acknowledged by `/write` (204) is in the answer
//! of every query that starts after the acknowledgement, merged with the
//! points it rewrites, whether or not the flusher has inserted it yet
//! (docs/influxql.md, "Reads see every acknowledged point").

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::util::{data_dir, Server, Spawn};

const T0: i64 = 1_700_000_000_000_000_000;

/// POSTs `body` to `/write?db=<db>`, asserting a 204.
pub(crate) fn write(s: &Server, db: &str, body: &str) {
    let r = s
        .client
        .post(s.url("/write"))
        .query(&[("db", db)])
        .body(body.to_string())
        .send()
        .unwrap();
    assert_eq!(r.status(), 204, "{body}: {:?}", r.text());
}

/// `/query`'s first statement's series (GET: a read).
fn series(s: &Server, db: &str, q: &str) -> Vec<Value> {
    let r = s
        .client
        .get(s.url("/query"))
        .query(&[("db", db), ("q", q), ("epoch", "ns")])
        .send()
        .unwrap();
    assert_eq!(r.status(), 200, "{q}");
    let v: Value = r.json().unwrap();
    let first = &v["results"][0];
    assert!(first.get("error").is_none(), "{q}: {v}");
    first["series"].as_array().cloned().unwrap_or_default()
}

/// Writes then reads `rounds` times: each round a new point of one of 37
/// series, every 7th round a rewrite of an earlier round's point carrying
/// only `v` (so `w` must come from the earlier write: the merge is field by
/// field). Each answer must hold exactly that point, merged.
fn rounds(s: &Server, db: &str, rounds: i64) {
    write(s, db, &format!("rw,host=h0 v=-1i,w=-1i {}", T0 - 1));
    // Per round: the host and time of its point, and its `v` and `w`.
    let mut points: Vec<(i64, i64, i64, i64)> = Vec::new();
    for i in 0..rounds {
        let rewrite = i % 7 == 6;
        let (host, t, v, w) = if rewrite {
            let (host, t, _, w) = points[(i as usize * 31) % points.len()];
            (host, t, 1_000_000 + i, w)
        } else {
            (i % 37, T0 + i * 1_000_000_000, i, 2 * i)
        };
        let body = if rewrite {
            format!("rw,host=h{host} v={v}i {t}")
        } else {
            format!("rw,host=h{host} v={v}i,w={w}i {t}")
        };
        write(s, db, &body);
        if rewrite {
            for p in points.iter_mut().filter(|p| p.0 == host && p.1 == t) {
                p.2 = v;
            }
        } else {
            points.push((host, t, v, w));
        }
        let got = series(
            s,
            db,
            &format!("SELECT v, w FROM rw WHERE host = 'h{host}' AND time = {t}"),
        );
        assert_eq!(
            got,
            vec![json!({"name": "rw", "columns": ["time", "v", "w"], "values": [[t, v, w]]})],
            "round {i}: {body}"
        );
        // Every 50 rounds: the whole measurement, aggregated and last points.
        if i % 50 == 49 {
            let got = series(s, db, "SELECT count(v), sum(v) FROM rw WHERE time >= 0");
            let sum: i64 = points.iter().map(|p| p.2).sum::<i64>() - 1;
            assert_eq!(
                got[0]["values"][0],
                json!([0, points.len() + 1, sum]),
                "round {i}"
            );
            let last = series(
                s,
                db,
                "SELECT v FROM rw GROUP BY host ORDER BY time DESC LIMIT 1",
            );
            let (host, t, v, _) = *points
                .iter()
                .filter(|p| p.0 == (i % 37))
                .max_by_key(|p| p.1)
                .unwrap();
            let h = last
                .iter()
                .find(|g| g["tags"]["host"] == format!("h{host}"))
                .unwrap_or_else(|| panic!("round {i}: no h{host} in {last:?}"));
            assert_eq!(h["values"], json!([[t, v]]), "round {i}");
        }
    }
}

#[test]
fn an_acknowledged_point_is_in_the_next_answer_merged_under_load() {
    let data = data_dir();
    let s = Spawn::new(data.path()).start();
    s.query("CREATE DATABASE rw; CREATE DATABASE beside");
    // Another client writes all along: flushes run while the rounds read.
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let beside = {
        let (stop, written) = (stop.clone(), written.clone());
        let (client, url) = (s.client.clone(), s.url("/write"));
        std::thread::spawn(move || {
            let mut n = 0i64;
            while !stop.load(Ordering::Relaxed) {
                let body: String = (0..500)
                    .map(|k| format!("load,host=l{k} v={n}i {}\n", T0 + n * 1_000_000_000))
                    .collect();
                let r = client
                    .post(&url)
                    .query(&[("db", "beside")])
                    .body(body)
                    .send();
                if r.is_ok_and(|r| r.status() == 204) {
                    written.fetch_add(500, Ordering::Relaxed);
                }
                n += 1;
            }
        })
    };
    rounds(&s, "rw", 1000);
    stop.store(true, Ordering::Relaxed);
    beside.join().unwrap();
    assert!(
        written.load(Ordering::Relaxed) > 0,
        "the load beside wrote nothing"
    );
    // The load beside is readable at once too.
    let got = series(&s, "beside", "SELECT count(v) FROM load WHERE time >= 0");
    assert_eq!(
        got[0]["values"][0][1],
        json!(written.load(Ordering::Relaxed))
    );
}

#[test]
fn points_the_flusher_holds_back_are_read_from_memory() {
    let data = data_dir();
    // Nothing is flushed by age during the test: only a read that needs a
    // table or column the engine lacks makes the flusher insert (at once).
    let s = Spawn::new(data.path())
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .start();
    s.query("CREATE DATABASE rw");
    rounds(&s, "rw", 150);
    let h: Value = s.get("/health").json().unwrap();
    assert!(
        h["wal"]["unflushed_points"].as_u64().unwrap() > 100,
        "the points were meant to stay unflushed: {h}"
    );
    // The engine's SQL reads what is flushed only (documented).
    let rows = s.sql("SELECT count() AS n FROM rw.rw");
    assert!(rows[0]["n"].as_u64().unwrap() < 50, "{rows:?}");
    // SHOW sees unflushed series too: a new value of a known tag key…
    write(&s, "rw", &format!("rw,host=fresh v=1i,w=1i {}", T0 + 3));
    let values = |q: &str| -> Vec<Value> {
        series(&s, "rw", q)
            .first()
            .map(|s| s["values"].as_array().unwrap().clone())
            .unwrap_or_default()
    };
    assert!(
        values("SHOW TAG VALUES FROM rw WITH KEY = host").contains(&json!(["host", "fresh"])),
        "SHOW TAG VALUES misses an unflushed value"
    );
    assert_eq!(
        values("SHOW TAG VALUES FROM rw WITH KEY = host WHERE host =~ /^fr/"),
        vec![json!(["host", "fresh"])]
    );
    assert_eq!(
        values("SHOW SERIES FROM rw WHERE host = 'fresh'"),
        vec![json!(["rw,host=fresh"])]
    );
    // … and a tag key only unflushed points have (the read has them flushed).
    write(&s, "rw", &format!("rw,host=h2,zone=z1 v=2i {}", T0 + 4));
    assert_eq!(
        values("SHOW TAG VALUES FROM rw WITH KEY = zone WHERE zone = 'z1'"),
        vec![json!(["zone", "z1"])]
    );
    // A field first written now is read with the rest: the read has the
    // flusher insert the table's buffer first (the engine lacks the column).
    write(&s, "rw", &format!("rw,host=h1 fresh=1.5 {}", T0 + 5));
    let got = series(
        &s,
        "rw",
        &format!("SELECT fresh, v FROM rw WHERE time = {}", T0 + 5),
    );
    assert_eq!(got[0]["values"], json!([[T0 + 5, 1.5, null]]));
}

/// Memory stays bounded: a read never copies more unflushed rows than an
/// answer may hold (`[sql] max_result_rows`); past that it has the flusher
/// insert them and reads the table, with the same answer.
#[test]
fn more_unflushed_rows_than_an_answer_may_hold_are_flushed_then_read() {
    let data = data_dir();
    // The engine's read of unflushed rows is what is tested: the hot store
    // (which would answer these aggregates from memory) is off.
    let s = Spawn::new(data.path())
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .env("CHINGEST_SQL__MAX_RESULT_ROWS", "100")
        .env("CHINGEST_HOT__ENABLED", "false")
        .start();
    s.query("CREATE DATABASE rw");
    // The first read makes the table (so the rows below stay unflushed).
    write(&s, "rw", &format!("big,host=a v=0i {T0}"));
    assert_eq!(
        series(&s, "rw", "SELECT count(v) FROM big")[0]["values"],
        json!([[0, 1]])
    );
    let body: String = (1..=500)
        .map(|i| format!("big,host=a v={i}i {}\n", T0 + i * 1_000_000_000))
        .collect();
    write(&s, "rw", &body);
    let h: Value = s.get("/health").json().unwrap();
    assert_eq!(h["wal"]["unflushed_points"], 500, "{h}");
    // 500 unflushed rows > 100: flushed first, then the table answers.
    let got = series(&s, "rw", "SELECT count(v), sum(v) FROM big");
    assert_eq!(got[0]["values"], json!([[0, 501, 500 * 501 / 2]]));
    // Counted: the reads that had a table flushed first (the first read
    // above and this one) and the rows copied from memory (the seed point,
    // copied by the first read before it found no table; none of the 500).
    let metric = |name: &str| -> f64 {
        let text = s.get("/metrics").text().unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} missing from /metrics"))
    };
    assert!(metric("chingest_influxql_flush_waits_total ") >= 2.0);
    assert_eq!(metric("chingest_influxql_unflushed_rows_total "), 1.0);
    // The WAL forgets them just after the insert (no other write is coming).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let h: Value = s.get("/health").json().unwrap();
        if h["wal"]["unflushed_points"] == 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "never flushed: {h}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
