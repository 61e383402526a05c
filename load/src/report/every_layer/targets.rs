//! The "Targets" section: issue #7's two targets met or not, and whether the
//! sustainable rate held for the soak.

use std::fmt::Write as _;

use super::inputs::Results;
use super::NOT_MEASURED;
use crate::chart::si;
use crate::report::cells::ratio;
use crate::summary::RunResult;

/// The end-to-end sustainable target of issue #7, points/s.
pub const TARGET_SUSTAINABLE: f64 = 1_000_000.0;
/// The end-to-end sustainable target as a fraction of the engine ceiling.
pub const TARGET_FRACTION_OF_CEILING: f64 = 0.25;

/// The section: target lines, then soak lines when there was a soak.
pub(super) fn section(r: &Results) -> String {
    let mut o = String::from("\n## Targets (issue #7)\n\n");
    match r.sustainable() {
        Some(p) => target_lines(&mut o, p.achieved_points_per_sec, r),
        None => {
            let _ = writeln!(
                o,
                "- Sustainable: {}.",
                if r.ramp.is_some() {
                    "no step qualified — lower the first rates"
                } else {
                    NOT_MEASURED
                }
            );
        }
    }
    soak_lines(&mut o, &r.soaks);
    o
}

fn met(yes: bool) -> &'static str {
    if yes {
        "met"
    } else {
        "not met"
    }
}

/// Both targets against the sustainable rate `v`.
fn target_lines(o: &mut String, v: f64, r: &Results) {
    let _ = writeln!(
        o,
        "- Sustainable ≥ {} points/s at p95 ≤ {:.0} ms: **{}** ({} points/s).",
        si(TARGET_SUSTAINABLE),
        r.budget_ms(),
        met(v >= TARGET_SUSTAINABLE),
        si(v)
    );
    let _ = writeln!(
        o,
        "- Sustainable ≥ {:.0}% of the engine ceiling: {}.",
        TARGET_FRACTION_OF_CEILING * 100.0,
        match r.ceiling() {
            Some(c) => format!(
                "**{}** ({})",
                met(v >= TARGET_FRACTION_OF_CEILING * c),
                ratio(v, Some(c))
            ),
            None => "engine ceiling not measured".into(),
        }
    );
}

/// Whether the first soak held, and the highest soaked rate that did.
fn soak_lines(o: &mut String, soaks: &[RunResult]) {
    let Some(step) = soaks.first().and_then(|r| r.steps.first()) else {
        return;
    };
    let _ = writeln!(
        o,
        "- The sustainable rate held for {:.0} s (soak): **{}** ({} points/s achieved, p95 {:.0} ms).",
        step.duration_secs,
        if soaks[0].summary.sustainable.is_some() { "yes" } else { "no" },
        si(step.achieved_points_per_sec),
        step.p95_ms()
    );
    let held = soaks.iter().find_map(|r| {
        r.summary.sustainable.as_ref()?;
        r.steps.first()
    });
    let _ = writeln!(
        o,
        "- Capacity that held for {:.0} s: {}.",
        step.duration_secs,
        match held {
            Some(h) => format!(
                "**{} points/s** (p95 {:.0} ms)",
                si(h.achieved_points_per_sec),
                h.p95_ms()
            ),
            None => "none of the rates soaked held".into(),
        }
    );
}
