//! The hot store holds only what is read (`[hot] hold = "read"`, the default;
//! issue #44, `storage/src/hot/wanted.rs`): a measurement written but never
//! read costs no memory; the first statement the store could answer goes to
//! the engine and starts the measurement's refill, after which the store
//! answers, value for value as the engine does; one not read for `[hot] idle`
//! is dropped again; and a write racing with the first read is not lost.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::hot::{answers, ask, load, metric, points, range, OFF, S, SPAN, T0};
use crate::read_your_writes::write;
use crate::util::{data_dir, Server, Spawn};

/// On, holding what is read (the default), a read waiting as long as it
/// takes for the idle-priority applier (so the path says what the store holds).
const READ: &str = "[hot]\nenabled = true\napply_wait_ms = 60000\n";

/// Asks `q` until the hot store answers it (equal to the engine's answer
/// every time), at most 120 s.
pub(crate) fn until_hot(hot: &Server, engine: &Server, db: &str, q: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while answers(hot, engine, db, q) != "hot" {
        assert!(
            Instant::now() < deadline,
            "never served from the store: {q}; log:\n{}",
            hot.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `chingest_hot_wanted` of `measurement`.
fn wanted(s: &Server, measurement: &str) -> Option<f64> {
    let text = s.get("/metrics").text().unwrap();
    let label = format!("measurement=\"{measurement}\"");
    text.lines()
        .filter(|l| l.starts_with("chingest_hot_wanted{") && l.contains(&label))
        .find_map(|l| l.rsplit_once(' ')?.1.parse().ok())
}

const SERVED: &str = "chingest_hot_measurements{state=\"served\"}";

/// Issue #44: written but not read, a measurement is not held (no bytes, no
/// backlog); the first read is the engine's, then the store's with the same
/// answers, including rows only in the WAL at a `kill -9` and the restart
/// after it; another measurement written all along stays unheld.
#[test]
fn hot_store_holds_only_what_is_read_and_serves_it_after_a_first_read() {
    let (dh, de) = (data_dir(), data_dir());
    let engine = Spawn::new(de.path()).config(OFF).start();
    let base = points(5);
    let other: Vec<String> = base.iter().map(|l| l.replacen("m,", "o,", 1)).collect();
    let q = format!(
        "SELECT count(f), sum(f), max(i), last(i) FROM m WHERE {} GROUP BY time(30m), host",
        range(0, SPAN)
    );
    {
        let hot = Spawn::new(dh.path()).config(READ).start();
        load(&[&hot, &engine], "d", &base);
        for s in [&hot, &engine] {
            for chunk in other.chunks(500) {
                write(s, "d", &chunk.join("\n"));
            }
        }
        assert_eq!(metric(&hot, "chingest_hot_bytes"), 0.0);
        assert_eq!(metric(&hot, "chingest_hot_backlog_bytes"), 0.0);
        assert_eq!(metric(&hot, SERVED), 0.0);
        assert_eq!(answers(&hot, &engine, "d", &q), "engine", "first read");
        assert_eq!(wanted(&hot, "m"), Some(1.0));
        until_hot(&hot, &engine, "d", &q);
        assert_eq!(metric(&hot, SERVED), 1.0);
        assert_eq!(metric(&hot, "chingest_hot_wants_total"), 1.0);
        assert!(
            metric(
                &hot,
                "chingest_hot_refills_finished_total{outcome=\"served\"}"
            ) >= 1.0
        );
        assert!(hot.log_text().contains("hot store: measurement refilled"));
        // Writes after it are held (read your writes), `o`'s are not.
        let held = metric(&hot, "chingest_hot_values");
        let more: Vec<String> = (0..300)
            .map(|k| format!("o,host=h{} f={k} {}", k % 3, T0 + SPAN + k * S))
            .collect();
        for s in [&hot, &engine] {
            write(s, "d", &more.join("\n"));
        }
        let line = format!("m,host=h1,region=r1 f=0.75,i=7i {}", T0 + 10 * S + S);
        for s in [&hot, &engine] {
            write(s, "d", &line);
        }
        assert_eq!(answers(&hot, &engine, "d", &q), "hot");
        assert!(metric(&hot, "chingest_hot_values") <= held + 3.0);
        assert_eq!(wanted(&hot, "o"), None);
    }
    // Rows only in the WAL at a kill, then a restart: nothing held until read.
    {
        let mut hot = Spawn::new(dh.path())
            .config(READ)
            .env("CHINGEST_FLUSH__MAX_AGE_MS", "600000")
            .start();
        let late: Vec<String> = (0..200)
            .map(|k| {
                format!(
                    "m,host=h{} f={}.5,i={k}i {}",
                    k % 5,
                    k % 9,
                    T0 + k * 7 * S + 3
                )
            })
            .collect();
        write(&hot, "d", &late.join("\n"));
        write(&engine, "d", &late.join("\n"));
        hot.signal("KILL");
        hot.terminate_wait();
    }
    let hot = Spawn::new(dh.path()).config(READ).start();
    assert_eq!(metric(&hot, "chingest_hot_refill_pending"), 0.0);
    assert_eq!(answers(&hot, &engine, "d", &q), "engine", "first read");
    until_hot(&hot, &engine, "d", &q);
    let raw = format!(
        "SELECT f, i FROM m WHERE host = 'h2' AND {}",
        range(0, 3600 * S)
    );
    until_hot(&hot, &engine, "d", &raw);
    assert_eq!(metric(&hot, "chingest_hot_wants_total"), 1.0);
}

/// Issue #44: a measurement not read for `[hot] idle` is dropped (its bytes
/// freed) and no longer fed; read again, it is the engine's, then refilled.
#[test]
fn hot_store_drops_a_measurement_not_read_for_idle() {
    let (dh, de) = (data_dir(), data_dir());
    let hot = Spawn::new(dh.path())
        .config("[hot]\nenabled = true\nidle = \"2s\"\napply_wait_ms = 60000\n")
        .start();
    let engine = Spawn::new(de.path()).config(OFF).start();
    load(&[&hot, &engine], "d", &points(9));
    let q = format!(
        "SELECT count(f), sum(f), min(i) FROM m WHERE {} GROUP BY time(1h)",
        range(0, SPAN)
    );
    assert_eq!(answers(&hot, &engine, "d", &q), "engine");
    until_hot(&hot, &engine, "d", &q);
    assert!(metric(&hot, "chingest_hot_bytes") > 0.0);
    // Not read: dropped within idle and a sweep (idle / 4).
    let deadline = Instant::now() + Duration::from_secs(60);
    while metric(&hot, "chingest_hot_bytes") > 0.0 {
        assert!(Instant::now() < deadline, "not dropped");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(metric(&hot, SERVED), 0.0);
    assert_eq!(metric(&hot, "chingest_hot_idle_drops_total"), 1.0);
    assert_eq!(wanted(&hot, "m"), Some(0.0));
    // Written while dropped: not held.
    let line = format!("m,host=h0,region=r0 f=1.25,i=3i {}", T0 + 4 * S + 1);
    for s in [&hot, &engine] {
        write(s, "d", &line);
    }
    assert_eq!(metric(&hot, "chingest_hot_bytes"), 0.0);
    assert_eq!(metric(&hot, "chingest_hot_backlog_bytes"), 0.0);
    assert_eq!(answers(&hot, &engine, "d", &q), "engine");
    until_hot(&hot, &engine, "d", &q);
    assert_eq!(metric(&hot, "chingest_hot_wants_total"), 2.0);
}

/// Issue #44: writes go on while a measurement is first read (so some are
/// received just before it is wanted, some just after, some rewrite points
/// of the batch before); once they stop, the store's answer counts every
/// point with its last value. Several measurements: each a new race.
#[test]
fn hot_store_first_read_racing_with_writes_loses_no_write() {
    let d = data_dir();
    let hot = Spawn::new(d.path()).config(READ).start();
    hot.query("CREATE DATABASE r");
    const BATCHES: i64 = 60;
    const PER: i64 = 40;
    for round in 0..6 {
        let m = format!("race{round}");
        let written = AtomicUsize::new(0);
        let q = format!(
            "SELECT count(f), sum(f) FROM {m} WHERE {}",
            range(0, BATCHES * PER * S)
        );
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for b in 0..BATCHES {
                    // New points of this batch, and the previous batch's again with other values.
                    let mut lines: Vec<String> = (b * PER..(b + 1) * PER)
                        .map(|k| format!("{m},host=h{} f={k} {}", k % 4, T0 + k * S))
                        .collect();
                    lines.extend(
                        ((b - 1).max(0) * PER..b * PER)
                            .map(|k| format!("{m},host=h{} f={} {}", k % 4, k + 1000, T0 + k * S)),
                    );
                    write(&hot, "r", &lines.join("\n"));
                    written.store(b as usize + 1, Ordering::Release);
                }
            });
            // The first read lands somewhere among the writes (a few batches in,
            // later each round), and reads go on while they run.
            while written.load(Ordering::Acquire) < 2 + round * 7 {
                std::thread::yield_now();
            }
            while written.load(Ordering::Acquire) < BATCHES as usize {
                let (status, v, _) = ask(&hot, "r", &q);
                assert_eq!(status, 200, "{v}");
            }
        });
        let n = BATCHES * PER;
        // The last batch's points keep their first value, the others were rewritten (+1000).
        let sum: i64 = (0..n).sum::<i64>() + 1000 * (n - PER);
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let (status, v, path) = ask(&hot, "r", &q);
            assert_eq!(status, 200, "{v}");
            let row = &v["results"][0]["series"][0]["values"][0];
            assert_eq!(row[1], n, "{m} ({path}): {v}");
            assert_eq!(row[2].as_f64(), Some(sum as f64), "{m} ({path}): {v}");
            if path == "hot" {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{m} never served from the store; log:\n{}",
                hot.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Issue #44: the refill reads slices of series ids; a series whose window
/// alone is past `[sql] max_result_rows` (here each of the five: 2,160
/// points over 1,000 rows) is read in time slices instead, and the
/// measurement is served with the engine's answers.
#[test]
fn hot_store_refills_a_series_larger_than_the_result_limit() {
    let (dh, de) = (data_dir(), data_dir());
    let engine = Spawn::new(de.path()).config(OFF).start();
    let hot = Spawn::new(dh.path())
        .config(&format!("{READ}\n[sql]\nmax_result_rows = 1000\n"))
        .start();
    load(&[&hot, &engine], "d", &points(7));
    let q = format!(
        "SELECT count(f), sum(f), max(i), last(i) FROM m WHERE {} GROUP BY time(30m), host",
        range(0, SPAN)
    );
    assert_eq!(answers(&hot, &engine, "d", &q), "engine", "first read");
    until_hot(&hot, &engine, "d", &q);
    let log = hot.log_text();
    assert!(log.contains("hot store: measurement refilled"), "{log}");
    assert!(!log.contains("exceed the [sql] result limits"), "{log}");
}
