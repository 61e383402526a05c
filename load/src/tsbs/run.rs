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
    /// In what order the queries reached the servers (phases measured
    /// before the field existed alternated per query).
    #[serde(default = "alternated")]
    pub order: Order,
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

fn alternated() -> Order {
    Order::Alternate
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

/// In what order one type's queries reach the servers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// TSBS's runner's shape (`tsbs_run_queries_*` sends one database's
    /// queries back to back): each server takes its queries in [`BLOCKS`]
    /// runs, servers in turn, each run after that server's warm-up. Both
    /// servers alike: neither waits idle for the other's query before its own.
    #[default]
    Blocks,
    /// Per query each server once, which goes first alternating (until
    /// 2026-11-30): each server's query comes after the other's (5–120 ms of
    /// InfluxDB's at 200 hosts), and on the shared 2-core box a query after
    /// ≥ 10 ms idle took chingest's sub-millisecond types 1.3–1.6× as long
    /// (`test_results/latest/tsbs_order_ab.md`).
    Alternate,
}

/// Runs per server and type under [`Order::Blocks`]: two, so that a burst of
/// the machine's other work is less likely to fall on one server's every query.
pub const BLOCKS: usize = 2;

/// One request of a type's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The type's warm-up queries on this server, untimed.
    Warm(usize),
    /// Query `.0` on server `.1`, timed.
    Timed(usize, usize),
}

/// The steps of one type: `queries` timed queries on each of `servers`.
pub fn schedule(order: Order, queries: usize, servers: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    match order {
        Order::Alternate => {
            steps.extend((0..servers).map(Step::Warm));
            for i in 0..queries {
                let mut ks: Vec<usize> = (0..servers).collect();
                if i % 2 == 1 {
                    ks.reverse();
                }
                steps.extend(ks.into_iter().map(|k| Step::Timed(i, k)));
            }
        }
        Order::Blocks => {
            let per = queries.div_ceil(BLOCKS).max(1);
            for first in (0..queries).step_by(per) {
                for k in 0..servers {
                    steps.push(Step::Warm(k));
                    steps.extend((first..(first + per).min(queries)).map(|i| Step::Timed(i, k)));
                }
            }
        }
    }
    steps
}

/// Runs `n` queries of type `t` on every server, one at a time, in `order`;
/// every answer compared with the first server's, every request timed.
/// `warmup` untimed queries of the type run on a server before its first
/// timed query (under [`Order::Blocks`], before each of its runs).
pub async fn run_type(
    on: &Servers<'_>,
    t: QueryType,
    n: usize,
    warmup: usize,
    seed: u64,
    order: Order,
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
    let uri_of = |k: usize, text: &str| -> Result<hyper::Uri> {
        uri(
            &servers[k],
            &format!(
                "/query?db={}&epoch=ns&q={}",
                encode_component(db),
                encode_component(text)
            ),
        )
    };
    // Warm-up: other windows of the same type (the seed's next draws).
    let warm = queries(t, data, warmup, seed ^ 0x5eed)?;
    // Each query's bodies until every server answered it, then compared and dropped.
    let mut bodies: Vec<Vec<Option<Bytes>>> = vec![vec![None; servers.len()]; texts.len()];
    // Queries every server answered, not compared yet, and the bytes of every
    // body held. Comparing two answers (parsing both) takes the client
    // milliseconds at 448 KB (TSBS `lastpoint` at 1,000 hosts): done between
    // one server's queries, it left that server idle before its next one and
    // made it pay the VM's wake-up (the server listed last was 1.4-1.9x slower
    // in a same-build A/B). So checks wait for the end of a run.
    let mut unchecked: Vec<usize> = Vec::new();
    let mut held = 0usize;
    for step in schedule(order, texts.len(), servers.len()) {
        let (i, k) = match step {
            Step::Warm(k) => {
                for q in unchecked.drain(..) {
                    held -= check(&mut result, servers, &mut bodies[q], &texts[q])?;
                }
                for text in &warm {
                    ok_reply(&servers[k], &http.get(&uri_of(k, text)?).await?)?;
                }
                continue;
            }
            Step::Timed(i, k) => (i, k),
        };
        let text = &texts[i];
        let target = uri_of(k, text)?;
        let started = Instant::now();
        let reply = match http.get(&target).await {
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
        held += reply.body.len();
        bodies[i][k] = Some(reply.body);
        if bodies[i].iter().all(Option::is_some) {
            unchecked.push(i);
        }
        if !defer_checks(order, held) {
            for q in unchecked.drain(..) {
                held -= check(&mut result, servers, &mut bodies[q], &texts[q])?;
            }
        }
    }
    for q in unchecked {
        check(&mut result, servers, &mut bodies[q], &texts[q])?;
    }
    Ok(finish(result, servers, hists))
}

/// Bodies held past this wait no longer for the end of a run: a heavy type's
/// answers (65 MB each for `high-cpu-all` at 1,000 hosts) are compared as
/// they complete, where a few milliseconds between queries of seconds do not
/// matter.
const DEFER_CHECKS_BYTES: usize = 256 << 20;

/// Whether the answers completed so far may wait for the end of the run to be
/// compared: under [`Order::Blocks`], while they hold at most
/// [`DEFER_CHECKS_BYTES`]. Under [`Order::Alternate`] each is compared at once,
/// as before (its servers wait on each other anyway).
fn defer_checks(order: Order, held: usize) -> bool {
    order == Order::Blocks && held <= DEFER_CHECKS_BYTES
}

/// Compares one query's answers (every server's, against the first's) into
/// `result` and drops them; the bytes they held.
fn check(
    result: &mut TypeResult,
    servers: &[Server],
    bodies: &mut Vec<Option<Bytes>>,
    text: &str,
) -> Result<usize> {
    let bodies = std::mem::take(bodies);
    let bytes = bodies.iter().flatten().map(Bytes::len).sum();
    let answers = bodies
        .into_iter()
        .enumerate()
        .map(|(k, b)| {
            parse(&b.expect("every server answered"))
                .map_err(|e| Error::Check(format!("{}: {e} ({text})", servers[k].name)))
        })
        .collect::<Result<Vec<_>>>()?;
    let want = &answers[0];
    let shape = compare(want, want)
        .map_err(|e| Error::Check(format!("{}: {e} ({text})", servers[0].name)))?;
    result.shape.series += shape.series;
    result.shape.rows += shape.rows;
    result.shape.values += shape.values;
    for (k, got) in answers.iter().enumerate().skip(1) {
        if let Err(e) = compare(want, got) {
            result.mismatches += 1;
            result.first_mismatch.get_or_insert_with(|| {
                format!("{} vs {}: {e} ({text})", servers[0].name, servers[k].name)
            });
        }
    }
    result.queries += 1;
    Ok(bytes)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (query, server) pair timed once, and each server warmed before its first.
    fn complete(steps: &[Step], queries: usize, servers: usize) {
        let mut seen = vec![vec![0; servers]; queries];
        let mut warmed = vec![false; servers];
        for s in steps {
            match *s {
                Step::Warm(k) => warmed[k] = true,
                Step::Timed(i, k) => {
                    assert!(warmed[k], "server {k} timed before its warm-up");
                    seen[i][k] += 1;
                }
            }
        }
        assert!(seen.iter().flatten().all(|&c| c == 1), "{seen:?}");
    }

    #[test]
    fn the_default_order_sends_each_server_its_queries_back_to_back() {
        for (queries, servers) in [(20, 2), (20, 3), (5, 2), (1, 2), (1, 1)] {
            let steps = schedule(Order::default(), queries, servers);
            complete(&steps, queries, servers);
            // A timed query follows the same server's warm-up or previous
            // query: no server waits idle for another's answer before its own.
            for w in steps.windows(2) {
                if let Step::Timed(i, k) = w[1] {
                    assert!(
                        w[0] == Step::Warm(k) || w[0] == Step::Timed(i.wrapping_sub(1), k),
                        "{:?} then {:?} ({queries} queries, {servers} servers)",
                        w[0],
                        w[1]
                    );
                }
            }
            let runs = steps.iter().filter(|s| matches!(s, Step::Warm(_))).count();
            assert_eq!(runs, servers * BLOCKS.min(queries), "{steps:?}");
        }
    }

    #[test]
    fn answers_are_compared_between_runs_unless_they_hold_too_much() {
        // Blocks: a run's answers wait (no client work between one server's
        // queries), up to the cap; past it they are compared as they complete.
        assert!(defer_checks(Order::Blocks, 0));
        assert!(defer_checks(Order::Blocks, (30 * 448) << 10));
        assert!(defer_checks(Order::Blocks, DEFER_CHECKS_BYTES));
        assert!(!defer_checks(Order::Blocks, DEFER_CHECKS_BYTES + 1));
        // Alternate: each at once, as before.
        assert!(!defer_checks(Order::Alternate, 0));
    }

    #[test]
    fn alternate_keeps_the_old_order() {
        let steps = schedule(Order::Alternate, 3, 2);
        complete(&steps, 3, 2);
        use Step::*;
        assert_eq!(
            steps,
            [
                Warm(0),
                Warm(1),
                Timed(0, 0),
                Timed(0, 1),
                Timed(1, 1),
                Timed(1, 0),
                Timed(2, 0),
                Timed(2, 1)
            ]
        );
    }
}
