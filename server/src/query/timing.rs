//! The `Server-Timing` header of a `/query` answer (issue #44): where the
//! request's time went, stage by stage, in milliseconds with microsecond
//! digits, as browsers' developer tools and `curl -i` show it:
//!
//! `parse;dur=0.012, plan;dur=0.020, wait;dur=0.001, series;dur=0.002,
//! eval;dur=0.110, build;dur=0.015, exec;dur=0.190, render;dur=0.009,
//! total;dur=0.230`
//!
//! `parse`: the parameters and the InfluxQL parse (and authorization);
//! the storage stages of the statements' reads (`storage::influxql::stages`:
//! `plan`, `wait`, `series`, `shards`, `eval`, `engine`, `build`, those that took any
//! time); `exec`: the statements' wall time on their blocking threads, the
//! hand-offs included (so `exec` minus the storage stages is the hand-off and
//! the rest of the statement's handling); `render`: the JSON, only where the
//! answer was rendered at once (a large one streams after the headers);
//! `total`: the handler's time up to the response, rendering included.

use std::fmt::Write;
use std::time::{Duration, Instant};

use axum::http::HeaderValue;
use storage::influxql::stages::Stages;

/// The header's name.
pub const SERVER_TIMING_HEADER: &str = "server-timing";

/// One request's stage times.
pub(super) struct Timing {
    started: Instant,
    pub(super) parse: Duration,
    pub(super) exec: Duration,
    pub(super) stages: Stages,
}

impl Timing {
    pub(super) fn start() -> Timing {
        Timing {
            started: Instant::now(),
            parse: Duration::ZERO,
            exec: Duration::ZERO,
            stages: Stages::default(),
        }
    }

    /// Marks the end of parsing.
    pub(super) fn parsed(&mut self) {
        self.parse = self.started.elapsed();
    }

    /// The header's value, `render` the rendering time where known.
    pub(super) fn header(&self, render: Option<Duration>) -> Option<HeaderValue> {
        let mut text = String::with_capacity(160);
        let mut put = |name: &str, d: Duration| {
            if !text.is_empty() {
                text.push_str(", ");
            }
            let _ = write!(text, "{name};dur={:.3}", d.as_secs_f64() * 1e3);
        };
        put("parse", self.parse);
        for (stage, d) in self.stages.spent() {
            put(stage.as_str(), d);
        }
        put("exec", self.exec);
        if let Some(r) = render {
            put("render", r);
        }
        put("total", self.started.elapsed());
        HeaderValue::from_str(&text).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_lists_each_stage_in_milliseconds() {
        let mut t = Timing::start();
        t.parse = Duration::from_micros(12);
        t.exec = Duration::from_micros(190);
        let h = t.header(Some(Duration::from_micros(9))).unwrap();
        let h = h.to_str().unwrap();
        assert!(
            h.starts_with("parse;dur=0.012, exec;dur=0.190, render;dur=0.009, total;dur="),
            "{h}"
        );
    }
}
