//! TSBS `lastpoint` (each group's last point, no time range) runs on the
//! server's async worker when the flusher's last points answer it at once
//! and the table is small enough (issue #44: the hand-off to a blocking
//! thread cost 0.1–0.6 ms of a read that takes 0.6). Counted by
//! `chingest_influxql_inline_total{outcome}`; the answers are those of a
//! server without the hot store (nothing inline) and of the engine.

use crate::hot::{ask, load, OFF, ON, S, T0};
use crate::util::{data_dir, Server, Spawn};

/// `chingest_influxql_inline_total{outcome="…"}` (0 before the first).
fn ran(s: &Server, outcome: &str) -> f64 {
    let prefix = format!("chingest_influxql_inline_total{{outcome=\"{outcome}\"}} ");
    let text = s.get("/metrics").text().unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// `hosts` hosts' points, every 10 s for `points` points, with `cpu` of
/// each host's newest point distinct.
fn hosts(hosts: i64, points: i64, from: i64) -> Vec<String> {
    (from..from + points)
        .flat_map(|k| {
            (0..hosts).map(move |h| {
                format!(
                    "cpu,hostname=host_{h},region=r{} usage_user={}.5,usage_idle={}i {}",
                    h % 3,
                    (k * 7 + h) % 100,
                    k + h,
                    T0 + k * 10 * S
                )
            })
        })
        .collect()
}

const LASTPOINT: &str = r#"SELECT * FROM cpu GROUP BY "hostname" ORDER BY time DESC LIMIT 1"#;

/// The same answer from both servers; the hot one's read path.
fn same(hot: &Server, plain: &Server, db: &str) -> String {
    let (hs, ha, path) = ask(hot, db, LASTPOINT);
    let (ps, pa, _) = ask(plain, db, LASTPOINT);
    assert_eq!((hs, &ha), (ps, &pa), "answers differ");
    // The engine's answer (a tag condition every point meets takes it there).
    let engine = LASTPOINT.replace(" GROUP BY", " WHERE hostname =~ /.*/ GROUP BY");
    let (es, ea, epath) = ask(plain, db, &engine);
    assert_eq!(epath, "engine");
    assert_eq!((hs, &ha), (es, &ea), "not the engine's answer");
    assert!(ha["results"][0]["series"].as_array().is_some(), "{ha}");
    path
}

#[test]
fn a_small_lastpoint_runs_inline_and_a_large_one_hands_off_answering_alike() {
    let (dh, dp) = (data_dir(), data_dir());
    let hot = Spawn::new(dh.path()).config(ON).start();
    let plain = Spawn::new(dp.path()).config(OFF).start();
    load(&[&hot, &plain], "d", &hosts(20, 30, 0));
    // The first read loads the last points from the engine: not inline.
    assert_eq!(same(&hot, &plain, "d"), "last_point");
    let (inline, refused) = (ran(&hot, "inline"), ran(&hot, "refused"));
    assert_eq!(same(&hot, &plain, "d"), "last_point");
    assert_eq!(ran(&hot, "inline"), inline + 1.0, "not run inline");
    assert_eq!(ran(&hot, "refused"), refused);
    // Newer points, rewritten ones and a new host: read at once (inline
    // where the flusher has them already, else handed off), every answer
    // exact.
    for round in 0..5 {
        let mut lines = hosts(21, 1, 30 + round);
        lines.push(format!(
            "cpu,hostname=host_3,region=r0 usage_user=-1.5 {}",
            T0 + (30 + round) * 10 * S
        ));
        load(&[&hot, &plain], "d", &lines);
        assert_eq!(same(&hot, &plain, "d"), "last_point");
    }
    // TSBS `lastpoint` at 1,000 hosts runs inline (it was refused and
    // handed off: 0.7 ms of its 2 ms).
    load(&[&hot, &plain], "hosts", &hosts(1_000, 2, 0));
    same(&hot, &plain, "hosts");
    let (inline, refused) = (ran(&hot, "inline"), ran(&hot, "refused"));
    assert_eq!(same(&hot, &plain, "hosts"), "last_point");
    assert_eq!(ran(&hot, "inline"), inline + 1.0, "1,000 series not inline");
    assert_eq!(ran(&hot, "refused"), refused);
    // More series than an inline read may answer (`MAX_LAST_POINT_SERIES`):
    // refused inline before any work, answered on a blocking thread.
    load(&[&hot, &plain], "big", &hosts(1_550, 2, 0));
    same(&hot, &plain, "big");
    let (inline, refused) = (ran(&hot, "inline"), ran(&hot, "refused"));
    assert_eq!(same(&hot, &plain, "big"), "last_point");
    assert_eq!(ran(&hot, "refused"), refused + 1.0, "not refused inline");
    assert_eq!(ran(&hot, "inline"), inline, "1,550 series answered inline");
    // The server without the hot store runs nothing inline.
    assert_eq!(ran(&plain, "inline"), 0.0);
}
