//! Spec tests: every line-protocol rule, with InfluxDB 1.x's exact reason strings.

use ingest::line_protocol::{parse_lines, parse_lines_parallel};
use ingest::{FieldValue, ParsedBatch, Precision};

use crate::util::NOW;

fn one(line: &str) -> ParsedBatch<'_> {
    parse_lines(line.as_bytes(), Precision::Nanoseconds, NOW)
}

#[test]
fn rejected_lines_with_reasons() {
    let cases: &[(&str, &str)] = &[
        ("cpu", "missing fields"),
        ("cpu ", "missing fields"),
        ("cpu,host=a", "missing fields"),
        (",cpu value=1", "missing measurement"),
        ("cpu,host value=1", "missing tag value"),
        ("cpu,host= value=1", "missing tag value"),
        ("cpu,host=a, value=1", "missing tag key"),
        ("cpu,=a value=1", "missing tag key"),
        ("cpu, value=1", "missing tag key"),
        ("cpu,host=a=b value=1", "invalid tag format"),
        ("cpu,host=a,host=b value=1", "duplicate tags"),
        ("cpu,b=1,a=2,b=3 value=1", "duplicate tags"),
        ("cpu value", "invalid field format"),
        ("cpu value=1,b", "invalid field format"),
        ("cpu value=1,", "invalid field format"),
        ("cpu =1", "missing field key"),
        ("cpu value=1,=2", "missing field key"),
        ("cpu value=", "missing field value"),
        ("cpu value=,b=1", "missing field value"),
        ("cpu value= 1", "missing field value"),
        ("cpu value=+1", "invalid boolean"),
        ("cpu value=NaN", "invalid number"),
        ("cpu value=nan", "invalid number"),
        ("cpu value=Inf", "invalid boolean"),
        ("cpu value=1I", "invalid number"),
        ("cpu value=1.5i", "invalid number"),
        ("cpu value=1e5i", "invalid number"),
        ("cpu value=0x10", "invalid number"),
        ("cpu value=1_000", "invalid number"),
        ("cpu value=1.1.1", "invalid number"),
        ("cpu value=-", "invalid number"),
        ("cpu value=.", "invalid number"),
        ("cpu value=-i", "invalid number"),
        ("cpu value=1i2", "invalid number"),
        ("cpu value=-1u", "invalid number"),
        ("cpu value=1e", "invalid float"),
        ("cpu value=1e400", "invalid float"),
        ("cpu value=-1e400", "invalid float"),
        ("cpu value=tru", "invalid boolean"),
        ("cpu value=truee", "invalid boolean"),
        ("cpu value=tRUE", "invalid boolean"),
        ("cpu value=\"abc", "unbalanced quotes"),
        ("cpu value=1 abc", "bad timestamp"),
        ("cpu value=1 12a", "bad timestamp"),
        ("cpu value=1 1 2", "point is invalid"),
        ("cpu value=1\r", "invalid number"),
        ("cpu value=1 100\r", "bad timestamp"),
        ("cpu value=true\r", "invalid boolean"),
        (
            "cpu value=9223372036854775808i",
            "unable to parse integer 9223372036854775808: strconv.ParseInt: parsing \"9223372036854775808\": value out of range",
        ),
        (
            "cpu value=-9223372036854775809i",
            "unable to parse integer -9223372036854775809: strconv.ParseInt: parsing \"-9223372036854775809\": value out of range",
        ),
        (
            "cpu value=18446744073709551616u",
            "unable to parse unsigned 18446744073709551616: strconv.ParseUint: parsing \"18446744073709551616\": value out of range",
        ),
        ("cpu value=1 -", "strconv.ParseInt: parsing \"-\": invalid syntax"),
        (
            "cpu value=1 99999999999999999999",
            "strconv.ParseInt: parsing \"99999999999999999999\": value out of range",
        ),
        (
            "cpu value=1 9223372036854775807",
            "time outside range -9223372036854775806 - 9223372036854775806",
        ),
        (
            "cpu,time=a value=1",
            "invalid tag key: input tag \"time\" on measurement \"cpu\" is invalid (reserved column name)",
        ),
        (
            "cpu,__seq=a value=1",
            "invalid tag key: input tag \"__seq\" on measurement \"cpu\" is invalid (reserved column name)",
        ),
        (
            "cpu series_id=1",
            "invalid field name: input field \"series_id\" on measurement \"cpu\" is invalid (reserved column name)",
        ),
        (
            "cpu __row=1",
            "invalid field name: input field \"__row\" on measurement \"cpu\" is invalid (reserved column name)",
        ),
        (
            "cpu,host=a host=1",
            "conflicting field and tag key: input field \"host\" on measurement \"cpu\" is also a tag key",
        ),
    ];
    let mut failures = Vec::new();
    for (line, reason) in cases {
        let b = one(line);
        let got = b.errors.first().map(|e| e.reason.as_str());
        if got != Some(*reason) || !b.points().is_empty() || b.errors[0].line != *line {
            failures.push(format!(
                "{line:?}: want {reason:?}, got {got:?} ({} points)",
                b.points().len()
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn error_text_format() {
    let b = one("  cpu value=x");
    assert_eq!(
        b.errors[0].to_string(),
        "unable to parse 'cpu value=x': invalid boolean"
    );
}

#[test]
fn max_key_length() {
    let line = format!("{} v=1", "m".repeat(65536));
    assert_eq!(
        one(&line).errors[0].reason,
        "max key length exceeded: 65536 > 65535"
    );
    let line = format!("{} {}=1", "m".repeat(65530), "f".repeat(2));
    assert_eq!(
        one(&line).errors[0].reason,
        "max key length exceeded: 65536 > 65535"
    );
}

fn field(b: &ParsedBatch<'_>, i: usize) -> FieldValue<'static> {
    match b.field(i).1 {
        FieldValue::String(s) => FieldValue::String(std::borrow::Cow::Owned(s.to_vec())),
        FieldValue::Float(v) => FieldValue::Float(v),
        FieldValue::Integer(v) => FieldValue::Integer(v),
        FieldValue::UInteger(v) => FieldValue::UInteger(v),
        FieldValue::Boolean(v) => FieldValue::Boolean(v),
    }
}

#[test]
fn accepted_values() {
    let s = |v: &str| FieldValue::String(std::borrow::Cow::Owned(v.as_bytes().to_vec()));
    let cases: Vec<(&str, FieldValue<'static>)> = vec![
        ("1", FieldValue::Float(1.0)),
        ("1.", FieldValue::Float(1.0)),
        (".5", FieldValue::Float(0.5)),
        ("-.5", FieldValue::Float(-0.5)),
        ("-1.5e-3", FieldValue::Float(-1.5e-3)),
        ("1E5", FieldValue::Float(1e5)),
        ("1e+5", FieldValue::Float(1e5)),
        ("0.1", FieldValue::Float(0.1)),
        (
            "123456789.123456789",
            FieldValue::Float(123_456_789.123_456_79),
        ),
        ("1e-400", FieldValue::Float(0.0)),
        ("1i", FieldValue::Integer(1)),
        ("-9223372036854775808i", FieldValue::Integer(i64::MIN)),
        ("9223372036854775807i", FieldValue::Integer(i64::MAX)),
        ("0u", FieldValue::UInteger(0)),
        ("18446744073709551615u", FieldValue::UInteger(u64::MAX)),
        ("t", FieldValue::Boolean(true)),
        ("T", FieldValue::Boolean(true)),
        ("true", FieldValue::Boolean(true)),
        ("True", FieldValue::Boolean(true)),
        ("TRUE", FieldValue::Boolean(true)),
        ("f", FieldValue::Boolean(false)),
        ("F", FieldValue::Boolean(false)),
        ("false", FieldValue::Boolean(false)),
        ("False", FieldValue::Boolean(false)),
        ("FALSE", FieldValue::Boolean(false)),
        ("\"\"", s("")),
        (r#""a\"b\\c\d""#, s(r#"a"b\c\d"#)),
        ("\"multi\nline\"", s("multi\nline")),
        ("\"a,b c=d\"", s("a,b c=d")),
    ];
    for (text, want) in cases {
        let line = format!("cpu value={text}");
        let b = one(&line);
        assert!(b.errors.is_empty(), "{line:?}: {:?}", b.errors);
        assert_eq!(field(&b, 0), want, "{line:?}");
    }
}

#[test]
fn escapes_in_names() {
    let b = one(r"c\,p\ u,t\ k=v\=1\,x,z=a\b f\=k=1");
    assert!(b.errors.is_empty(), "{:?}", b.errors);
    let p = &b.points()[0];
    assert_eq!(b.measurement(p), b"c,p u");
    let tags: Vec<(&[u8], &[u8])> = b.tags_of(p).collect();
    assert_eq!(tags, vec![(&b"t k"[..], &b"v=1,x"[..]), (b"z", br"a\b")]);
    assert_eq!(b.field(0).0, b"f=k");
    // Measurement may contain `=`; a tag value may start with `=`.
    let b = one("a=b,t==x v=1");
    assert!(b.errors.is_empty(), "{:?}", b.errors);
    assert_eq!(b.measurement(&b.points()[0]), b"a=b");
    assert_eq!(b.tag(0).1, b"=x");
    // Non-UTF-8 bytes are stored as-is.
    let body = b"m\xff,t=\xfe v=1";
    let b = parse_lines(body, Precision::Nanoseconds, NOW);
    assert!(b.errors.is_empty());
    assert_eq!(b.measurement(&b.points()[0]), b"m\xff");
}

#[test]
fn tags_sorted_and_series_id() {
    let b = one("cpu,b=2,a=1 v=1");
    let p = &b.points()[0];
    let tags: Vec<(&[u8], &[u8])> = b.tags_of(p).collect();
    assert_eq!(tags, vec![(&b"a"[..], &b"1"[..]), (b"b", b"2")]);
    assert_eq!(
        p.series_id,
        ingest::series::series_id(b"cpu", &[("a", "1"), ("b", "2")])
    );
    assert_eq!(p.series_id, one("cpu,a=1,b=2 v=1").points()[0].series_id);
}

#[test]
fn timestamps_and_precision() {
    let cases = [
        (Precision::Nanoseconds, "5", 5),
        (Precision::Microseconds, "5", 5_000),
        (Precision::Milliseconds, "5", 5_000_000),
        (Precision::Seconds, "-5", -5_000_000_000),
        (Precision::Minutes, "2", 120_000_000_000),
        (Precision::Hours, "1", 3_600_000_000_000),
    ];
    for (p, ts, want) in cases {
        let line = format!("cpu v=1 {ts}");
        let b = parse_lines(line.as_bytes(), p, NOW);
        assert_eq!(b.points()[0].time, want, "{p:?}");
    }
    let b = parse_lines(b"cpu v=1 3000000000000", Precision::Hours, NOW);
    assert_eq!(
        b.errors[0].reason,
        "time outside range -9223372036854775806 - 9223372036854775806"
    );
    // Default time: the receive time truncated to the precision.
    for (p, want) in [
        (Precision::Nanoseconds, NOW),
        (Precision::Microseconds, 1_700_000_000_123_456_000),
        (Precision::Milliseconds, 1_700_000_000_123_000_000),
        (Precision::Seconds, 1_700_000_000_000_000_000),
    ] {
        let b = parse_lines(b"cpu v=1", p, NOW);
        assert_eq!(b.points()[0].time, want, "{p:?}");
    }
    // Extra spaces around the timestamp are fine.
    let b = one("cpu  v=1   7  ");
    assert!(b.errors.is_empty(), "{:?}", b.errors);
    assert_eq!(b.points()[0].time, 7);
}

#[test]
fn blank_comment_and_whitespace_lines() {
    let b = one("\n  # comment \"with quote\n\t cpu v=1\n\n   \n#x\ncpu v=2\n");
    assert!(b.errors.is_empty(), "{:?}", b.errors);
    assert_eq!(b.points().len(), 2);
}

#[test]
fn crlf_is_part_of_the_line() {
    let b = one("cpu v=1\r\ncpu v=2\n");
    assert_eq!(b.points().len(), 1);
    assert_eq!(b.errors[0].line, "cpu v=1\r");
}

#[test]
fn duplicate_field_last_wins_and_time_field_dropped() {
    let b = one("cpu a=1,b=2,a=3");
    assert_eq!(b.fields().len(), 2);
    assert_eq!(b.field(0).1, FieldValue::Float(3.0));
    let b = one("cpu time=1,value=2");
    assert_eq!(b.fields().len(), 1);
    assert_eq!(b.field(0).0, b"value");
    let b = one("cpu time=1");
    assert_eq!(b.points().len(), 1);
    assert!(b.points()[0].fields.is_empty());
}

#[test]
fn bad_line_spares_neighbours_in_order() {
    let body = "cpu v=1 1\ncpu v=x 2\ncpu v=\"a\nb\" 3\nbad\ncpu v=4 4";
    let b = one(body);
    let times: Vec<i64> = b.points().iter().map(|p| p.time).collect();
    assert_eq!(times, vec![1, 3, 4]);
    let errs: Vec<String> = b.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        errs,
        vec![
            "unable to parse 'cpu v=x 2': invalid boolean",
            "unable to parse 'bad': missing fields"
        ]
    );
}

#[test]
fn parallel_matches_sequential() {
    let mut body = String::new();
    for i in 0..3000 {
        match i % 7 {
            0 => body.push_str(&format!("m,h=h{i} s=\"x\ny\nz{i}\",v={i} {i}\n")),
            1 => body.push_str(&format!("m,h=h{i} v=bad {i}\n")),
            2 => body.push_str("# comment\n\n"),
            _ => body.push_str(&format!("m,h=h{i} v={i}i {i}\n")),
        }
    }
    let seq = parse_lines(body.as_bytes(), Precision::Nanoseconds, NOW);
    for chunk in [7, 64, 100, 1000, 4096] {
        let par = parse_lines_parallel(body.as_bytes(), Precision::Nanoseconds, NOW, chunk);
        assert_eq!(par.points().len(), seq.points().len(), "chunk {chunk}");
        assert_eq!(par.errors, seq.errors, "chunk {chunk}");
        for (a, c) in par.points().iter().zip(seq.points()) {
            assert_eq!((a.time, a.series_id), (c.time, c.series_id));
            assert!(par.fields_of(a).eq(seq.fields_of(c)));
            assert!(par.tags_of(a).eq(seq.tags_of(c)));
            assert_eq!(par.measurement(a), seq.measurement(c));
        }
    }
}

#[test]
fn fast_number_path_matches_std() {
    let texts = [
        "0.1",
        "0.2",
        "0.3",
        "1.7976931348623157",
        "123456789012345",
        "1234567890123456",
        "999999999999999.9",
        "0.000000000000001",
        "9007199254740993",
        "3.141592653589793",
        "-2.718281828459045",
        "100",
        "-0",
        "0.0",
        "00012.5000",
    ];
    for t in texts {
        let line = format!("m v={t}");
        let b = one(&line);
        let want: f64 = t.parse().unwrap();
        assert_eq!(b.field(0).1, FieldValue::Float(want), "{t}");
    }
    for (t, want) in [
        ("123456789012345678i", 123456789012345678i64),
        ("-999999999999999999i", -999999999999999999),
    ] {
        let line = format!("m v={t}");
        assert_eq!(one(&line).field(0).1, FieldValue::Integer(want), "{t}");
    }
}
