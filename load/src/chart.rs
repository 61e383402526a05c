//! The ramp chart as a hand-written SVG (no plotting dependency): top panel,
//! achieved vs offered points/s against the ideal diagonal; bottom panel, p95
//! and p99 latency vs offered on a log scale with the budget line.

use std::fmt::Write as _;

use crate::summary::{StepResult, Summary};

const W: f64 = 960.0;
const H: f64 = 780.0;
const LEFT: f64 = 100.0;
const RIGHT: f64 = 40.0;
const PANEL1: (f64, f64) = (70.0, 370.0);
const PANEL2: (f64, f64) = (450.0, 710.0);

const BLUE: &str = "#1f5fbf";
const GREEN: &str = "#1a9850";
const ORANGE: &str = "#e66101";
const RED: &str = "#c0392b";
const GREY: &str = "#888888";

/// Formats a rate with an SI suffix: 1.25M, 980k, 12.
pub fn si(v: f64) -> String {
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = if x.abs() >= 100.0 || x.fract() == 0.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s}{suffix}")
}

/// A "nice" tick step (1, 2, 2.5 or 5 × 10^k) giving about `n` ticks over `range`.
fn nice_step(range: f64, n: f64) -> f64 {
    if range <= 0.0 || !range.is_finite() {
        return 1.0;
    }
    let raw = range / n;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 2.5 {
        2.5
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

struct Axis {
    lo: f64,
    hi: f64,
    a: f64,
    b: f64,
    log: bool,
}

impl Axis {
    fn map(&self, v: f64) -> f64 {
        let (lo, hi, v) = if self.log {
            (self.lo.log10(), self.hi.log10(), v.max(self.lo).log10())
        } else {
            (self.lo, self.hi, v)
        };
        if hi <= lo {
            return self.a;
        }
        self.a + (v - lo) / (hi - lo) * (self.b - self.a)
    }
}

fn fmt_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{} s", si(ms / 1000.0))
    } else {
        format!("{} ms", si(ms))
    }
}

/// Renders the ramp chart. Steps without an offered rate (closed model) are ignored.
pub fn ramp_svg(title: &str, steps: &[StepResult], summary: &Summary) -> String {
    let pts: Vec<&StepResult> = steps
        .iter()
        .filter(|s| s.offered_points_per_sec.is_some())
        .collect();
    let mut o = svg_open(title);
    if pts.is_empty() {
        let _ = writeln!(
            o,
            r#"<text x="{}" y="{}" text-anchor="middle">no open-model steps to plot</text></svg>"#,
            W / 2.0,
            H / 2.0
        );
        return o;
    }
    let (x, xstep) = offered_axis(&pts);
    achieved_panel(&mut o, &pts, &x, xstep, summary);
    latency_panel(&mut o, &pts, &x, xstep, summary.budget_ms);
    let _ = writeln!(
        o,
        r#"<text x="{}" y="{}" text-anchor="middle">offered load (points/s)</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        PANEL2.1 + 45.0
    );
    o.push_str("</svg>\n");
    o
}

/// The document's opening: size, white background, title.
fn svg_open(title: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="13">"#
    );
    let _ = writeln!(o, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        o,
        r#"<text x="{}" y="30" text-anchor="middle" font-size="17" font-weight="bold">{}</text>"#,
        W / 2.0,
        esc(title)
    );
    o
}

fn offered(s: &StepResult) -> f64 {
    s.offered_points_per_sec.unwrap_or(0.0)
}

/// The shared x axis (offered points/s) from 0 to a round number above the
/// highest offered rate, and its tick step.
fn offered_axis(pts: &[&StepResult]) -> (Axis, f64) {
    let max_x = pts.iter().map(|s| offered(s)).fold(0.0, f64::max);
    let xstep = nice_step(max_x, 6.0);
    let x_hi = (max_x * 1.04 / xstep).ceil().max(1.0) * xstep;
    let x = Axis {
        lo: 0.0,
        hi: x_hi,
        a: LEFT,
        b: W - RIGHT,
        log: false,
    };
    (x, xstep)
}

/// Panel 1: achieved vs offered against the ideal diagonal, with the
/// sustainable and peak steps marked.
fn achieved_panel(o: &mut String, pts: &[&StepResult], x: &Axis, xstep: f64, summary: &Summary) {
    let max_y = pts
        .iter()
        .map(|s| s.achieved_points_per_sec.max(offered(s)))
        .fold(0.0, f64::max);
    let ystep = nice_step(max_y, 5.0);
    let y_hi = (max_y * 1.08 / ystep).ceil().max(1.0) * ystep;
    let y = Axis {
        lo: 0.0,
        hi: y_hi,
        a: PANEL1.1,
        b: PANEL1.0,
        log: false,
    };
    panel_frame(o, PANEL1, "Achieved vs offered (points/s)");
    let mut v = 0.0;
    while v <= y_hi + ystep / 2.0 {
        hgrid(o, y.map(v), &si(v));
        v += ystep;
    }
    x_ticks(o, x, xstep, PANEL1.1);
    let _ = writeln!(
        o,
        r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{GREY}" stroke-width="1.5" stroke-dasharray="6 4"/>"#,
        x.map(0.0),
        y.map(0.0),
        x.map(x.hi.min(y_hi)),
        y.map(x.hi.min(y_hi))
    );
    achieved_line(o, pts, x, &y, summary);
    pick_markers(o, pts, x, &y, summary);
    legend(
        o,
        LEFT + 14.0,
        PANEL1.0 + 18.0,
        &[(BLUE, "", "achieved"), (GREY, "6 4", "offered (ideal)")],
    );
}

/// The achieved line and its points, each short step labelled with its % of offered.
fn achieved_line(o: &mut String, pts: &[&StepResult], x: &Axis, y: &Axis, summary: &Summary) {
    let line: Vec<(f64, f64)> = pts
        .iter()
        .map(|s| (x.map(offered(s)), y.map(s.achieved_points_per_sec)))
        .collect();
    polyline(o, &line, BLUE, "", 2.5);
    for ((px, py), s) in line.iter().zip(pts) {
        let _ = writeln!(
            o,
            r#"<circle cx="{px:.1}" cy="{py:.1}" r="4" fill="{BLUE}"/>"#
        );
        // Where the server fell short, say by how much right at the point
        // (the peak's own label carries it).
        let is_peak = summary.peak.as_ref().is_some_and(|p| p.step == s.index);
        if let Some(pct) = s.pct_of_offered.filter(|p| *p < 99.0 && !is_peak) {
            let _ = writeln!(
                o,
                r#"<text x="{px:.1}" y="{:.1}" text-anchor="middle" font-size="11" fill="{BLUE}">{pct:.0}%</text>"#,
                py - 10.0
            );
        }
    }
}

/// Circles the sustainable step (green) and the peak (orange; one label when they coincide).
fn pick_markers(o: &mut String, pts: &[&StepResult], x: &Axis, y: &Axis, summary: &Summary) {
    let find = |step: usize| pts.iter().find(|s| s.index == step);
    let sust = summary.sustainable.as_ref().and_then(|p| find(p.step));
    let peak = summary.peak.as_ref().and_then(|p| find(p.step));
    let same = matches!((sust, peak), (Some(a), Some(b)) if a.index == b.index);
    if let Some(s) = sust {
        let label = if same {
            "sustainable = peak"
        } else {
            "sustainable"
        };
        marker(
            o,
            x.map(offered(s)),
            y.map(s.achieved_points_per_sec),
            GREEN,
            &format!("{label} {}", si(s.achieved_points_per_sec)),
            22.0,
        );
    }
    if let Some(s) = peak.filter(|_| !same) {
        marker(
            o,
            x.map(offered(s)),
            y.map(s.achieved_points_per_sec),
            ORANGE,
            &match s.pct_of_offered.filter(|p| *p < 99.0) {
                Some(pct) => format!(
                    "peak {} ({pct:.0}% of offered)",
                    si(s.achieved_points_per_sec)
                ),
                None => format!("peak {}", si(s.achieved_points_per_sec)),
            },
            -14.0,
        );
    }
}

/// Panel 2: p95 and p99 of successful writes vs offered, log scale, with the budget line.
fn latency_panel(o: &mut String, pts: &[&StepResult], x: &Axis, xstep: f64, budget: f64) {
    // (offered, p95 ms, p99 ms) of the steps with successful writes.
    let lat: Vec<(f64, f64, f64)> = pts
        .iter()
        .filter(|s| s.latency.count > 0)
        .map(|s| {
            (
                offered(s),
                s.latency.p95_us as f64 / 1000.0,
                s.latency.p99_us as f64 / 1000.0,
            )
        })
        .collect();
    let y = latency_axis(&lat, budget);
    panel_frame(
        o,
        PANEL2,
        "Latency of successful writes vs offered (log scale)",
    );
    log_grid(o, &y);
    x_ticks(o, x, xstep, PANEL2.1);
    budget_line(o, &y, budget);
    let p95: Vec<(f64, f64)> = lat.iter().map(|l| (x.map(l.0), y.map(l.1))).collect();
    let p99: Vec<(f64, f64)> = lat.iter().map(|l| (x.map(l.0), y.map(l.2))).collect();
    polyline(o, &p99, RED, "4 3", 1.5);
    polyline(o, &p95, RED, "", 2.5);
    for (px, py) in &p95 {
        let _ = writeln!(
            o,
            r#"<circle cx="{px:.1}" cy="{py:.1}" r="4" fill="{RED}"/>"#
        );
    }
    legend(
        o,
        LEFT + 14.0,
        PANEL2.0 + 18.0,
        &[
            (RED, "", "p95"),
            (RED, "4 3", "p99"),
            (GREEN, "8 4", "p95 budget"),
        ],
    );
}

/// Whole decades (ms) covering every p95, every p99 and the budget.
fn latency_axis(lat: &[(f64, f64, f64)], budget: f64) -> Axis {
    let lo_ms = lat.iter().map(|l| l.1).fold(budget, f64::min).max(0.01);
    let hi_ms = lat.iter().map(|l| l.2).fold(budget, f64::max);
    Axis {
        lo: 10f64.powf(lo_ms.log10().floor()),
        hi: 10f64.powf(hi_ms.log10().ceil().max(lo_ms.log10().floor() + 1.0)),
        a: PANEL2.1,
        b: PANEL2.0,
        log: true,
    }
}

/// A grid line per decade, with minor lines at 2× and 5× each decade.
fn log_grid(o: &mut String, y: &Axis) {
    let mut d = y.lo;
    while d <= y.hi * 1.0001 {
        hgrid(o, y.map(d), &fmt_ms(d));
        // Minor lines at 2× and 5× each decade make a log axis readable.
        for m in [2.0, 5.0] {
            if d * m < y.hi {
                minor_grid(o, y.map(d * m), &fmt_ms(d * m));
            }
        }
        d *= 10.0;
    }
}

/// The p95 budget as a dashed green line, labelled.
fn budget_line(o: &mut String, y: &Axis, budget: f64) {
    let _ = writeln!(
        o,
        r#"<line x1="{LEFT}" y1="{:.1}" x2="{}" y2="{:.1}" stroke="{GREEN}" stroke-width="1.5" stroke-dasharray="8 4"/>"#,
        y.map(budget),
        W - RIGHT,
        y.map(budget)
    );
    let _ = writeln!(
        o,
        r#"<text x="{}" y="{:.1}" fill="{GREEN}">budget {}</text>"#,
        LEFT + 8.0,
        y.map(budget) - 6.0,
        fmt_ms(budget)
    );
}

fn panel_frame(o: &mut String, (top, bottom): (f64, f64), title: &str) {
    let _ = writeln!(
        o,
        r##"<rect x="{LEFT}" y="{top}" width="{}" height="{}" fill="#fafafa" stroke="#333"/>"##,
        W - RIGHT - LEFT,
        bottom - top
    );
    let _ = writeln!(
        o,
        r#"<text x="{LEFT}" y="{}" font-size="15" font-weight="bold">{}</text>"#,
        top - 8.0,
        esc(title)
    );
}

fn hgrid(o: &mut String, y: f64, label: &str) {
    let _ = writeln!(
        o,
        r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#dddddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
        W - RIGHT,
        LEFT - 8.0,
        y + 4.0,
        esc(label)
    );
}

fn minor_grid(o: &mut String, y: f64, label: &str) {
    let _ = writeln!(
        o,
        r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#eeeeee"/><text x="{}" y="{:.1}" text-anchor="end" font-size="10" fill="#777">{}</text>"##,
        W - RIGHT,
        LEFT - 8.0,
        y + 3.0,
        esc(label)
    );
}

fn x_ticks(o: &mut String, x: &Axis, step: f64, bottom: f64) {
    let mut v = 0.0;
    while v <= x.hi + step / 2.0 {
        let px = x.map(v);
        let _ = writeln!(
            o,
            r##"<line x1="{px:.1}" y1="{bottom}" x2="{px:.1}" y2="{}" stroke="#333"/><text x="{px:.1}" y="{}" text-anchor="middle">{}</text>"##,
            bottom + 5.0,
            bottom + 20.0,
            si(v)
        );
        v += step;
    }
}

fn polyline(o: &mut String, pts: &[(f64, f64)], color: &str, dash: &str, width: f64) {
    if pts.is_empty() {
        return;
    }
    let p: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
    let dash = if dash.is_empty() {
        String::new()
    } else {
        format!(r#" stroke-dasharray="{dash}""#)
    };
    let _ = writeln!(
        o,
        r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="{width}"{dash}/>"#,
        p.join(" ")
    );
}

fn marker(o: &mut String, x: f64, y: f64, color: &str, label: &str, dy: f64) {
    let anchor = if x > W * 0.7 { "end" } else { "start" };
    let dx = if anchor == "end" { -10.0 } else { 10.0 };
    let _ = writeln!(
        o,
        r#"<circle cx="{x:.1}" cy="{y:.1}" r="9" fill="none" stroke="{color}" stroke-width="2.5"/><text x="{:.1}" y="{:.1}" text-anchor="{anchor}" fill="{color}" font-weight="bold">{}</text>"#,
        x + dx,
        y + dy,
        esc(label)
    );
}

fn legend(o: &mut String, x: f64, y: f64, items: &[(&str, &str, &str)]) {
    let mut cx = x;
    for (color, dash, label) in items {
        let dash = if dash.is_empty() {
            String::new()
        } else {
            format!(r#" stroke-dasharray="{dash}""#)
        };
        let _ = writeln!(
            o,
            r#"<line x1="{cx}" y1="{y}" x2="{}" y2="{y}" stroke="{color}" stroke-width="2.5"{dash}/><text x="{}" y="{}">{}</text>"#,
            cx + 26.0,
            cx + 32.0,
            y + 4.0,
            esc(label)
        );
        cx += 50.0 + 7.5 * label.len() as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{Latency, Tally};
    use crate::summary::summarize;

    #[test]
    fn si_suffixes() {
        assert_eq!(si(0.0), "0");
        assert_eq!(si(950.0), "950");
        assert_eq!(si(1_500.0), "1.5k");
        assert_eq!(si(1_250_000.0), "1.25M");
        assert_eq!(si(2_000_000.0), "2M");
        assert_eq!(si(12_345_678.0), "12.3M");
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(1_000_000.0, 5.0), 200_000.0);
        assert_eq!(nice_step(2_400_000.0, 6.0), 500_000.0);
        assert_eq!(nice_step(0.0, 5.0), 1.0);
    }

    #[test]
    fn renders_well_formed_svg_with_markers() {
        let steps: Vec<StepResult> = (0..4)
            .map(|i| {
                let mut t = Tally::default();
                t.record(
                    &crate::stats::Outcome::Ok,
                    std::time::Duration::from_millis(5 + 100 * i),
                    100,
                );
                let mut s = StepResult::from_tally(
                    i as usize,
                    Some(1.0),
                    None,
                    1.0,
                    1,
                    1,
                    0,
                    Some(100 * (i + 1)),
                    &t,
                );
                s.achieved_points_per_sec = 100.0 * (i as f64 + 1.0).min(3.0);
                s.latency = Latency {
                    count: 1,
                    p95_us: 5_000 + 100_000 * i,
                    p99_us: 6_000 + 100_000 * i,
                    ..Latency::default()
                };
                s
            })
            .collect();
        let sum = summarize(&steps, 250.0);
        let svg = ramp_svg("ramp <test>", &steps, &sum);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("ramp &lt;test&gt;"));
        assert!(svg.contains("sustainable"));
        assert!(svg.contains("peak 300"));
        assert_eq!(svg.matches("<polyline").count(), 3);
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        // Empty input still renders a valid document.
        let empty = ramp_svg("x", &[], &summarize(&[], 250.0));
        assert!(empty.contains("no open-model steps") && empty.contains("</svg>"));
    }
}
