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
//! `total`: from the moment the outermost layer received the request
//! (`crate::RequestStart`: after hyper read and parsed its head) up to the
//! response, the layers' way in (routing, authentication, the request id),
//! the handler's extractors and rendering included. It leaves out what
//! happens after the header is written: the layers' way out (the request
//! metrics, the id and version headers), hyper's encoding and write of
//! the response, and freeing the request; and before the outermost layer,
//! hyper's read and parse of the request.

use std::fmt::Write;
use std::time::{Duration, Instant};

use axum::http::HeaderValue;
use storage::influxql::stages::Stages;

/// The header's name.
pub const SERVER_TIMING_HEADER: &str = "server-timing";

/// One request's stage times.
pub(super) struct Timing {
    /// When the request reached the outermost layer (`total` counts from here).
    started: Instant,
    /// When the handler began (`parse` counts from here).
    handler: Instant,
    pub(super) parse: Duration,
    pub(super) exec: Duration,
    pub(super) stages: Stages,
}

impl Timing {
    /// A request's timing, `received` when the outermost layer saw it
    /// (now if unknown).
    pub(super) fn start(received: Option<Instant>) -> Timing {
        let handler = Instant::now();
        Timing {
            started: received.unwrap_or(handler),
            handler,
            parse: Duration::ZERO,
            exec: Duration::ZERO,
            stages: Stages::default(),
        }
    }

    /// Marks the end of parsing.
    pub(super) fn parsed(&mut self) {
        self.parse = self.handler.elapsed();
    }

    /// The header's value, `render` the rendering time where known.
    pub(super) fn header(&self, render: Option<Duration>) -> Option<HeaderValue> {
        let mut text = String::with_capacity(160);
        let mut put = |name: &str, d: Duration| {
            if !text.is_empty() {
                text.push_str(", ");
            }
            // Whole microseconds, rounded, in integers: a float's `{:.3}`
            // took Rust's exact float formatting (Grisu, then Dragon) nine
            // times a request.
            let us = (d.as_nanos() + 500) / 1000;
            let _ = write!(text, "{name};dur={}.{:03}", us / 1000, us % 1000);
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
        let received = Instant::now() - Duration::from_millis(1500);
        let mut t = Timing::start(Some(received));
        t.parse = Duration::from_micros(12);
        t.exec = Duration::from_nanos(1_190_499);
        let h = t.header(Some(Duration::from_nanos(8_500))).unwrap();
        let h = h.to_str().unwrap();
        assert!(
            h.starts_with("parse;dur=0.012, exec;dur=1.190, render;dur=0.009, total;dur=1"),
            "{h}"
        );
        // `total` counts from when the request was received, not from the handler.
        let total: f64 = h.rsplit("total;dur=").next().unwrap().parse().unwrap();
        assert!((1500.0..60_000.0).contains(&total), "{h}");
    }
}
