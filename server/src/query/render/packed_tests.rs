//! Packed rows (`packed.rs`) render as the same rows plain do (`Packed::rows`,
//! through the plain rows' renderer): several sources interleaved, fixed
//! cells that are tricky strings or nulls, runs of them between field
//! columns, every field type with nulls, floats Go writes apart, big
//! integers, a series past the buffer's hand-on mark, several series, and
//! every format (RFC3339 and `epoch=` times, `pretty`, chunks that cut a
//! series).

use std::sync::Arc;

use storage::influxql::series::{
    FieldCells, FieldColumn, Packed, Series, Slot, Source, StatementResult, Value,
};

use super::shared_tests::{every_format, rendered, TRICKY};
use super::*;

/// `rows` rows from `sources` sources taking turns irregularly: a fixed run
/// of two, a float field, a fixed cell, integer, unsigned, boolean and
/// string fields, a run of three fixed cells at the end.
// The exact values are the point: `…623.25` is a float halfway (Go's tie).
#[allow(clippy::excessive_precision)]
fn packed(seed: usize, sources: usize, rows: usize) -> Packed {
    let slots = vec![
        Slot::Fixed(0),
        Slot::Fixed(1),
        Slot::Field(0),
        Slot::Fixed(2),
        Slot::Field(1),
        Slot::Field(2),
        Slot::Field(3),
        Slot::Field(4),
        Slot::Fixed(3),
        Slot::Fixed(4),
        Slot::Fixed(5),
    ];
    let sources = (0..sources)
        .map(|s| Source {
            fixed: (0..6)
                .map(|k| match (seed + s * 7 + k) % 11 {
                    // A tag the series lacks, a field it lacks.
                    9 | 10 => Value::Null,
                    n => Value::String(Arc::from(TRICKY[n % TRICKY.len()])),
                })
                .collect(),
        })
        .collect::<Vec<_>>();
    let n = sources.len();
    let valid = |k: usize| {
        (0..rows)
            .map(|i| !(i + k + seed).is_multiple_of(7))
            .collect()
    };
    let floats = [
        0.1,
        -0.0,
        1e21,
        90.5,
        1e-7,
        1.5e-6,
        596967909447623.25,
        f64::NAN,
    ];
    Packed {
        slots,
        sources,
        times: (0..rows)
            .map(|i| 1_451_606_400_000_000_000 + i as i64 * 1_500_000_001 - 7)
            .collect(),
        source_of: (0..rows).map(|i| ((i * i + seed) % n) as u32).collect(),
        fields: vec![
            FieldColumn {
                cells: FieldCells::Float((0..rows).map(|i| floats[i % floats.len()]).collect()),
                valid: valid(0),
            },
            FieldColumn {
                cells: FieldCells::Integer(
                    (0..rows)
                        .map(|i| match i % 3 {
                            0 => i64::MAX,
                            1 => i64::MIN,
                            // -50 to ~1,450: one to four digits, signs.
                            _ => i as i64 - 50,
                        })
                        .collect(),
                ),
                valid: valid(1),
            },
            FieldColumn {
                cells: FieldCells::Unsigned(
                    (0..rows)
                        .map(|i| match i % 2 {
                            0 => u64::MAX - i as u64,
                            // 0–299: one, two and three digits, past `u8`.
                            _ => (i % 300) as u64,
                        })
                        .collect(),
                ),
                valid: valid(2),
            },
            FieldColumn {
                cells: FieldCells::Boolean((0..rows).map(|i| i % 3 == 0).collect()),
                valid: valid(3),
            },
            FieldColumn {
                cells: FieldCells::String(
                    (0..rows)
                        .map(|i| Arc::from(TRICKY[(i + seed) % TRICKY.len()]))
                        .collect(),
                ),
                valid: valid(4),
            },
        ],
    }
}

fn series(name: &str, seed: usize, sources: usize, rows: usize) -> Series {
    let columns = [
        "time", "a", "b", "f", "c", "i", "u", "t", "s", "d", "e", "g",
    ];
    let mut s = Series::untagged(name, &columns, Vec::new());
    s.tags = vec![("host".into(), TRICKY[seed % TRICKY.len()].into())];
    s.packed = Some(Box::new(packed(seed, sources, rows)));
    s
}

/// The same answer with every row plain.
fn plain(a: &StatementResult) -> StatementResult {
    let mut a = a.clone();
    for s in &mut a.series {
        s.unpack();
        assert!(s.packed.is_none() && !s.values.is_empty());
    }
    a
}

#[test]
fn packed_rows_render_as_their_plain_rows() {
    let a = StatementResult::of(vec![
        series("cpu", 0, 1, 1),
        series("cpu", 1, 3, 17),
        // ~200 bytes a row: crosses the buffer's hand-on mark.
        series("cpu", 4, 5, 1_500),
        series("mem", 7, 2, 33),
    ]);
    let before = plain(&a);
    for format in every_format() {
        let (now, then) = (rendered(&a, format), rendered(&before, format));
        assert!(now.len() > 64 * 1024, "{format:?}: {} bytes", now.len());
        assert_eq!(
            String::from_utf8(now).unwrap(),
            String::from_utf8(then).unwrap(),
            "{format:?}"
        );
    }
}

/// A series of more than 10,000 rows is flagged `"partial":true` even
/// unchunked, and counts its packed rows towards the rendered-at-once limit.
#[test]
fn a_long_packed_series_is_flagged_and_streamed_as_plain_rows_are() {
    let a = StatementResult::of(vec![series("cpu", 3, 4, DEFAULT_CHUNK_SIZE + 1)]);
    let before = plain(&a);
    let format = Format::from_params(Some("ns"), None, None, None);
    let now = rendered(&a, format);
    assert!(String::from_utf8_lossy(&now).contains("\"partial\":true"));
    assert_eq!(now, rendered(&before, format));
    let answered = |a: &StatementResult| {
        vec![Answered {
            result: Ok(a.clone()),
            chunking: Chunking::Rows,
            zone: None,
        }]
    };
    assert!(small(&answered(&a)).is_none());
    assert_eq!(small(&answered(&a)), small(&answered(&before)));
}

/// An answer rendered at once into one buffer (`render_at_once`, what
/// `respond` sends with a `Content-Length`) is the bytes written a piece at
/// a time (`write_statements`): packed and plain rows, past the buffer's
/// hand-on mark, several statements and a failed one, every format.
#[test]
fn an_answer_rendered_at_once_is_the_bytes_written_a_piece_at_a_time() {
    let a = StatementResult::of(vec![series("cpu", 1, 3, 17), series("cpu", 4, 5, 1_500)]);
    let results = [
        Answered {
            result: Ok(a.clone()),
            chunking: Chunking::Rows,
            zone: None,
        },
        Answered {
            result: Ok(plain(&a)),
            chunking: Chunking::Rows,
            zone: None,
        },
        Answered {
            result: Err("a failure".into()),
            chunking: Chunking::Rows,
            zone: None,
        },
    ];
    let formats = [
        Format::from_params(None, None, None, None),
        Format::from_params(Some("ns"), None, None, None),
        Format::from_params(None, Some("true"), None, None),
        Format::from_params(Some("ns"), None, Some("true"), Some("7")),
    ];
    for format in formats {
        for n in [0, 1, 3] {
            let at_once = render_at_once(format, &results[..n]).unwrap();
            let pieces = write_statements(Vec::new(), format, &results[..n]).unwrap();
            assert!(n < 2 || at_once.len() > 2 * 64 * 1024, "{format:?}");
            assert!(at_once == pieces, "{format:?}, {n} statements");
        }
    }
}
