//! Each group's last point (`ORDER BY time DESC LIMIT 1`) is answered from
//! the flusher's last points, not the engine (docs/influxql.md, "Last
//! points"): the answer must be the engine's, whatever was written, rewritten,
//! written late, left unflushed, restarted or dropped.

use serde_json::Value;

use crate::reliability::metric;
use crate::util::{data_dir, Server, Spawn};

const T0: i64 = 1_700_000_000_000_000_000;
const SEC: i64 = 1_000_000_000;
const READS: &str = "chingest_influxql_last_point_reads_total";

fn post(s: &Server, path: &str, params: &[(&str, &str)], body: String) -> (u16, String) {
    let r = s
        .client
        .post(s.url(path))
        .query(params)
        .body(body)
        .send()
        .unwrap();
    (r.status().as_u16(), r.text().unwrap())
}

fn write(s: &Server, body: String) {
    let (status, text) = post(s, "/write", &[("db", "lp")], body.clone());
    assert_eq!(status, 204, "{body}: {text}");
}

fn answer(s: &Server, q: &str) -> Value {
    let r = s
        .client
        .get(s.url("/query"))
        .query(&[("db", "lp"), ("q", q), ("epoch", "ns")])
        .send()
        .unwrap();
    assert_eq!(r.status(), 200, "{q}");
    let v: Value = r.json().unwrap();
    assert!(v["results"][0].get("error").is_none(), "{q}: {v}");
    v["results"][0].clone()
}

/// The shapes compared: answered from the last points, and (with a tag
/// condition every point meets) by the engine.
const SHAPES: [(&str, &str); 4] = [
    (
        "SELECT * FROM m GROUP BY host",
        " WHERE host =~ /.*/ GROUP BY host",
    ),
    ("SELECT * FROM m", " WHERE host =~ /.*/"),
    (
        "SELECT * FROM m GROUP BY *",
        " WHERE host =~ /.*/ GROUP BY *",
    ),
    (
        "SELECT a, s FROM m WHERE time <= 9000000000000000000 GROUP BY rack",
        " WHERE host =~ /.*/ AND time <= 9000000000000000000 GROUP BY rack",
    ),
];

/// Every shape from memory and from the engine: the same answer. Returns
/// how many were answered from memory.
fn compare(s: &Server, round: usize) -> usize {
    let mut from_memory = 0;
    for (memory, tail) in SHAPES {
        let before = metric(s, READS).unwrap();
        let got = answer(s, &format!("{memory} ORDER BY time DESC LIMIT 1"));
        if metric(s, READS).unwrap() > before {
            from_memory += 1;
        }
        let select = memory.split(" FROM m").next().unwrap();
        let engine = answer(
            s,
            &format!("{select} FROM m{tail} ORDER BY time DESC LIMIT 1"),
        );
        assert_eq!(got, engine, "round {round}: {memory}");
    }
    from_memory
}

/// A small deterministic generator (no dependency for one test).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Writes one point a round (new latest points, rewrites of a series' last
/// point with some fields, points older than the last, new series, some
/// without the `rack` tag) and compares the answers after each.
fn rounds(s: &Server, rng: &mut Lcg, last: &mut [i64; 12], from: usize, to: usize) -> usize {
    let mut from_memory = 0;
    for round in from..to {
        let host = rng.next(12) as usize;
        let t = match rng.next(4) {
            0 if last[host] > 0 => last[host], // rewrite the last point
            1 if last[host] > 0 => last[host] - 3 * SEC, // an older point
            _ => T0 + round as i64 * SEC,      // a new latest point
        };
        last[host] = last[host].max(t);
        let mut fields = Vec::new();
        if rng.next(2) == 0 {
            fields.push(format!("a={}.5", rng.next(100)));
        }
        if rng.next(2) == 0 {
            fields.push(format!("b={}i", rng.next(100)));
        }
        if rng.next(3) == 0 {
            fields.push(format!("s=\"r{round}\""));
        }
        if fields.is_empty() || rng.next(4) == 0 {
            fields.push(format!("ok={}", rng.next(2) == 0));
        }
        let rack = if host.is_multiple_of(3) {
            String::new()
        } else {
            format!(",rack=r{}", host % 2)
        };
        write(s, format!("m,host=h{host}{rack} {} {t}", fields.join(",")));
        from_memory += compare(s, round);
    }
    from_memory
}

#[test]
fn last_points_answer_as_the_engine_through_rewrites_restarts_and_drops() {
    let data = data_dir();
    let mut last = [0i64; 12];
    let mut rng = Lcg(7);
    let from_memory = {
        let s = Spawn::new(data.path()).start();
        s.query("CREATE DATABASE lp");
        rounds(&s, &mut rng, &mut last, 0, 120)
    };
    // Every shape but the one whose series may lack its fields (`a, s`)
    // comes from memory each time (nothing else reads concurrently).
    assert!(
        from_memory >= 3 * 120,
        "{from_memory} of {} from memory",
        4 * 120
    );

    // Restarted with nothing flushing: the last points load from the engine
    // and every new point is read from the unflushed set.
    let mut s = Spawn::new(data.path())
        .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
        .start();
    let from_memory = rounds(&s, &mut rng, &mut last, 120, 200);
    assert!(
        from_memory >= 3 * 80,
        "{from_memory} of {} from memory",
        4 * 80
    );
    assert!(
        metric(&s, "chingest_influxql_unflushed_rows_total").unwrap() > 0.0,
        "the points stayed unflushed"
    );

    // Dropped: the last points go with the measurement; new points are all.
    let (status, text) = post(
        &s,
        "/query",
        &[("db", "lp"), ("q", "DROP MEASUREMENT m")],
        String::new(),
    );
    assert_eq!(status, 200, "{text}");
    write(&s, format!("m,host=h99 a=1.5 {}", T0 + 1_000 * SEC));
    compare(&s, 200);
    let got = answer(
        &s,
        "SELECT * FROM m GROUP BY host ORDER BY time DESC LIMIT 1",
    );
    assert_eq!(got["series"].as_array().unwrap().len(), 1, "{got}");
    let (status, text) = post(
        &s,
        "/query",
        &[("q", "DROP DATABASE lp; CREATE DATABASE lp")],
        String::new(),
    );
    assert_eq!(status, 200, "{text}");
    write(&s, format!("m,host=h98 b=2i {}", T0 + 2_000 * SEC));
    compare(&s, 201);
    let got = answer(
        &s,
        "SELECT * FROM m GROUP BY host ORDER BY time DESC LIMIT 1",
    );
    assert_eq!(got["series"][0]["tags"]["host"], "h98", "{got}");
    assert_eq!(got["series"].as_array().unwrap().len(), 1, "{got}");
    s.terminate();
}

/// A first last-point read that lands while the flusher inserts the table's rows: the
/// cache it starts loading may miss them, so the insert merges them in once it ends. (The
/// flusher once decided before its INSERT whether to keep the rows for the cache; a read
/// starting during the INSERT then cached the table without them, and `ORDER BY time DESC
/// LIMIT 1` answered nothing from then on.) The first read's delay after the write sweeps
/// across the insert, which starts about `flush.max_age_ms` (100 ms here) after it.
#[test]
fn a_last_point_read_during_the_tables_insert_misses_nothing() {
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    let (status, _) = post(&s, "/query", &[("q", "CREATE DATABASE lp")], String::new());
    assert_eq!(status, 200);
    let mut missed = Vec::new();
    for (round, delay_ms) in (60..260).step_by(5).enumerate() {
        let m = format!("sweep{round}");
        // 20,000 rows make the INSERT last long enough for a read to land inside it.
        let mut body: String = (0..20_000)
            .map(|i| format!("{m},k=v{} f=1.5 {}\n", i % 2_000, T0 + (i / 2_000) * SEC))
            .collect();
        body.push_str(&format!("{m},k=w f=2 {}\n", T0 + 20 * SEC));
        write(&s, body);
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let q = format!("SELECT * FROM {m} ORDER BY time DESC LIMIT 1");
        let _ = answer(&s, &q);
        // Once the rows are in the engine, the answer is the later point.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let h: Value = s.get("/health").json().unwrap();
            if h["wal"]["unflushed_points"] == 0 {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "not flushed: {h}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let got = answer(&s, &q);
        if got["series"][0]["values"] != serde_json::json!([[T0 + 20 * SEC, 2, "w"]]) {
            missed.push(format!("{delay_ms} ms: {got}"));
        }
    }
    assert!(missed.is_empty(), "last point missed: {missed:?}");
}

/// Series whose group tags share long prefixes (the last points' sort
/// compares each key's first eight bytes before the strings), differ only
/// past them or in length, or hold multibyte text, several at one time, some
/// without a tag: answered from memory in the engine's order, by one tag and
/// by two. A subquery and a `SELECT INTO` over the same last-point statement
/// get its rows plain: the same answer.
#[test]
fn last_points_order_long_shared_prefixes_as_the_engine_and_feed_subqueries() {
    let data = data_dir();
    let s = Spawn::new(data.path()).start();
    s.query("CREATE DATABASE lp");
    let hosts = [
        "host_aaaaaaaa1",
        "host_aaaaaaaa10",
        "host_aaaaaaaa2",
        "host_aaaa",
        "host_aaa",
        "host_aaaaaaab",
        "host_",
        "hos",
        "h",
        "host_aaaaaaaa1\u{e9}",
        "\u{65e5}\u{672c}\u{8a9e}_host",
        "\u{65e5}\u{672c}",
        "\u{1f642}",
        "~tilde",
        "Host_aaaaaaaa1",
    ];
    let mut body = String::new();
    for (i, h) in hosts.iter().enumerate() {
        // Pairs of series per host (two racks, one without): the group's
        // latest point, then tag order, pick its series.
        let rack = match i % 3 {
            0 => String::new(),
            _ => format!(",rack=r{}", i % 2),
        };
        let t = T0 + (i as i64 % 4) * SEC;
        body.push_str(&format!("m,host={h}{rack} a={i}.5,b={i}i {t}\n"));
        body.push_str(&format!("m,host={h},rack=z{} a=-{i}.25 {t}\n", i % 2));
    }
    write(&s, body);
    let shapes = [
        (
            "SELECT * FROM m GROUP BY host",
            " WHERE host =~ /.*/ GROUP BY host",
        ),
        (
            "SELECT * FROM m GROUP BY rack, host",
            " WHERE host =~ /.*/ GROUP BY rack, host",
        ),
        (
            "SELECT a, rack FROM m GROUP BY host",
            " WHERE host =~ /.*/ GROUP BY host",
        ),
    ];
    for (memory, tail) in shapes {
        let before = metric(&s, READS).unwrap();
        let got = answer(&s, &format!("{memory} ORDER BY time DESC LIMIT 1"));
        assert!(
            metric(&s, READS).unwrap() > before,
            "{memory}: not from memory"
        );
        let select = memory.split(" FROM m").next().unwrap();
        let engine = answer(
            &s,
            &format!("{select} FROM m{tail} ORDER BY time DESC LIMIT 1"),
        );
        assert_eq!(got, engine, "{memory}");
        assert!(
            got["series"].as_array().unwrap().len() >= hosts.len(),
            "{got}"
        );
    }

    // Series counted (`SLIMIT`/`SOFFSET`), and the answer chunked by rows and
    // by series, pretty or RFC3339: the engine's bytes (from memory the
    // series come side by side, `one_row.rs`, where nothing counts them).
    let memory = "SELECT * FROM m GROUP BY host ORDER BY time DESC LIMIT 1";
    let engine = "SELECT * FROM m WHERE host =~ /.*/ GROUP BY host ORDER BY time DESC LIMIT 1";
    for (suffix, series) in [
        (" SLIMIT 3 SOFFSET 2", 3),
        (" SOFFSET 4", hosts.len() - 4),
        (" SLIMIT 5", 5),
    ] {
        let got = answer(&s, &format!("{memory}{suffix}"));
        assert_eq!(got, answer(&s, &format!("{engine}{suffix}")), "{suffix}");
        assert_eq!(
            got["series"].as_array().unwrap().len(),
            series,
            "{suffix}: {got}"
        );
    }
    let text = |q: &str, params: &[(&str, &str)]| {
        let r = s
            .client
            .get(s.url("/query"))
            .query(&[("db", "lp"), ("q", q)])
            .query(params)
            .send()
            .unwrap();
        assert_eq!(r.status(), 200, "{q}");
        r.text().unwrap()
    };
    for params in [
        &[][..],
        &[("pretty", "true")],
        &[("epoch", "ms"), ("chunked", "true"), ("chunk_size", "2")],
        &[("chunked", "true")],
    ] {
        let before = metric(&s, READS).unwrap();
        let got = text(memory, params);
        assert!(
            metric(&s, READS).unwrap() > before,
            "{params:?}: not from memory"
        );
        assert_eq!(got, text(engine, params), "{params:?}");
    }

    // A subquery over the last points: its rows as the engine's.
    let inner = "SELECT * FROM m GROUP BY host ORDER BY time DESC LIMIT 1";
    let engine_inner =
        "SELECT * FROM m WHERE host =~ /.*/ GROUP BY host ORDER BY time DESC LIMIT 1";
    let outer = "SELECT max(a), count(b) FROM ({}) GROUP BY host";
    let got = answer(&s, &outer.replace("{}", inner));
    let engine = answer(&s, &outer.replace("{}", engine_inner));
    assert_eq!(got, engine);
    assert_eq!(
        got["series"].as_array().unwrap().len(),
        hosts.len(),
        "{got}"
    );

    // `SELECT INTO` from the last points: the copy holds each group's point.
    let (status, text) = post(
        &s,
        "/query",
        &[
            ("db", "lp"),
            ("q", &inner.replace(" FROM m", " INTO m2 FROM m")),
        ],
        String::new(),
    );
    assert_eq!(status, 200, "{text}");
    let written: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        written["results"][0]["series"][0]["values"][0][1],
        hosts.len(),
        "{text}"
    );
    let copied = answer(
        &s,
        "SELECT a, b, rack FROM m2 GROUP BY host ORDER BY time DESC",
    );
    let last = answer(
        &s,
        "SELECT a, b, rack FROM m GROUP BY host ORDER BY time DESC LIMIT 1",
    );
    // The same rows under the same tags (the copy's name is its own).
    let rows = |v: &Value| -> Vec<(Value, Value)> {
        let series = v["series"].as_array().unwrap();
        series
            .iter()
            .map(|s| (s["tags"].clone(), s["values"].clone()))
            .collect()
    };
    assert_eq!(rows(&copied), rows(&last), "{copied}");
    assert_eq!(rows(&copied).len(), hosts.len(), "{copied}");
}
