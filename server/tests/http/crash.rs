//! Issue #15's crash test: writers record every 204 while the server is killed with `kill -9`
//! at random moments, round after round (during flushes, group commits, a DROP DATABASE, a
//! DROP MEASUREMENT and a DELETE); after each restart and drain, every acknowledged point is
//! stored exactly once, every unacknowledged request wholly or not at all, every dropped
//! database and measurement stays dropped, and every answered DELETE stays done (no replay
//! brings a deleted point back).
//!
//! Small by default (10 rounds, 3 writers); `CHINGEST_CRASH_LARGE=1` runs 30 rounds of 6
//! writers with larger requests; `CHINGEST_CRASH_ROUNDS` / `_WRITERS` / `_POINTS` override.
//! Recovery times (restart to `/ping`, restart to drained) are printed at the end
//! (docs/reliability.md records them).

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::Rng;
use serde_json::Value;

use crate::reliability::engine_has_database;
use crate::util::*;

fn knob(name: &str, small: usize, large: usize) -> usize {
    let big = std::env::var("CHINGEST_CRASH_LARGE").is_ok_and(|v| v == "1");
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if big { large } else { small })
}

/// What the writers know: requests acknowledged (204) and requests whose fate they do not
/// know (no answer, or an error answer), each as (writer, request).
#[derive(Default)]
struct Ledger {
    acked: HashSet<(usize, u64)>,
    unknown: HashSet<(usize, u64)>,
}

/// A request's body: `points` points tagged with its writer and request number.
fn body(w: usize, r: u64, points: usize) -> String {
    (0..points)
        .map(|i| {
            let t =
                1_600_000_000_000_000_000i64 + ((w as i64) << 40) + (r as i64) * 10_000 + i as i64;
            format!("m,w=w{w},r=r{r} v={i}i {t}\n")
        })
        .collect()
}

fn wait_drained(s: &Server) -> Duration {
    let t = Instant::now();
    loop {
        let h: Value = s.get("/health").json().unwrap();
        if h["wal"]["unflushed_points"] == 0 && h["flush"]["pending_points"] == 0 {
            return t.elapsed();
        }
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "not drained: {h}\n{}",
            s.log_text()
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Every acknowledged request stored exactly once, every other one whole or not at all.
fn verify(s: &Server, ledger: &Ledger, points: usize, round: usize) {
    let rows = match s.try_sql("SELECT w, r, toString(count()) AS c FROM crash.m GROUP BY w, r") {
        Ok(rows) => rows,
        Err(e) if e.contains("UNKNOWN_TABLE") || e.contains("UNKNOWN_DATABASE") => {
            assert!(ledger.acked.is_empty(), "round {round}: {e}");
            Vec::new()
        }
        Err(e) => panic!("{e}"),
    };
    let mut stored = HashSet::new();
    for row in &rows {
        let w: usize = row["w"].as_str().unwrap()[1..].parse().unwrap();
        let r: u64 = row["r"].as_str().unwrap()[1..].parse().unwrap();
        let c: usize = row["c"].as_str().unwrap().parse().unwrap();
        assert_eq!(
            c,
            points,
            "round {round}: request (w{w}, r{r}) stored {c} rows of {points}: {}",
            if c > points { "duplicated" } else { "torn" }
        );
        assert!(
            ledger.acked.contains(&(w, r)) || ledger.unknown.contains(&(w, r)),
            "round {round}: (w{w}, r{r}) stored but never sent"
        );
        stored.insert((w, r));
    }
    let lost: Vec<_> = ledger.acked.difference(&stored).collect();
    assert!(
        lost.is_empty(),
        "round {round}: acknowledged but lost: {lost:?}\n{}",
        s.log_text()
    );
}

/// Whether the engine's disk holds table `db.table`.
fn engine_has_table(data: &std::path::Path, db: &str, table: &str) -> bool {
    data.join("data/chdb/metadata")
        .join(db)
        .join(format!("{table}.sql"))
        .exists()
}

/// The names a `SHOW` statement answers (its first column).
fn names(s: &Server, show: &str) -> Vec<String> {
    let v = s.query(show);
    v["results"][0]["series"][0]["values"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| r[0].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn measurements(s: &Server) -> Vec<String> {
    names(s, "SHOW MEASUREMENTS ON crash")
}

fn databases(s: &Server) -> Vec<String> {
    names(s, "SHOW DATABASES")
}

#[test]
fn issue_15_kill_9_at_random_moments_loses_and_duplicates_nothing() {
    let rounds = knob("CHINGEST_CRASH_ROUNDS", 10, 30);
    let writers = knob("CHINGEST_CRASH_WRITERS", 3, 6);
    let points = knob("CHINGEST_CRASH_POINTS", 20, 200);
    let dir = data_dir();
    let spawn = || {
        Spawn::new(dir.path())
            // Flushes all the time (small batches, short age): kills land mid-flush.
            .env("CHINGEST_FLUSH__MAX_AGE_MS", "50")
            .env("CHINGEST_FLUSH__MAX_POINTS_PER_BATCH", "2000")
            .env("CHINGEST_WAL__MIN_FREE_BYTES", "0")
            .start()
    };
    let mut ledger = Ledger::default();
    // Databases dropped: name → whether the DROP was answered before the kill.
    let mut drops: BTreeMap<String, bool> = BTreeMap::new();
    // Measurements of `crash` dropped, likewise.
    let mut measurement_drops: BTreeMap<String, bool> = BTreeMap::new();
    // Measurements of `crash` whose every point a DELETE removes, likewise.
    let mut deletes: BTreeMap<String, bool> = BTreeMap::new();
    let mut next_req = vec![0u64; writers];
    let (mut ready_max, mut drain_max) = (Duration::ZERO, Duration::ZERO);
    let mut rng = rand::thread_rng();
    for round in 0..rounds {
        let started = Instant::now();
        let mut s = spawn();
        let ready = started.elapsed();
        let drained = wait_drained(&s);
        ready_max = ready_max.max(ready);
        drain_max = drain_max.max(drained);
        verify(&s, &ledger, points, round);
        let dbs = databases(&s);
        for (db, answered) in &drops {
            if *answered {
                assert!(
                    !dbs.contains(db),
                    "round {round}: dropped {db} is back: {dbs:?}"
                );
            }
        }
        if round == 0 {
            s.query("CREATE DATABASE crash");
        }
        let ms = measurements(&s);
        for (m, answered) in measurement_drops.iter().chain(&deletes) {
            if *answered {
                assert!(
                    !ms.contains(m),
                    "round {round}: dropped or deleted {m} is back: {ms:?}"
                );
            }
        }
        for (m, answered) in &deletes {
            if *answered {
                let left = s.query(&format!("SELECT count(v) FROM crash..{m}"));
                assert!(
                    left["results"][0]["series"].is_null(),
                    "round {round}: deleted points of {m} are back: {left}"
                );
            }
        }
        let victim = format!("drop_{round}");
        s.query(&format!("CREATE DATABASE {victim}"));
        assert_eq!(
            s.post(&format!("/write?db={victim}"), body(0, 0, points))
                .status(),
            204
        );
        // A measurement of `crash` written before the round (flushed or not when dropped)
        // and dropped at a random moment while the writers go on.
        let gone = format!("gone{round}");
        assert_eq!(
            s.post(
                "/write?db=crash",
                body(0, 0, points).replace("m,", &format!("{gone},"))
            )
            .status(),
            204
        );
        // And one whose points a DELETE removes at a random moment (flushed or not by then).
        let deleted = format!("del{round}");
        assert_eq!(
            s.post(
                "/write?db=crash",
                body(0, 0, points).replace("m,", &format!("{deleted},"))
            )
            .status(),
            204
        );

        let stop = AtomicBool::new(false);
        let results = Mutex::new(Vec::new());
        let drop_answered = AtomicBool::new(false);
        let mdrop_answered = AtomicBool::new(false);
        let delete_answered = AtomicBool::new(false);
        let kill_after = Duration::from_millis(rng.gen_range(200..1500));
        let drop_after =
            Duration::from_millis(rng.gen_range(0..kill_after.as_millis() as u64 + 200));
        let mdrop_after =
            Duration::from_millis(rng.gen_range(0..kill_after.as_millis() as u64 + 200));
        let delete_after =
            Duration::from_millis(rng.gen_range(0..kill_after.as_millis() as u64 + 200));
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(10))
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        std::thread::scope(|scope| {
            for (w, next) in next_req.iter_mut().enumerate() {
                let (s, client, stop, results, victim) = (&s, &client, &stop, &results, &victim);
                scope.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let r = *next;
                        *next += 1;
                        let out = client
                            .post(s.url("/write?db=crash"))
                            .body(body(w, r, points))
                            .send()
                            .map(|resp| resp.status().as_u16());
                        results.lock().unwrap().push((w, r, out.ok()));
                        // Some traffic for the database being dropped, too.
                        if r % 5 == 0 {
                            let _ = client
                                .post(s.url(&format!("/write?db={victim}")))
                                .body(body(w, r, points))
                                .send();
                        }
                    }
                });
            }
            let (s, drop_answered, victim) = (&s, &drop_answered, &victim);
            scope.spawn(move || {
                std::thread::sleep(drop_after);
                let r = s
                    .client
                    .post(s.url("/query"))
                    .form(&[("q", format!("DROP DATABASE {victim}"))])
                    .send();
                let t = Instant::now();
                match r {
                    Ok(r) if r.status() == 200 => {
                        let body = r.text().unwrap_or_default();
                        assert!(!body.contains("error"), "DROP DATABASE {victim}: {body}");
                        drop_answered.store(true, Ordering::SeqCst);
                    }
                    other => eprintln!(
                        "DROP DATABASE {victim} unanswered after {:?}: {other:?}",
                        t.elapsed()
                    ),
                }
            });
            let (mdrop_answered, gone) = (&mdrop_answered, &gone);
            scope.spawn(move || {
                std::thread::sleep(mdrop_after);
                let r = s
                    .client
                    .post(s.url("/query?db=crash"))
                    .form(&[("q", format!("DROP MEASUREMENT {gone}"))])
                    .send();
                if let Ok(r) = r {
                    if r.status() == 200 {
                        let body = r.text().unwrap_or_default();
                        assert!(!body.contains("error"), "DROP MEASUREMENT {gone}: {body}");
                        mdrop_answered.store(true, Ordering::SeqCst);
                    }
                }
            });
            let (delete_answered, deleted) = (&delete_answered, &deleted);
            scope.spawn(move || {
                std::thread::sleep(delete_after);
                let r = s
                    .client
                    .post(s.url("/query?db=crash"))
                    .form(&[("q", format!("DELETE FROM {deleted} WHERE w = 'w0'"))])
                    .send();
                if let Ok(r) = r {
                    if r.status() == 200 {
                        let body = r.text().unwrap_or_default();
                        assert!(!body.contains("error"), "DELETE FROM {deleted}: {body}");
                        delete_answered.store(true, Ordering::SeqCst);
                    }
                }
            });
            std::thread::sleep(kill_after);
            s.signal("KILL");
            stop.store(true, Ordering::Relaxed);
        });
        let _ = s.terminate_wait();
        drops.insert(victim, drop_answered.load(Ordering::SeqCst));
        measurement_drops.insert(gone, mdrop_answered.load(Ordering::SeqCst));
        deletes.insert(deleted, delete_answered.load(Ordering::SeqCst));
        for (w, r, out) in results.into_inner().unwrap() {
            if out == Some(204) {
                ledger.acked.insert((w, r));
            } else {
                ledger.unknown.insert((w, r));
            }
        }
        drop(s);
    }
    // Last restart: verify, then a clean stop, then the engine's own disk for the drops.
    let started = Instant::now();
    let mut s = spawn();
    ready_max = ready_max.max(started.elapsed());
    drain_max = drain_max.max(wait_drained(&s));
    verify(&s, &ledger, points, rounds);
    let dbs = databases(&s);
    let ms = measurements(&s);
    assert!(s.terminate().success());
    drop(s);
    // The path the checks below read is where the engine keeps a table.
    assert!(engine_has_table(dir.path(), "crash", "m"));
    for (m, answered) in &measurement_drops {
        let in_catalog = ms.contains(m);
        assert!(
            !(*answered && in_catalog),
            "{m}: dropped, but in the catalog"
        );
        assert_eq!(
            engine_has_table(dir.path(), "crash", m),
            in_catalog,
            "{m}: the engine and the catalog disagree (answered: {answered})"
        );
    }
    for (db, answered) in &drops {
        let in_catalog = dbs.contains(db);
        assert!(
            !(*answered && in_catalog),
            "{db}: dropped, but in the catalog"
        );
        assert_eq!(
            engine_has_database(dir.path(), db),
            in_catalog,
            "{db}: the engine and the catalog disagree (answered: {answered})"
        );
    }
    eprintln!(
        "crash test: {rounds} rounds × {writers} writers × {points} points/request; \
         {} acknowledged, {} unacknowledged requests; {} database and {} measurement drops \
         and {} deletes answered; \
         slowest restart to /ping {:?}, slowest drain {:?}",
        ledger.acked.len(),
        ledger.unknown.len(),
        drops.values().filter(|a| **a).count(),
        measurement_drops.values().filter(|a| **a).count(),
        deletes.values().filter(|a| **a).count(),
        ready_max,
        drain_max
    );
}
