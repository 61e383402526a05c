//! What Grafana does to a raw InfluxQL target before chingest sees it, ported
//! from Grafana 11's InfluxDB data source (checked against its source):
//!
//! - the frontend (`public/app/plugins/datasource/influxdb/datasource.ts`,
//!   `applyVariables` → `interpolateQueryExpr`) interpolates dashboard
//!   variables: a multi-value variable becomes `(a|b)`, each value
//!   regex-escaped with `escapeRegex` (`packages/grafana-data/src/text/string.ts`),
//!   `All` (no custom all value) is every option;
//! - the frontend computes the interval (`rangeutil.calculateInterval`: the
//!   range over max data points, rounded by `roundInterval`, never below the
//!   data source's `timeInterval`) and sends it as `intervalMs`;
//! - the backend (`pkg/tsdb/influxdb/models/query.go`, `Build`) replaces
//!   `$timeFilter`, `$interval`, `$__interval_ms` and `$__interval`, in that
//!   order, formatting the interval with the plugin SDK's `gtime.FormatInterval`,
//!   and sends `GET /query?db=<dbName>&epoch=ms&q=<query>`
//!   (`pkg/tsdb/influxdb/influxql/influxql.go`, `createRequest`).
//!
//! The frontend also replaces `$__interval` itself with the same text for the
//! intervals used here (`secondsToHms`), so doing it once in the backend step
//! gives the same query.

/// A dashboard variable as selected in the picker.
#[derive(Debug, Clone)]
pub(super) struct Variable {
    /// Its name (`host` for `$host`).
    pub(super) name: String,
    /// `multi`: several values may be selected.
    pub(super) multi: bool,
    /// The selected values (every option when `All` is selected).
    pub(super) values: Vec<String>,
}

/// The time range and interval of one panel refresh.
#[derive(Debug, Clone, Copy)]
pub(super) struct Frame {
    /// Range start, epoch milliseconds.
    pub(super) from_ms: i64,
    /// Range end, epoch milliseconds.
    pub(super) to_ms: i64,
    /// `$__interval` in milliseconds.
    pub(super) interval_ms: i64,
}

impl Frame {
    /// The frame Grafana computes for a range, a panel's max data points and
    /// the data source's minimum interval (`rangeutil.calculateInterval`).
    pub(super) fn new(
        from_ms: i64,
        to_ms: i64,
        max_data_points: i64,
        min_interval_ms: i64,
    ) -> Self {
        let raw = (to_ms - from_ms) as f64 / max_data_points as f64;
        Frame {
            from_ms,
            to_ms,
            interval_ms: round_interval(raw).max(min_interval_ms),
        }
    }
}

/// `rangeutil.roundInterval`: a raw interval (ms) to a round one.
fn round_interval(ms: f64) -> i64 {
    const STEPS: &[(f64, i64)] = &[
        (10.0, 1),
        (15.0, 10),
        (35.0, 20),
        (75.0, 50),
        (150.0, 100),
        (350.0, 200),
        (750.0, 500),
        (1_500.0, 1_000),
        (3_500.0, 2_000),
        (7_500.0, 5_000),
        (12_500.0, 10_000),
        (17_500.0, 15_000),
        (25_000.0, 20_000),
        (45_000.0, 30_000),
        (90_000.0, 60_000),
        (210_000.0, 120_000),
        (450_000.0, 300_000),
        (750_000.0, 600_000),
        (1_050_000.0, 900_000),
        (1_500_000.0, 1_200_000),
        (2_700_000.0, 1_800_000),
        (5_400_000.0, 3_600_000),
        (9_000_000.0, 7_200_000),
        (16_200_000.0, 10_800_000),
        (32_400_000.0, 21_600_000),
        (86_400_000.0, 43_200_000),
        (604_800_000.0, 86_400_000),
        (1_814_400_000.0, 604_800_000),
        (3_628_800_000.0, 2_592_000_000),
    ];
    STEPS
        .iter()
        .find(|(below, _)| ms < *below)
        .map_or(31_536_000_000, |(_, round)| *round)
}

/// `gtime.FormatInterval`: the largest unit that fits, truncated.
pub(super) fn format_interval(ms: i64) -> String {
    const UNITS: &[(i64, &str)] = &[
        (365 * 86_400_000, "y"),
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1_000, "s"),
        (1, "ms"),
    ];
    UNITS
        .iter()
        .find(|(unit, _)| ms >= *unit)
        .map_or("1ms".to_string(), |(unit, name)| {
            format!("{}{name}", ms / unit)
        })
}

/// Grafana's interval syntax (`10s`, `500ms`, `1m`) in milliseconds
/// (`rangeutil.describeInterval`; a bare number is seconds).
pub(super) fn interval_ms(text: &str) -> i64 {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let n: i64 = digits
        .parse()
        .unwrap_or_else(|_| panic!("interval {text:?}"));
    n * match &text[digits.len()..] {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 604_800_000,
        "M" => 2_592_000_000,
        "y" => 31_536_000_000,
        unit => panic!("interval unit {unit:?} in {text:?}"),
    }
}

/// `escapeRegex` of `@grafana/data`.
pub(super) fn escape_regex(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if "\\^$*+?.()|[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `interpolateQueryExpr` for a variable's value.
fn interpolate_value(var: &Variable) -> String {
    // The single-value branch (escape only inside /.../ regexes) is not
    // ported: the dashboard's variables are all multi-value.
    assert!(
        var.multi,
        "${}: only multi-value variables are interpolated here",
        var.name
    );
    let escaped: Vec<String> = var.values.iter().map(|v| escape_regex(v)).collect();
    format!("({})", escaped.join("|"))
}

/// Dashboard variables replaced as `templateSrv.replace` does for `$name`,
/// `${name}` and `[[name]]`; names that are not dashboard variables (Grafana's
/// own `$timeFilter`, `$__interval`) are left for [`expand_macros`].
pub(super) fn interpolate_variables(query: &str, vars: &[Variable]) -> String {
    let mut out = String::with_capacity(query.len());
    let mut rest = query;
    while let Some(i) = rest.find(['$', '[']) {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let (name, len) = variable_ref(rest);
        match vars.iter().find(|v| Some(v.name.as_str()) == name) {
            Some(var) => out.push_str(&interpolate_value(var)),
            None => out.push_str(&rest[..len]),
        }
        rest = &rest[len..];
    }
    out.push_str(rest);
    out
}

/// The variable name a reference at the start of `s` names, and its length
/// (1, and no name, when `s` starts with a `$` or `[` that is not one).
fn variable_ref(s: &str) -> (Option<&str>, usize) {
    let word = |t: &str| {
        t.find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(t.len())
    };
    if let Some(t) = s.strip_prefix("${") {
        if let Some(end) = t.find('}') {
            return (Some(&t[..end]), end + 3);
        }
    } else if let Some(t) = s.strip_prefix("[[") {
        if let Some(end) = t.find("]]") {
            return (Some(&t[..end]), end + 4);
        }
    } else if let Some(t) = s.strip_prefix('$') {
        let n = word(t);
        if n > 0 {
            return (Some(&t[..n]), n + 1);
        }
    }
    (None, 1)
}

/// The backend's `Build` replacements.
pub(super) fn expand_macros(query: &str, frame: Frame) -> String {
    let text = format_interval(frame.interval_ms);
    query
        .replace(
            "$timeFilter",
            &format!("time >= {}ms and time <= {}ms", frame.from_ms, frame.to_ms),
        )
        .replace("$interval", &text)
        .replace("$__interval_ms", &frame.interval_ms.to_string())
        .replace("$__interval", &text)
}

#[test]
fn grafana_macro_expansion_matches_grafanas_own_cases() {
    // Cases from Grafana's tests of the same functions.
    assert_eq!(escape_regex("looking*glass"), r"looking\*glass");
    assert_eq!(escape_regex("web.2/a"), r"web\.2\/a");
    assert_eq!(format_interval(10_000), "10s");
    assert_eq!(format_interval(90_000), "1m");
    assert_eq!(format_interval(500), "500ms");
    assert_eq!(format_interval(86_400_000), "1d");
    assert_eq!(interval_ms("10s"), 10_000);
    assert_eq!(interval_ms("1m"), 60_000);
    // 1 h over 100 points: 36 s rounds to 30 s; 10 min over 1000: 600 ms → 500 ms, raised to 10 s.
    assert_eq!(Frame::new(0, 3_600_000, 100, 10_000).interval_ms, 30_000);
    assert_eq!(Frame::new(0, 600_000, 1000, 10_000).interval_ms, 10_000);
    assert_eq!(Frame::new(0, 600_000, 1000, 1).interval_ms, 500);
    let vars = [Variable {
        name: "host".into(),
        multi: true,
        values: vec!["a|bc".into(), "de.f".into()],
    }];
    assert_eq!(
        interpolate_variables(
            "\"host\" =~ /^$host$/ AND ${host} [[host]] $hostname $__interval",
            &vars
        ),
        r#""host" =~ /^(a\|bc|de\.f)$/ AND (a\|bc|de\.f) (a\|bc|de\.f) $hostname $__interval"#
    );
    let frame = Frame {
        from_ms: 1000,
        to_ms: 2000,
        interval_ms: 10_000,
    };
    assert_eq!(
        expand_macros(
            "$timeFilter GROUP BY time($__interval) $interval $__interval_ms",
            frame
        ),
        "time >= 1000ms and time <= 2000ms GROUP BY time(10s) 10s 10000"
    );
}
