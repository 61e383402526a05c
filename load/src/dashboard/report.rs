//! The dashboard benchmark's files: `<name>.json` (the run) and `<name>.md` (its page).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::DashboardRun;
use crate::error::Result;
use crate::report::files::{write, write_json};

/// Writes `DIR/NAME.json` and `DIR/NAME.md`; returns the paths.
pub fn write_dashboard(
    dir: &Path,
    name: &str,
    run: &DashboardRun,
    notes: &[String],
) -> Result<Vec<PathBuf>> {
    let json_path = write_json(dir, name, run)?;
    let md_path = dir.join(format!("{name}.md"));
    write(&md_path, markdown(run, notes).as_bytes())?;
    Ok(vec![json_path, md_path])
}

fn ms(us: u64) -> String {
    let ms = us as f64 / 1000.0;
    if ms < 10.0 {
        format!("{ms:.2}")
    } else if ms < 100.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.0}")
    }
}

/// The page.
pub fn markdown(run: &DashboardRun, notes: &[String]) -> String {
    let c = &run.config;
    let mut o = String::from("# A wall of Grafana panels while the server ingests (issue #44)\n\n");
    let _ = writeln!(
        o,
        "Made by `scripts/dashboard_bench.sh` (`chingest-load dashboard`), started {}.\n",
        run.started
    );
    o.push_str("## Host\n\n");
    o.push_str(&run.host.markdown());
    o.push_str("\n## Method\n\n");
    let _ = writeln!(
        o,
        "- {} hosts report as Telegraf does (cpu, mem, disk, net, system; one gather every 10 s) into `{}`; the longest view's range of them ({} s) before a server's first phase.",
        c.hosts,
        c.db,
        c.history_secs()
    );
    let views: Vec<String> = c.views.iter().map(|v| v.label()).collect();
    let _ = writeln!(
        o,
        "- {} panels: the InfluxQL panels of `{}` again and again, each pass (a browser tab) another host in `$host` and the next of the views `{}` (a range before now; `:all`: `$host` = All, every host), macros expanded as Grafana 11 sends them at 1,920 px; {} queries in flight at once, as a browser's connections to Grafana allow.",
        c.panels,
        c.dashboard.display(),
        views.join(","),
        c.concurrency
    );
    o.push_str("- Before each refresh the dashboard's variable query (`SHOW TAG VALUES`, which Grafana sends when the dashboard loads), timed apart from the refresh; its answer must list every host.\n");
    let _ = writeln!(
        o,
        "- A refresh every {} s: the time of a refresh is from its first request to its last answer (HTTP included, on loopback). A refresh counts when every answer is a 200 without an error and with at least one series.",
        c.refresh_secs
    );
    if c.write_rate > 0.0 {
        let _ = writeln!(
            o,
            "- Beside it, writes at {} requests/s of {} points ({:.0} points/s) into `{}`, open model, 64 in flight at most.",
            c.write_rate,
            run.points_per_write,
            c.write_rate * run.points_per_write as f64,
            c.write_db
        );
    } else {
        o.push_str("- No write load beside it.\n");
    }
    let _ = writeln!(
        o,
        "- One server at a time, {} s each, {} rounds, the order alternating round by round.",
        c.phase_secs, c.rounds
    );
    for n in notes {
        let _ = writeln!(o, "- {n}");
    }
    o.push_str("\n## Results\n\n");
    o.push_str("| server | refreshes | refresh p50 ms | refresh p95 ms | refresh max ms | query p50 ms | query p95 ms | late refreshes | failed queries | writes ok / not |\n");
    o.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for s in &run.servers {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} |",
            s.name,
            s.refreshes,
            ms(s.refresh.p50_us),
            ms(s.refresh.p95_us),
            ms(s.refresh.max_us),
            ms(s.query.p50_us),
            ms(s.query.p95_us),
            s.late,
            s.failed,
            s.writes_ok,
            s.writes_not_ok
        );
    }
    if let (Some(a), Some(b)) = (run.servers.first(), run.servers.get(1)) {
        if b.refresh.p50_us > 0 {
            let _ = writeln!(
                o,
                "\n{} ÷ {}, refresh p50: {:.2}×; p95: {:.2}×.",
                a.name,
                b.name,
                a.refresh.p50_us as f64 / b.refresh.p50_us as f64,
                a.refresh.p95_us as f64 / b.refresh.p95_us.max(1) as f64
            );
        }
    }
    o.push_str("\n### Variable query and read paths\n\n");
    o.push_str("| server | variable p50 ms | variable p95 ms | variable failed | reads by path (metric deltas) |\n|---|---:|---:|---:|---|\n");
    for s in &run.servers {
        let paths: Vec<String> = s
            .read_paths
            .iter()
            .filter(|(_, n)| **n > 0.0)
            .map(|(p, n)| format!("{p} {n:.0}"))
            .collect();
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            s.name,
            ms(s.variables.p50_us),
            ms(s.variables.p95_us),
            s.variables_failed,
            if paths.is_empty() {
                "–".to_string()
            } else {
                paths.join(", ")
            }
        );
    }
    panels_table(&mut o, run);
    comparisons(&mut o, run);
    for s in &run.servers {
        if let Some(f) = &s.first_failure {
            let _ = writeln!(
                o,
                "\n{}'s first failed query: `{}`",
                s.name,
                f.replace('`', "'")
            );
        }
    }
    o
}

/// Per panel: p50/p95 on each server, and chingest's read paths (the header).
fn panels_table(o: &mut String, run: &DashboardRun) {
    let Some(first) = run.servers.first() else {
        return;
    };
    o.push_str("\n### Per panel\n\n| panel |");
    for s in &run.servers {
        let _ = write!(o, " {0} p50 ms | {0} p95 ms |", s.name);
    }
    o.push_str(" read paths (first server) |\n|---|");
    for _ in &run.servers {
        o.push_str("---:|---:|");
    }
    o.push_str("---|\n");
    for (k, p) in first.panels.iter().enumerate() {
        let _ = write!(o, "| {} |", p.label);
        for s in &run.servers {
            match s.panels.get(k) {
                Some(q) => {
                    let _ = write!(o, " {} | {} |", ms(q.query.p50_us), ms(q.query.p95_us));
                }
                None => o.push_str(" – | – |"),
            }
        }
        let paths: Vec<String> = p.paths.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(o, " {} |", paths.join(", "));
    }
}

/// The answers compared at the end.
fn comparisons(o: &mut String, run: &DashboardRun) {
    if run.comparisons.is_empty() {
        return;
    }
    let first = run.servers.first().map_or("", |s| s.name.as_str());
    let same = run
        .comparisons
        .iter()
        .filter(|c| c.differs.is_none())
        .count();
    let _ = writeln!(
        o,
        "\n### Answers\n\nEvery panel's query at one time (the last gather written to every server), {first}'s answer against each other server's: {same} of {} equal (same series, rows and columns; numbers to a relative 1e-9).",
        run.comparisons.len()
    );
    for c in run.comparisons.iter().filter(|c| c.differs.is_some()) {
        let d = c.differs.as_deref().unwrap_or("").replace('`', "'");
        let d: String = d.chars().take(600).collect();
        let _ = writeln!(o, "- {} vs {}: `{d}`", c.label, c.with);
    }
}
