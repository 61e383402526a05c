//! One run's own files: `NAME.json` (the result), `NAME.md` (its page) and,
//! for an open-model run, `NAME.svg` (the ramp chart).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::files::{write, write_json};
use super::notes::notes;
use super::tables::{closed_table, ramp_table, stage_step_table};
use crate::chart::{ramp_svg, si};
use crate::error::Result;
use crate::summary::{Pick, RunResult};

/// A markdown page for one run.
pub fn run_markdown(r: &RunResult) -> String {
    let open = r.kind == "ramp";
    let mut o = run_header(r, open);
    o.push_str(&if open {
        ramp_table(&r.steps)
    } else {
        closed_table(&r.steps)
    });
    o.push('\n');
    if let Some(t) = stage_step_table(&r.steps) {
        o.push_str(&t);
        o.push('\n');
    }
    for l in notes(&r.steps) {
        o.push_str(&l);
        o.push('\n');
    }
    o.push_str("Latency columns are for successful (2xx) writes, measured from the moment each request was sent; CPU % is user+system time from `/proc` (100 = one core).\n\n## Host\n\n");
    o.push_str(&r.host.markdown());
    o
}

/// Title, what was run against what, and the sustainable and peak figures.
fn run_header(r: &RunResult, open: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# chingest-load {}: {}\n",
        r.kind,
        if open {
            "open model (constant arrival rate)"
        } else {
            "closed model (back-to-back users)"
        }
    );
    let _ = writeln!(
        o,
        "- Target: `{}`\n- Payloads: {}\n- Tool: {}",
        r.url, r.payloads, r.tool
    );
    let _ = writeln!(o, "- Config: `{}`\n", r.config);
    let s = &r.summary;
    let _ = writeln!(
        o,
        "**Sustainable** (achieved ≥ 99% of offered, p95 ≤ {} ms): {}  \n**Peak** (highest achieved): {}\n",
        s.budget_ms,
        pick_text(s.sustainable.as_ref(), "none — no step qualifies"),
        pick_text(s.peak.as_ref(), "none — nothing succeeded"),
    );
    o
}

/// `1M points/s (step 4, p95 168.7 ms)`, or `none` when nothing was picked.
fn pick_text(p: Option<&Pick>, none: &str) -> String {
    p.map(|p| {
        format!(
            "{} points/s (step {}, p95 {:.1} ms)",
            si(p.achieved_points_per_sec),
            p.step,
            p.p95_ms
        )
    })
    .unwrap_or_else(|| none.into())
}

/// Writes `DIR/NAME.json`, `DIR/NAME.md` and, for a ramp, `DIR/NAME.svg`. Returns the paths.
pub fn write_run(dir: &Path, name: &str, r: &RunResult) -> Result<Vec<PathBuf>> {
    let json_path = write_json(dir, name, r)?;
    let md_path = dir.join(format!("{name}.md"));
    let mut md = run_markdown(r);
    let mut paths = vec![json_path, md_path.clone()];
    if r.kind == "ramp" {
        let svg_path = dir.join(format!("{name}.svg"));
        let title = format!("chingest-load ramp: {}", r.url);
        write(&svg_path, ramp_svg(&title, &r.steps, &r.summary).as_bytes())?;
        let _ = write!(md, "\n![ramp chart]({name}.svg)\n");
        paths.push(svg_path);
    }
    write(&md_path, md.as_bytes())?;
    Ok(paths)
}
