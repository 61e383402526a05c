use super::*;
use crate::summary::RunResult;

fn inputs_in(dir: &Path) -> ReportInputs {
    ReportInputs {
        results_dir: dir.into(),
        out: dir.join("e2e.md"),
        ramp_name: "ramp".into(),
        closed_name: "closed".into(),
    }
}

#[test]
fn missing_inputs_say_not_measured() {
    let d = tempfile::tempdir().unwrap();
    let inp = ReportInputs {
        results_dir: d.path().join("nothing-here"),
        out: d.path().join("docs/e2e.md"),
        ramp_name: "ramp".into(),
        closed_name: "closed".into(),
    };
    regenerate(&inp).unwrap();
    let md = std::fs::read_to_string(&inp.out).unwrap();
    assert!(md.contains("| not measured |"));
    assert!(md.contains("## Host"));
    assert!(!md.contains("NaN"));
}

#[test]
fn a_soak_that_misses_the_budget_says_it_did_not_hold() {
    let d = tempfile::tempdir().unwrap();
    let soak_run = |n: usize, points: f64, p95_ms: u64| {
        let steps = vec![crate::summary::tests::step(0, points, points, p95_ms)];
        let r = RunResult {
            kind: "ramp".into(),
            tool: "test".into(),
            url: "http://127.0.0.1/write".into(),
            payloads: "test".into(),
            config: serde_json::json!({}),
            host: crate::host::collect(),
            summary: crate::summary::summarize(&steps, 250.0),
            steps,
        };
        let path = d.path().join(format!("soak_{n}.json"));
        std::fs::write(path, serde_json::to_vec(&r).unwrap()).unwrap();
    };
    let soak = |p95_ms: u64| {
        soak_run(1, 800_000.0, p95_ms);
        every_layer_markdown(&inputs_in(d.path()))
    };
    let md = soak(400);
    assert!(
        md.contains("**end-to-end soak** (the sustainable rate for 10 s, 800k offered: **did not hold**, p95 400 ms) | 800k |"),
        "{md}"
    );
    assert!(md.contains("held for 10 s (soak): **no**"), "{md}");
    assert!(
        md.contains("Capacity that held for 10 s: none of the rates soaked held."),
        "{md}"
    );
    assert!(md.contains("## Soak at the sustainable rate"), "{md}");
    let md = soak(200);
    assert!(
        md.contains("800k offered: held, p95 200 ms) | 800k |"),
        "{md}"
    );
    assert!(md.contains("held for 10 s (soak): **yes**"), "{md}");
    assert!(
        md.contains("Capacity that held for 10 s: **800k points/s** (p95 200 ms)."),
        "{md}"
    );
    // The sustainable rate fails, the next lower one holds.
    soak_run(2, 600_000.0, 120);
    let md = soak(400);
    assert!(
        md.contains("a lower ramp rate for 10 s, 600k offered: held, p95 120 ms) | 600k |"),
        "{md}"
    );
    assert!(
        md.contains("Capacity that held for 10 s: **600k points/s** (p95 120 ms)."),
        "{md}"
    );
    assert!(md.contains("### Soak 2"), "{md}");
}

#[test]
fn engine_ceiling_ratio_appears() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("chdb_raw.json"),
        r#"{"variants":[{"variant":"narrow","rows_per_sec":4000000}],"host":{"date":"2026-11-22"}}"#,
    )
    .unwrap();
    std::fs::write(d.path().join("flush.json"), "not json").unwrap();
    let md = every_layer_markdown(&inputs_in(d.path()));
    assert!(
        md.contains("engine ceiling (`chdb_raw`, narrow) | 4M | 100.0%"),
        "{md}"
    );
    assert!(md.contains("| flush | not measured |"), "{md}");
    assert!(md.contains("measured on 2026-11-22"));
}
