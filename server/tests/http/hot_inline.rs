//! Statements the hot store answers at once run on the server's async worker
//! (issue #44: the hand-off to a blocking thread cost 0.1–0.6 ms of reads
//! that take 0.2): counted by `chingest_influxql_inline_total{outcome}`.
//! A cheap read runs inline and answers as the engine does; a read of more
//! values than an inline statement may read is refused there and answered
//! from the hot store on a blocking thread, equal too.

use crate::hot::{load, same, OFF, ON, S, T0};
use crate::util::{data_dir, Server, Spawn};

/// `chingest_influxql_inline_total{outcome="…"}` (0 before the first).
fn ran(s: &Server, outcome: &str) -> f64 {
    let prefix = format!("chingest_influxql_inline_total{{outcome=\"{outcome}\"}} ");
    let text = s.get("/metrics").text().unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix)?.trim().parse().ok())
        .unwrap_or(0.0)
}

#[test]
fn cheap_hot_reads_run_inline_and_heavy_ones_hand_off_answering_alike() {
    let (dh, de) = (data_dir(), data_dir());
    let hot = Spawn::new(dh.path()).config(ON).start();
    let engine = Spawn::new(de.path()).config(OFF).start();
    // An hour of three hosts every 10 s.
    let small: Vec<String> = (0..360)
        .flat_map(|k| {
            (0..3).map(move |h| {
                format!(
                    "cpu,host=h{h} f={},i={}i {}",
                    (k % 40) as f64 / 4.0,
                    k % 7,
                    T0 + k * 10 * S + h
                )
            })
        })
        .collect();
    load(&[&hot, &engine], "d", &small);
    let end = T0 + 3600 * S;
    let cheap = [
        format!("SELECT mean(f), max(i) FROM cpu WHERE host = 'h1' AND time >= {T0} AND time < {end} GROUP BY time(5m)"),
        format!("SELECT count(f) FROM cpu WHERE (host = 'h0' OR host = 'h2') AND time >= {T0} AND time < {end} GROUP BY host"),
        format!("SELECT * FROM cpu WHERE host = 'h2' AND f > 9 AND time >= {T0} AND time < {end}"),
    ];
    for q in &cheap {
        // The first answer waits, if need be, for the store to apply every
        // write; nothing is written after, so the second needs no wait.
        same(&hot, &engine, "d", q, true);
        let before = ran(&hot, "inline");
        same(&hot, &engine, "d", q, true);
        let counted = hot.get("/metrics").text().unwrap();
        let counted: Vec<&str> = counted
            .lines()
            .filter(|l| l.starts_with("chingest_influxql_inline_total"))
            .collect();
        assert_eq!(
            ran(&hot, "inline"),
            before + 1.0,
            "not run inline: {q}: {counted:?}"
        );
    }
    // 30,000 points of two fields: 60,000 values, more than an inline
    // statement may read (`storage::influxql::inline::MAX_VALUES`).
    let ms = S / 1000;
    let big: Vec<String> = (0..30_000)
        .map(|k| format!("big,host=a f={}.5,i={k}i {}", k % 97, T0 + k * 10 * ms))
        .collect();
    load(&[&hot, &engine], "b", &big);
    let heavy = format!(
        "SELECT count(f), sum(i) FROM big WHERE time >= {T0} AND time < {} GROUP BY time(1m)",
        T0 + 300 * S
    );
    same(&hot, &engine, "b", &heavy, true);
    let (refused, inline) = (ran(&hot, "refused"), ran(&hot, "inline"));
    same(&hot, &engine, "b", &heavy, true);
    assert_eq!(ran(&hot, "refused"), refused + 1.0, "not refused inline");
    assert_eq!(ran(&hot, "inline"), inline, "read too much inline");
    // The engine's server runs nothing inline: its store is off.
    assert_eq!(ran(&engine, "inline"), 0.0);
    assert!(ran(&engine, "blocking") > 0.0);
}

/// TSBS `high-cpu-1`: `SELECT *` of 12 h of one host (4,320 points, 10 float
/// fields, 10 tags) where one field passes a threshold. It decodes 43,200
/// values, within an inline statement's bound; counted with its tags as
/// columns (21 × 4,320) it was refused inline and planned twice (issue #44).
#[test]
fn a_tsbs_high_cpu_read_runs_inline() {
    let (dh, de) = (data_dir(), data_dir());
    let hot = Spawn::new(dh.path()).config(ON).start();
    let engine = Spawn::new(de.path()).config(OFF).start();
    let tags = "region=eu-west-1,datacenter=eu-west-1a,rack=87,os=Ubuntu16.04LTS,\
                arch=x64,team=NYC,service=18,service_version=1,service_environment=test";
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let lines: Vec<String> = (0..2)
        .flat_map(|h| (0..4320).map(move |k| (h, k)))
        .map(|(h, k)| {
            let fields: Vec<String> = (0..10)
                .map(|f| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    format!("usage_{f}={}", (seed % 100_000) as f64 / 997.0)
                })
                .collect();
            format!(
                "cpu,hostname=host_{h},{tags} {} {}",
                fields.join(","),
                T0 + k * 10 * S
            )
        })
        .collect();
    load(&[&hot, &engine], "d", &lines);
    let q = format!(
        "SELECT * FROM cpu WHERE usage_0 > 90.0 AND time >= {T0} AND time < {} AND hostname = 'host_1'",
        T0 + 12 * 3600 * S
    );
    same(&hot, &engine, "d", &q, true);
    let before = ran(&hot, "inline");
    same(&hot, &engine, "d", &q, true);
    assert_eq!(ran(&hot, "inline"), before + 1.0, "not run inline: {q}");
}

/// The per-request inline budget (`server/src/query/inline.rs`'s
/// `REQUEST_BUDGET`, 2 ms): the `/query` handler adds each inline
/// statement's wall time to the request's and tries no statement inline
/// once it reached the budget; those run on a blocking thread (`outcome =
/// "blocking"`). Twenty statements of 36,000 values each, within what one
/// inline statement may read, take far more than 2 ms together in any
/// build: sent as one request, the first runs inline and the later ones hand
/// off; sent one per request, each runs inline. The answers are the engine
/// server's either way.
#[test]
fn one_request_runs_inline_no_longer_than_its_budget() {
    let (dh, de) = (data_dir(), data_dir());
    let hot = Spawn::new(dh.path()).config(ON).start();
    let engine = Spawn::new(de.path()).config(OFF).start();
    // 12,000 points of three fields, one every 100 ms.
    let ms = S / 1000;
    let lines: Vec<String> = (0..12_000)
        .map(|k| {
            format!(
                "m,host=a f={}.25,g={},i={k}i {}",
                k % 89,
                (k * 7) % 101,
                T0 + k * 100 * ms
            )
        })
        .collect();
    load(&[&hot, &engine], "d", &lines);
    let end = T0 + 1_200 * S;
    let statements: Vec<String> = (0..20)
        .map(|n| {
            format!(
                "SELECT count(f), sum(i), max(g) FROM m WHERE time >= {T0} AND time < {} GROUP BY time({}s)",
                end + n * S,
                60 + n
            )
        })
        .collect();
    // Every write applied (the first answer waits for it), each statement
    // alone runs inline.
    same(&hot, &engine, "d", &statements[0], true);
    let inline = ran(&hot, "inline");
    for q in &statements {
        same(&hot, &engine, "d", q, true);
    }
    assert_eq!(
        ran(&hot, "inline"),
        inline + 20.0,
        "a statement of 36,000 values alone did not run inline"
    );
    // Together in one request: the budget is spent after the first few.
    let (inline, blocking, refused) = (
        ran(&hot, "inline"),
        ran(&hot, "blocking"),
        ran(&hot, "refused"),
    );
    same(&hot, &engine, "d", &statements.join("; "), true);
    let (inline, blocking) = (
        ran(&hot, "inline") - inline,
        ran(&hot, "blocking") - blocking,
    );
    assert_eq!(ran(&hot, "refused"), refused, "nothing is refused");
    assert_eq!(inline + blocking, 20.0);
    assert!(inline >= 1.0, "the first statement runs inline");
    assert!(
        blocking >= 1.0,
        "twenty statements of 36,000 values ran inline in one request ({inline})"
    );
}

/// A TSBS `high-cpu-1` window that starts late in a sealed chunk: 5,100
/// points × 10 fields in the range, 5,601 × 10 counted from the first
/// chunk's start, past what an inline statement may read. But the condition
/// passes in one chunk only, and the read decodes no other (their bounds
/// rule every point out): it reads 1,024 × 10 values and runs inline, as
/// 11 of 40 TSBS windows were refused and planned twice for (issue #44).
/// The answer is the engine server's.
#[test]
fn a_read_counts_only_the_chunks_its_condition_leaves() {
    let (dh, de) = (data_dir(), data_dir());
    let hot = Spawn::new(dh.path()).config(ON).start();
    let engine = Spawn::new(de.path()).config(OFF).start();
    // 24 h of two hosts every 10 s; usage_0 above 90 at points 2,100–2,149.
    let lines: Vec<String> = (0..2)
        .flat_map(|h| (0..8640).map(move |k| (h, k)))
        .map(|(h, k)| {
            let fields: Vec<String> = (0..10)
                .map(|f| {
                    let v = match (f, k) {
                        (0, 2100..2150) => 90.5 + (k % 9) as f64,
                        _ => ((k * 31 + f * 7) % 900) as f64 / 10.0,
                    };
                    format!("usage_{f}={v}")
                })
                .collect();
            format!(
                "cpu,hostname=host_{h},region=eu {} {}",
                fields.join(","),
                T0 + k * 10 * S
            )
        })
        .collect();
    load(&[&hot, &engine], "d", &lines);
    let q = format!(
        "SELECT * FROM cpu WHERE usage_0 > 90.0 AND time >= {} AND time < {} AND hostname = 'host_1'",
        T0 + 500 * 10 * S,
        T0 + 5600 * 10 * S
    );
    same(&hot, &engine, "d", &q, true);
    let (inline, refused) = (ran(&hot, "inline"), ran(&hot, "refused"));
    same(&hot, &engine, "d", &q, true);
    assert_eq!(ran(&hot, "refused"), refused, "refused inline: {q}");
    assert_eq!(ran(&hot, "inline"), inline + 1.0, "not run inline: {q}");
}
