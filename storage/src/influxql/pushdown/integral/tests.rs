//! The shards' integral statement ([`integral_sql`]) run by the embedded engine (ClickHouse
//! 26.7, the newer servers' engine) over generated series, against `integral.rs`'s
//! `integrate`: every window's integral equal bit for bit. The cluster tests
//! (`server/tests/http/cluster_integral.rs`) check the same against 18.16 shards.

use engine::OutputFormat;

use super::*;
use crate::influxql::integral::integrate;
use crate::influxql::pushdown::tests::{engine_bytes, engine_text, Gen};

/// One series' points of `v` (float) and `n` (integer), times ascending and distinct.
fn series(g: &mut Gen) -> Vec<(i64, Option<f64>, Option<i64>)> {
    let mut t = (g.next() % 40) as i64 - 20;
    let mut out = Vec::new();
    for _ in 0..(g.next() % 9) {
        // Steps that land on window starts, inside windows and across empty ones.
        t += [1, 3, 7, 10, 20, 35][(g.next() % 6) as usize];
        let v = match g.next() % 5 {
            0 => None,
            1 => Some(-0.0),
            _ => Some((g.next() % 2000) as f64 / 7.0 - 100.3),
        };
        let n = (!g.next().is_multiple_of(4)).then(|| (g.next() % 1000) as i64 - 500);
        out.push((t, v, n));
    }
    out
}

fn sql_text(v: Option<f64>) -> String {
    v.map_or("NULL".into(), |v| format!("{v:?}"))
}

#[test]
fn the_engine_integrates_each_series_as_the_rows_path_bit_for_bit() {
    let fields = [
        FieldUse {
            name: "v".into(),
            kind: ColumnKind::Float,
            values: true,
        },
        FieldUse {
            name: "n".into(),
            kind: ColumnKind::Integer,
            values: true,
        },
    ];
    let calls = [
        IntegralCall {
            field: 0,
            unit: 1,
            integer: false,
        },
        IntegralCall {
            field: 0,
            unit: 7,
            integer: false,
        },
        IntegralCall {
            field: 1,
            unit: 3,
            integer: true,
        },
    ];
    let grids = [
        None,
        Some(Grid {
            interval: 10,
            offset: 0,
        }),
        Some(Grid {
            interval: 15,
            offset: 4,
        }),
    ];
    let mut g = Gen(43);
    for round in 0..40 {
        let all: Vec<_> = (0..6).map(|_| series(&mut g)).collect();
        let mut rows = Vec::new();
        for (s, points) in all.iter().enumerate() {
            for (t, v, n) in points {
                let n = n.map_or("NULL".into(), |n| n.to_string());
                rows.push(format!("({s}, {t}, 'h{s}', {}, {n}, 0)", sql_text(*v)));
            }
        }
        if rows.is_empty() {
            continue;
        }
        let points = format!(
            "SELECT * FROM values('__sid UInt64, __t Int64, __k0 String, \
             __v0 Nullable(Float64), __v1 Nullable(Int64), __ms UInt64', {})",
            rows.join(", ")
        );
        for grid in grids {
            let sql = integral_sql(&points, &[true], &fields, &calls, grid);
            let named = format!(
                "SELECT __p0 AS k0, toUInt64(__p1) AS c, __p2 AS w, __p3 AS v, __p4 AS ms \
                 FROM ({sql})"
            );
            let answer = engine_bytes(&named, OutputFormat::ArrowStream);
            let mut got: BTreeMap<Vec<String>, Emitted> = BTreeMap::new();
            let mut cursor = std::io::Cursor::new(answer.as_slice());
            while (cursor.position() as usize) < answer.len() {
                let reader =
                    engine::arrow::ipc::reader::StreamReader::try_new(&mut cursor, None).unwrap();
                for b in reader {
                    read_rows(&b.unwrap(), 1, calls.len(), &mut got).unwrap();
                }
            }
            for e in got.values_mut().flat_map(|e| e.iter_mut()) {
                e.sort_unstable_by_key(|(w, _)| *w);
            }
            let windows = grid.map(|w| Windows {
                interval: w.interval,
                offset: w.offset,
                zone: None,
            });
            let mut want: BTreeMap<Vec<String>, Emitted> = BTreeMap::new();
            for (s, points) in all.iter().enumerate() {
                let emitted: Emitted = calls
                    .iter()
                    .map(|c| {
                        let values = points.iter().filter_map(|(t, v, n)| match c.field {
                            0 => v.map(|v| (*t, v)),
                            _ => n.map(|n| (*t, n as f64)),
                        });
                        integrate(values, c.unit, c.integer, windows.as_ref())
                    })
                    .collect();
                if emitted.iter().any(|e| !e.is_empty()) {
                    want.insert(vec![format!("h{s}")], emitted);
                }
            }
            let bits = |m: &BTreeMap<Vec<String>, Emitted>| {
                m.iter()
                    .map(|(k, e)| {
                        let e: Vec<Vec<(i64, u64)>> = e
                            .iter()
                            .map(|r| r.iter().map(|(w, v)| (*w, v.to_bits())).collect())
                            .collect();
                        (k.clone(), e)
                    })
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                bits(&got),
                bits(&want),
                "round {round}, {grid:?}: {all:?}\n{got:?}\n{want:?}"
            );
        }
    }
}

/// The property the statement rests on: `arraySum` of `Float64`s adds them one after the
/// other, also over long arrays (no partial sums in parallel lanes): `1e16 + 1` rounds back
/// to `1e16`, so in order a thousand ones after it add nothing, where lanes would add their
/// own ones first. 26.7 starts from the first element (`arraySum([-0.])` is `-0`, where
/// `integrate`'s `0.0 + -0.0` is `0.0`): the statement's `0. +` makes it `0`.
#[test]
fn the_engine_s_array_sum_adds_in_order() {
    let sql = "SELECT toString(arraySum(arrayConcat([1e16], arrayMap(x -> 1., range(999))))), \
               toString(arraySum(arrayConcat([1e100], arrayMap(x -> 1., range(31)), [-1e100]))), \
               toString(arraySum([-0.])), toString(0. + arraySum([-0., -0.]))";
    assert_eq!(engine_text(sql), "10000000000000000\t0\t-0\t0\n");
}
