//! InfluxDB line protocol parser over borrowed bytes.
//!
//! Grammar and error texts follow InfluxDB 1.x (`models/points.go`), since chingest keeps v1's
//! partial-write semantics:
//!
//! ```text
//! measurement[,tag=value...] field=value[,field=value...] [timestamp]
//! ```
//!
//! * Measurement, tag keys, tag values and field keys: a delimiter (`,` ` ` `=`) is escaped when
//!   the byte before it is a backslash; `\,` `\ ` `\=` unescape, any other backslash is literal.
//! * String field values: `\"` and `\\` unescape; newlines are allowed inside.
//! * Floats (`1`, `1.`, `.5`, `-1.5e-3`), integers `1i`, unsigned `1u`, booleans
//!   `t T true True TRUE f F false False FALSE`.
//! * A field named `time` is dropped; duplicate fields in one line: the last wins (of two
//!   types: both are kept and the catalog drops the point as a `field type conflict`).
//!
//! Each line yields a point or a [`LineError`]; a bad line spares its neighbours. Names and
//! string values are spans into the body unless unescaping forces a copy (into the batch's side
//! buffer); tags and fields go to the batch's flat pools, so the common case allocates nothing
//! per point. Bodies over [`MAX_BODY_BYTES`] (2 GiB) are refused as one error.
//!
//! # Layout
//! * `scan` — finding the ends of names: byte classes, SSE2/SWAR skips, the 16-byte
//!   fast paths for whole short elements.
//! * `point` — the grammar of one line: measurement, tags, fields, timestamp.
//! * `pool` — names into the batch's pools: unescaped copies, sorted tag insertion.
//! * `number`, `value` — field values and timestamps (Go's `scanNumber`, `scanBoolean`,
//!   quoted strings).
//! * `render` — the inverse: points back to line protocol.

use std::borrow::Cow;

use rayon::prelude::*;

use crate::error::LineError;
use crate::lines::{chunk_bounds, scan_line};
use crate::point::{ParsedBatch, MAX_BODY_BYTES};
use crate::precision::Precision;

mod number;
mod point;
mod pool;
mod render;
mod scan;
mod value;

pub use render::{escape_key, escape_measurement, escape_string_value, render_point};

use point::parse_point;
use scan::skip_whitespace;

/// Largest allowed size of measurement + tags (Go's `models.MaxKeyLength`).
pub const MAX_KEY_LENGTH: usize = 65535;

/// Bodies at least this large are split and parsed on the rayon pool.
pub const DEFAULT_PARALLEL_CHUNK_BYTES: usize = 512 * 1024;

/// Why a line was rejected: InfluxDB's text (mostly static, so no allocation).
type Reason = Cow<'static, str>;

/// Parses a whole body on the calling thread.
pub fn parse_lines(body: &[u8], precision: Precision, now_ns: i64) -> ParsedBatch<'_> {
    if body.len() > MAX_BODY_BYTES {
        return too_large(body);
    }
    let ctx = Ctx::new(precision, now_ns);
    let mut out = new_batch(body, body.len());
    parse_range(body, 0, body.len(), &ctx, &mut out);
    out
}

#[cold]
fn too_large(body: &[u8]) -> ParsedBatch<'_> {
    let mut out = ParsedBatch::new(body);
    out.errors.push(LineError {
        line: String::new(),
        reason: format!("request body exceeds {MAX_BODY_BYTES} bytes"),
    });
    out
}

/// Parses a body, splitting it at line boundaries into `chunk_bytes` chunks parsed in
/// parallel on the current rayon pool; results are in input order.
pub fn parse_lines_parallel(
    body: &[u8],
    precision: Precision,
    now_ns: i64,
    chunk_bytes: usize,
) -> ParsedBatch<'_> {
    // About one chunk per worker: fewer chunks means less stitching (each later chunk's pools
    // are moved into the first one's).
    let per_thread = body.len() / rayon::current_num_threads().max(1) + 1;
    let bounds = chunk_bounds(body, chunk_bytes.max(per_thread));
    if bounds.len() <= 2 || body.len() > MAX_BODY_BYTES {
        return parse_lines(body, precision, now_ns);
    }
    let ctx = Ctx::new(precision, now_ns);
    let parts: Vec<(ParsedBatch<'_>, usize)> = bounds
        .par_windows(2)
        .map(|w| {
            let mut out = new_batch(body, w[1] - w[0]);
            let end = parse_range(body, w[0], w[1], &ctx, &mut out);
            (out, end)
        })
        .collect();
    let mut out = ParsedBatch::new(body);
    let mut pos = 0usize;
    for (i, (part, end)) in parts.into_iter().enumerate() {
        let (start, soft_end) = (bounds[i], bounds[i + 1]);
        if start == pos {
            if i == 0 {
                out = part;
            } else {
                out.append(part);
            }
            pos = end;
        } else if pos < soft_end {
            // The previous chunk's last line ran past our start (a newline inside a quoted
            // string): the speculative parse began mid-line; redo it from the true line start.
            let mut redo = ParsedBatch::new(body);
            pos = parse_range(body, pos, soft_end, &ctx, &mut redo);
            out.append(redo);
        }
    }
    out
}

fn new_batch(body: &[u8], bytes: usize) -> ParsedBatch<'_> {
    // A guess from typical line sizes; only capacity, never correctness. Bounded by the body.
    let lines = bytes / 96 + 1;
    ParsedBatch::with_capacity(body, lines, lines * 2, lines * 4)
}

/// What every line of one body shares.
struct Ctx {
    precision: Precision,
    /// The time of a line without a timestamp: the receive time truncated to `precision`.
    default_time: i64,
}

impl Ctx {
    fn new(precision: Precision, now_ns: i64) -> Ctx {
        Ctx {
            precision,
            default_time: precision.truncate(now_ns),
        }
    }
}

/// Parses the lines that start in `[start, soft_end)` into `out`; returns the position after
/// the last line parsed (>= `soft_end` unless the body ended).
fn parse_range<'a>(
    body: &'a [u8],
    start: usize,
    soft_end: usize,
    ctx: &Ctx,
    out: &mut ParsedBatch<'a>,
) -> usize {
    let mut scratch = Vec::with_capacity(256);
    let mut pos = start;
    while pos < soft_end && pos < body.len() {
        let line_start = pos;
        let s = skip_whitespace(body, pos);
        if s >= body.len() {
            return body.len();
        }
        match body[s] {
            b'\n' => {
                pos = s + 1;
                continue;
            }
            b'#' => {
                pos = scan_line(body, line_start) + 1;
                continue;
            }
            _ => {}
        }
        let mut parts = out.parts_mut();
        let (tags0, fields0, side0) = (parts.tags.len(), parts.fields.len(), parts.side.len());
        match parse_point(body, s, ctx, &mut parts, &mut scratch) {
            Ok(end) => pos = end + 1,
            Err(reason) => {
                parts.tags.truncate(tags0);
                parts.fields.truncate(fields0);
                parts.side.truncate(side0);
                let end = scan_line(body, line_start);
                out.errors.push(LineError {
                    line: String::from_utf8_lossy(&body[s..end]).into_owned(),
                    reason: reason.into_owned(),
                });
                pos = end + 1;
            }
        }
    }
    pos.min(body.len())
}
