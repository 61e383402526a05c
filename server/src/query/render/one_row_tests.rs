//! One-row series side by side (`Series::one_row`, a last-point answer)
//! render as the same series plain (`series::plain`): tags with tricky
//! text, a tag a series lacks, keys given out of order, every cell type and
//! null, carriers between plain and packed series, several names, and every
//! format and chunking (RFC3339 and `epoch=` times, `pretty`, chunks by
//! series and by rows, rendered at once or a piece at a time).

use std::sync::Arc;

use storage::influxql::series::{plain, OneRowSeries, Series, StatementResult, Value};

use super::shared_tests::{every_format, rendered, TRICKY};
use super::*;

/// `n` one-row series of `name` grouped by `keys`, each row a time and a
/// cell of every type (a null among them now and then).
// The exact values are the point: `…623.25` is a float halfway (Go's tie).
#[allow(clippy::excessive_precision)]
fn carrier(name: &str, keys: &[&str], seed: usize, n: usize) -> Series {
    let columns = ["time", "f", "i", "u", "b", "s", "t"];
    let floats = [0.1, -0.0, 1e21, 90.5, 1e-7, 596967909447623.25];
    let mut tag_values = Vec::new();
    let mut cells = Vec::new();
    for i in 0..n {
        for k in 0..keys.len() {
            // Now and then a tag the series lacks (`""`).
            tag_values.push(Arc::from(TRICKY[(seed + i * 3 + k) % TRICKY.len()]));
        }
        let null = |c: usize| (i + c + seed).is_multiple_of(5);
        let or_null = |c: usize, v: Value| if null(c) { Value::Null } else { v };
        cells.push(Value::Time(
            1_451_606_400_000_000_000 + i as i64 * 1_500_000_001 - 7,
        ));
        cells.push(or_null(0, Value::Float(floats[i % floats.len()])));
        cells.push(or_null(
            1,
            Value::Integer(if i % 2 == 0 { i64::MIN } else { i as i64 - 50 }),
        ));
        cells.push(or_null(2, Value::Unsigned(u64::MAX - i as u64)));
        cells.push(or_null(3, Value::Boolean(i % 3 == 0)));
        cells.push(or_null(
            4,
            Value::String(Arc::from(TRICKY[(i + seed) % TRICKY.len()])),
        ));
        cells.push(or_null(5, Value::String(Arc::from("host_1"))));
    }
    let mut s = Series::untagged(name, &columns, Vec::new());
    s.one_row = Some(Box::new(OneRowSeries::from_values(
        keys.iter().map(|k| k.to_string()).collect(),
        tag_values,
        cells,
        columns.len(),
    )));
    s
}

fn plain_answer(a: &StatementResult) -> StatementResult {
    let p = StatementResult {
        series: plain(a.series.clone()),
        messages: a.messages.clone(),
    };
    assert!(p
        .series
        .iter()
        .all(|s| s.one_row.is_none() && s.packed.is_none()));
    p
}

fn answer() -> StatementResult {
    let mut ordinary = Series::untagged(
        "cpu",
        &["time", "v"],
        vec![vec![Value::Time(7), Value::Integer(1)]],
    );
    ordinary.tags = vec![("host".into(), "a".into())];
    StatementResult::of(vec![
        carrier("cpu", &["host"], 0, 3),
        ordinary,
        // ~150 bytes a series: crosses the buffer's hand-on mark.
        carrier("cpu", &["host", "region"], 1, 1_000),
        // Keys out of order: written sorted, as Go writes a map.
        carrier("mem", &["region", "host"], 2, 17),
        // Grouped by nothing: no `tags` object.
        carrier("mem", &[], 3, 2),
        // A name and keys to escape, each written once for every series
        // (`render/one_row.rs`).
        carrier(
            "m\"<é>\u{2028}",
            &["a&\"k", "b\\\u{1}", "c\u{2029}日"],
            4,
            5,
        ),
    ])
}

#[test]
fn one_row_series_render_as_their_plain_series() {
    let a = answer();
    let before = plain_answer(&a);
    assert_eq!(before.series.len(), 3 + 1 + 1_000 + 17 + 2 + 5);
    for format in every_format() {
        for chunking in [Chunking::Rows, Chunking::Series, Chunking::Whole] {
            let answered = |a: &StatementResult| {
                [Answered {
                    result: Ok(a.clone()),
                    chunking,
                    zone: None,
                }]
            };
            let now = write_statements(Vec::new(), format, &answered(&a)).unwrap();
            let then = write_statements(Vec::new(), format, &answered(&before)).unwrap();
            assert!(now.len() > 64 * 1024, "{format:?}: {} bytes", now.len());
            assert_eq!(
                String::from_utf8(now).unwrap(),
                String::from_utf8(then).unwrap(),
                "{format:?}, {chunking:?}"
            );
        }
        assert_eq!(rendered(&a, format), rendered(&before, format));
    }
}

/// Rendered at once (what `respond` sends with a `Content-Length`) as a
/// piece at a time, and counted as the cells of its series.
#[test]
fn one_row_series_rendered_at_once_are_the_bytes_written_a_piece_at_a_time() {
    let a = answer();
    let results = [Answered {
        result: Ok(a.clone()),
        chunking: Chunking::Rows,
        zone: None,
    }];
    let plain_results = [Answered {
        result: Ok(plain_answer(&a)),
        chunking: Chunking::Rows,
        zone: None,
    }];
    assert_eq!(small(&results), small(&plain_results));
    assert!(small(&results).is_some_and(|cells| cells > 1_000 * 7));
    for format in [
        Format::from_params(None, None, None, None),
        Format::from_params(Some("ns"), None, None, None),
        Format::from_params(None, Some("true"), None, None),
    ] {
        let at_once = render_at_once(format, &results).unwrap();
        let pieces = write_statements(Vec::new(), format, &results).unwrap();
        assert!(at_once == pieces, "{format:?}");
        assert_eq!(at_once, render_at_once(format, &plain_results).unwrap());
    }
}
