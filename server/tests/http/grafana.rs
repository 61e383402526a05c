//! Grafana, for real: the InfluxDB (InfluxQL) data source and the "Telegraf
//! hosts" dashboard that `deploy/grafana/provisioning/` ships, run against a
//! live server.
//!
//! The server gets an hour of host metrics written as Telegraf writes them
//! ([`telegraf_data`]). Then every template variable query and every panel
//! query of the dashboard, read from its JSON (nothing here lists them), is
//! sent as Grafana sends it: variables and macros expanded as Grafana's
//! InfluxDB data source expands them ([`macros`]), for two time ranges and
//! three `$host` selections (All, two hosts, one), as
//! `GET /query?db=<dbName>&epoch=ms&q=...`. Each answer is compared series by
//! series and cell by cell with what the written points say ([`oracle`]).
//! Every failing query is listed, not just the first.
//!
//! The points are written rather than gathered by a real Telegraf: the cached
//! Telegraf build (telegraf.rs) has only `inputs.file` and `inputs.mem`, and a
//! live host's numbers cannot be checked exactly.

mod macros;
mod oracle;
mod telegraf_data;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::metrics_docs::read_repo_file;
use crate::util::*;
use macros::{Frame, Variable};
use telegraf_data::Point;

const DASHBOARD: &str = "deploy/grafana/provisioning/dashboards/telegraf-hosts.json";
const DATASOURCE: &str = "deploy/grafana/provisioning/datasources/chingest-influxql.yaml";

/// The provisioned data source: the `key: value` lines of its YAML.
struct Datasource(BTreeMap<String, String>);

impl Datasource {
    fn read() -> Self {
        let text = read_repo_file(DATASOURCE);
        assert_eq!(
            text.matches("- name:").count(),
            1,
            "{DATASOURCE}: one data source"
        );
        let mut kv = BTreeMap::new();
        for line in text.lines() {
            let t = line.trim().trim_start_matches("- ");
            if t.starts_with('#') {
                continue;
            }
            if let Some((k, v)) = t.split_once(':') {
                if !v.trim().is_empty() {
                    kv.insert(k.trim().to_string(), v.trim().to_string());
                }
            }
        }
        Datasource(kv)
    }

    fn get(&self, key: &str) -> &str {
        self.0
            .get(key)
            .unwrap_or_else(|| panic!("{DATASOURCE}: no {key}"))
    }
}

/// `key = "value"` of deploy/telegraf/telegraf.conf (first occurrence).
fn telegraf_conf(key: &str) -> String {
    read_repo_file("deploy/telegraf/telegraf.conf")
        .lines()
        .filter_map(|l| l.split_once('='))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim().trim_matches(['[', ']', '"']).to_string())
        .unwrap_or_else(|| panic!("telegraf.conf: no {key}"))
}

/// The data source reads what the compose stack's Telegraf writes, where it
/// writes it, and Grafana is given the provisioning directory.
fn check_provisioning(ds: &Datasource) {
    assert_eq!(ds.get("type"), "influxdb");
    assert_eq!(ds.get("access"), "proxy");
    assert_eq!(ds.get("version"), "InfluxQL");
    // GET is what this test sends; POST would send `q` in a form body.
    assert_eq!(ds.get("httpMode"), "GET");
    assert_eq!(ds.get("url"), telegraf_conf("urls"));
    assert_eq!(ds.get("dbName"), telegraf_conf("database"));
    assert_eq!(ds.get("timeInterval"), telegraf_conf("interval"));
    assert_eq!(
        macros::interval_ms(ds.get("timeInterval")),
        telegraf_data::GATHER_MS
    );
    let compose = read_repo_file("deploy/compose.yaml");
    assert!(
        compose.contains("./grafana/provisioning:/etc/grafana/provisioning"),
        "compose.yaml does not give Grafana the provisioning directory"
    );
    let host = ds.get("url").trim_start_matches("http://");
    let service = host.split(':').next().unwrap();
    assert!(
        compose.contains(&format!("\n  {service}:\n")),
        "compose.yaml has no service {service:?} (the data source's host)"
    );
}

/// Every panel of a dashboard, rows' nested panels included.
fn panels<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    for p in v["panels"].as_array().into_iter().flatten() {
        if p["type"] == "row" {
            panels(p, out);
        } else {
            out.push(p);
        }
    }
}

/// The data source uid a panel or target names (either may carry it).
fn datasource_uid(v: &Value) -> Option<&str> {
    v["datasource"]["uid"].as_str()
}

/// A `$host` selection in the picker, for a label.
fn describe(vars: &[Variable], all: &[Vec<String>]) -> String {
    vars.iter()
        .zip(all)
        .map(|(v, every)| {
            if v.values == *every {
                format!("${}=All", v.name)
            } else {
                format!("${}={}", v.name, v.values.join(","))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last `n` lines of a log.
fn log_tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// `GET /query` as Grafana's backend sends it.
fn grafana_get(s: &Server, db: &str, q: &str) -> Result<Value, String> {
    let r = s
        .client
        .get(s.url("/query"))
        .query(&[("db", db), ("epoch", "ms"), ("q", q)])
        .send()
        .map_err(|e| e.to_string())?;
    let status = r.status();
    let text = r.text().map_err(|e| e.to_string())?;
    if status != 200 {
        return Err(format!("{status}: {text}"));
    }
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
    let result = &v["results"][0];
    if v["results"].as_array().map(Vec::len) != Some(1) || result["statement_id"] != 0 {
        return Err(format!("not one result for statement 0: {text}"));
    }
    if let Some(e) = v["error"].as_str().or(result["error"].as_str()) {
        return Err(format!("error: {e}"));
    }
    Ok(v)
}

/// A template variable's options, as Grafana's `metricFindQuery` reads a
/// `SHOW TAG VALUES` answer (the `value` column), checking the answer's shape.
fn variable_options(
    s: &Server,
    db: &str,
    var: &Value,
    hosts: &[&str],
) -> Result<Vec<String>, String> {
    let q = var["query"]
        .as_str()
        .or(var["query"]["query"].as_str())
        .ok_or_else(|| "variable without a query".to_string())?;
    let v = grafana_get(s, db, q)?;
    let series = v["results"][0]["series"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let [one] = series.as_slice() else {
        return Err(format!("{q}: not one series: {v}"));
    };
    if one["columns"] != serde_json::json!(["key", "value"]) {
        return Err(format!("{q}: columns {}", one["columns"]));
    }
    let values: Vec<String> = one["values"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| r[1].as_str().unwrap_or_default().to_string())
        .collect();
    // `sort: 1` (alphabetical) is InfluxDB's order already; all hosts, once each.
    if values != hosts {
        return Err(format!("{q}: values {values:?}, expected {hosts:?}"));
    }
    Ok(values)
}

/// `actual` equals `expected` (None ↔ null) to 1e-9, relative.
fn same(actual: &Value, expected: Option<f64>) -> bool {
    match (actual.as_f64(), expected) {
        (None, None) => actual.is_null(),
        (Some(a), Some(e)) => (a - e).abs() <= 1e-9 * e.abs().max(1.0),
        _ => false,
    }
}

/// Compares one answer with the oracle's series.
fn compare(
    answer: &Value,
    shape: &oracle::Shape,
    expected: &BTreeMap<Vec<String>, oracle::Rows>,
) -> Result<(), String> {
    let got = answer["results"][0]["series"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if got.is_empty() {
        return Err("no series".into());
    }
    let keys: Vec<&Vec<String>> = expected.keys().collect();
    let got_keys: Vec<Vec<String>> = got
        .iter()
        .map(|sr| {
            shape
                .group_tags
                .iter()
                .map(|t| sr["tags"][t].as_str().unwrap_or("<missing>").to_string())
                .collect()
        })
        .collect();
    if got_keys.iter().collect::<Vec<_>>() != keys {
        return Err(format!(
            "series {got_keys:?}, expected {keys:?} (in this order)"
        ));
    }
    let mut columns = vec!["time".to_string()];
    columns.extend(shape.columns.iter().map(|c| c.name.clone()));
    for (sr, (key, rows)) in got.iter().zip(expected) {
        let at = format!("series {key:?}");
        if sr["name"] != shape.measurement.as_str() {
            return Err(format!("{at}: name {}", sr["name"]));
        }
        if shape.group_tags.is_empty() != sr.get("tags").is_none() {
            return Err(format!("{at}: tags {}", sr["tags"]));
        }
        if sr["tags"].as_object().map_or(0, |m| m.len()) != shape.group_tags.len() {
            return Err(format!("{at}: tags {}", sr["tags"]));
        }
        if sr["columns"] != serde_json::json!(columns) {
            return Err(format!(
                "{at}: columns {}, expected {columns:?}",
                sr["columns"]
            ));
        }
        let values = sr["values"].as_array().cloned().unwrap_or_default();
        compare_rows(&values, rows, has_rate(shape)).map_err(|e| format!("{at}: {e}"))?;
    }
    Ok(())
}

/// Whether a column is a rate: InfluxDB leaves out (or nulls) the rows it
/// has no rate for, so rows are matched by time instead of one for one.
fn has_rate(shape: &oracle::Shape) -> bool {
    shape.columns.iter().any(oracle::Column::is_rate)
}

fn compare_rows(values: &[Value], rows: &oracle::Rows, sparse: bool) -> Result<(), String> {
    let expected: BTreeMap<i64, &Vec<Option<f64>>> = rows.iter().map(|(t, c)| (*t, c)).collect();
    if !sparse && values.len() != rows.len() {
        return Err(format!("{} rows, expected {}", values.len(), rows.len()));
    }
    let mut seen = BTreeSet::new();
    for row in values {
        let t = row[0]
            .as_i64()
            .ok_or_else(|| format!("time {} (epoch=ms)", row[0]))?;
        let cells = expected
            .get(&t)
            .ok_or_else(|| format!("row at {t}, not a bucket of the range"))?;
        for (i, e) in cells.iter().enumerate() {
            if !same(&row[i + 1], *e) {
                return Err(format!(
                    "at {t}: {} is {}, expected {e:?}",
                    i + 1,
                    row[i + 1]
                ));
            }
        }
        if !seen.insert(t) {
            return Err(format!("two rows at {t}"));
        }
    }
    for (t, cells) in rows {
        if cells.iter().any(Option::is_some) && !seen.contains(t) {
            return Err(format!("no row at {t}, expected {cells:?}"));
        }
    }
    Ok(())
}

/// Writes `points` as Telegraf does (batches of 1000 lines, nanosecond
/// times, `CREATE DATABASE` first) and waits until every row is readable.
fn write_like_telegraf(s: &Server, db: &str, points: &[Point]) {
    s.query(&format!("CREATE DATABASE \"{db}\""));
    for batch in points.chunks(1000) {
        let body: String = batch.iter().map(|p| p.line() + "\n").collect();
        let r = s.post(&format!("/write?db={db}"), body);
        let status = r.status();
        assert_eq!(status, 204, "{}", r.text().unwrap_or_default());
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for p in points {
        *counts.entry(p.measurement).or_default() += 1;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    for (m, n) in counts {
        let sql = format!("SELECT toUInt32(count()) AS n FROM `{db}`.`{m}`");
        loop {
            let got = s.try_sql(&sql).ok().and_then(|r| r[0]["n"].as_u64());
            if got == Some(n as u64) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{m}: {got:?} of {n} rows flushed"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// One dashboard target, expanded for a frame and selection, against the server.
struct Run<'a> {
    s: &'a Server,
    db: &'a str,
    points: &'a [Point],
    /// The tag the `$host` variable enumerates.
    variable_tag: &'a str,
}

impl Run<'_> {
    fn target(
        &self,
        raw: &str,
        alias: &str,
        frame: Frame,
        vars: &[Variable],
    ) -> Result<(), String> {
        let q = macros::expand_macros(&macros::interpolate_variables(raw, vars), frame);
        let shape = oracle::shape(&q);
        for tag in alias.split("$tag_").skip(1) {
            let tag: String = tag
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !shape.group_tags.contains(&tag) {
                return Err(format!(
                    "alias {alias:?} names $tag_{tag}, not a GROUP BY tag"
                ));
            }
        }
        if let Some(tag) = &shape.regex_tag {
            assert_eq!(
                tag, self.variable_tag,
                "{q}: a regex on another tag than $host's"
            );
        }
        let selected: BTreeSet<String> = vars.iter().flat_map(|v| v.values.clone()).collect();
        let expected = oracle::expected(&shape, frame, self.points, &selected);
        assert!(
            !expected.is_empty(),
            "{q}: the written data has nothing for it"
        );
        let answer = grafana_get(self.s, self.db, &q).map_err(|e| format!("{q}\n      {e}"))?;
        compare(&answer, &shape, &expected).map_err(|e| format!("{q}\n      {e}"))
    }
}

#[test]
fn grafana_dashboard_queries_answer_as_influxdb_over_telegraf_data() {
    let ds = Datasource::read();
    check_provisioning(&ds);
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    // Two hours ago, on the hour: every bucket of both ranges is whole.
    let t0 = now_ms / 3_600_000 * 3_600_000 - 7_200_000;
    let points = telegraf_data::points(t0);
    write_like_telegraf(&s, ds.get("dbName"), &points);

    let (panels, passed, failures) = check_dashboard(&s, &ds, &points, t0);
    eprintln!(
        "grafana: {panels} panels, {passed} queries as InfluxDB answers, {} not",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} dashboard queries did not answer as InfluxDB:\n  {}\nserver log tail:\n{}",
        failures.len(),
        failures.len() + passed,
        failures.join("\n  "),
        log_tail(&s.log_text(), 20)
    );
}

/// Runs every variable and panel query of the dashboard against `s`, which
/// holds `points` (written from `t0`): the number of panels, of queries
/// answered as InfluxDB answers, and what was wrong with the others.
fn check_dashboard(
    s: &Server,
    ds: &Datasource,
    points: &[Point],
    t0: i64,
) -> (usize, usize, Vec<String>) {
    let dashboard: Value = serde_json::from_str(&read_repo_file(DASHBOARD)).unwrap();
    assert!(
        dashboard["schemaVersion"].as_u64().unwrap() >= 36,
        "schemaVersion"
    );
    let uid = ds.get("uid");
    let db = ds.get("dbName");
    let mut failures: Vec<String> = Vec::new();
    let mut passed = 0;

    // The template variables, as Grafana loads them with the dashboard.
    let vars_json = dashboard["templating"]["list"].as_array().unwrap();
    assert_eq!(vars_json.len(), 1, "the test selects one variable, $host");
    let var = &vars_json[0];
    assert_eq!(var["type"], "query");
    assert_eq!(datasource_uid(var), Some(uid));
    assert_eq!(
        var["regex"].as_str().unwrap_or(""),
        "",
        "variable regexes are not applied here"
    );
    let variable_tag = var["query"]
        .as_str()
        .and_then(|q| q.split("WITH KEY = \"").nth(1))
        .and_then(|r| r.split('"').next())
        .expect("SHOW TAG VALUES ... WITH KEY = \"tag\"");
    let options = match variable_options(s, db, var, &telegraf_data::HOSTS) {
        Ok(o) => {
            passed += 1;
            o
        }
        Err(e) => {
            failures.push(format!("variable ${}: {e}", var["name"]));
            telegraf_data::HOSTS.iter().map(|h| h.to_string()).collect()
        }
    };
    let name = var["name"].as_str().unwrap().to_string();
    let multi = var["multi"].as_bool().unwrap_or(false);
    assert!(
        multi && var["includeAll"] == true,
        "$host: multi-value with All"
    );
    // All; two hosts whose regexes need escaping and anchoring (web.2 vs
    // webx2, web-1 vs web-10); one host.
    let selections = [
        options.clone(),
        vec![options[0].clone(), options[2].clone()],
        vec![options[1].clone()],
    ];

    let min_interval = macros::interval_ms(ds.get("timeInterval"));
    let hour = 3_600_000;
    let frames = [
        (
            "last 1h, 100 points",
            Frame::new(t0, t0 + hour - 1, 100, min_interval),
        ),
        (
            "last 10m, 1000 points",
            Frame::new(t0 + hour - 600_000, t0 + hour - 1, 1000, min_interval),
        ),
    ];
    let run = Run {
        s,
        db,
        points,
        variable_tag,
    };

    let mut all_panels = Vec::new();
    panels(&dashboard, &mut all_panels);
    assert!(!all_panels.is_empty());
    let mut checked = BTreeSet::new();
    for p in &all_panels {
        let title = format!("panel {} {}", p["id"], p["title"]);
        let targets = p["targets"].as_array().cloned().unwrap_or_default();
        assert!(!targets.is_empty(), "{title}: no targets");
        for t in targets.iter().filter(|t| t["hide"] != true) {
            assert_eq!(
                datasource_uid(t).or(datasource_uid(p)),
                Some(uid),
                "{title}: not the provisioned data source"
            );
            let raw = match (t["rawQuery"].as_bool(), t["query"].as_str()) {
                (Some(true), Some(q)) => q,
                _ => panic!("{title}: visual-editor targets are not rendered here; use raw mode"),
            };
            for (range, frame) in frames {
                for values in &selections {
                    let vars = [Variable {
                        name: name.clone(),
                        multi,
                        values: values.clone(),
                    }];
                    let label = format!(
                        "{title} {}, {range} ({}), {}",
                        t["refId"],
                        macros::format_interval(frame.interval_ms),
                        describe(&vars, std::slice::from_ref(&options))
                    );
                    match run.target(raw, t["alias"].as_str().unwrap_or(""), frame, &vars) {
                        Ok(()) => passed += 1,
                        Err(e) => failures.push(format!("{label}:\n      {e}")),
                    }
                }
            }
        }
        checked.insert(p["id"].to_string());
    }
    assert_eq!(checked.len(), all_panels.len(), "panel ids must be unique");
    (all_panels.len(), passed, failures)
}
