//! Timing queries: for each query, check the answers first (every server's
//! answer equals the first server's, and has the shape the data set implies),
//! warm up, then time. With `c` clients a round sends `c` simultaneous
//! requests to one server and waits for all of them; rounds alternate between
//! the servers (and which goes first), so load from elsewhere on the machine
//! hits both alike. Every timed answer must be a 200 without an error.

use std::time::Instant;

use hyper::Uri;

use super::answer::{compare, parse, Shape};
use super::fill::{FillResult, MEASUREMENT};
use super::http::{encode_component, Http, Reply};
use super::result::{AnswerCheck, QueryResult, Timing};
use crate::client::Target;
use crate::error::{Error, Result};
use crate::stats::LatencyHist;

/// Field every query averages (the first of `cpu`'s fields in [`crate::gen`]).
pub const FIELD: &str = "usage_user";
const NS_PER_MS: i64 = 1_000_000;
const HOUR_MS: i64 = 3_600_000;

/// A server under test: a name for the report and its base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// Name in the report (`chingest`, `influxdb`).
    pub name: String,
    /// `http://host:port`, no path.
    pub base: String,
}

impl std::str::FromStr for Server {
    type Err = Error;
    /// `NAME=http://host:port`.
    fn from_str(s: &str) -> Result<Server> {
        let (name, base) = s.split_once('=').ok_or_else(|| {
            Error::InvalidArgument(format!("server {s:?}: expected NAME=http://host:port"))
        })?;
        Target::parse_uri(base)?;
        Ok(Server {
            name: name.into(),
            base: base.trim_end_matches('/').into(),
        })
    }
}

/// One query to time.
#[derive(Debug, Clone, PartialEq)]
pub struct QuerySpec {
    /// Short name.
    pub name: String,
    /// What it stands for, for the report.
    pub what: String,
    /// InfluxQL.
    pub text: String,
    /// Series the answer must have.
    pub expected_series: u64,
    /// Rows each series must have.
    pub expected_rows_per_series: u64,
    /// Untimed runs per server.
    pub warmup: usize,
    /// Timed requests per server and client count.
    pub runs: usize,
    /// Client counts, one timing each.
    pub clients: Vec<usize>,
}

/// How many runs of each query, and with how many clients.
#[derive(Debug, Clone, PartialEq)]
pub struct Runs {
    /// Untimed runs per server before timing.
    pub warmup: usize,
    /// Timed requests of the 1-host panel query.
    pub panel: usize,
    /// Timed requests of the all-hosts query.
    pub all_hosts: usize,
    /// Client counts for the panel query.
    pub panel_clients: Vec<usize>,
    /// Client counts for the all-hosts query.
    pub all_hosts_clients: Vec<usize>,
}

/// The Grafana shapes of issues #12 and #23 over a written data set: a panel
/// (one host, the data set's last hour, `mean` per 10 s) and an all-hosts
/// view (the data set's last 24 h, `mean` per minute per host), both with
/// Grafana's `$timeFilter` expansion (`time >= Xms and time <= Yms`) and
/// `fill(null)`; and every host's current value (TSBS `lastpoint`: the last
/// point of each host, all fields), timed as many times as the panel.
pub fn grafana_queries(data: &FillResult, host: &str, runs: &Runs) -> Vec<QuerySpec> {
    let start = data.start_ns / NS_PER_MS;
    let end = data.end_ns / NS_PER_MS;
    let day_from = (end - 24 * HOUR_MS).max(start);
    let panel_from = (end - HOUR_MS).max(start);
    let buckets = |from: i64, to: i64, width: i64| ((to - from) / width) as u64;
    vec![
        QuerySpec {
            name: "panel".into(),
            what: "Grafana panel: 1 host, last 1 h, mean per 10 s".into(),
            text: format!(
                "SELECT mean(\"{FIELD}\") FROM \"{MEASUREMENT}\" WHERE (\"host\" = '{host}') AND time >= {panel_from}ms and time <= {}ms GROUP BY time(10s) fill(null)",
                end - 1
            ),
            expected_series: 1,
            expected_rows_per_series: buckets(panel_from, end, 10_000),
            warmup: runs.warmup,
            runs: runs.panel,
            clients: runs.panel_clients.clone(),
        },
        QuerySpec {
            name: "all_hosts".into(),
            what: "all hosts, last 24 h, mean per 1 min per host".into(),
            text: format!(
                "SELECT mean(\"{FIELD}\") FROM \"{MEASUREMENT}\" WHERE time >= {day_from}ms and time <= {}ms GROUP BY time(1m), \"host\" fill(null)",
                end - 1
            ),
            expected_series: data.series,
            expected_rows_per_series: buckets(day_from, end, 60_000),
            warmup: runs.warmup,
            runs: runs.all_hosts,
            clients: runs.all_hosts_clients.clone(),
        },
        QuerySpec {
            name: "lastpoint".into(),
            what: "every host's last point, all fields (TSBS lastpoint, Grafana's current value)"
                .into(),
            text: format!(
                "SELECT * FROM \"{MEASUREMENT}\" GROUP BY \"host\" ORDER BY time DESC LIMIT 1"
            ),
            expected_series: data.series,
            expected_rows_per_series: 1,
            warmup: runs.warmup,
            runs: runs.panel,
            clients: vec![1],
        },
    ]
}

fn query_uri(server: &Server, db: &str, text: &str) -> Result<Uri> {
    Target::parse_uri(&format!(
        "{}/query?db={}&epoch=ms&q={}",
        server.base,
        encode_component(db),
        encode_component(text)
    ))
}

/// A 200 whose body does not start with an error: `"error"` near the top is
/// how both servers report a failed statement.
fn ok_reply(server: &Server, r: &Reply) -> Result<()> {
    let head = String::from_utf8_lossy(&r.body[..r.body.len().min(200)]).into_owned();
    if r.status != 200 || head.contains("\"error\"") {
        return Err(Error::Check(format!(
            "{} answered {}: {head}",
            server.name, r.status
        )));
    }
    Ok(())
}

/// Every server's answer equals the first one's and has the expected shape.
async fn check(http: &Http, uris: &[(Server, Uri)], q: &QuerySpec) -> Result<(Shape, Vec<u64>)> {
    let mut first = None;
    let mut sizes = Vec::new();
    let mut shape = Shape::default();
    for (server, uri) in uris {
        let reply = http.get(uri).await?;
        ok_reply(server, &reply)?;
        sizes.push(reply.body.len() as u64);
        let answer =
            parse(&reply.body).map_err(|e| Error::Check(format!("{}: {e}", server.name)))?;
        let want = first.get_or_insert_with(|| (server.name.clone(), answer.clone()));
        shape = compare(&want.1, &answer).map_err(|e| {
            Error::Check(format!(
                "{}: {} and {} differ: {e}",
                q.name, want.0, server.name
            ))
        })?;
    }
    let rows = q.expected_series * q.expected_rows_per_series;
    if shape.series != q.expected_series || shape.rows != rows {
        return Err(Error::Check(format!(
            "{}: {} series and {} rows, expected {} and {rows}",
            q.name, shape.series, shape.rows, q.expected_series
        )));
    }
    Ok((shape, sizes))
}

/// `clients` simultaneous requests to one server; their latencies and the round's wall time.
async fn round(
    http: &Http,
    server: &Server,
    uri: &Uri,
    clients: usize,
) -> Result<(Vec<u128>, f64)> {
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (http, uri) = (http.clone(), uri.clone());
        set.spawn(async move {
            let t = Instant::now();
            let r = http.get(&uri).await;
            (r, t.elapsed().as_micros())
        });
    }
    let mut lat = Vec::with_capacity(clients);
    while let Some(j) = set.join_next().await {
        let (r, us) = j.map_err(|e| Error::Check(format!("query task failed: {e}")))?;
        ok_reply(server, &r?)?;
        lat.push(us);
    }
    Ok((lat, started.elapsed().as_secs_f64()))
}

/// Times one query on every server at one client count.
async fn time(
    http: &Http,
    uris: &[(Server, Uri)],
    runs: usize,
    clients: usize,
) -> Result<Vec<(LatencyHist, f64)>> {
    let mut acc: Vec<(LatencyHist, f64)> = uris.iter().map(|_| (LatencyHist::new(), 0.0)).collect();
    let rounds = runs.div_ceil(clients.max(1));
    for r in 0..rounds {
        // Alternate which server goes first, so neither always follows the other.
        let order: Vec<usize> = if r % 2 == 0 {
            (0..uris.len()).collect()
        } else {
            (0..uris.len()).rev().collect()
        };
        for i in order {
            let (lat, wall) = round(http, &uris[i].0, &uris[i].1, clients).await?;
            for us in lat {
                acc[i].0.record_us(us.min(u64::MAX as u128) as u64);
            }
            acc[i].1 += wall;
        }
    }
    Ok(acc)
}

/// Checks, warms up and times one query on every server.
pub async fn run_query(
    http: &Http,
    servers: &[Server],
    db: &str,
    q: &QuerySpec,
) -> Result<QueryResult> {
    let uris = servers
        .iter()
        .map(|s| Ok((s.clone(), query_uri(s, db, &q.text)?)))
        .collect::<Result<Vec<_>>>()?;
    let (shape, sizes) = check(http, &uris, q).await?;
    time(http, &uris, q.warmup, 1).await?;
    let mut timings = Vec::new();
    for &c in &q.clients {
        for (i, (h, wall)) in time(http, &uris, q.runs, c).await?.into_iter().enumerate() {
            timings.push(Timing {
                server: servers[i].name.clone(),
                clients: c,
                latency: h.summary(),
                response_bytes: sizes[i],
                wall_secs: wall,
            });
        }
    }
    Ok(QueryResult {
        name: q.name.clone(),
        what: q.what.clone(),
        text: q.text.clone(),
        warmup: q.warmup,
        check: Some(AnswerCheck {
            servers: servers.iter().map(|s| s.name.clone()).collect(),
            shape,
            expected_series: q.expected_series,
            expected_rows_per_series: q.expected_rows_per_series,
        }),
        timings,
        failure: None,
    })
}

/// A query that could not be checked or timed, recorded with why.
pub fn failed(q: &QuerySpec, e: &Error) -> QueryResult {
    QueryResult {
        name: q.name.clone(),
        what: q.what.clone(),
        text: q.text.clone(),
        warmup: q.warmup,
        check: None,
        timings: Vec::new(),
        failure: Some(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grafana_queries_cover_the_last_hour_and_the_day() {
        let data = FillResult {
            server: "x".into(),
            url: "http://h/write".into(),
            points: 10_000_000,
            series: 1_000,
            fields: 2,
            start_ns: 1_767_225_600_000_000_000,
            end_ns: 1_767_225_600_000_000_000 + 86_400_000_000_000,
            step_ns: 8_640_000_000,
            requests: 200,
            batch: 50_000,
            concurrency: 4,
            retries: 0,
            secs: 1.0,
            loadavg_before: None,
            loadavg_after: None,
        };
        let runs = Runs {
            warmup: 1,
            panel: 5,
            all_hosts: 2,
            panel_clients: vec![1, 4],
            all_hosts_clients: vec![1],
        };
        let q = grafana_queries(&data, "host-00500", &runs);
        assert_eq!(q[0].expected_rows_per_series, 360);
        assert!(
            q[0].text
                .contains("time >= 1767308400000ms and time <= 1767311999999ms"),
            "{}",
            q[0].text
        );
        assert!(q[0].text.contains("'host-00500'"));
        assert_eq!(
            (q[1].expected_series, q[1].expected_rows_per_series),
            (1_000, 1_440)
        );
        assert!(q[1].text.contains("GROUP BY time(1m), \"host\""));
        assert_eq!(q[0].clients, [1, 4]);
        assert_eq!(
            (
                q[2].name.as_str(),
                q[2].expected_series,
                q[2].expected_rows_per_series
            ),
            ("lastpoint", 1_000, 1)
        );
        assert_eq!(
            q[2].text,
            "SELECT * FROM \"cpu\" GROUP BY \"host\" ORDER BY time DESC LIMIT 1"
        );
    }

    #[test]
    fn servers_parse_as_name_equals_url() {
        let s: Server = "influxdb=http://127.0.0.1:8086/".parse().unwrap();
        assert_eq!(s.base, "http://127.0.0.1:8086");
        assert!("http://x".parse::<Server>().is_err());
        assert!("a=ftp://x".parse::<Server>().is_err());
    }
}
