//! # ingest — chingest's front door
//!
//! Brief overview: this crate turns the body of a write request into Arrow record batches ready
//! for the WAL, at a few hundred nanoseconds per point, with InfluxDB 1.x's acceptance rules
//! and error texts. No HTTP here.
//!
//! ```text
//! body ──parse (lines, line_protocol | msgpack)──▶ ParsedBatch (spans, pooled)
//!      ──Catalog::resolve (series, types, limits)──▶ Resolution (+ metadata records)
//!      ──batch::build_batches──▶ one RecordBatch per measurement ──wire::encode──▶ WAL payload
//! ```
//!
//! * [`Ingestor::write`] runs the whole stage and returns a [`PreparedWrite`]; its
//!   [`outcome`](PreparedWrite::outcome) and [`error_message`](PreparedWrite::error_message) give
//!   the HTTP status (204 / 400 / 422) and v1 text (`partial write: ... dropped=<n>`).
//! * [`Catalog`] is the in-memory schema, series and database registry; [`Catalog::load`]
//!   rebuilds it from the records every write returns in [`PreparedWrite::meta`] and the
//!   database records ([`catalog::Record`] is the one codec of all of them).
//! * [`names`] holds the name rules (databases, measurements, columns) and the engine facts
//!   behind them; [`Precision`] and [`Format`] the tables of the
//!   `precision` parameter and of the body content types.
//! * [`series`] documents and pins the series-id algorithm (versioned canonical key, xxh3-64).
//! * [`wire`] is the WAL payload format; [`msgpack`] the two msgpack body formats.
//!
//! Metrics (facade `metrics`): `chingest_ingest_parse_seconds{format}`,
//! `chingest_ingest_resolve_seconds`, `chingest_ingest_build_seconds` (histograms),
//! `chingest_ingest_body_bytes_total{format}`, `chingest_ingest_points_accepted_total`,
//! `chingest_ingest_lines_rejected_total`, `chingest_ingest_points_dropped_total{reason}`,
//! `chingest_ingest_series_created_total` (counters).
#![deny(missing_docs)]

pub mod batch;
pub mod catalog;
pub mod error;
pub mod line_protocol;
pub mod lines;
pub mod msgpack;
pub mod names;
pub mod point;
pub mod precision;
pub mod series;
pub mod wire;
mod write;

pub use batch::MeasurementBatch;
pub use catalog::{Catalog, Limits, MeasurementSchema, MetaRecord, SeriesDrop};
pub use error::{
    CatalogError, DropKind, DroppedPoint, LineError, MsgpackError, PrecisionError, SeriesKeyError,
    WireError, WriteError,
};
pub use names::MAX_DATABASE_NAME;
pub use point::{FieldType, FieldValue, ParsedBatch, PointEntry, Span, Value, RESERVED_COLUMNS};
pub use precision::Precision;
pub use write::{
    parse_body, Format, IngestConfig, Ingestor, PreparedWrite, WriteOutcome, BEYOND_RETENTION,
    CONTENT_TYPE_COLUMNAR_MSGPACK, CONTENT_TYPE_COLUMNAR_MSGPACK_HYPERBYTEDB, CONTENT_TYPE_MSGPACK,
    MSGPACK_CONTENT_TYPES,
};
