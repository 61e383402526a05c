//! What the query benchmark records: `query_bench.json` holds one [`Phase`]
//! per data set (e.g. `10M` with both servers, `100M` chingest alone); a run
//! replaces its own phase and keeps the others.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::answer::Shape;
use super::fill::FillResult;
use crate::error::Result;
use crate::host::Host;
use crate::stats::Latency;

/// One server's latencies for one query at one client count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Server name.
    pub server: String,
    /// Concurrent clients.
    pub clients: usize,
    /// Latency of every timed request (all answered 200 without an error).
    pub latency: Latency,
    /// Size of one answer, bytes.
    pub response_bytes: u64,
    /// Wall time of this server's rounds, seconds (answers/s = count ÷ this).
    pub wall_secs: f64,
}

/// The answer check made before timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerCheck {
    /// Servers whose answers were compared with the first one's (all agree).
    pub servers: Vec<String>,
    /// What the agreed answer holds.
    pub shape: Shape,
    /// Series and rows per series the data set implies (also checked).
    pub expected_series: u64,
    /// Rows per series the data set implies.
    pub expected_rows_per_series: u64,
}

/// One query: its text, the check, and the timings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryResult {
    /// Short name (`panel`, `all_hosts`).
    pub name: String,
    /// What it stands for.
    pub what: String,
    /// The InfluxQL sent (`GET /query?db=…&epoch=ms&q=…`).
    pub text: String,
    /// Untimed runs per server before timing.
    pub warmup: usize,
    /// The check; `None` when the query failed.
    pub check: Option<AnswerCheck>,
    /// Per server and client count, servers interleaved run by run.
    pub timings: Vec<Timing>,
    /// Why the query was not timed: a server refused it, or the answers differ.
    pub failure: Option<String>,
}

/// One data set and everything measured on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// Phase name (`10M`, `100M`): a rerun replaces the phase of that name.
    pub name: String,
    /// Tool version.
    pub tool: String,
    /// The data set's writes, one per server.
    pub ingest: Vec<FillResult>,
    /// How the servers were made queryable (flush wait, settle time), and anything else to say.
    pub notes: Vec<String>,
    /// The queries.
    pub queries: Vec<QueryResult>,
    /// `/proc/loadavg` before the first query.
    pub loadavg_before: Option<String>,
    /// `/proc/loadavg` after the last query.
    pub loadavg_after: Option<String>,
    /// The machine and build.
    pub host: Host,
}

/// `query_bench.json`: the phases, in the order first run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueryBench {
    /// The phases.
    pub phases: Vec<Phase>,
}

impl QueryBench {
    /// Reads `path`; an empty benchmark when it does not exist.
    pub fn load(path: &Path) -> Result<QueryBench> {
        crate::report::files::load_or_default(path)
    }

    /// Replaces the phase of the same name, or appends it.
    pub fn upsert(&mut self, phase: Phase) {
        match self.phases.iter_mut().find(|p| p.name == phase.name) {
            Some(p) => *p = phase,
            None => self.phases.push(phase),
        }
    }
}
