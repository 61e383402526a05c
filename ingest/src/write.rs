//! The front-door stage: body → parsed points → resolved series/schema → Arrow batches.

use std::time::Instant;

use crate::batch::{build_batches, MeasurementBatch};
use crate::catalog::{Catalog, MetaRecord};
use crate::error::{DropKind, DroppedPoint, LineError, WriteError};
use crate::line_protocol::{parse_lines_parallel, DEFAULT_PARALLEL_CHUNK_BYTES};
use crate::msgpack;
use crate::names::check_written_database;
use crate::point::ParsedBatch;
use crate::precision::Precision;

/// `Content-Type` of the msgpack row format.
pub const CONTENT_TYPE_MSGPACK: &str = "application/msgpack";
/// `Content-Type` of the columnar msgpack format.
pub const CONTENT_TYPE_COLUMNAR_MSGPACK: &str = "application/vnd.chingest.columnar-msgpack.v1";
/// HyperbyteDB's name for the columnar msgpack format (accepted as an alias).
pub const CONTENT_TYPE_COLUMNAR_MSGPACK_HYPERBYTEDB: &str =
    "application/vnd.hyperbytedb.columnar-msgpack.v1";

/// The content types of the msgpack formats, matched case-insensitively with parameters
/// (`; charset=`) ignored; any other content type is line protocol.
pub const MSGPACK_CONTENT_TYPES: [(&str, Format); 4] = [
    (CONTENT_TYPE_MSGPACK, Format::MsgpackRows),
    ("application/x-msgpack", Format::MsgpackRows),
    (CONTENT_TYPE_COLUMNAR_MSGPACK, Format::MsgpackColumnar),
    (
        CONTENT_TYPE_COLUMNAR_MSGPACK_HYPERBYTEDB,
        Format::MsgpackColumnar,
    ),
];

/// InfluxDB 1.x's reason for points older than the database's retention.
pub const BEYOND_RETENTION: &str = "points beyond retention policy";

/// Body format of a write request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// InfluxDB line protocol (any content type not in [`MSGPACK_CONTENT_TYPES`]).
    #[default]
    LineProtocol,
    /// msgpack row format ([`CONTENT_TYPE_MSGPACK`] or `application/x-msgpack`).
    MsgpackRows,
    /// msgpack columnar format ([`CONTENT_TYPE_COLUMNAR_MSGPACK`] or the HyperbyteDB alias).
    MsgpackColumnar,
}

impl Format {
    /// The format for a `Content-Type` header value (parameters such as `; charset=` ignored);
    /// anything unknown or absent is line protocol, as InfluxDB does.
    pub fn from_content_type(ct: Option<&str>) -> Format {
        let Some(ct) = ct else {
            return Format::LineProtocol;
        };
        let mime = ct.split(';').next().unwrap_or("").trim();
        MSGPACK_CONTENT_TYPES
            .iter()
            .find(|(name, _)| mime.eq_ignore_ascii_case(name))
            .map_or(Format::LineProtocol, |&(_, format)| format)
    }

    fn label(self) -> &'static str {
        match self {
            Format::LineProtocol => "line_protocol",
            Format::MsgpackRows => "msgpack",
            Format::MsgpackColumnar => "msgpack_columnar",
        }
    }
}

/// Tunables of the stage.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    /// Line protocol bodies larger than this are split into chunks of this size and parsed on
    /// the rayon pool. Default: 512 KiB.
    pub parallel_chunk_bytes: usize,
}

impl Default for IngestConfig {
    fn default() -> Self {
        IngestConfig {
            parallel_chunk_bytes: DEFAULT_PARALLEL_CHUNK_BYTES,
        }
    }
}

/// How a write turned out, deciding the HTTP answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Everything accepted (HTTP 204).
    Ok,
    /// Some points written, some rejected (HTTP 400 with the error; the written data is kept).
    Partial,
    /// Nothing written, every point rejected by parsing or type conflicts (HTTP 400).
    Rejected,
    /// At least one point was dropped by a cardinality limit (HTTP 422); others may be written.
    LimitExceeded,
}

impl WriteOutcome {
    /// The HTTP status code for this outcome.
    pub fn http_status(self) -> u16 {
        match self {
            WriteOutcome::Ok => 204,
            WriteOutcome::Partial | WriteOutcome::Rejected => 400,
            WriteOutcome::LimitExceeded => 422,
        }
    }
}

/// A write ready for the WAL: Arrow batches, per-line errors, and catalog records.
#[derive(Debug, Clone)]
pub struct PreparedWrite {
    /// Database written to.
    pub db: String,
    /// One batch per measurement with at least one accepted point.
    pub tables: Vec<MeasurementBatch>,
    /// Accepted points.
    pub points: usize,
    /// Lines that failed to parse, in input order.
    pub line_errors: Vec<LineError>,
    /// Points rejected after parsing (type conflicts, limits, `time`-only points).
    pub dropped: usize,
    /// Reasons of the dropped points, first-seen order, identical reasons counted once.
    pub dropped_reasons: Vec<DroppedPoint>,
    /// Catalog records to commit in the same WAL batch as the data.
    pub meta: Vec<MetaRecord>,
}

impl PreparedWrite {
    /// The outcome (and so the HTTP status) of this write.
    pub fn outcome(&self) -> WriteOutcome {
        if self.line_errors.is_empty() && self.dropped == 0 {
            WriteOutcome::Ok
        } else if self
            .dropped_reasons
            .iter()
            .any(|d| d.kind == DropKind::Limit)
        {
            WriteOutcome::LimitExceeded
        } else if self.points > 0 {
            WriteOutcome::Partial
        } else {
            WriteOutcome::Rejected
        }
    }

    /// InfluxDB 1.x's error text, `None` when everything was accepted.
    ///
    /// Per-line parse errors (`unable to parse '<line>': <reason>`) and drop reasons are joined
    /// with `\n`. As in v1, when points were written or dropped after parsing the text is
    /// wrapped as `partial write: <text> dropped=<n>`; when every line failed to parse it is
    /// the bare joined text.
    pub fn error_message(&self) -> Option<String> {
        if self.line_errors.is_empty() && self.dropped == 0 {
            return None;
        }
        let mut msg = String::new();
        for e in &self.line_errors {
            if !msg.is_empty() {
                msg.push('\n');
            }
            use std::fmt::Write;
            let _ = write!(msg, "{e}");
        }
        for d in &self.dropped_reasons {
            if !msg.is_empty() {
                msg.push('\n');
            }
            msg.push_str(&d.reason);
        }
        if self.points > 0 || self.dropped > 0 {
            Some(format!("partial write: {msg} dropped={}", self.dropped))
        } else {
            Some(msg)
        }
    }

    /// The WAL payload of this write ([`wire::encode`](crate::wire::encode)).
    pub fn encode_wal(&self) -> Result<Vec<u8>, arrow::error::ArrowError> {
        crate::wire::encode(&self.db, &self.tables)
    }

    /// The WAL payload of this write, its Arrow buffers LZ4-framed when `lz4`
    /// ([`wire::encode_with`](crate::wire::encode_with)).
    pub fn encode_wal_with(&self, lz4: bool) -> Result<Vec<u8>, arrow::error::ArrowError> {
        crate::wire::encode_with(&self.db, &self.tables, lz4)
    }
}

/// Entry point of the stage.
#[derive(Debug, Clone, Default)]
pub struct Ingestor {
    config: IngestConfig,
}

impl Ingestor {
    /// A stage with the given tunables.
    pub fn with_config(config: IngestConfig) -> Ingestor {
        Ingestor { config }
    }

    /// Parses `body`, resolves series and types against `catalog`, and builds one Arrow batch
    /// per measurement, with default tunables. `now_ns` is the request's receive time (the
    /// timestamp of points without one, truncated to `precision`).
    pub fn write(
        catalog: &Catalog,
        db: &str,
        body: &[u8],
        format: Format,
        precision: Precision,
        now_ns: i64,
    ) -> Result<PreparedWrite, WriteError> {
        Ingestor::default().prepare(catalog, db, body, format, precision, now_ns)
    }

    /// [`Ingestor::write`] with this instance's tunables.
    pub fn prepare(
        &self,
        catalog: &Catalog,
        db: &str,
        body: &[u8],
        format: Format,
        precision: Precision,
        now_ns: i64,
    ) -> Result<PreparedWrite, WriteError> {
        self.prepare_retained(catalog, db, body, format, precision, now_ns, None)
    }

    /// [`Ingestor::prepare`] for a database with a retention: points with a timestamp
    /// before `min_time_ns` are dropped as [`BEYOND_RETENTION`] (InfluxDB 1.x: a partial
    /// write) before they reach the catalog, so they create no series or fields.
    #[allow(clippy::too_many_arguments)]
    pub fn prepare_retained(
        &self,
        catalog: &Catalog,
        db: &str,
        body: &[u8],
        format: Format,
        precision: Precision,
        now_ns: i64,
        min_time_ns: Option<i64>,
    ) -> Result<PreparedWrite, WriteError> {
        check_written_database(db)?;
        let t0 = Instant::now();
        let mut parsed = parse_body(
            body,
            format,
            precision,
            now_ns,
            self.config.parallel_chunk_bytes,
        )?;
        let mut beyond_retention = 0;
        if let Some(min) = min_time_ns {
            // Pool entries of removed points stay behind unreferenced: resolve and build
            // only follow the points' own ranges.
            let before = parsed.points.len();
            parsed.points.retain(|p| p.time >= min);
            beyond_retention = before - parsed.points.len();
        }
        let t1 = Instant::now();
        let res = catalog.resolve(db, &parsed);
        let t2 = Instant::now();
        let tables = build_batches(&parsed, &res)?;
        let t3 = Instant::now();

        let label = format.label();
        metrics::histogram!("chingest_ingest_parse_seconds", "format" => label)
            .record((t1 - t0).as_secs_f64());
        metrics::histogram!("chingest_ingest_resolve_seconds").record((t2 - t1).as_secs_f64());
        metrics::histogram!("chingest_ingest_build_seconds").record((t3 - t2).as_secs_f64());
        metrics::counter!("chingest_ingest_body_bytes_total", "format" => label)
            .increment(body.len() as u64);
        metrics::counter!("chingest_ingest_points_accepted_total")
            .increment(res.accepted.len() as u64);
        if !parsed.errors.is_empty() {
            metrics::counter!("chingest_ingest_lines_rejected_total")
                .increment(parsed.errors.len() as u64);
        }
        if beyond_retention > 0 {
            metrics::counter!("chingest_ingest_points_dropped_total", "reason" => "beyond_retention")
                .increment(beyond_retention as u64);
        }
        for d in &res.dropped {
            let reason = match d.kind {
                DropKind::TypeConflict => "type_conflict",
                DropKind::Limit => "limit",
                DropKind::ColumnConflict => "column_conflict",
                DropKind::BeyondRetention => "beyond_retention",
                DropKind::InvalidName => "invalid_name",
                DropKind::TooManyColumns => "too_many_columns",
                _ => "invalid_field",
            };
            metrics::counter!("chingest_ingest_points_dropped_total", "reason" => reason)
                .increment(d.count as u64);
        }
        if res.new_series > 0 {
            metrics::counter!("chingest_ingest_series_created_total")
                .increment(res.new_series as u64);
        }

        let points = res.accepted.len();
        let (mut dropped, mut dropped_reasons, meta) = (res.dropped_count, res.dropped, res.meta);
        if beyond_retention > 0 {
            dropped += beyond_retention;
            dropped_reasons.insert(
                0,
                DroppedPoint {
                    kind: DropKind::BeyondRetention,
                    reason: BEYOND_RETENTION.to_string(),
                    count: beyond_retention,
                },
            );
        }
        Ok(PreparedWrite {
            db: db.to_owned(),
            tables,
            points,
            line_errors: std::mem::take(&mut parsed.errors),
            dropped,
            dropped_reasons,
            meta,
        })
    }
}

/// Parses a body of any [`Format`] into points (no catalog involved).
pub fn parse_body(
    body: &[u8],
    format: Format,
    precision: Precision,
    now_ns: i64,
    parallel_chunk_bytes: usize,
) -> Result<ParsedBatch<'_>, WriteError> {
    Ok(match format {
        Format::LineProtocol => parse_lines_parallel(body, precision, now_ns, parallel_chunk_bytes),
        Format::MsgpackRows => msgpack::parse_rows(body, precision, now_ns)?,
        Format::MsgpackColumnar => msgpack::parse_columnar(body, precision, now_ns)?,
    })
}
