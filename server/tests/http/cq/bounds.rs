//! Continuous queries cannot take the server's memory or CPU (issue #41 items 4 and 5): a
//! non-admin's query over more windows than `[sql] max_result_rows` is refused at `CREATE`
//! (the server's memory unchanged); a long catch-up is listed by `SHOW QUERIES`, ended by
//! `KILL QUERY` (retried after its pause) and stopped within a second by `DROP CONTINUOUS
//! QUERY` or `DROP DATABASE` (the server's own CPU time near zero from a second after).

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{now_ns, query, SEC};
use crate::util::*;

fn pid(s: &Server) -> u32 {
    s.child.as_ref().unwrap().id()
}

/// The server's resident memory, KiB.
fn rss_kib(s: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid(s))).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The server process's CPU time so far (every thread's, user and system), in clock ticks
/// (1/100 s): its own work, whatever else the machine runs.
fn cpu_ticks(s: &Server) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid(s))).unwrap();
    // After the command's name (in parentheses): field 3 on; utime and stime are 14 and 15.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// The server's CPU ticks over the 2 s that start 1 s after `at`.
fn cpu_after(s: &Server, at: Instant) -> u64 {
    std::thread::sleep((at + Duration::from_secs(1)).saturating_duration_since(Instant::now()));
    let before = cpu_ticks(s);
    std::thread::sleep(Duration::from_secs(2));
    cpu_ticks(s) - before
}

/// At most this many ticks (0.2 s of CPU) over those 2 s: idle, not a catch-up.
const IDLE_TICKS: u64 = 20;

/// `SHOW QUERIES`' rows: (qid, query).
fn running(s: &Server) -> Vec<(u64, String)> {
    let v = query(s, "SHOW QUERIES");
    v["results"][0]["series"][0]["values"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| (r[0].as_u64().unwrap(), r[1].as_str().unwrap().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until `SHOW QUERIES` lists a statement whose text holds `needle`: its (qid, query).
fn wait_listed(s: &Server, needle: &str) -> (u64, String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(q) = running(s).into_iter().find(|(_, q)| q.contains(needle)) {
            return q;
        }
        assert!(
            Instant::now() < deadline,
            "no statement of {needle} listed; log:\n{}",
            s.log_text()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Stored queries (the file's form from before progress was kept) whose last run is `ago`
/// back: each a catch-up of `ago` of windows once its database exists.
fn catch_ups(dir: &std::path::Path, ago: i64, queries: &[(&str, &str, &str)]) {
    let last = (now_ns() - ago) / SEC * SEC;
    let queries: Vec<Value> = queries
        .iter()
        .map(|(db, name, rest)| {
            json!({
                "database": db,
                "name": name,
                "query": format!("CREATE CONTINUOUS QUERY {name} ON {db} {rest}"),
                "last_run_ns": last,
            })
        })
        .collect();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(
        dir.join("data/continuous_queries.json"),
        serde_json::to_vec(&json!({"version": 1, "queries": queries})).unwrap(),
    )
    .unwrap();
}

/// Database `s` with a point a second of `src` over the last `span`, readable: every
/// statement of a catch-up reads about 1,000 points and writes about 1,000.
fn source(s: &Server, span: i64) {
    query(s, "CREATE DATABASE s");
    let now = now_ns() / SEC * SEC;
    let n = span / SEC;
    let body: String = (0..n)
        .map(|i| format!("src,host=h{} v={i} {}\n", i % 4, now - span + i * SEC))
        .collect();
    let r = s.post("/write?db=s", body);
    assert_eq!(r.status(), 204, "{:?}", r.text());
    let deadline = Instant::now() + Duration::from_secs(60);
    let counted = |v: &Value| v["results"][0]["series"][0]["values"][0][1].as_i64();
    while counted(&query(s, "SELECT count(v) FROM s..src")) != Some(n) {
        assert!(
            Instant::now() < deadline,
            "the source never became readable"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

const DAY: i64 = 86_400 * SEC;

#[test]
fn a_non_admins_continuous_query_over_the_bucket_limit_is_refused_and_takes_no_memory() {
    let dir = data_dir();
    let config = format!(
        "[auth]\nenabled = true\n\n\
         [[auth.users]]\nname = \"admin\"\npassword_hash = \"{}\"\nadmin = true\n\n\
         [[auth.users]]\nname = \"bob\"\npassword_hash = \"{}\"\nread = [\"d\"]\nwrite = [\"d\"]\n",
        hash("adminpw"),
        hash("bobpw")
    );
    let s = Spawn::new(dir.path()).config(&config).start();
    let ask = |who: (&str, &str), q: &str| -> Value {
        let r = s
            .client
            .post(s.url("/query"))
            .basic_auth(who.0, Some(who.1))
            .form(&[("q", q)])
            .send()
            .unwrap();
        assert_eq!(r.status(), 200, "{q}");
        r.json().unwrap()
    };
    let (admin, bob) = (("admin", "adminpw"), ("bob", "bobpw"));
    ask(admin, "CREATE DATABASE d");
    let start = rss_kib(&s);
    for (for_, buckets) in [("2m", "120000000001"), ("1000w", "604800000000000001")] {
        let v = ask(
            bob,
            &format!(
                "CREATE CONTINUOUS QUERY ns ON d RESAMPLE EVERY 1s FOR {for_} BEGIN \
                 SELECT count(v) INTO d.autogen.out FROM src GROUP BY time(1ns) END"
            ),
        );
        assert_eq!(
            v["results"][0]["error"],
            json!(format!(
                "max-select-buckets limit exceeded: ({buckets}/1000000) ([sql] max_result_rows)"
            )),
            "FOR {for_}: {v}"
        );
    }
    // Without RESAMPLE a 1-ns query would run once a second over the whole second.
    let v = ask(
        bob,
        "CREATE CONTINUOUS QUERY ns ON d BEGIN SELECT count(v) INTO out FROM src GROUP BY time(1ns) END",
    );
    assert_eq!(
        v["results"][0]["error"],
        json!("max-select-buckets limit exceeded: (1000000001/1000000) ([sql] max_result_rows)")
    );
    // The same user's ordinary query is accepted: the limit refused those, not the rights.
    let v = ask(
        bob,
        "CREATE CONTINUOUS QUERY m ON d RESAMPLE EVERY 1s FOR 2m BEGIN \
         SELECT count(v) INTO out FROM src GROUP BY time(1s) END",
    );
    assert_eq!(v, json!({"results": [{"statement_id": 0}]}));
    let shown = ask(admin, "SHOW CONTINUOUS QUERIES");
    assert_eq!(shown["results"][0]["series"][0]["values"][0][0], json!("m"));
    assert_eq!(
        shown["results"][0]["series"][0]["values"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Several passes of the loop later, the memory is what it was.
    std::thread::sleep(Duration::from_secs(3));
    let now = rss_kib(&s);
    assert!(
        now < start + 100 * 1024,
        "RSS grew from {start} KiB to {now} KiB"
    );
}

#[test]
fn dropping_a_continuous_query_or_its_database_stops_its_catch_up_within_a_second() {
    let dir = data_dir();
    // Two queries a day behind (87 statements each, two passes of seconds), over the
    // source in `s`; their databases do not exist yet, so they fail (cheaply) until then.
    let over = "SELECT count(v) AS n INTO {db}.autogen.{out} FROM s.autogen.src GROUP BY time(1s)";
    let select = |db: &str, out: &str| {
        format!(
            "BEGIN {} END",
            over.replace("{db}", db).replace("{out}", out)
        )
    };
    catch_ups(
        dir.path(),
        DAY,
        &[
            ("d", "a", &select("d", "out_a")),
            ("e", "b", &select("e", "out_b")),
        ],
    );
    let s = Spawn::new(dir.path()).start();
    source(&s, DAY);

    query(&s, "CREATE DATABASE d");
    wait_listed(&s, "out_a");
    query(&s, "DROP CONTINUOUS QUERY a ON d");
    let dropped = Instant::now();
    let busy = cpu_after(&s, dropped);
    assert!(
        busy < IDLE_TICKS,
        "{busy} ticks of CPU from 1 s to 3 s after DROP CONTINUOUS QUERY"
    );
    assert!(running(&s).iter().all(|(_, q)| !q.contains("out_a")));

    query(&s, "CREATE DATABASE e");
    wait_listed(&s, "out_b");
    query(&s, "DROP DATABASE e");
    let dropped = Instant::now();
    let busy = cpu_after(&s, dropped);
    assert!(
        busy < IDLE_TICKS,
        "{busy} ticks of CPU from 1 s to 3 s after DROP DATABASE"
    );
    // The database's queries went with it: created again, it has none.
    query(&s, "CREATE DATABASE e");
    let shown = query(&s, "SHOW CONTINUOUS QUERIES");
    let e = shown["results"][0]["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|series| series["name"] == json!("e"))
        .unwrap()
        .clone();
    assert_eq!(e.get("values"), None, "{shown}");
}

#[test]
fn kill_query_ends_a_continuous_querys_statement_and_its_run_is_retried_after_a_pause() {
    let dir = data_dir();
    // A day behind over 1-s windows, run every 10 s (so a failed run pauses 10 s).
    catch_ups(
        dir.path(),
        DAY,
        &[(
            "d",
            "k",
            "RESAMPLE EVERY 10s BEGIN SELECT count(v) AS n INTO d.autogen.out_k \
             FROM s.autogen.src GROUP BY time(1s) END",
        )],
    );
    let s = Spawn::new(dir.path()).start();
    source(&s, DAY);
    query(&s, "CREATE DATABASE d");
    // A statement lasts milliseconds: kill the one listed, or the next one listed.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (killed, text) = loop {
        let (qid, text) = wait_listed(&s, "out_k");
        let v = query(&s, &format!("KILL QUERY {qid}"));
        if v["results"][0].get("error").is_none() {
            break (qid, text);
        }
        assert!(Instant::now() < deadline, "never killed one: {v}");
    };
    let at = Instant::now();
    assert!(text.contains("WHERE time >= "), "{text}");
    // The run ends with its statement and pauses (10 s: its interval): the server is idle.
    let busy = cpu_after(&s, at);
    assert!(
        busy < IDLE_TICKS,
        "{busy} ticks of CPU from 1 s to 3 s after KILL QUERY"
    );
    assert!(running(&s).iter().all(|(id, _)| *id != killed));
    assert!(
        s.log_text().contains("query interrupted"),
        "{}",
        s.log_text()
    );
    // Then it is retried, from where it got.
    let (again, _) = wait_listed(&s, "out_k");
    assert!(again > killed);
    assert!(at.elapsed() >= Duration::from_secs(5), "retried at once");
}
