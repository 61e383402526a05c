//! chingest-load: the load generator that tells the truth about write capacity.
//!
//! # Brief overview
//!
//! A saturation number without a latency budget is not a capacity. This crate
//! drives any InfluxDB-compatible `/write` or `/api/v2/write` endpoint over
//! HTTP and reports what it can *sustain*:
//!
//! * [`gen`] pre-encodes request bodies (line protocol, msgpack row, msgpack
//!   columnar; optionally gzip) with a manifest, deterministically from a seed.
//! * [`schedule`] is the open model: a ramp of constant arrival rates; requests
//!   start on schedule whatever the server does, and a request due while the
//!   in-flight cap is reached is counted as dropped.
//! * [`closed`] is the closed model (N users back to back), for contrast.
//! * [`stats`] counts outcomes (2xx, shed 429/503, failures) and latency in an
//!   HDR histogram; [`summary`] reduces a run to *sustainable* and *peak*.
//! * [`report`] writes markdown + JSON (+ the [`chart`] SVG) and assembles the
//!   every-layer benchmark page; [`host`] records the machine and build.
//! * [`overload`] runs the sustainable rate, twice it, then the sustainable
//!   rate again, sampling the server's memory, and judges refusal latency,
//!   memory against the configured budget and recovery; [`refusals`] reads
//!   which server limit refused from its `/metrics`.
//! * [`query`] benchmarks InfluxQL reads: it writes a data set to each
//!   server, checks that their answers agree, then times Grafana's query shapes.
//! * [`tsbs`] benchmarks TSBS's `cpu-only` query types the same way.
//! * [`dashboard`] refreshes a wall of Grafana panels on each server while it
//!   ingests, and times each refresh.
//! * [`sink`] is a null endpoint (204 to everything) that measures the load
//!   generator itself on the same machine.
//!
//! It depends on no other chingest crate: it only speaks HTTP.
#![deny(missing_docs)]

pub mod chart;
pub mod client;
pub mod closed;
pub mod cpu;
pub mod dashboard;
mod error;
pub mod gen;
pub mod host;
pub mod overload;
pub mod query;
pub mod refusals;
pub mod report;
pub mod schedule;
pub mod sink;
pub mod stages;
pub mod stats;
pub mod summary;
pub mod tsbs;

pub use error::{Error, Result};
