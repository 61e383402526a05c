//! Shared string cells (`shared.rs`) render as the cells did before: an
//! answer whose rows share their tag strings gives the bytes of the same
//! answer with every string its own copy (which the copying never touches),
//! over escapes, unicode, empty strings, nulls, big integers, floats, several
//! series, a series past the buffer's hand-on mark, and every format.

use std::sync::Arc;

use storage::influxql::series::{Series, StatementResult, Value};

use super::shared::SharedCells;
use super::*;

/// Strings a tag or a field may hold that JSON escapes or Go treats apart
/// (shared with `packed_tests.rs`).
pub(super) const TRICKY: [&str; 10] = [
    "",
    "plain",
    "quote \" and back\\slash",
    "<html> & co",
    "line\nbreak\ttab\rcr",
    "\u{1}\u{1f} controls",
    "\u{2028}\u{2029} separators",
    "日本語 ünïcödé 🙂",
    "host_7",
    "us-west-1",
];

/// `rows` rows of `name` with tag cells shared down the series (one `Arc`
/// per tag), a string field alternating between two shared strings and a
/// fresh one, and numbers, booleans and nulls around them.
fn series(name: &str, seed: usize, rows: usize) -> Series {
    let tags: Vec<Value> = (0..4)
        .map(|k| Value::String(Arc::from(TRICKY[(seed + k * 3) % TRICKY.len()])))
        .collect();
    let (a, b) = (
        Value::String(Arc::from(TRICKY[(seed + 2) % TRICKY.len()])),
        Value::String(Arc::from(TRICKY[(seed + 5) % TRICKY.len()])),
    );
    let values = (0..rows)
        .map(|i| {
            let mut row = vec![Value::Time(
                1_451_606_400_000_000_000 + i as i64 * 10_000_000_000,
            )];
            row.extend(tags.iter().cloned());
            row.push(match i % 4 {
                0 | 1 => a.clone(),
                2 => b.clone(),
                // The same text in a string of its own.
                _ => Value::String(Arc::from(TRICKY[(seed + 2) % TRICKY.len()])),
            });
            row.push(if i % 5 == 0 {
                Value::Null
            } else {
                tags[1].clone()
            });
            row.push(Value::Integer(if i % 2 == 0 {
                i64::MAX
            } else {
                i64::MIN + i as i64
            }));
            row.push(Value::Unsigned(u64::MAX - i as u64));
            row.push(Value::Float([0.1, -0.0, 1e21, 90.5, 1e-7][i % 5]));
            row.push(Value::Boolean(i % 3 == 0));
            row
        })
        .collect();
    let columns = [
        "time", "arch", "host", "os", "rack", "s", "t", "i", "u", "f", "b",
    ];
    let mut s = Series::untagged(name, &columns, values);
    s.tags = vec![("host".into(), TRICKY[seed % TRICKY.len()].into())];
    s
}

/// The same answer with every string cell a copy of its own.
fn unshared(a: &StatementResult) -> StatementResult {
    let mut a = a.clone();
    for s in &mut a.series {
        for row in &mut s.values {
            for v in row.iter_mut() {
                if let Value::String(text) = v {
                    *v = Value::String(Arc::from(&**text));
                }
            }
        }
    }
    a
}

/// Every output format a renderer test compares: RFC3339 and `epoch=`
/// times, `pretty`, chunked with and without a size.
pub(super) fn every_format() -> [Format; 6] {
    [
        Format::from_params(None, None, None, None),
        Format::from_params(Some("ns"), None, None, None),
        Format::from_params(Some("ms"), None, None, None),
        Format::from_params(None, Some("true"), None, None),
        Format::from_params(Some("ns"), None, Some("true"), Some("7")),
        Format::from_params(None, None, Some("true"), None),
    ]
}

/// `a` as `/query` writes it in `format` (shared with `packed_tests.rs`).
pub(super) fn rendered(a: &StatementResult, format: Format) -> Vec<u8> {
    let answered = [Answered {
        result: Ok(a.clone()),
        chunking: Chunking::Rows,
        zone: None,
    }];
    write_statements(Vec::new(), format, &answered).unwrap()
}

#[test]
fn shared_string_cells_render_as_copies_do() {
    // Several series, one long enough (~250 bytes a row) to cross the
    // buffer's hand-on mark more than once.
    let a = StatementResult::of(vec![
        series("cpu", 0, 7),
        series("cpu", 1, 1),
        series("cpu", 4, 1_200),
        series("mem", 7, 33),
    ]);
    let copies = unshared(&a);
    let formats = [
        Format::from_params(None, None, None, None),
        Format::from_params(Some("ms"), None, None, None),
        Format::from_params(None, Some("true"), None, None),
        Format::from_params(None, None, Some("true"), Some("5")),
    ];
    for format in formats {
        let (now, before) = (rendered(&a, format), rendered(&copies, format));
        assert!(now.len() > 64 * 1024 || format.chunk_size.is_some() || format.epoch.is_some());
        assert_eq!(
            String::from_utf8(now).unwrap(),
            String::from_utf8(before).unwrap(),
            "{format:?}"
        );
    }
    // And as Go escapes them, for one row.
    let one = StatementResult::of(vec![series("cpu", 2, 1)]);
    let body = String::from_utf8(rendered(&one, formats[0])).unwrap();
    assert!(
        body.contains(
            "[\"2016-01-01T00:00:00Z\",\"quote \\\" and back\\\\slash\",\"\\u0001\\u001f controls\",\"host_7\",\"plain\",\"line\\nbreak\\ttab\\rcr\",null,"
        ),
        "{body}"
    );
}

/// A cell holding the string its column's last cell held is copied from the
/// buffer, not escaped again; an equal string of its own, another column, or
/// a cell after `forget` is escaped anew.
#[test]
fn a_repeated_string_is_copied_from_where_it_was_written() {
    let tag: Arc<str> = Arc::from("<a>");
    let mut cells = SharedCells::default();
    let mut buf = Vec::new();
    cells.write(&mut buf, 3, &tag);
    assert_eq!(buf, b"\"\\u003ca\\u003e\"");
    // Marks the first copy: a second write of the same string copies it.
    buf[2] = b'U';
    buf.push(b',');
    cells.write(&mut buf, 3, &tag);
    assert_eq!(buf, b"\"\\U003ca\\u003e\",\"\\U003ca\\u003e\"");
    // Forgotten: nothing is copied from where the cleared buffer was.
    buf.clear();
    cells.forget();
    cells.write(&mut buf, 3, &tag);
    buf[2] = b'U';
    cells.write(&mut buf, 0, &tag);
    let equal: Arc<str> = Arc::from("<a>");
    cells.write(&mut buf, 3, &equal);
    assert_eq!(
        buf,
        b"\"\\U003ca\\u003e\"\"\\u003ca\\u003e\"\"\\u003ca\\u003e\""
    );
}

/// Cells that repeat the row before's strings side by side are copied as one
/// span, commas included; the run stops at a cell that is another string, a
/// string of another column before, or not where the row before had it.
#[test]
fn a_run_of_repeated_strings_is_copied_at_once() {
    let (a, b): (Arc<str>, Arc<str>) = (Arc::from("<a>"), Arc::from("b\n"));
    let row = [Value::String(a.clone()), Value::String(b.clone())];
    let mut cells = SharedCells::default();
    let mut buf = Vec::new();
    // A row's first time: written cell by cell.
    assert_eq!(cells.write_run(&mut buf, 1, &row), 1);
    buf.push(b',');
    assert_eq!(cells.write_run(&mut buf, 2, &row[1..]), 1);
    assert_eq!(buf, b"\"\\u003ca\\u003e\",\"b\\n\"");
    // Marks both cells: the next row copies the marks.
    let len = buf.len();
    (buf[2], buf[len - 2]) = (b'U', b'N');
    buf.extend_from_slice(b"],[");
    assert_eq!(cells.write_run(&mut buf, 1, &row), 2);
    assert!(buf.ends_with(b"],[\"\\U003ca\\u003e\",\"b\\N\""), "{buf:?}");
    // The run's new place is where the next copy comes from.
    let at = buf.len() - len;
    buf[at + 3] = b'V';
    buf.extend_from_slice(b"],[");
    assert_eq!(cells.write_run(&mut buf, 1, &row), 2);
    assert!(buf.ends_with(b"],[\"\\UV03ca\\u003e\",\"b\\N\""));
    // Another string of the same text in the second column: only the
    // first cell repeats.
    buf.extend_from_slice(b"],[");
    let other = [Value::String(a.clone()), Value::String(Arc::from("b\n"))];
    assert_eq!(cells.write_run(&mut buf, 1, &other), 1);
    assert!(buf.ends_with(b"],[\"\\UV03ca\\u003e\""));
    // A cell that is not a string ends the run before it.
    let mixed = [Value::String(a), Value::Null];
    assert_eq!(cells.write_run(&mut buf, 1, &mixed), 1);
}
