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
        "- {} hosts report as Telegraf does (cpu, mem, disk, net, system; one gather every 10 s) into `{}`; an hour of them before the first phase.",
        c.hosts, c.db
    );
    let _ = writeln!(
        o,
        "- {} panels: the InfluxQL panels of `{}` again and again, each pass another host in `$host`, over the last {} s, macros expanded as Grafana 11 sends them; {} queries in flight at once, as a browser's connections to Grafana allow.",
        c.panels,
        c.dashboard.display(),
        c.range_secs,
        c.concurrency
    );
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
