//! Read-your-writes on the hot path (issue #44): every round writes one point
//! and reads it back from the hot store at once, exactly, merged field by
//! field with what it rewrites. A third of the rounds rewrite a point written
//! before (same series and time, one or both fields changed); every 100th
//! round reads every held point of every series back, raw.
//!
//! Rounds: `CHINGEST_TEST_HOT_RYW_ROUNDS` (default 1,000: 11 s alone on the
//! 2-core machine, debug build; 85 s beside the other hot tests and a release
//! build, load average 11).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::hot::{ask, metric, Rng, ON, S, T0};
use crate::read_your_writes::write;
use crate::util::{data_dir, Spawn};

/// Per host: time -> (f, i), as the field-by-field merge leaves them.
type Points = BTreeMap<i64, (Option<i64>, Option<i64>)>;

const HOSTS: u64 = 3;
/// Times per host: 600 slots of 1 s, so new points land among old ones too.
const SLOTS: u64 = 600;

fn rounds() -> usize {
    std::env::var("CHINGEST_TEST_HOT_RYW_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

/// Numbers as f64 on both sides: JSON prints a float of 12.0 as 12.
fn norm(x: &Value) -> Value {
    x.as_f64().map_or(x.clone(), Value::from)
}

fn num(x: Option<i64>) -> Value {
    x.map_or(Value::Null, Value::from)
}

/// The first row of `q`'s first series, numbers normalised, asserting the
/// hot store answered.
fn hot_rows(s: &crate::util::Server, q: &str, round: usize) -> Vec<Vec<Value>> {
    let (status, v, path) = ask(s, "rw", q);
    assert_eq!(
        (status, path.as_str()),
        (200, "hot"),
        "round {round}: {q}: {v}"
    );
    v["results"][0]["series"][0]["values"]
        .as_array()
        .unwrap_or_else(|| panic!("round {round}: {q}: {v}"))
        .iter()
        .map(|r| r.as_array().unwrap().iter().map(norm).collect())
        .collect()
}

#[test]
fn hot_store_reads_its_writes_exactly() {
    let d = data_dir();
    let s = Spawn::new(d.path()).config(ON).start();
    s.query("CREATE DATABASE rw");
    let mut held: Vec<Points> = vec![Default::default(); HOSTS as usize];
    let mut rng = Rng(44);
    let started = Instant::now();
    let (mut rewrites, n) = (0usize, rounds());
    for round in 0..n {
        let h = rng.below(HOSTS) as usize;
        // A third of the rounds rewrite a point this host has, the others pick
        // a slot at random (which may hold a point too).
        let rewrite = round % 3 == 2 && !held[h].is_empty();
        let t = if rewrite {
            let k = rng.below(held[h].len() as u64) as usize;
            *held[h].keys().nth(k).unwrap()
        } else {
            T0 + rng.below(SLOTS) as i64 * S
        };
        let (f, i) = (rng.below(100) as i64, rng.below(100) as i64);
        // Some writes carry one field only: it overwrites that one.
        let (line, fv, iv) = match rng.below(5) {
            0 => (format!("rw,host=h{h} f={f} {t}"), Some(f), None),
            1 => (format!("rw,host=h{h} i={i}i {t}"), None, Some(i)),
            _ => (format!("rw,host=h{h} f={f},i={i}i {t}"), Some(f), Some(i)),
        };
        rewrites += usize::from(held[h].contains_key(&t));
        write(&s, "rw", &line);
        let e = held[h].entry(t).or_default();
        e.0 = fv.or(e.0);
        e.1 = iv.or(e.1);
        let want_point = (e.0, e.1);

        // The point itself, merged.
        let q = format!("SELECT f, i FROM rw WHERE host = 'h{h}' AND time = {t}");
        let want = [Value::from(t), num(want_point.0), num(want_point.1)];
        let want: Vec<Value> = want.iter().map(norm).collect();
        assert_eq!(hot_rows(&s, &q, round), vec![want], "round {round}: {line}");

        // Aggregates over the host's whole range.
        let q = format!(
            "SELECT count(f), sum(f), max(i), last(i) FROM rw WHERE host = 'h{h}' \
             AND time >= {T0} AND time < {}",
            T0 + SLOTS as i64 * S
        );
        let fs: Vec<i64> = held[h].values().filter_map(|p| p.0).collect();
        let is: Vec<i64> = held[h].values().filter_map(|p| p.1).collect();
        let want = [
            Value::from(T0),
            if fs.is_empty() {
                Value::Null
            } else {
                Value::from(fs.len())
            },
            if fs.is_empty() {
                Value::Null
            } else {
                Value::from(fs.iter().sum::<i64>() as f64)
            },
            num(is.iter().copied().max()),
            num(is.last().copied()),
        ];
        let want: Vec<Value> = want.iter().map(norm).collect();
        assert_eq!(hot_rows(&s, &q, round), vec![want], "round {round}: {q}");

        // Now and then every held point of every host, raw.
        if round % 100 == 99 || round + 1 == n {
            for (h, points) in held.iter().enumerate() {
                let q = format!("SELECT f, i FROM rw WHERE host = 'h{h}' AND time >= 0");
                if points.is_empty() {
                    continue;
                }
                let want: Vec<Vec<Value>> = points
                    .iter()
                    .map(|(t, p)| vec![Value::from(*t), num(p.0), num(p.1)])
                    .map(|r| r.iter().map(norm).collect())
                    .collect();
                assert_eq!(hot_rows(&s, &q, round), want, "round {round}: {q}");
            }
        }
    }
    eprintln!(
        "{n} rounds ({rewrites} rewrites) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(rewrites >= n / 4, "too few rewrites: {rewrites} of {n}");
    assert!(started.elapsed() < Duration::from_secs(900));
    assert!(metric(&s, "chingest_hot_values") > 0.0);
}
