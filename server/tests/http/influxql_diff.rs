//! The InfluxQL differential test: a real InfluxDB 1.x (Debian's `influxdb`
//! package, 1.6.7 on bookworm, installed by `scripts/setup.sh --test-deps`) and
//! chingest get the same line protocol (`tests/data/influxql/data.lp`, batch by
//! batch, in order), then every query of `queries.txt` goes to both and the
//! answers are compared: HTTP status, and the JSON value by value (floats to a
//! relative 1e-9, as summation order differs; times, names, tags, columns,
//! error texts exactly). A query whose answers differ must be listed in
//! `deviations.txt` with why; a listed one that now matches fails the test too,
//! so the list stays honest.
//!
//! - `CHINGEST_INFLUXQL_REPORT=<path>`: writes every query's comparison, both
//!   answers in full, to `<path>` (the worklist for the InfluxQL engine).
//! - `CHINGEST_INFLUXQL_BLESS=1`: rewrites `expected.jsonl`, InfluxDB's answers,
//!   for reviewers to read; otherwise the live oracle is checked against it, so
//!   that snapshot stays what InfluxDB answers.
//! - `CHINGEST_INFLUXD=<path>`: another `influxd` 1.x binary.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::reliability::metric;
use crate::util::*;

const TEST: &str = "influxql_answers_match_influxdb_1x";

/// How many failures the test prints in full (the report has all).
const PRINTED_FAILURES: usize = 15;

fn data_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/influxql")
        .join(name)
}

fn read_data(name: &str) -> String {
    std::fs::read_to_string(data_path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// One query of the corpus: `<id> [@param=value ...] <query>`.
struct Case {
    id: String,
    /// `/query` parameters, `q` last.
    params: Vec<(String, String)>,
}

impl Case {
    fn query(&self) -> &str {
        &self.params.last().unwrap().1
    }
}

/// Parses `queries.txt` (see its header), asserting unique ids.
fn corpus() -> Vec<Case> {
    let mut seen = BTreeSet::new();
    let mut cases = Vec::new();
    for line in read_data("queries.txt").lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (id, mut rest) = line.split_once(' ').expect("`<id> <query>`");
        assert!(seen.insert(id.to_string()), "duplicate query id {id}");
        let mut params = vec![("db".to_string(), "diff".to_string())];
        while let Some(tail) = rest.strip_prefix('@') {
            let (token, after) = tail.split_once(' ').expect("a query after the parameters");
            let (k, v) = token.split_once('=').expect("`@key=value`");
            params.retain(|(have, _)| have != k);
            if !(k == "db" && v.is_empty()) {
                params.push((k.to_string(), v.to_string()));
            }
            rest = after.trim_start();
        }
        params.push(("q".to_string(), rest.to_string()));
        cases.push(Case {
            id: id.to_string(),
            params,
        });
    }
    cases
}

/// One write: the lines after a `#! db=<db> precision=<p>` directive of data.lp.
struct Batch {
    params: Vec<(String, String)>,
    body: String,
}

fn batches() -> Vec<Batch> {
    let mut out: Vec<Batch> = Vec::new();
    for line in read_data("data.lp").lines() {
        if let Some(directive) = line.strip_prefix("#!") {
            let params = directive
                .split_whitespace()
                .map(|kv| {
                    let (k, v) = kv.split_once('=').expect("`#! key=value ...`");
                    (k.to_string(), v.to_string())
                })
                .collect();
            out.push(Batch {
                params,
                body: String::new(),
            });
        } else if !line.is_empty() && !line.starts_with('#') {
            let batch = out
                .last_mut()
                .expect("data.lp starts with a `#!` directive");
            batch.body.push_str(line);
            batch.body.push('\n');
        }
    }
    out
}

/// `deviations.txt`: `<id> <why>` per line, `#` comments.
fn deviations() -> BTreeMap<String, String> {
    read_data("deviations.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (id, why) = l.split_once(' ').unwrap_or((l, ""));
            assert!(
                !why.trim().is_empty(),
                "deviations.txt: `{id}` needs a reason"
            );
            (id.to_string(), why.trim().to_string())
        })
        .collect()
}

/// InfluxDB 1.x on a temp dir and free loopback ports, killed on drop.
pub(crate) struct Influxd {
    child: Child,
    pub(crate) base: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Influxd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Everything under the temp dir and on loopback, nothing in /etc or /var:
/// no usage reporting, no `_internal` database (it would show in SHOW
/// DATABASES), continuous queries only when `cqs` (checked every second); `info` logs,
/// which say where it listens (`Influxd::listening`); the rest is influxd's defaults.
fn influxd_config(dir: &Path, http: u16, rpc: u16, auth: bool, cqs: bool) -> String {
    let d = dir.display();
    format!(
        "reporting-enabled = false\n\
         bind-address = \"127.0.0.1:{rpc}\"\n\
         [meta]\n  dir = \"{d}/meta\"\n\
         [data]\n  dir = \"{d}/data\"\n  wal-dir = \"{d}/wal\"\n  query-log-enabled = false\n\
         [monitor]\n  store-enabled = false\n\
         [continuous_queries]\n  enabled = {cqs}\n  run-interval = \"1s\"\n\
         [http]\n  bind-address = \"127.0.0.1:{http}\"\n  log-enabled = false\n  auth-enabled = {auth}\n\
         [logging]\n  level = \"info\"\n  suppress-logo = true\n"
    )
}

impl Influxd {
    /// InfluxDB 1.x started for `test` (`CHINGEST_INFLUXD`, else Debian's `/usr/bin/influxd`),
    /// or `None` when it is not installed and the test may skip (`test_dep_or_skip`).
    pub(crate) fn for_test(test: &str) -> Option<Influxd> {
        Influxd::for_test_with(test, false)
    }

    /// As [`for_test`](Self::for_test), with `[http] auth-enabled` as given.
    pub(crate) fn for_test_with(test: &str, auth: bool) -> Option<Influxd> {
        Some(Influxd::start_with(&Influxd::binary(test)?, auth))
    }

    /// As [`for_test`](Self::for_test), with its continuous-query service running.
    pub(crate) fn for_test_with_cqs(test: &str) -> Option<Influxd> {
        Some(Influxd::start_configured(
            &Influxd::binary(test)?,
            false,
            true,
        ))
    }

    /// `CHINGEST_INFLUXD`, else Debian's `/usr/bin/influxd`; `None` when the test may skip.
    fn binary(test: &str) -> Option<PathBuf> {
        let bin = std::env::var_os("CHINGEST_INFLUXD")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/bin/influxd"));
        test_dep_or_skip(
            bin,
            "InfluxDB 1.x `influxd` (Debian package `influxdb`)",
            test,
        )
    }

    pub(crate) fn start(bin: &Path) -> Influxd {
        Influxd::start_with(bin, false)
    }

    fn start_with(bin: &Path, auth: bool) -> Influxd {
        Influxd::start_configured(bin, auth, false)
    }

    fn start_configured(bin: &Path, auth: bool, cqs: bool) -> Influxd {
        let dir = data_dir();
        let (http, rpc) = (free_port(), free_port());
        let conf = dir.path().join("influxdb.conf");
        std::fs::write(&conf, influxd_config(dir.path(), http, rpc, auth, cqs)).unwrap();
        let log = dir.path().join("influxd.log");
        let child = Command::new(bin)
            .arg("-config")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
        let mut influxd = Influxd {
            child,
            base: format!("http://127.0.0.1:{http}"),
            log,
            _dir: dir,
        };
        influxd.wait_ready();
        influxd
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether the log says this influxd listens on its HTTP port (`Listening on HTTP …
    /// addr=127.0.0.1:<port>`).
    fn listening(&self) -> bool {
        let port = self.base.rsplit(':').next().unwrap_or_default();
        let addr = format!("127.0.0.1:{port}");
        self.log_text()
            .lines()
            .any(|l| l.contains("Listening on HTTP") && l.contains(&addr))
    }

    fn wait_ready(&mut self) {
        let client = client();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("influxd exited ({status}):\n{}", self.log_text());
            }
            // Ours is listening (its log says so, for its port) before a ping counts: another
            // test's influxd may answer on a port ours has not bound yet (or failed to bind),
            // and this test then loaded or read another server (CI, stop 54: InfluxDB listed
            // a database another test had made before this one's).
            if !self.listening() {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            if let Ok(r) = client.get(format!("{}/ping", self.base)).send() {
                if r.status() == 204 && self.child.try_wait().unwrap().is_none() {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("influxd did not answer /ping in 30 s:\n{}", self.log_text());
    }
}

pub(crate) fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// One step of a statement-by-statement comparison with InfluxDB, sent to `base` (database
/// `d`, times in seconds): `w` writes `text`; `nodb` and `nosuchdb` query with no `db` and an
/// unknown one; anything else queries `d`. The status and the body (JSON where it parses).
pub(crate) fn step_answer(
    http: &reqwest::blocking::Client,
    base: &str,
    kind: &str,
    text: &str,
) -> (u16, Value) {
    let r = match kind {
        "w" => http
            .post(format!("{base}/write?db=d&precision=s"))
            .body(text.to_string()),
        "nodb" => http.post(format!("{base}/query")).query(&[("q", text)]),
        "nosuchdb" => http
            .post(format!("{base}/query?db=nosuch"))
            .query(&[("q", text)]),
        _ => http
            .post(format!("{base}/query?db=d&epoch=s"))
            .query(&[("q", text)]),
    }
    .send()
    .unwrap();
    let status = r.status().as_u16();
    let body = r.text().unwrap();
    (
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

/// The databases the batches write.
fn databases(batches: &[Batch]) -> BTreeSet<&str> {
    batches
        .iter()
        .flat_map(|b| b.params.iter().filter(|(k, _)| k == "db"))
        .map(|(_, v)| v.as_str())
        .collect()
}

/// Creates the databases and writes every batch, asserting 204 (the two
/// servers must hold the same data for the comparison to mean anything).
fn load(client: &reqwest::blocking::Client, base: &str, who: &str) {
    let batches = batches();
    let dbs = databases(&batches);
    for db in dbs {
        let r = client
            .post(format!("{base}/query"))
            .query(&[("q", format!("CREATE DATABASE \"{db}\""))])
            .send()
            .unwrap();
        assert_eq!(
            r.status(),
            200,
            "{who}: CREATE DATABASE {db}: {:?}",
            r.text()
        );
    }
    for (i, b) in batches.iter().enumerate() {
        let r = client
            .post(format!("{base}/write"))
            .query(&b.params)
            .body(b.body.clone())
            .send()
            .unwrap();
        let status = r.status();
        assert_eq!(
            status,
            204,
            "{who}: batch {i} {:?}: {:?}",
            b.params,
            r.text()
        );
    }
}

/// Polls chingest's /health until every write is flushed to the engine (reads
/// see only flushed rows).
fn wait_flushed(s: &Server) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let h: Value = s.get("/health").json().unwrap();
        let wal = &h["wal"];
        let (flushed, last) = (wal["flushed_seq"].as_u64(), wal["last_seq"].as_u64());
        if wal["unflushed_points"] == 0 && flushed.is_some() && flushed >= last {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "chingest did not flush the dataset in 60 s: {h}\n{}",
            s.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One server's answer: status and the body as JSON values (one per chunk
/// with `chunked=true`), or its text if it is not JSON.
#[derive(PartialEq, Clone)]
struct Answer {
    status: u16,
    body: Result<Vec<Value>, String>,
}

impl Answer {
    fn to_json(&self) -> Value {
        match &self.body {
            Ok(values) => json!({"status": self.status, "body": values}),
            Err(text) => json!({"status": self.status, "text": text}),
        }
    }

    fn from_json(v: &Value) -> Answer {
        Answer {
            status: v["status"].as_u64().unwrap() as u16,
            body: match v.get("text") {
                Some(t) => Err(t.as_str().unwrap().to_string()),
                None => Ok(v["body"].as_array().unwrap().clone()),
            },
        }
    }

    fn render(&self) -> String {
        let body = match &self.body {
            Ok(values) => values
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join("\n  "),
            Err(text) => format!("(not JSON) {text}"),
        };
        format!("{} {body}", self.status)
    }
}

/// `GET /query`, as the influx clients send SELECT and SHOW; with `@method=POST`
/// a form body, as Grafana's data source can be set to.
fn ask(client: &reqwest::blocking::Client, base: &str, case: &Case) -> Answer {
    let url = format!("{base}/query");
    let post = case
        .params
        .iter()
        .any(|(k, v)| k == "method" && v == "POST");
    let params: Vec<&(String, String)> =
        case.params.iter().filter(|(k, _)| k != "method").collect();
    let request = if post {
        client.post(url).form(&params)
    } else {
        client.get(url).query(&params)
    };
    let r = request
        .send()
        .unwrap_or_else(|e| panic!("{}: {e}", case.id));
    let status = r.status().as_u16();
    let text = r.text().unwrap_or_default();
    let body = serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| text.clone());
    Answer { status, body }
}

/// Integers exactly; otherwise as floats, to a relative 1e-9 (or 1e-12 near zero).
fn numbers_equal(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return x == y;
    }
    if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
        return x == y;
    }
    let (x, y) = (a.as_f64().unwrap(), b.as_f64().unwrap());
    let d = (x - y).abs();
    d <= 1e-12 || d <= 1e-9 * x.abs().max(y.abs())
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// The first place where `got` differs from `want`, as `path: want vs got`.
fn first_difference(path: &str, want: &Value, got: &Value) -> Option<String> {
    match (want, got) {
        (Value::Number(a), Value::Number(b)) if numbers_equal(a, b) => None,
        (Value::Array(a), Value::Array(b)) => {
            let inner = a
                .iter()
                .zip(b)
                .enumerate()
                .find_map(|(i, (x, y))| first_difference(&format!("{path}[{i}]"), x, y));
            inner.or_else(|| {
                (a.len() != b.len()).then(|| {
                    format!(
                        "{path}: {} elements vs {} (first extra: {})",
                        a.len(),
                        b.len(),
                        short(if a.len() > b.len() {
                            &a[b.len()]
                        } else {
                            &b[a.len()]
                        })
                    )
                })
            })
        }
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter().find_map(|k| match (a.get(k), b.get(k)) {
                (Some(x), Some(y)) => first_difference(&format!("{path}.{k}"), x, y),
                (x, y) => Some(format!(
                    "{path}.{k}: {} vs {}",
                    x.map_or("absent".into(), short),
                    y.map_or("absent".into(), short)
                )),
            })
        }
        _ if want == got => None,
        _ => Some(format!("{path}: {} vs {}", short(want), short(got))),
    }
}

/// `v` with the rows of each series that share a time put in one canonical
/// order. InfluxDB 1.x merges series by time with a heap, so points of several
/// series at the same time come out in an order that differs from one
/// timestamp to the next (and between queries); no order is right. Rows with
/// different times keep their order, so `ORDER BY time DESC` is still checked.
fn ties_in_order(v: Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.into_iter().map(ties_in_order).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| match (k.as_str(), v) {
                    ("values", Value::Array(rows)) => (k, Value::Array(sort_within_ties(rows))),
                    (_, v) => (k, ties_in_order(v)),
                })
                .collect(),
        ),
        other => other,
    }
}

fn sort_within_ties(rows: Vec<Value>) -> Vec<Value> {
    let time = |r: &Value| r.get(0).cloned().unwrap_or(Value::Null);
    let mut out: Vec<Value> = Vec::with_capacity(rows.len());
    let mut run: Vec<Value> = Vec::new();
    for row in rows {
        if run.last().is_some_and(|last| time(last) != time(&row)) {
            run.sort_by_key(Value::to_string);
            out.append(&mut run);
        }
        run.push(row);
    }
    run.sort_by_key(Value::to_string);
    out.append(&mut run);
    out
}

/// `None` when the answers match.
fn compare(want: &Answer, got: &Answer) -> Option<String> {
    if want.status != got.status {
        return Some(format!("HTTP status {} vs {}", want.status, got.status));
    }
    match (&want.body, &got.body) {
        (Ok(a), Ok(b)) => first_difference(
            "",
            &ties_in_order(Value::from(a.clone())),
            &ties_in_order(Value::from(b.clone())),
        ),
        (Err(a), Err(b)) if a == b => None,
        _ => Some("body: JSON vs not JSON (or different text)".to_string()),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Verdict {
    Pass,
    /// Differs, as deviations.txt says.
    Deviates,
    /// Differs and is not listed.
    Fails,
    /// Listed in deviations.txt, but matches.
    Stale,
}

struct Outcome<'a> {
    case: &'a Case,
    oracle: Answer,
    chingest: Answer,
    difference: Option<String>,
    verdict: Verdict,
}

fn judge<'a>(
    case: &'a Case,
    oracle: Answer,
    chingest: Answer,
    listed: &BTreeMap<String, String>,
) -> Outcome<'a> {
    let difference = compare(&oracle, &chingest);
    let verdict = match (&difference, listed.contains_key(&case.id)) {
        (None, false) => Verdict::Pass,
        (None, true) => Verdict::Stale,
        (Some(_), true) => Verdict::Deviates,
        (Some(_), false) => Verdict::Fails,
    };
    Outcome {
        case,
        oracle,
        chingest,
        difference,
        verdict,
    }
}

fn render_outcome(o: &Outcome, listed: &BTreeMap<String, String>) -> String {
    let mut s = String::new();
    let params: Vec<String> = o.case.params[..o.case.params.len() - 1]
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let _ = writeln!(s, "query:    {} [{}]", o.case.query(), params.join("&"));
    if let Some(d) = &o.difference {
        let _ = writeln!(s, "differs:  {d}");
    }
    if let Some(why) = listed.get(&o.case.id) {
        let _ = writeln!(s, "listed:   {why}");
    }
    let _ = writeln!(s, "influxdb: {}", o.oracle.render());
    let _ = writeln!(s, "chingest: {}", o.chingest.render());
    s
}

fn summary(outcomes: &[Outcome]) -> String {
    let count = |v: Verdict| outcomes.iter().filter(|o| o.verdict == v).count();
    format!(
        "InfluxQL differential test: {} queries: {} match InfluxDB, {} deviate as listed, \
         {} differ unlisted, {} listed but match",
        outcomes.len(),
        count(Verdict::Pass),
        count(Verdict::Deviates),
        count(Verdict::Fails),
        count(Verdict::Stale)
    )
}

/// The full comparison, every query, for `CHINGEST_INFLUXQL_REPORT`.
fn write_report(path: &Path, outcomes: &[Outcome], listed: &BTreeMap<String, String>) {
    let mut s = summary(outcomes) + "\n\n";
    for o in outcomes {
        let verdict = match o.verdict {
            Verdict::Pass => "PASS",
            Verdict::Deviates => "DEVIATES (listed)",
            Verdict::Fails => "FAIL",
            Verdict::Stale => "STALE (listed, but matches)",
        };
        let _ = writeln!(
            s,
            "=== {} {verdict}\n{}",
            o.case.id,
            render_outcome(o, listed)
        );
    }
    std::fs::write(path, s).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// With `CHINGEST_INFLUXQL_BLESS=1` writes InfluxDB's answers to expected.jsonl;
/// otherwise returns the ids whose live answer differs from that snapshot.
fn check_snapshot(outcomes: &[Outcome]) -> Vec<String> {
    let path = data_path("expected.jsonl");
    if std::env::var("CHINGEST_INFLUXQL_BLESS").as_deref() == Ok("1") {
        let text: String = outcomes
            .iter()
            .map(|o| {
                let mut v = o.oracle.to_json();
                v["id"] = json!(o.case.id);
                v["q"] = json!(o.case.query());
                v.to_string() + "\n"
            })
            .collect();
        std::fs::write(&path, text).unwrap();
        return Vec::new();
    }
    assert!(
        path.exists(),
        "no {}: run the test with CHINGEST_INFLUXQL_BLESS=1 to write it",
        path.display()
    );
    let snapshot: BTreeMap<String, Answer> = read_data("expected.jsonl")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["id"].as_str().unwrap().to_string(), Answer::from_json(&v))
        })
        .collect();
    let mut stale: Vec<String> = outcomes
        .iter()
        .filter(|o| snapshot.get(&o.case.id) != Some(&o.oracle))
        .map(|o| o.case.id.clone())
        .collect();
    let ids: BTreeSet<&String> = outcomes.iter().map(|o| &o.case.id).collect();
    stale.extend(snapshot.keys().filter(|k| !ids.contains(k)).cloned());
    stale
}

#[test]
fn influxql_answers_match_influxdb_1x() {
    let bin = std::env::var_os("CHINGEST_INFLUXD")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/influxd"));
    let Some(bin) = test_dep_or_skip(
        bin,
        "InfluxDB 1.x `influxd` (Debian package `influxdb`)",
        TEST,
    ) else {
        return;
    };
    let cases = corpus();
    assert!(cases.len() >= 150, "the corpus has {} queries", cases.len());
    let listed = deviations();
    let unknown: Vec<&String> = listed
        .keys()
        .filter(|id| !cases.iter().any(|c| &c.id == *id))
        .collect();
    assert!(
        unknown.is_empty(),
        "deviations.txt lists unknown ids {unknown:?}"
    );

    let oracle = Influxd::start(&bin);
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    let http = client();
    load(&http, &oracle.base, "influxd");
    load(&http, &s.base, "chingest");
    wait_flushed(&s);
    // The same points on a server with the hot store on (off by default): what it answers
    // from memory must be InfluxDB's answer too.
    let hot_dir = data_dir();
    let hot = Spawn::new(hot_dir.path())
        .config("[hot]\nenabled = true\nhold = \"all\"\napply_wait_ms = 60000\n")
        .start();
    load(&http, &hot.base, "chingest with [hot] on");
    wait_flushed(&hot);

    // Which queries chingest answered from its last points, not the engine.
    let last_point_reads = || metric(&s, "chingest_influxql_last_point_reads_total").unwrap_or(0.0);
    let mut from_last_points = Vec::new();
    let outcomes: Vec<Outcome> = cases
        .iter()
        .map(|c| {
            let before = last_point_reads();
            let ours = ask(&http, &s.base, c);
            if last_point_reads() > before {
                from_last_points.push(c.id.clone());
            }
            judge(c, ask(&http, &oracle.base, c), ours, &listed)
        })
        .collect();
    // Answered from memory: the corpus must compare those answers too
    // (a lastpoint whose series' last point is outside its range, lacks its
    // fields or has a tag condition is answered by the engine).
    for id in [
        "ord.lastpoint",
        "ord.lastpoint_all_series",
        "ord.lastpoint_no_group",
        "ord.lastpoint_sparse_fields",
    ] {
        assert!(
            from_last_points.iter().any(|i| i == id),
            "{id} was not answered from the last points (those were: {from_last_points:?})"
        );
    }

    let hot_reads = || {
        hot.get("/metrics")
            .text()
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("chingest_influxql_reads_total{path=\"hot\"} "))
            .map_or(0.0, |v| v.trim().parse::<f64>().unwrap())
    };
    let before = hot_reads();
    let hot_outcomes: Vec<Outcome> = outcomes
        .iter()
        .map(|o| {
            judge(
                o.case,
                o.oracle.clone(),
                ask(&http, &hot.base, o.case),
                &listed,
            )
        })
        .collect();
    let from_hot = hot_reads() - before;
    assert!(
        from_hot >= 50.0,
        "only {from_hot} reads of the corpus were answered from the hot store"
    );

    if let Some(path) = std::env::var_os("CHINGEST_INFLUXQL_REPORT") {
        write_report(Path::new(&path), &outcomes, &listed);
    }
    let snapshot_stale = check_snapshot(&outcomes);
    let summary = summary(&outcomes);
    eprintln!("{summary}");
    let failed = |o: &&Outcome| matches!(o.verdict, Verdict::Fails | Verdict::Stale);
    let bad: Vec<(&Outcome, &str)> = outcomes
        .iter()
        .filter(failed)
        .map(|o| (o, ""))
        .chain(
            hot_outcomes
                .iter()
                .filter(failed)
                .map(|o| (o, " (with [hot] on)")),
        )
        .collect();
    let mut shown = String::new();
    for (o, on) in bad.iter().take(PRINTED_FAILURES) {
        let what = if o.verdict == Verdict::Stale {
            "matches InfluxDB but is listed in deviations.txt: remove it"
        } else {
            "differs from InfluxDB"
        };
        let what = format!("{what}{on}");
        let _ = writeln!(
            shown,
            "--- {} {what}\n{}",
            o.case.id,
            render_outcome(o, &listed)
        );
    }
    assert!(
        bad.is_empty(),
        "{summary}\n(CHINGEST_INFLUXQL_REPORT=<path> writes every comparison)\n\n{shown}"
    );
    assert!(
        snapshot_stale.is_empty(),
        "InfluxDB's answers differ from tests/data/influxql/expected.jsonl for {snapshot_stale:?}: \
         rerun with CHINGEST_INFLUXQL_BLESS=1 and review the change"
    );
}

/// Issue #25, reads: two ingest nodes whose points are on a ClickHouse cluster (two real
/// 18.16 servers as shards) are sent the corpus's data between them, each series to one node
/// (as a client with a node per series would: a point and its rewrite reach the same node,
/// in order). Every `SELECT` and every `SHOW` (with or without `WHERE`) of the corpus, asked of either
/// node, equals the embedded engine's answer on the same data. The databases are created on
/// one node only: the other learns them from the cluster.
#[test]
fn influxql_answers_from_two_nodes_on_a_clickhouse_cluster_match_the_embedded_engine() {
    use crate::cluster::clickhouse_server::{Shard, CLUSTER};
    const TEST: &str =
        "influxql_answers_from_two_nodes_on_a_clickhouse_cluster_match_the_embedded_engine";
    let Some((_dir, shards)) = crate::cluster::two_shard_cluster(TEST) else {
        return;
    };
    let (s0, s1) = (&shards[0], &shards[1]);
    let embedded_dir = data_dir();
    let embedded = Spawn::new(embedded_dir.path()).start();
    let (dir_a, dir_b) = (data_dir(), data_dir());
    // With Distributed tables over every measurement.
    let distributed = format!("distributed = \"{CLUSTER}\"\n");
    let node_a = Spawn::new(dir_a.path())
        .config(&(crate::cluster::cluster_config_named(&[s0, s1], "a") + &distributed))
        .start();
    let node_b = Spawn::new(dir_b.path())
        .config(&(crate::cluster::cluster_config_named(&[s0, s1], "b") + &distributed))
        .start();
    let http = client();
    load(&http, &embedded.base, "embedded");
    load_on_two_nodes(&http, &node_a, &node_b);
    wait_flushed(&embedded);
    wait_flushed(&node_a);
    wait_flushed(&node_b);
    // A statement reads the cluster's catalog unless it read it less than a second ago:
    // past that second, what both nodes delivered is in every node's answer.
    std::thread::sleep(Duration::from_millis(1100));
    let cases: Vec<Case> = corpus()
        .into_iter()
        .filter(|c| {
            let q = c.query().trim_start().to_ascii_uppercase();
            (q.starts_with("SELECT") && !q.contains(" INTO "))
                || (q.starts_with("SHOW")
                    && !q.starts_with("SHOW QUERIES")
                    && !q.starts_with("SHOW USERS")
                    && !q.starts_with("SHOW GRANTS")
                    && !q.starts_with("SHOW CONTINUOUS"))
        })
        .collect();
    let shows = cases
        .iter()
        .filter(|c| c.query().to_ascii_uppercase().starts_with("SHOW"))
        .count();
    assert!(
        cases.len() >= 170 && shows >= 45,
        "{} cases, {shows} SHOWs",
        cases.len()
    );
    let mut differences = Vec::new();
    for c in &cases {
        let want = ask(&http, &embedded.base, c);
        for (name, node) in [("node a", &node_a), ("node b", &node_b)] {
            let got = ask(&http, &node.base, c);
            if let Some(d) = compare(&want, &got) {
                differences.push(format!(
                    "{} {} ({name}): {d}\n  embedded: {}\n  {name}:   {}",
                    c.id,
                    c.query(),
                    want.render(),
                    got.render()
                ));
            }
        }
    }
    assert!(
        differences.is_empty(),
        "{} answers of {} cases differ:\n{}",
        differences.len(),
        cases.len(),
        differences.join("\n")
    );
    // The points are on the shards, not in the nodes' engines, and both nodes wrote some.
    let mut on_shards = 0u64;
    let mut writers = BTreeSet::new();
    for s in [&s0, &s1] {
        on_shards += s
            .query("SELECT count() FROM __shard_diff.cpu")
            .unwrap()
            .trim()
            .parse::<u64>()
            .unwrap();
        writers.extend(
            s.query("SELECT DISTINCT __node FROM __shard_diff.cpu")
                .unwrap()
                .lines()
                // `<node>@<its data directory's incarnation>`.
                .map(|n| n.split_once('@').map_or(n, |(node, _)| node).to_string()),
        );
    }
    assert!(on_shards > 1000, "{on_shards}");
    assert_eq!(writers, BTreeSet::from(["a".to_string(), "b".to_string()]));
    // Every shard table has its Distributed table, whatever its name, and on either shard
    // it counts the rows of both.
    let tables = |s: &Shard| -> BTreeSet<String> {
        s.query(
            "SELECT database, name FROM system.tables \
             WHERE startsWith(database, '__shard_') FORMAT JSONEachRow",
        )
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
    };
    let shard_tables = tables(s0);
    assert!(shard_tables.len() >= 6, "{shard_tables:?}");
    assert_eq!(shard_tables, tables(s1));
    for line in &shard_tables {
        let t: Value = serde_json::from_str(line).unwrap();
        let (db, m) = (t["database"].as_str().unwrap(), t["name"].as_str().unwrap());
        let count = |s: &Shard, database: &str| -> u64 {
            let sql = format!(
                "SELECT count() FROM {}.{}",
                engine::quote_ident(database),
                engine::quote_ident(m)
            );
            s.query(&sql)
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
                .trim()
                .parse()
                .unwrap()
        };
        let user_db = db.strip_prefix("__shard_").unwrap();
        let whole = count(s0, db) + count(s1, db);
        assert_eq!(count(s0, user_db), whole, "{user_db}.{m} on shard 0");
        assert_eq!(count(s1, user_db), whole, "{user_db}.{m} on shard 1");
    }
    // Most aggregates of the corpus were computed by the shards (issue #43); the others,
    // and every raw read, read the rows.
    for node in [&node_a, &node_b] {
        let reads = |path: &str| {
            let text = node.get("/metrics").text().unwrap();
            let prefix = format!("chingest_cluster_reads_total{{path=\"{path}\"}} ");
            text.lines()
                .find_map(|l| l.strip_prefix(&prefix))
                .map_or(0.0, |v| v.trim().parse::<f64>().unwrap())
        };
        let (pushed, rows) = (reads("pushdown"), reads("rows"));
        // Each group's last point of every field answered in Rust from the shards' last
        // points (`storage/src/influxql/cluster_last_point.rs`); `top`/`bottom`: only the
        // shards' candidates came to the node.
        let last = reads("last_point");
        let candidates = reads("candidates");
        eprintln!(
            "{TEST}: {pushed} reads pushed down, {last} last points in Rust, \
             {candidates} read candidates, {rows} read the rows"
        );
        // 133 pushed down before transformations and arithmetic of aggregates were (16 more),
        // `mode` (3 more) and `distinct` (3 more).
        assert!(
            pushed >= 153.0 && rows >= 100.0 && last >= 1.0 && candidates >= 5.0,
            "{pushed} pushed down, {last} last points, {candidates} candidates, {rows} rows"
        );
        // Their partials combined in Rust, every one (`pushdown/combine.rs`).
        let text = node.get("/metrics").text().unwrap();
        let combined = |by: &str| {
            let prefix = format!("chingest_cluster_pushdown_combined_total{{by=\"{by}\"}} ");
            text.lines()
                .find_map(|l| l.strip_prefix(&prefix))
                .map_or(0.0, |v| v.trim().parse::<f64>().unwrap())
        };
        assert_eq!(
            (combined("rust"), combined("engine")),
            (pushed, 0.0),
            "partials combined (in Rust, by the engine)"
        );
    }
    for node in [&node_a, &node_b] {
        let metrics = node.get("/metrics").text().unwrap();
        assert!(
            !metrics.contains("reason=\"distributed_table\""),
            "a Distributed table failed: {}",
            node.log_text()
        );
    }
}

/// The corpus's data split between two nodes by series (a point and its rewrite go to
/// the same node, in order); its databases created on `a` only, which `b` must learn
/// from the cluster before it accepts writes to them.
fn load_on_two_nodes(client: &reqwest::blocking::Client, a: &Server, b: &Server) {
    let batches = batches();
    let dbs = databases(&batches);
    for db in &dbs {
        let r = client
            .post(format!("{}/query", a.base))
            .query(&[("q", format!("CREATE DATABASE \"{db}\""))])
            .send()
            .unwrap();
        assert_eq!(r.status(), 200, "CREATE DATABASE {db}: {:?}", r.text());
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r: Value = b.query("SHOW DATABASES");
        let listed: BTreeSet<&str> = r["results"][0]["series"][0]["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v[0].as_str())
            .collect();
        if dbs.iter().all(|d| listed.contains(d)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node b did not learn {dbs:?}: {r}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for (i, batch) in batches.iter().enumerate() {
        let (mut to_a, mut to_b) = (String::new(), String::new());
        for line in batch.body.lines() {
            let to = if series_of(line).bytes().map(u64::from).sum::<u64>() % 2 == 0 {
                &mut to_a
            } else {
                &mut to_b
            };
            to.push_str(line);
            to.push('\n');
        }
        for (node, body) in [(a, to_a), (b, to_b)] {
            if body.is_empty() {
                continue;
            }
            let r = client
                .post(format!("{}/write", node.base))
                .query(&batch.params)
                .body(body)
                .send()
                .unwrap();
            let status = r.status();
            assert_eq!(status, 204, "batch {i} {:?}: {:?}", batch.params, r.text());
        }
    }
}

/// A line's series as one string: the measurement, then its tags sorted (line protocol's
/// escapes kept: the same series written with its tags in another order is the same).
fn series_of(line: &str) -> String {
    let mut key = String::new();
    let mut escaped = false;
    for c in line.chars() {
        if c == ' ' && !escaped {
            break;
        }
        escaped = c == '\\' && !escaped;
        key.push(c);
    }
    let mut parts = Vec::new();
    let (mut part, mut escaped) = (String::new(), false);
    for c in key.chars() {
        if c == ',' && !escaped {
            parts.push(std::mem::take(&mut part));
        } else {
            part.push(c);
        }
        escaped = c == '\\' && !escaped;
    }
    parts.push(part);
    let measurement = parts.remove(0);
    parts.sort();
    format!("{measurement},{}", parts.join(","))
}
