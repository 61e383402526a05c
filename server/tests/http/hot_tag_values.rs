//! `SHOW TAG VALUES` from the hot store (issue #44) gives the engine path's
//! answers value by value: two servers get the same points, one with the hot
//! store and one without; every statement goes to both, the answers must be
//! equal, and `X-Chingest-Read-Path` says which path answered on each.

use crate::hot::{ask, ON, S, T0};
use crate::hot_demand::until_hot;
use crate::read_your_writes::write;
use crate::util::{data_dir, Server, Spawn};

const OFF: &str = "[hot]\nenabled = false\n";

/// Series with tags out of order, absent, escaped and beyond ASCII, in two
/// measurements; some points far older than others.
fn lines() -> Vec<String> {
    let hosts = ["h2", "h10", "B", "a", "é", "with\\ space", "c\\,comma"];
    let mut out = Vec::new();
    for (k, h) in hosts.iter().enumerate() {
        let t = T0 + k as i64 * 3600 * S;
        let tags = match k % 3 {
            0 => format!("host={h},region=r{}", k % 2),
            1 => format!("host={h},region=r{},zone=z{k}", k % 2),
            _ => format!("host={h}"),
        };
        out.push(format!("cpu,{tags} f={k}.5,i={k}i {t}"));
        out.push(format!("cpu,{tags} f=1 {}", t + S));
        out.push(format!("mem,{tags} used={k} {t}"));
    }
    out.push(format!("disk,path=/,host=h2 used=1 {T0}"));
    out
}

/// `q` answers the same on both; `hot` from the hot store when `want_hot`.
fn same(hot: &Server, engine: &Server, q: &str, want_hot: bool) {
    let (hs, ha, hp) = ask(hot, "tv", q);
    let (es, ea, ep) = ask(engine, "tv", q);
    assert_eq!((hs, &ha), (es, &ea), "answers differ: {q}");
    assert!(ea["results"][0].get("error").is_none(), "{q}: {ea}");
    // No header where nothing was read (no measurement has the key).
    assert!(ep == "engine" || ep.is_empty(), "{q}: {ep}");
    if ep.is_empty() {
        assert_eq!(hp, "", "{q}");
    } else if want_hot {
        assert_eq!(hp, "hot", "not answered from the hot store: {q}: {ha}");
    } else {
        assert_ne!(hp, "hot", "answered from the hot store: {q}");
    }
}

#[test]
fn show_tag_values_from_the_hot_store_equal_the_engines() {
    let (dh, de) = (data_dir(), data_dir());
    let hot = Spawn::new(dh.path()).config(ON).start();
    let engine = Spawn::new(de.path()).config(OFF).start();
    for s in [&hot, &engine] {
        s.query("CREATE DATABASE tv");
        write(s, "tv", &lines().join("\n"));
    }
    corpus(&hot, &engine);
}

/// Held from a first read (`hold = "read"`, the default) and refilled from
/// the newest point − `window` on, a measurement still lists the tag values
/// of series with older points only (seeded by the refill, as the engine
/// lists every series with a point at any time): a window of 2 h leaves
/// four of `cpu`'s seven hosts, and three of `mem`'s, before the cutoff.
#[test]
fn show_tag_values_of_measurements_held_from_a_first_read_equal_the_engines() {
    let (dh, de) = (data_dir(), data_dir());
    let read = "[hot]\nenabled = true\nhold = \"read\"\nwindow = \"2h\"\napply_wait_ms = 60000\n";
    let hot = Spawn::new(dh.path()).config(read).start();
    let engine = Spawn::new(de.path()).config(OFF).start();
    for s in [&hot, &engine] {
        s.query("CREATE DATABASE tv");
        write(s, "tv", &lines().join("\n"));
    }
    // Not read yet: nothing held, the engine answers.
    same(
        &hot,
        &engine,
        "SHOW TAG VALUES FROM cpu WITH KEY = host",
        false,
    );
    // A first read of each measurement, then its refill.
    let h = 3600 * S;
    for (m, f, from) in [
        ("cpu", "f", 5 * h),
        ("mem", "used", 5 * h),
        ("disk", "used", -h),
    ] {
        let q = format!(
            "SELECT count({f}) FROM {m} WHERE time >= {} AND time <= {}",
            T0 + from,
            T0 + 7 * h
        );
        until_hot(&hot, &engine, "tv", &q);
    }
    corpus(&hot, &engine);
}

/// The differential corpus on `hot` and `engine`, which hold the same points.
fn corpus(hot: &Server, engine: &Server) {
    let keys = [
        "WITH KEY = host",
        "WITH KEY = \"host\"",
        "WITH KEY = nope",
        "WITH KEY != host",
        "WITH KEY IN (host, zone)",
        "WITH KEY IN (region, host, region)",
        "WITH KEY =~ /^(host|region)$/",
        "WITH KEY =~ /o/",
        "WITH KEY !~ /^host$/",
    ];
    let froms = ["", "FROM \"cpu\" ", "FROM /^(cpu|disk)$/ "];
    let wheres = [
        "",
        " WHERE region = 'r1'",
        " WHERE region != 'r1'",
        " WHERE region = ''",
        " WHERE zone != ''",
        " WHERE host =~ /^(h2|a)$/",
        " WHERE host !~ /^h/",
        " WHERE host =~ /spa/ OR region = 'r0'",
        " WHERE (host = 'B' OR host = 'é') AND region = 'r1'",
        " WHERE host = 'with space'",
        " WHERE host = 'c,comma'",
        " WHERE time > now() - 1h AND region = 'r0'",
        " WHERE time >= 0 AND time < 1",
        " WHERE nope = 'x'",
        " WHERE nope = ''",
    ];
    let pages = [
        "",
        " LIMIT 2",
        " LIMIT 2 OFFSET 1",
        " LIMIT 1 OFFSET 3",
        " OFFSET 2",
    ];
    for from in froms {
        for key in keys {
            for w in wheres {
                same(
                    hot,
                    engine,
                    &format!("SHOW TAG VALUES {from}{key}{w}"),
                    true,
                );
            }
            for p in pages {
                same(
                    hot,
                    engine,
                    &format!("SHOW TAG VALUES {from}{key}{p}"),
                    true,
                );
                let q = format!("SHOW TAG VALUES {from}{key} WHERE region != 'x'{p}");
                same(hot, engine, &q, true);
            }
        }
    }
    // A field condition reads points: the engine's.
    same(
        hot,
        engine,
        "SHOW TAG VALUES FROM cpu WITH KEY = host WHERE f > 1",
        false,
    );
    // Written now and shown at once.
    // (In the window of `cpu`'s refill under `hold = "read"`: a new series
    // before it is the engine's alone.)
    for s in [hot, engine] {
        write(
            s,
            "tv",
            &format!("cpu,host=fresh f=1 {}", T0 + 6 * 3600 * S + 99 * S),
        );
    }
    same(
        hot,
        engine,
        "SHOW TAG VALUES FROM cpu WITH KEY = host",
        true,
    );
    same(
        hot,
        engine,
        "SHOW TAG VALUES FROM cpu WITH KEY = host WHERE host =~ /^fr/",
        true,
    );
    // A DROP SERIES removes what the store cannot tell: the engine answers.
    for s in [hot, engine] {
        let r = s
            .client
            .post(s.url("/query"))
            .query(&[
                ("db", "tv"),
                ("q", "DROP SERIES FROM cpu WHERE host = 'h2'"),
            ])
            .send()
            .unwrap();
        let v: serde_json::Value = r.json().unwrap();
        assert!(v["results"][0].get("error").is_none(), "{v}");
    }
    same(
        hot,
        engine,
        "SHOW TAG VALUES FROM cpu WITH KEY = host",
        false,
    );
    same(
        hot,
        engine,
        "SHOW TAG VALUES FROM mem WITH KEY = host",
        true,
    );
}
