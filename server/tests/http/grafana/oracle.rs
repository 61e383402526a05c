//! What InfluxDB 1.x answers to a dashboard query over the written points,
//! computed from the points themselves.
//!
//! Only the query shapes Grafana's InfluxQL editor produces for this
//! dashboard are understood: `SELECT <agg>("f") [AS "a"], ...` or
//! `<non_negative_>derivative(<agg>("f"), <unit>)`, `FROM "m"`, a `WHERE` of
//! tag `=`/`!=` conditions, the `$host` regex and the time filter, `GROUP BY
//! time(i), "tag", ... fill(null)` or `GROUP BY "tag"` with a selector. A query
//! of any other shape fails the test with "not understood", so a new panel
//! needs this taught before it passes: never silently unchecked.

use std::collections::{BTreeMap, BTreeSet};

use super::macros::Frame;
use super::telegraf_data::Point;

/// A token of the little InfluxQL subset above.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// `"name"`
    Ident(String),
    /// `'text'`
    Str(String),
    /// `/re/`
    Regex(String),
    /// A bare word or number (`mean`, `AS`, `1s`, `1700000000000ms`).
    Word(String),
    /// `=`, `!=`, `=~`, `!~`, `<`, `<=`, `>`, `>=`, `(`, `)`, `,`
    Punct(&'static str),
}

fn lex(text: &str) -> Vec<Tok> {
    const PUNCT: [&str; 11] = ["!=", "=~", "!~", "<=", ">=", "=", "<", ">", "(", ")", ","];
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let regex_allowed = matches!(out.last(), Some(Tok::Punct("=~" | "!~")));
        let (tok, len) = if let Some(t) = rest.strip_prefix('"') {
            let end = t.find('"').expect("unterminated identifier");
            (Tok::Ident(t[..end].to_string()), end + 2)
        } else if let Some(t) = rest.strip_prefix('\'') {
            let end = t.find('\'').expect("unterminated string");
            (Tok::Str(t[..end].to_string()), end + 2)
        } else if let (true, Some(t)) = (regex_allowed, rest.strip_prefix('/')) {
            // `\/` is an escaped slash inside the regex.
            let end = t
                .char_indices()
                .find(|&(i, c)| c == '/' && !t[..i].ends_with('\\'))
                .map(|(i, _)| i)
                .expect("unterminated regex");
            (Tok::Regex(t[..end].to_string()), end + 2)
        } else if let Some(p) = PUNCT.iter().find(|p| rest.starts_with(**p)) {
            (Tok::Punct(p), p.len())
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                .unwrap_or(rest.len());
            assert!(end > 0, "not understood at {rest:?}");
            (Tok::Word(rest[..end].to_string()), end)
        };
        out.push(tok);
        rest = rest[len..].trim_start();
    }
    out
}

/// One output column.
#[derive(Debug, Clone)]
pub(super) struct Column {
    /// The column name InfluxDB gives it: the alias, else the outer function.
    pub(super) name: String,
    /// The aggregate or selector over the field (`mean`, `last`, ...).
    aggregate: String,
    /// The field.
    field: String,
    /// `derivative`/`non_negative_derivative` over the aggregate: (non-negative, unit ms).
    derivative: Option<(bool, i64)>,
}

impl Column {
    /// Whether it is a rate (a derivative), which has no value for the first
    /// interval and none where a non-negative one fell.
    pub(super) fn is_rate(&self) -> bool {
        self.derivative.is_some()
    }
}

/// A dashboard query, as far as the oracle needs it.
#[derive(Debug, Clone)]
pub(super) struct Shape {
    pub(super) measurement: String,
    pub(super) columns: Vec<Column>,
    /// Tag `=` (true) / `!=` (false) conditions.
    tag_conditions: Vec<(String, String, bool)>,
    /// The tag compared with a regex (the `$host` variable), if any.
    pub(super) regex_tag: Option<String>,
    /// `time >= ..ms and time <= ..ms`.
    time_range: (i64, i64),
    /// `GROUP BY time(...)`, ms.
    group_time_ms: Option<i64>,
    /// `GROUP BY "tag", ...`.
    pub(super) group_tags: Vec<String>,
}

/// Duration literal (`1s`, `10s`, `500ms`, `1m`) in ms.
fn duration_ms(word: &str) -> i64 {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let n: i64 = digits
        .parse()
        .unwrap_or_else(|_| panic!("duration {word:?}"));
    n * match &word[digits.len()..] {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        unit => panic!("duration unit {unit:?}"),
    }
}

/// Splits tokens at top-level commas.
fn split_commas(toks: &[Tok]) -> Vec<&[Tok]> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, t) in toks.iter().enumerate() {
        match t {
            Tok::Punct("(") => depth += 1,
            Tok::Punct(")") => depth -= 1,
            Tok::Punct(",") if depth == 0 => {
                out.push(&toks[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&toks[start..]);
    out
}

fn column(toks: &[Tok]) -> Column {
    use Tok::*;
    let (expr, alias) = match toks {
        [e @ .., Word(kw), Ident(a)] if kw.eq_ignore_ascii_case("as") => (e, Some(a.clone())),
        e => (e, None),
    };
    let (outer, aggregate, field, derivative) = match expr {
        [Word(agg), Punct("("), Ident(f), Punct(")")] => (agg, agg, f, None),
        [Word(d), Punct("("), Word(agg), Punct("("), Ident(f), Punct(")"), Punct(","), Word(unit), Punct(")")]
            if d == "derivative" || d == "non_negative_derivative" =>
        {
            (
                d,
                agg,
                f,
                Some((d.starts_with("non_negative"), duration_ms(unit))),
            )
        }
        _ => panic!("select item not understood: {toks:?}"),
    };
    Column {
        name: alias.unwrap_or_else(|| outer.clone()),
        aggregate: aggregate.clone(),
        field: field.clone(),
        derivative,
    }
}

/// Reads an expanded dashboard query.
pub(super) fn shape(query: &str) -> Shape {
    let upper = query.to_ascii_uppercase();
    let at = |kw: &str| {
        upper
            .find(kw)
            .unwrap_or_else(|| panic!("no {kw:?} in {query}"))
    };
    assert!(upper.starts_with("SELECT "), "not a SELECT: {query}");
    let (from, wh) = (at(" FROM "), at(" WHERE "));
    let group = upper.find(" GROUP BY ").unwrap_or(query.len());
    let columns = split_commas(&lex(&query[7..from]))
        .into_iter()
        .map(column)
        .collect();
    let measurement = match lex(&query[from + 6..wh]).as_slice() {
        [Tok::Ident(m)] => m.clone(),
        other => panic!("FROM not understood: {other:?}"),
    };
    let mut s = Shape {
        measurement,
        columns,
        tag_conditions: Vec::new(),
        regex_tag: None,
        time_range: (i64::MIN, i64::MAX),
        group_time_ms: None,
        group_tags: Vec::new(),
    };
    s.read_where(&lex(&query[wh + 7..group]));
    if group < query.len() {
        s.read_group_by(&lex(&query[group + 10..]));
    }
    s
}

impl Shape {
    fn read_where(&mut self, toks: &[Tok]) {
        use Tok::*;
        let ms = |w: &str| -> i64 {
            w.strip_suffix("ms")
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("time bound {w:?}"))
        };
        let mut i = 0;
        while i < toks.len() {
            match &toks[i..] {
                [Ident(k), Punct(op @ ("=" | "!=")), Str(v), ..] => {
                    self.tag_conditions.push((k.clone(), v.clone(), *op == "="));
                    i += 3;
                }
                [Ident(k), Punct("=~"), Regex(_), ..] => {
                    assert!(self.regex_tag.is_none(), "two regex conditions");
                    self.regex_tag = Some(k.clone());
                    i += 3;
                }
                [Word(t), Punct(">="), Word(v), ..] if t == "time" => {
                    self.time_range.0 = ms(v);
                    i += 3;
                }
                [Word(t), Punct("<="), Word(v), ..] if t == "time" => {
                    self.time_range.1 = ms(v);
                    i += 3;
                }
                [Word(w), ..] if w.eq_ignore_ascii_case("and") => i += 1,
                [Punct("(" | ")"), ..] => i += 1,
                rest => panic!("WHERE not understood at {rest:?}"),
            }
        }
    }

    fn read_group_by(&mut self, toks: &[Tok]) {
        use Tok::*;
        let mut toks = toks;
        if let [rest @ .., Word(f), Punct("("), Word(how), Punct(")")] = toks {
            assert!(
                f == "fill" && how == "null",
                "only fill(null) is understood: {toks:?}"
            );
            toks = rest;
        }
        for dim in split_commas(toks) {
            match dim {
                [Word(t), Punct("("), Word(i), Punct(")")] if t == "time" => {
                    self.group_time_ms = Some(duration_ms(i));
                }
                [Ident(tag)] => self.group_tags.push(tag.clone()),
                other => panic!("GROUP BY not understood: {other:?}"),
            }
        }
    }
}

/// One expected series: its tags, and rows of (time, a value per column).
pub(super) type Rows = Vec<(i64, Vec<Option<f64>>)>;

/// What InfluxDB answers, per series (keyed by the GROUP BY tag values, in
/// InfluxDB's series order). `selected` are the values the regex condition
/// (the `$host` variable) selects.
pub(super) fn expected(
    shape: &Shape,
    frame: Frame,
    points: &[Point],
    selected: &BTreeSet<String>,
) -> BTreeMap<Vec<String>, Rows> {
    assert_eq!(
        shape.time_range,
        (frame.from_ms, frame.to_ms),
        "$timeFilter did not expand to the frame"
    );
    // InfluxDB computes a rate's first interval from the interval before the
    // range (it reads one interval further back), so those points count too.
    let lookback = match shape.group_time_ms {
        Some(iv) if shape.columns.iter().any(Column::is_rate) => {
            assert!(
                shape.columns.iter().all(Column::is_rate),
                "rates mixed with other columns are not understood"
            );
            iv
        }
        _ => 0,
    };
    let mut groups: BTreeMap<Vec<String>, Vec<&Point>> = BTreeMap::new();
    for p in points
        .iter()
        .filter(|p| shape.selects(p, selected, lookback))
    {
        let key = shape
            .group_tags
            .iter()
            .map(|t| p.tag(t).to_string())
            .collect();
        groups.entry(key).or_default().push(p);
    }
    groups
        .into_iter()
        .map(|(key, pts)| {
            let rows = match shape.group_time_ms {
                Some(iv) => shape.bucketed(&pts, frame, iv, lookback > 0),
                None => shape.selected_point(&pts),
            };
            (key, rows)
        })
        .filter(|(_, rows)| {
            rows.iter()
                .any(|(_, cells)| cells.iter().any(Option::is_some))
        })
        .collect()
}

impl Shape {
    /// Whether the point is in the query's measurement, conditions and range
    /// (its start `lookback` ms earlier) and has one of the selected fields.
    fn selects(&self, p: &Point, selected: &BTreeSet<String>, lookback: i64) -> bool {
        p.measurement == self.measurement
            && self
                .tag_conditions
                .iter()
                .all(|(k, v, eq)| (p.tag(k) == v) == *eq)
            && self
                .regex_tag
                .as_ref()
                .is_none_or(|k| selected.contains(p.tag(k)))
            && (self.time_range.0 - lookback..=self.time_range.1).contains(&p.time_ms)
            && self.columns.iter().any(|c| p.field(&c.field).is_some())
    }

    /// `GROUP BY time(iv) ... fill(null)`: a row per interval of the range;
    /// with `lookback`, the interval before it is computed too (for rates)
    /// and left out of the rows.
    fn bucketed(&self, pts: &[&Point], frame: Frame, iv: i64, lookback: bool) -> Rows {
        let first = frame.from_ms.div_euclid(iv) * iv - if lookback { iv } else { 0 };
        let buckets: Vec<i64> = (first..=frame.to_ms).step_by(iv as usize).collect();
        let per_column: Vec<Vec<Option<f64>>> = self
            .columns
            .iter()
            .map(|c| {
                let aggs: Vec<Option<f64>> = buckets
                    .iter()
                    .map(|&b| {
                        let vals: Vec<(i64, f64)> = pts
                            .iter()
                            .filter(|p| (b..b + iv).contains(&p.time_ms))
                            .filter_map(|p| Some((p.time_ms, p.field(&c.field)?.number()?)))
                            .collect();
                        aggregate(&c.aggregate, &vals).map(|(_, v)| v)
                    })
                    .collect();
                match c.derivative {
                    Some((non_negative, unit)) => derivative(&buckets, &aggs, non_negative, unit),
                    None => aggs,
                }
            })
            .collect();
        buckets
            .iter()
            .enumerate()
            .skip(usize::from(lookback))
            .map(|(i, &b)| (b, per_column.iter().map(|col| col[i]).collect()))
            .collect()
    }

    /// A selector without `GROUP BY time`: one row at the selected point's time.
    fn selected_point(&self, pts: &[&Point]) -> Rows {
        let [c] = self.columns.as_slice() else {
            panic!("only one selector column without GROUP BY time is understood");
        };
        assert!(c.derivative.is_none());
        assert!(
            matches!(c.aggregate.as_str(), "last" | "first" | "max" | "min"),
            "{} without GROUP BY time is not understood",
            c.aggregate
        );
        let vals: Vec<(i64, f64)> = pts
            .iter()
            .filter_map(|p| Some((p.time_ms, p.field(&c.field)?.number()?)))
            .collect();
        aggregate(&c.aggregate, &vals)
            .map(|(t, v)| vec![(t, vec![Some(v)])])
            .unwrap_or_default()
    }
}

/// An aggregate or selector over (time, value) pairs in time order: the value,
/// with the selected point's time for selectors.
fn aggregate(name: &str, vals: &[(i64, f64)]) -> Option<(i64, f64)> {
    let (&(t0, _), &(tn, _)) = (vals.first()?, vals.last()?);
    let by = |better: fn(f64, f64) -> bool| {
        vals.iter()
            .copied()
            .reduce(|a, b| if better(b.1, a.1) { b } else { a })
    };
    Some(match name {
        "mean" => (
            t0,
            vals.iter().map(|v| v.1).sum::<f64>() / vals.len() as f64,
        ),
        "sum" => (t0, vals.iter().map(|v| v.1).sum()),
        "count" => (t0, vals.len() as f64),
        // Ties go to the earliest point, as in InfluxDB.
        "max" => by(|b, a| b > a)?,
        "min" => by(|b, a| b < a)?,
        "first" => vals[0],
        "last" => (tn, vals[vals.len() - 1].1),
        other => panic!("aggregate {other} not understood"),
    })
}

/// `derivative`/`non_negative_derivative` over per-bucket values: the change
/// from the previous non-null value per `unit` of elapsed time; none for the
/// first, and (non-negative) none where the value fell.
fn derivative(
    buckets: &[i64],
    vals: &[Option<f64>],
    non_negative: bool,
    unit: i64,
) -> Vec<Option<f64>> {
    let mut prev: Option<(i64, f64)> = None;
    buckets
        .iter()
        .zip(vals)
        .map(|(&t, v)| {
            let v = (*v)?;
            let d = prev.map(|(pt, pv)| (v - pv) / ((t - pt) as f64 / unit as f64));
            prev = Some((t, v));
            d.filter(|d| !(non_negative && *d < 0.0))
        })
        .collect()
}

#[test]
fn the_oracle_reads_the_shapes_grafana_generates() {
    let s = shape(
        r#"SELECT non_negative_derivative(mean("bytes_recv"), 1s) AS "recv", mean("x") FROM "net" WHERE ("host" =~ /^(a|b\.c)$/ AND "interface" != 'lo') AND time >= 1000ms and time <= 2000ms GROUP BY time(10s), "host", "interface" fill(null)"#,
    );
    assert_eq!(s.measurement, "net");
    let names: Vec<&str> = s.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["recv", "mean"]);
    assert_eq!(s.columns[0].derivative, Some((true, 1000)));
    assert_eq!(s.tag_conditions, [("interface".into(), "lo".into(), false)]);
    assert_eq!(s.regex_tag.as_deref(), Some("host"));
    assert_eq!(s.time_range, (1000, 2000));
    assert_eq!(s.group_time_ms, Some(10_000));
    assert_eq!(s.group_tags, ["host", "interface"]);
    let buckets = [0, 10_000, 20_000, 30_000, 40_000];
    let means = [Some(5.0), Some(25.0), None, Some(5.0), Some(15.0)];
    // 20 per 10 s; null skipped; a fall dropped; then from the fallen value, over 10 s.
    let d = derivative(&buckets, &means, true, 1000);
    assert_eq!(d, [None, Some(2.0), None, None, Some(1.0)]);
    assert_eq!(aggregate("last", &[(1, 3.0), (2, 4.0)]), Some((2, 4.0)));
}
