//! [`value`] over partial sums added in any order, against the embedded engine's own
//! `if(count(x) < 2, NULL, stddevSamp(x))` (`agg.rs`) over generated integers: equal bit for
//! bit. The cluster tests (`server/tests/http/cluster_stddev.rs`) check the same through
//! 18.16 shards.

use super::*;
use crate::influxql::pushdown::tests::{engine_text, Gen};

#[test]
fn partial_sums_in_any_order_give_the_engine_s_stddev_bit_for_bit() {
    let mut g = Gen(43);
    let mut rows = Vec::new();
    let mut want_lines = Vec::new();
    for group in 0..300u32 {
        // Magnitudes from single digits to 10⁷ (squares near 2⁵³ over a few dozen values).
        let scale = [10, 1_000, 100_000, 10_000_000][(g.next() % 4) as usize] as u64;
        let len = g.next() % 40;
        let values: Vec<Option<i64>> = (0..len)
            .map(|_| {
                (!g.next().is_multiple_of(5))
                    .then(|| (g.next() % (2 * scale)) as i64 - scale as i64)
            })
            .collect();
        for v in &values {
            let v = v.map_or("NULL".into(), |v| v.to_string());
            rows.push(format!("({group}, {v})"));
        }
        // The values over up to 4 shards, each adding in its own order, the node adding
        // the shards' sums in yet another.
        let mut parts: Vec<(u64, f64, f64)> = vec![(0, 0.0, 0.0); 1 + (g.next() % 4) as usize];
        let mut shuffled: Vec<i64> = values.iter().flatten().copied().collect();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, (g.next() % (i as u64 + 1)) as usize);
        }
        for x in shuffled {
            let part = (g.next() % parts.len() as u64) as usize;
            let x = x as f64;
            parts[part].0 += 1;
            parts[part].1 += x;
            parts[part].2 += x * x;
        }
        let (mut n, mut m1, mut m2) = (0, None::<f64>, None::<f64>);
        for (pn, p1, p2) in parts.iter().rev() {
            n += pn;
            m1 = Some(m1.unwrap_or(0.0) + p1);
            m2 = Some(m2.unwrap_or(0.0) + p2);
        }
        let got = match value(n, m1, m2).unwrap() {
            Value::Float(f) => f.to_bits().to_string(),
            Value::Null => "\\N".to_string(),
            other => panic!("{other:?}"),
        };
        want_lines.push(format!("{group}\t{got}"));
    }
    let sql = format!(
        "SELECT g, if(count(x) < 2, NULL, reinterpretAsUInt64(stddevSamp(x))) \
         FROM values('g UInt32, x Nullable(Int64)', {}) GROUP BY g ORDER BY g",
        rows.join(", ")
    );
    let engine: Vec<String> = engine_text(&sql).lines().map(str::to_string).collect();
    // Groups without a row at all are absent from the engine's answer.
    let present: std::collections::HashSet<&str> =
        engine.iter().filter_map(|l| l.split('\t').next()).collect();
    let ours: Vec<String> = want_lines
        .into_iter()
        .filter(|l| present.contains(l.split('\t').next().unwrap()))
        .collect();
    assert_eq!(ours, engine);
}

#[test]
fn a_stddev_of_one_value_is_null_and_inexact_sums_are_refused() {
    assert_eq!(value(0, None, None).unwrap(), Value::Null);
    assert_eq!(value(1, Some(-5.0), Some(25.0)).unwrap(), Value::Null);
    // Equal values: 0, not a tiny negative variance's NaN.
    assert_eq!(
        value(3, Some(21.0), Some(147.0)).unwrap(),
        Value::Float(0.0)
    );
    // 2⁵³ itself may be a rounded sum: refused.
    let limit = 9_007_199_254_740_992.0;
    assert!(matches!(
        value(2, Some(0.0), Some(limit)),
        Err(CombineError::Inexact)
    ));
    assert!(value(2, Some(0.0), Some(limit - 1.0)).is_ok());
    assert!(matches!(
        value(2, Some(0.0), Some(f64::NAN)),
        Err(CombineError::Inexact)
    ));
}
