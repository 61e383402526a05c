//! What operators are told about the metrics, checked against what the live
//! server exports: `docs/metrics.md` ↔ `/metrics` (names, types and label
//! keys, both ways), and every PromQL expression of the Grafana dashboards
//! under `deploy/grafana/` and of the alert rules in
//! `deploy/prometheus/alerts.yml` names only metrics the server exports.
//!
//! The server is driven first through every path that registers a metric
//! lazily (writes plain and gzipped, a partial write, a bad line, an unknown
//! database, a refused write, a SQL query, a flush). The few metrics recorded
//! only on faults a test cannot cheaply cause are listed in [`FAULT_ONLY`];
//! those must still be documented and named in the crates' source.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::util::*;

/// Metrics recorded only on faults, with what records them: documented, and
/// checked to be named in the source instead of in `/metrics`.
pub(crate) const FAULT_ONLY: &[(&str, &str)] = &[
    ("chingest_flush_failures_total", "an engine insert failed"),
    (
        "chingest_wal_corrupt_entries_total",
        "WAL recovery found an entry that failed verification",
    ),
    (
        "chingest_wal_queue_full_total",
        "a submit found the WAL writer's queue full",
    ),
    (
        "chingest_http_timeouts_total",
        "a request ran past server.request_timeout_secs",
    ),
    // Recorded only with `[storage] engine = "clickhouse"`: checked live by cluster.rs.
    (
        "chingest_cluster_rows_total",
        "rows delivered to a ClickHouse shard",
    ),
    (
        "chingest_cluster_failures_total",
        "a request to a ClickHouse shard failed",
    ),
    (
        "chingest_cluster_shard_up",
        "a ClickHouse shard answered or not",
    ),
    // Checked live by cluster_replicas.rs.
    (
        "chingest_cluster_replica_up",
        "a replica of a ClickHouse shard answered or not",
    ),
    (
        "chingest_cluster_replica_delay_seconds",
        "a replica of a ClickHouse shard's replication lag",
    ),
    (
        "chingest_cluster_shard_waiting_seconds",
        "how long a ClickHouse shard's oldest unconfirmed delivery has waited",
    ),
    (
        "chingest_cluster_shard_waiting_rows",
        "how many rows a ClickHouse shard lacks",
    ),
    // Checked live by cluster_retention.rs.
    (
        "chingest_cluster_expired_partitions_total",
        "retention dropped a ClickHouse shard's partitions",
    ),
];

/// The repository root.
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

pub(crate) fn read_repo_file(rel: &str) -> String {
    let p = repo_root().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

// ---------------------------------------------------------------------------
// The server, driven through every lazily registered metric.

/// Settings [`exercise`] relies on: an in-flight points budget small enough
/// that one 2,000-point write is refused (`points_budget`).
pub(crate) fn exercise_spawn(dir: &Path) -> Spawn<'_> {
    Spawn::new(dir).env("CHINGEST_LIMITS__MAX_INFLIGHT_POINTS", "1000")
}

fn lines(measurement: &str, n: usize, t0: u64) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{measurement},host=h{} usage={}.5,count={i}i,up=true {}\n",
                i % 7,
                i,
                t0 + i as u64
            )
        })
        .collect()
}

/// Writes, refusals and reads through every path that records a metric.
/// `round` keeps timestamps apart when called more than once.
pub(crate) fn exercise(s: &Server, round: u64) {
    s.query("CREATE DATABASE obs");
    let t0 = 1_700_000_000_000_000_000 + round * 1_000_000;
    // Plain v1 and gzipped v2 writes.
    let r = s.post("/write?db=obs", lines("cpu", 20, t0));
    assert_eq!(r.status(), 204, "{}", r.text().unwrap_or_default());
    let r = s
        .client
        .post(s.url("/api/v2/write?org=o&bucket=obs"))
        .header("Content-Encoding", "gzip")
        .body(gzip(lines("mem", 10, t0).as_bytes()))
        .send()
        .unwrap();
    assert_eq!(r.status(), 204, "{}", r.text().unwrap_or_default());
    // A partial write: a type conflict (dropped point) and a line that does not parse.
    let r = s.post(
        "/write?db=obs",
        format!("cpu,host=x usage=\"text\" {t0}\nnot a line\ncpu,host=y usage=1 {t0}\n"),
    );
    assert_eq!(r.status(), 400);
    // An unknown database.
    assert_eq!(s.post("/write?db=nope", "cpu v=1").status(), 404);
    // Refused by the in-flight points budget (1000): 503 with Retry-After.
    let r = s.post("/write?db=obs", lines("big", 2000, t0));
    assert_eq!(r.status(), 503, "{}", r.text().unwrap_or_default());
    assert!(r.headers().contains_key("retry-after"));
    // A SQL read once the rows reached the engine (flush metrics on the way):
    // the 20 plain points and the partial write's good one.
    s.sql_until(
        &format!(
            "SELECT time FROM obs.cpu WHERE toUnixTimestamp64Nano(time) >= {t0} \
             AND toUnixTimestamp64Nano(time) < {}",
            t0 + 1_000_000
        ),
        21,
    );
    // An InfluxQL read (its path's count and latency histogram).
    let r = s.get(&format!(
        "/query?db=obs&q=SELECT+count(*)+FROM+cpu+WHERE+time+>=+{t0}"
    ));
    assert_eq!(r.status(), 200);
    // One the hot store could answer (on by default, `hold = "read"`): its
    // measurement becomes wanted (`chingest_hot_wanted{db,measurement}`).
    let r = s.get(&format!(
        "/query?db=obs&q=SELECT+count(usage)+FROM+cpu+WHERE+time+>=+{t0}"
    ));
    assert_eq!(r.status(), 200);
    assert_eq!(s.get("/health").status(), 200);
}

// ---------------------------------------------------------------------------
// The Prometheus text format.

/// One metric family of `/metrics`.
#[derive(Debug, Default, Clone)]
pub(crate) struct Family {
    /// `counter`, `gauge`, `histogram`, ... (`# TYPE`).
    pub(crate) kind: String,
    /// Label keys seen on its samples, without `le`/`quantile`.
    pub(crate) labels: BTreeSet<String>,
}

/// `/metrics` parsed: families by name, and every sample name (with the
/// `_bucket`/`_sum`/`_count` series of histograms).
#[derive(Debug, Default)]
pub(crate) struct Exposition {
    pub(crate) families: BTreeMap<String, Family>,
    pub(crate) samples: BTreeSet<String>,
}

/// Label keys of `{k="v",...}` (values may hold escaped quotes, commas, braces).
fn label_keys(s: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        while i < b.len() && b[i] != b'=' {
            i += 1;
        }
        keys.push(
            s[start..i]
                .trim()
                .trim_start_matches(',')
                .trim()
                .to_string(),
        );
        i += 1; // '='
        assert_eq!(b.get(i), Some(&b'"'), "label value not quoted in {s:?}");
        i += 1;
        while i < b.len() && b[i] != b'"' {
            if b[i] == b'\\' {
                i += 1;
            }
            i += 1;
        }
        i += 1; // closing quote
        while i < b.len() && (b[i] == b',' || b[i] == b' ') {
            i += 1;
        }
    }
    keys
}

pub(crate) fn parse_exposition(text: &str) -> Exposition {
    let mut e = Exposition::default();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split_whitespace();
            let (name, kind) = (it.next().unwrap(), it.next().unwrap());
            e.families.entry(name.to_string()).or_default().kind = kind.to_string();
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let name = &line[..name_end];
        e.samples.insert(name.to_string());
        let keys = if line[name_end..].starts_with('{') {
            let close = line.rfind('}').expect("closing brace");
            label_keys(&line[name_end + 1..close])
        } else {
            Vec::new()
        };
        let family = if e.families.contains_key(name) {
            name.to_string()
        } else {
            ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suf| name.strip_suffix(suf))
                .filter(|base| e.families.contains_key(*base))
                .unwrap_or(name)
                .to_string()
        };
        let f = e.families.entry(family).or_default();
        for k in keys {
            if k != "le" && k != "quantile" {
                f.labels.insert(k);
            }
        }
    }
    e
}

// ---------------------------------------------------------------------------
// docs/metrics.md

/// One row of a table in docs/metrics.md.
#[derive(Debug, Clone)]
pub(crate) struct DocMetric {
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) labels: BTreeSet<String>,
}

/// The backticked names in a labels cell, leaving out what is in parentheses
/// (examples and values): "`route` (axum `MatchedPath`), `method`" → route, method.
fn doc_labels(cell: &str) -> BTreeSet<String> {
    let mut outside = String::new();
    let mut depth = 0usize;
    for c in cell.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => outside.push(c),
            _ => {}
        }
    }
    outside
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Every metric documented in docs/metrics.md's tables.
pub(crate) fn documented_metrics() -> Vec<DocMetric> {
    let text = read_repo_file("docs/metrics.md");
    let mut out = Vec::new();
    for line in text.lines() {
        if !line.starts_with("| `chingest_") {
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // ["", name, type, labels, meaning, ""]
        assert!(cells.len() >= 5, "malformed row: {line}");
        out.push(DocMetric {
            name: cells[1].trim_matches('`').to_string(),
            kind: cells[2].to_string(),
            labels: doc_labels(cells[3]),
        });
    }
    assert!(
        out.len() >= 40,
        "docs/metrics.md lists only {} metrics: did its table format change?",
        out.len()
    );
    out
}

// ---------------------------------------------------------------------------
// PromQL: the metric names an expression selects.

const PROMQL_KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "inf",
    "nan",
    // Aggregation operators: keywords in PromQL, followed by `(` or by `by`/`without`.
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];

/// The metric names selected by a PromQL expression: bare selectors
/// (`foo`, `foo{a="b"}[5m]`) and `{__name__="foo"}`, not functions,
/// aggregations, keywords, label names in `by (...)`/`on (...)`, label
/// matchers, strings, numbers, durations or Grafana `$variables`.
pub(crate) fn promql_metric_names(expr: &str) -> BTreeSet<String> {
    let b: Vec<char> = expr.chars().collect();
    let mut names = BTreeSet::new();
    let mut i = 0;
    let is_start = |c: char| c.is_ascii_alphabetic() || c == '_' || c == ':';
    let is_part = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let skip_string = |i: &mut usize| {
        let q = b[*i];
        *i += 1;
        while *i < b.len() && b[*i] != q {
            if b[*i] == '\\' && q != '`' {
                *i += 1;
            }
            *i += 1;
        }
        *i += 1;
    };
    let next_non_space = |mut j: usize| {
        while j < b.len() && b[j].is_whitespace() {
            j += 1;
        }
        j
    };
    while i < b.len() {
        let c = b[i];
        if c == '"' || c == '\'' || c == '`' {
            skip_string(&mut i);
        } else if c == '#' {
            // A comment runs to the end of the line.
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '{' {
            // Label matchers: only `__name__="x"` names a metric.
            i += 1;
            while i < b.len() && b[i] != '}' {
                if b[i] == '"' || b[i] == '\'' || b[i] == '`' {
                    skip_string(&mut i);
                } else if is_start(b[i]) {
                    let s = i;
                    while i < b.len() && is_part(b[i]) {
                        i += 1;
                    }
                    let label: String = b[s..i].iter().collect();
                    let j = next_non_space(i);
                    if label == "__name__"
                        && j < b.len()
                        && b[j] == '='
                        && b.get(j + 1) != Some(&'~')
                    {
                        let k = next_non_space(j + 1);
                        if k < b.len() && (b[k] == '"' || b[k] == '\'') {
                            let mut e = k;
                            skip_string(&mut e);
                            names.insert(b[k + 1..e - 1].iter().collect());
                            i = e;
                        }
                    }
                } else {
                    i += 1;
                }
            }
            i += 1;
        } else if c == '[' {
            // A range or subquery: durations and maybe a $__rate_interval.
            while i < b.len() && b[i] != ']' {
                i += 1;
            }
            i += 1;
        } else if c == '$' {
            i += 1;
            while i < b.len() && (is_part(b[i]) || b[i] == '{' || b[i] == '}') {
                i += 1;
            }
        } else if c.is_ascii_digit() || (c == '.' && b.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            // Numbers (0.95, 10e6, 0x1f) and durations (5m, 1h30m).
            while i < b.len() && (is_part(b[i]) || b[i] == '.') {
                i += 1;
            }
        } else if is_start(c) {
            let s = i;
            while i < b.len() && is_part(b[i]) {
                i += 1;
            }
            let word: String = b[s..i].iter().collect();
            let j = next_non_space(i);
            let paren = j < b.len() && b[j] == '(';
            let lower = word.to_ascii_lowercase();
            if PROMQL_KEYWORDS.contains(&lower.as_str()) {
                if paren
                    && matches!(
                        lower.as_str(),
                        "by" | "without" | "on" | "ignoring" | "group_left" | "group_right"
                    )
                {
                    // A label list, not an expression.
                    while i < b.len() && b[i] != ')' {
                        i += 1;
                    }
                    i += 1;
                }
            } else if !paren {
                names.insert(word);
            }
            // else: a function or an aggregation; its arguments follow.
        } else {
            i += 1;
        }
    }
    names
}

/// Every `expr` of every target in a Grafana dashboard JSON value, wherever
/// it sits (panels, rows' nested panels, library panels).
fn dashboard_exprs(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                if k == "expr" {
                    if let Some(s) = v.as_str() {
                        out.push(s.to_string());
                    }
                } else {
                    dashboard_exprs(v, out);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| dashboard_exprs(v, out)),
        _ => {}
    }
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            json_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
}

/// (dashboard file, panel expression) for every dashboard under deploy/grafana.
pub(crate) fn dashboard_expressions() -> Vec<(String, String)> {
    let mut files = Vec::new();
    json_files(&repo_root().join("deploy/grafana"), &mut files);
    files.sort();
    assert!(!files.is_empty(), "no dashboard JSON under deploy/grafana");
    let mut out = Vec::new();
    for f in files {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let mut exprs = Vec::new();
        dashboard_exprs(&v, &mut exprs);
        let name = f.strip_prefix(repo_root()).unwrap().display().to_string();
        // InfluxQL dashboards have no PromQL: grafana.rs runs their queries.
        if exprs.is_empty() && v.to_string().contains(r#""type":"influxdb""#) {
            continue;
        }
        assert!(!exprs.is_empty(), "{name}: no PromQL targets");
        out.extend(exprs.into_iter().map(|e| (name.clone(), e)));
    }
    out
}

/// The `expr:` of every rule in deploy/prometheus/alerts.yml (single-line or
/// a `|` block), with the rule's name.
pub(crate) fn alert_expressions() -> Vec<(String, String)> {
    let text = read_repo_file("deploy/prometheus/alerts.yml");
    let mut out = Vec::new();
    let mut name = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if let Some(n) = t
            .strip_prefix("- alert:")
            .or_else(|| t.strip_prefix("- record:"))
        {
            name = n.trim().to_string();
        } else if let Some(e) = t.strip_prefix("expr:") {
            let e = e.trim();
            if e == "|" || e == ">" {
                let indent = line.len() - t.len();
                let mut block = String::new();
                while let Some(next) = lines.peek() {
                    let nt = next.trim_start();
                    if !nt.is_empty() && next.len() - nt.len() <= indent {
                        break;
                    }
                    block.push_str(nt);
                    block.push('\n');
                    lines.next();
                }
                out.push((name.clone(), block));
            } else {
                out.push((name.clone(), e.to_string()));
            }
        }
    }
    assert!(
        out.len() >= 5,
        "alerts.yml: only {} rules parsed",
        out.len()
    );
    out
}

/// Names the Prometheus server itself adds to every target's samples.
const PROMETHEUS_SYNTHETIC: &[&str] = &[
    "up",
    "scrape_duration_seconds",
    "scrape_samples_scraped",
    "scrape_samples_post_metric_relabeling",
    "scrape_series_added",
];

/// Every `"chingest_…"` string literal in the workspace crates' sources.
pub(crate) fn metric_literals_in_source() -> BTreeSet<String> {
    fn walk(dir: &Path, out: &mut BTreeSet<String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                for part in text.split('"').skip(1).step_by(2) {
                    if part.starts_with("chingest_")
                        && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    {
                        out.insert(part.to_string());
                    }
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(repo_root()).unwrap() {
        let src = e.unwrap().path().join("src");
        if src.is_dir() {
            walk(&src, &mut out);
        }
    }
    out
}

/// `/metrics` of a server that went through [`exercise`], scraped twice (the
/// engine and catalog gauges are read on scrape).
pub(crate) fn exercised_exposition(s: &Server) -> (String, Exposition) {
    exercise(s, 0);
    let _ = s.get("/metrics").text().unwrap();
    let text = s.get("/metrics").text().unwrap();
    let e = parse_exposition(&text);
    (text, e)
}

/// A name in an expression is known when `/metrics` has the series, or when
/// it is fault-only (the test below checks those against the source).
fn check_expressions(what: &str, exprs: &[(String, String)], e: &Exposition) -> Vec<String> {
    let mut problems = Vec::new();
    for (origin, expr) in exprs {
        let names = promql_metric_names(expr);
        if names.is_empty() {
            problems.push(format!("{what} {origin}: no metric in `{expr}`"));
        }
        for n in names {
            let fault_only = FAULT_ONLY.iter().any(|(f, _)| *f == n);
            let synthetic = PROMETHEUS_SYNTHETIC.contains(&n.as_str());
            if !e.samples.contains(&n) && !fault_only && !synthetic {
                problems.push(format!(
                    "{what} {origin}: `{n}` (in `{}`) is not exported by the server",
                    expr.trim()
                ));
            }
        }
    }
    problems
}

#[test]
fn docs_metrics_md_matches_the_live_metrics_both_ways() {
    let dir = data_dir();
    let s = exercise_spawn(dir.path()).start();
    let (text, e) = exercised_exposition(&s);
    let docs = documented_metrics();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for d in &docs {
        if !seen.insert(d.name.clone()) {
            problems.push(format!("docs: `{}` is listed twice", d.name));
        }
        if FAULT_ONLY.iter().any(|(f, _)| *f == d.name) {
            continue;
        }
        match e.families.get(&d.name) {
            None => problems.push(format!(
                "docs: `{}` is documented but not exported by the server",
                d.name
            )),
            Some(f) => {
                if f.kind != d.kind {
                    problems.push(format!(
                        "docs: `{}` is documented as a {} but exported as a {}",
                        d.name, d.kind, f.kind
                    ));
                }
                if f.labels != d.labels {
                    problems.push(format!(
                        "docs: `{}` is documented with labels {:?} but exported with {:?}",
                        d.name, d.labels, f.labels
                    ));
                }
            }
        }
    }
    for (name, f) in &e.families {
        if name.starts_with("chingest_") && !seen.contains(name) {
            problems.push(format!(
                "/metrics: `{name}` ({}) is exported but not in docs/metrics.md",
                f.kind
            ));
        }
    }
    let source = metric_literals_in_source();
    for (name, why) in FAULT_ONLY {
        if !seen.contains(*name) {
            problems.push(format!("fault-only `{name}` is not in docs/metrics.md"));
        }
        if !source.contains(*name) {
            problems.push(format!(
                "fault-only `{name}` ({why}) is named nowhere in the crates' source: renamed?"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n\n/metrics was:\n{text}",
        problems.join("\n")
    );
}

#[test]
fn dashboards_and_alert_rules_name_only_exported_metrics() {
    let dir = data_dir();
    let s = exercise_spawn(dir.path()).start();
    let (text, e) = exercised_exposition(&s);
    let dashboards = dashboard_expressions();
    assert!(dashboards.len() >= 15, "{dashboards:?}");
    let mut problems = check_expressions("dashboard", &dashboards, &e);
    problems.extend(check_expressions("alert", &alert_expressions(), &e));
    let source = metric_literals_in_source();
    for (name, why) in FAULT_ONLY {
        assert!(
            source.contains(*name),
            "fault-only `{name}` ({why}) is named nowhere in the source: renamed?"
        );
    }
    assert!(
        problems.is_empty(),
        "{}\n\n/metrics was:\n{text}",
        problems.join("\n")
    );
}

#[test]
fn promql_metric_names_finds_selectors_only() {
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    for (expr, want) in [
        (
            "histogram_quantile(0.95, sum by (le, route) (rate(chingest_http_request_duration_seconds_bucket[1m])))",
            set(&["chingest_http_request_duration_seconds_bucket"]),
        ),
        (
            "sum(rate(a_total{job=\"x\", route=~\"/write|/api\"}[5m] offset 1h)) by (instance) / on (instance) group_left(db) b",
            set(&["a_total", "b"]),
        ),
        ("up{job=\"chingest\"} == 0", set(&["up"])),
        ("chingest_wal_unflushed_points > 10e6", set(&["chingest_wal_unflushed_points"])),
        ("{__name__=\"x_count\", le=\"+Inf\"}", set(&["x_count"])),
        (
            "rate(m[$__rate_interval]) * 100 and bool on() vector(1)",
            set(&["m"]),
        ),
        ("label_replace(m, \"dst\", \"$1\", \"src\", \"(.*)\")", set(&["m"])),
        ("sum without (le) (m_sum) / ignoring(le) m_count", set(&["m_sum", "m_count"])),
        ("1 - 0.5", set(&[])),
        ("count without (db) (m) + sum(n) by (x)", set(&["m", "n"])),
    ] {
        assert_eq!(promql_metric_names(expr), want, "{expr}");
    }
}

#[test]
fn exposition_and_docs_parsers() {
    let e = parse_exposition(
        "# TYPE h histogram\nh_bucket{route=\"/w,{x}\\\"\",le=\"0.1\"} 1\nh_sum{route=\"a\"} 1\nh_count{route=\"a\"} 1\n# TYPE c counter\nc 3\n",
    );
    assert_eq!(e.families["h"].kind, "histogram");
    assert_eq!(
        e.families["h"].labels,
        BTreeSet::from(["route".to_string()])
    );
    assert!(e.families["c"].labels.is_empty());
    assert!(e.samples.contains("h_bucket") && e.samples.contains("c"));
    assert_eq!(
        doc_labels("`route` (axum `MatchedPath`, e.g. `/write`), `method`, `status`"),
        BTreeSet::from(["route".into(), "method".into(), "status".into()])
    );
    assert!(doc_labels("–").is_empty());
}
