//! What the page is built from: the arguments ([`ReportInputs`]) and every
//! result file found in the results directory, loaded once ([`Results`]).

use std::path::{Path, PathBuf};

use crate::report::bench_json::{best_engine, best_flush};
use crate::report::files::{load_run, read_json};
use crate::summary::{Pick, RunResult};

/// Soak runs read (`soak_1.json` … `soak_9.json`, up to the first missing one).
const MAX_SOAKS: usize = 9;
/// The p95 budget assumed when there is no ramp to take it from, ms.
const DEFAULT_BUDGET_MS: f64 = 250.0;

/// Inputs of the every-layer report.
#[derive(Debug, Clone)]
pub struct ReportInputs {
    /// Directory holding `chdb_raw.json`, `flush.json`, `ramp.json`, `closed.json`,
    /// `ramp.svg`, and optionally `client_ceiling.json` and `server-metrics.txt`.
    pub results_dir: PathBuf,
    /// The markdown file to write (e.g. `docs/benchmarks.md`).
    pub out: PathBuf,
    /// Base name of the ramp results. Default `ramp`.
    pub ramp_name: String,
    /// Base name of the closed results. Default `closed`.
    pub closed_name: String,
}

/// Every result the page reports, `None` (or empty) for whatever is missing.
pub(super) struct Results {
    /// The engine ceiling: label and rows/s of the best `chdb_raw.json` variant.
    pub(super) engine: Option<(String, f64)>,
    /// When the engine ceiling was measured, when `chdb_raw.json` has a host block.
    pub(super) engine_date: Option<String>,
    /// The flush bench: label and points/s of the best `flush.json` variant.
    pub(super) flush: Option<(String, f64)>,
    /// The open-model ramp.
    pub(super) ramp: Option<RunResult>,
    /// `soak_1.json`, `soak_2.json`, …: the sustainable rate held for minutes,
    /// then lower rates while it does not hold.
    pub(super) soaks: Vec<RunResult>,
    /// The closed-model contrast.
    pub(super) closed: Option<RunResult>,
    /// The load generator against the null sink.
    pub(super) client: Option<RunResult>,
}

impl Results {
    /// Reads whatever results exist in `inp.results_dir`.
    pub(super) fn load(inp: &ReportInputs) -> Results {
        let dir = &inp.results_dir;
        let run = |name: &str| load_run(&dir.join(format!("{name}.json")));
        let raw_json = read_json(&dir.join("chdb_raw.json"));
        Results {
            engine: raw_json.as_ref().and_then(best_engine),
            engine_date: raw_json.as_ref().and_then(|v| v.get("host")).map(|h| {
                h.get("date")
                    .and_then(|d| d.as_str())
                    .unwrap_or("unknown date")
                    .to_string()
            }),
            flush: read_json(&dir.join("flush.json")).and_then(|v| best_flush(&v)),
            ramp: run(&inp.ramp_name),
            soaks: (1..=MAX_SOAKS)
                .map_while(|i| run(&format!("soak_{i}")))
                .collect(),
            closed: run(&inp.closed_name),
            client: run("client_ceiling"),
        }
    }

    /// The engine ceiling, rows/s.
    pub(super) fn ceiling(&self) -> Option<f64> {
        self.engine.as_ref().map(|e| e.1)
    }

    /// The ramp's sustainable step.
    pub(super) fn sustainable(&self) -> Option<&Pick> {
        self.ramp.as_ref()?.summary.sustainable.as_ref()
    }

    /// The ramp's peak step.
    pub(super) fn peak(&self) -> Option<&Pick> {
        self.ramp.as_ref()?.summary.peak.as_ref()
    }

    /// The ramp's p95 budget, ms.
    pub(super) fn budget_ms(&self) -> f64 {
        self.ramp
            .as_ref()
            .map(|r| r.summary.budget_ms)
            .unwrap_or(DEFAULT_BUDGET_MS)
    }
}

/// The ramp chart, as the page links it: relative to the page's directory.
pub(super) fn ramp_svg_link(inp: &ReportInputs) -> Option<PathBuf> {
    let svg = inp.results_dir.join(format!("{}.svg", inp.ramp_name));
    if !svg.exists() {
        return None;
    }
    let from = inp.out.parent().unwrap_or(Path::new("."));
    Some(crate::report::files::relative_path(from, &svg))
}
