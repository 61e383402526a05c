//! Writing the TSBS data set to each server, then timing every query type on
//! all of them, one query at a time, answers compared value by value.

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;

use super::data::{Bodies, TsbsData};
use super::queries::{queries, QueryType};
use crate::client::Target;
use crate::error::{Error, Result};
use crate::host::Host;
use crate::query::answer::{compare, parse, Shape};
use crate::query::bench::Server;
use crate::query::fill::{joined, send};
use crate::query::http::{encode_component, Http, Reply};
use crate::stats::{Latency, LatencyHist};

/// How one server took the data set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TsbsFill {
    /// Server name.
    pub server: String,
    /// What `GET /query?q=CREATE DATABASE … WITH REPLICATION 1` (TSBS's
    /// loader's request) answered: status and body.
    pub create_database: String,
    /// Points written.
    pub points: u64,
    /// Requests sent (retries excluded).
    pub requests: u64,
    /// Points per request.
    pub batch: usize,
    /// Requests in flight.
    pub concurrency: usize,
    /// Retries after 429/503.
    pub retries: u64,
    /// Wall time of the writes, seconds.
    pub secs: f64,
}

/// One server's latencies over one type's queries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeTiming {
    /// Server name.
    pub server: String,
    /// Every timed query of the type (each answered 200 without an error).
    pub latency: Latency,
}

/// One query type: its queries' answers and timings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeResult {
    /// TSBS's name.
    pub name: String,
    /// The first query of the type, as an example.
    pub example: String,
    /// Queries run (each once per server, timed).
    pub queries: usize,
    /// What the reference server's answers held, over all queries.
    pub shape: Shape,
    /// Queries whose answers differed between servers.
    pub mismatches: usize,
    /// The first difference, with its query.
    pub first_mismatch: Option<String>,
    /// Per server.
    pub timings: Vec<TypeTiming>,
    /// Why the type stopped early (a server's error answer, a lost connection).
    pub failure: Option<String>,
}

/// One data set and everything measured on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TsbsPhase {
    /// Phase name (`200 hosts`): a rerun replaces the phase of that name.
    pub name: String,
    /// Tool version.
    pub tool: String,
    /// The data set.
    pub data: TsbsData,
    /// Seed of the queries.
    pub query_seed: u64,
    /// Untimed queries per type and server before timing.
    pub warmup: usize,
    /// How each server took the data.
    pub fills: Vec<TsbsFill>,
    /// How the servers were made queryable, and anything else to say.
    pub notes: Vec<String>,
    /// The types.
    pub types: Vec<TypeResult>,
    /// `/proc/loadavg` before the first query.
    pub loadavg_before: Option<String>,
    /// `/proc/loadavg` after the last query.
    pub loadavg_after: Option<String>,
    /// The machine and build.
    pub host: Host,
}

/// `tsbs_bench.json`: the phases, in the order first run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TsbsBench {
    /// The phases.
    pub phases: Vec<TsbsPhase>,
}

impl TsbsBench {
    /// Replaces the phase of the same name, or appends it.
    pub fn upsert(&mut self, phase: TsbsPhase) {
        match self.phases.iter_mut().find(|p| p.name == phase.name) {
            Some(p) => *p = phase,
            None => self.phases.push(phase),
        }
    }
}

fn uri(server: &Server, path_and_query: &str) -> Result<hyper::Uri> {
    Target::parse_uri(&format!("{}{path_and_query}", server.base))
}

/// Creates the database the way TSBS's loader does, then writes the data
/// set, `batch` points per request, `concurrency` in flight.
pub async fn fill(
    server: &Server,
    db: &str,
    data: &TsbsData,
    batch: usize,
    concurrency: usize,
    timeout: Duration,
) -> Result<TsbsFill> {
    let http = Http::new(concurrency, timeout);
    let create = format!("CREATE DATABASE {db} WITH REPLICATION 1");
    let r = http
        .get(&uri(
            server,
            &format!("/query?q={}", encode_component(&create)),
        )?)
        .await?;
    let create_database = format!("{} {}", r.status, String::from_utf8_lossy(&r.body).trim());
    if r.status != 200 {
        return Err(Error::Check(format!(
            "{}: {create} answered {create_database}",
            server.name
        )));
    }
    let target = uri(server, &format!("/write?db={}", encode_component(db)))?;
    let started = Instant::now();
    let (mut requests, mut retries) = (0, 0);
    let mut inflight = JoinSet::new();
    for body in Bodies::new(data, batch)? {
        while inflight.len() >= concurrency.max(1) {
            retries += joined(inflight.join_next().await)?;
        }
        inflight.spawn(send(http.clone(), target.clone(), Bytes::from(body)));
        requests += 1;
    }
    while let Some(r) = inflight.join_next().await {
        retries += joined(Some(r))?;
    }
    Ok(TsbsFill {
        server: server.name.clone(),
        create_database,
        points: data.points(),
        requests,
        batch,
        concurrency,
        retries,
        secs: started.elapsed().as_secs_f64(),
    })
}

/// A 200 whose body does not start with an error.
fn ok_reply(server: &Server, r: &Reply) -> Result<()> {
    let head = String::from_utf8_lossy(&r.body[..r.body.len().min(300)]).into_owned();
    if r.status != 200 || head.contains("\"error\"") {
        return Err(Error::Check(format!(
            "{} answered {}: {head}",
            server.name, r.status
        )));
    }
    Ok(())
}

/// The servers under test and what they hold.
#[derive(Clone, Copy)]
pub struct Servers<'a> {
    /// The client.
    pub http: &'a Http,
    /// The servers; the first one's answers are the reference.
    pub servers: &'a [Server],
    /// The database.
    pub db: &'a str,
    /// The data set written to each.
    pub data: &'a TsbsData,
}

/// Runs `n` queries of type `t` on every server, one at a time: per query
/// each server once (which goes first alternates), every answer compared
/// with the first server's, every request timed. `warmup` untimed queries
/// of the type run on each server first.
pub async fn run_type(
    on: &Servers<'_>,
    t: QueryType,
    n: usize,
    warmup: usize,
    seed: u64,
) -> Result<TypeResult> {
    let Servers {
        http,
        servers,
        db,
        data,
    } = *on;
    let texts = queries(t, data, n.max(1), seed)?;
    let mut result = TypeResult {
        name: t.name(),
        example: texts[0].clone(),
        queries: 0,
        shape: Shape::default(),
        mismatches: 0,
        first_mismatch: None,
        timings: Vec::new(),
        failure: None,
    };
    let mut hists: Vec<LatencyHist> = servers.iter().map(|_| LatencyHist::new()).collect();
    let uris = |text: &str| -> Result<Vec<hyper::Uri>> {
        servers
            .iter()
            .map(|s| {
                uri(
                    s,
                    &format!(
                        "/query?db={}&epoch=ns&q={}",
                        encode_component(db),
                        encode_component(text)
                    ),
                )
            })
            .collect()
    };
    // Warm-up: other windows of the same type (the seed's next draws).
    for text in queries(t, data, warmup, seed ^ 0x5eed)? {
        for (s, u) in servers.iter().zip(uris(&text)?) {
            ok_reply(s, &http.get(&u).await?)?;
        }
    }
    for (i, text) in texts.iter().enumerate() {
        let targets = uris(text)?;
        let order: Vec<usize> = if i % 2 == 0 {
            (0..servers.len()).collect()
        } else {
            (0..servers.len()).rev().collect()
        };
        let mut answers = vec![None; servers.len()];
        for k in order {
            let started = Instant::now();
            let reply = match http.get(&targets[k]).await {
                Ok(r) => r,
                Err(e) => {
                    result.failure = Some(format!("{}: {e} ({text})", servers[k].name));
                    return Ok(finish(result, servers, hists));
                }
            };
            let us = started.elapsed().as_micros() as u64;
            if let Err(e) = ok_reply(&servers[k], &reply) {
                result.failure = Some(format!("{e} ({text})"));
                return Ok(finish(result, servers, hists));
            }
            hists[k].record_us(us);
            answers[k] = Some(
                parse(&reply.body)
                    .map_err(|e| Error::Check(format!("{}: {e} ({text})", servers[k].name)))?,
            );
        }
        let want = answers[0].as_ref().expect("every server answered");
        let shape = compare(want, want)
            .map_err(|e| Error::Check(format!("{}: {e} ({text})", servers[0].name)))?;
        result.shape.series += shape.series;
        result.shape.rows += shape.rows;
        result.shape.values += shape.values;
        for (k, got) in answers.iter().enumerate().skip(1) {
            if let Err(e) = compare(want, got.as_ref().expect("every server answered")) {
                result.mismatches += 1;
                result.first_mismatch.get_or_insert_with(|| {
                    format!("{} vs {}: {e} ({text})", servers[0].name, servers[k].name)
                });
            }
        }
        result.queries += 1;
    }
    Ok(finish(result, servers, hists))
}

fn finish(mut r: TypeResult, servers: &[Server], hists: Vec<LatencyHist>) -> TypeResult {
    r.timings = servers
        .iter()
        .zip(hists)
        .map(|(s, h)| TypeTiming {
            server: s.name.clone(),
            latency: h.summary(),
        })
        .collect();
    r
}
