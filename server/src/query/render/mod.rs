//! `/query` answers as InfluxDB 1.x writes them, byte for byte: its JSON
//! (`encoding/json` of `httpd.Response`), `pretty=true` (`MarshalIndent` with
//! four spaces), `epoch=`, and `chunked=true` streaming (one JSON object per
//! line, `"partial":true` on split series and on every chunk of a statement
//! but its last).
//!
//! Brief overview: [`respond`] answers a request's statement results, a small
//! answer rendered at once into one buffer, a larger one as a streamed body
//! ([`write_statements`] on a blocking thread, `body` carrying what it
//! writes); [`Response`] writes statements through any [`Write`] a
//! bounded buffer at a time (`document`: the `results`/`series` layout;
//! `json`: values as Go encodes them; `indent`: `pretty=true`), so a large
//! answer is never one big string; in chunked mode each line is followed by a
//! `flush()`.
//!
//! Rules taken from InfluxDB 1.6.7 (`services/httpd/handler.go`,
//! `query/result.go`, `query/emitter.go`, `query/executor.go`,
//! `models/rows.go`) and checked against a running `influxd` 1.6.7:
//! - empty `name`, `tags`, `columns`, `values`, `messages` are left out, and
//!   `{"statement_id":N}` is a statement without series; tags are sorted;
//! - times are RFC3339 with nanoseconds, trailing zeros trimmed (`Z`, or the
//!   `tz()` offset); `epoch=u|ms|s|m|h` gives integers truncated toward zero,
//!   and any other non-empty `epoch` (`ns`, `n`, even `µ`) gives nanoseconds;
//! - floats as Go writes them (`1` for 1.0, `1e+21`, `1e-7`, `-0`);
//!   strings escaped as Go does (`<`, `>`, `&`, U+2028/9 as `\u....`);
//! - a series of more than 10,000 rows carries `"partial":true` even without
//!   `chunked` (InfluxDB splits it in its emitter and merges it back without
//!   clearing the flag); `chunk_size` only applies with `chunked=true`;
//! - the answer ends at the first failed statement ([`write_statements`]).
//!
//! Deviations: a float NaN or ±Inf is written `null`. (InfluxDB shows NaN as
//! null, but ±Inf makes its encoder fail: the whole response becomes the text
//! `json: error calling MarshalJSON ...: json: unsupported value: +Inf`.)

mod body;
mod document;
mod indent;
mod json;
mod one_row;
#[cfg(test)]
mod one_row_tests;
mod packed;
#[cfg(test)]
mod packed_tests;
mod shared;
#[cfg(test)]
mod shared_tests;
#[cfg(test)]
mod tests;

use std::io::{self, Write};

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use influxql::ast::Statement;
use storage::influxql::series::{Series, StatementResult};
use storage::influxql::zone::{TimeZone, UnknownZone};
use tokio::sync::mpsc;

use crate::params::Params;
use body::{ChannelBody, ChannelWriter};
use document::{Part, Rows, Sink};
use json::Times;

/// InfluxDB's `DefaultChunkSize`: rows per chunk when `chunk_size` is absent,
/// and where its emitter splits (and flags) series even when not chunked.
pub const DEFAULT_CHUNK_SIZE: usize = 10_000;

/// How an answer is written, from the request's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    /// `epoch=`: the divisor of nanosecond times, `None` for RFC3339 strings.
    pub epoch: Option<i64>,
    /// `pretty=true`.
    pub pretty: bool,
    /// `chunked=true`: rows per chunk (`chunk_size`, default 10,000).
    pub chunk_size: Option<usize>,
}

impl Format {
    /// From the raw parameters, as InfluxDB reads them: `epoch` trimmed
    /// (empty = RFC3339), `pretty` and `chunked` only when exactly `true`,
    /// `chunk_size` a positive integer (otherwise the default).
    pub fn from_params(
        epoch: Option<&str>,
        pretty: Option<&str>,
        chunked: Option<&str>,
        chunk_size: Option<&str>,
    ) -> Format {
        let epoch = epoch
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|e| match e {
                "u" => 1_000,
                "ms" => 1_000_000,
                "s" => 1_000_000_000,
                "m" => 60_000_000_000,
                "h" => 3_600_000_000_000,
                _ => 1,
            });
        let chunk_size = (chunked == Some("true")).then(|| {
            chunk_size
                .and_then(|s| s.parse::<i64>().ok())
                .filter(|&n| n > 0)
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(DEFAULT_CHUNK_SIZE)
        });
        Format {
            epoch,
            pretty: pretty == Some("true"),
            chunk_size,
        }
    }

    /// From a request's parameters: `params` are the query string and form
    /// body together, `url` the query string alone (InfluxDB reads `pretty`
    /// from the URL only).
    pub fn from_request(params: &Params, url: &Params) -> Format {
        Format::from_params(
            params.get("epoch"),
            url.get("pretty"),
            params.get("chunked"),
            params.get("chunk_size"),
        )
    }
}

/// How InfluxDB splits one statement's answer into chunks (`chunked=true`),
/// which depends on the statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunking {
    /// `SELECT`, `SHOW SERIES`, `SHOW FIELD KEYS`: a line per series and per
    /// `chunk_size` rows, split series flagged `"partial":true`, every line
    /// but the statement's last flagged `"partial":true`.
    Rows,
    /// `SHOW TAG KEYS`, `SHOW TAG VALUES`: a line per series, whole, no flags.
    Series,
    /// Other statements (`SHOW MEASUREMENTS`, `SHOW DATABASES`, ...): one line.
    Whole,
}

impl Chunking {
    /// How InfluxDB 1.6 chunks the answer of `statement`.
    pub fn of(statement: &Statement) -> Chunking {
        match statement {
            Statement::Select(_) | Statement::ShowSeries(_) | Statement::ShowFieldKeys(_) => {
                Chunking::Rows
            }
            Statement::ShowTagKeys(_) | Statement::ShowTagValues { .. } => Chunking::Series,
            _ => Chunking::Whole,
        }
    }
}

/// One statement's result as `/query` answers it.
#[derive(Debug)]
pub struct Answered {
    /// Its answer, or its error in InfluxDB's words.
    pub result: Result<StatementResult, String>,
    /// How it is chunked ([`Chunking::of`]).
    pub chunking: Chunking,
    /// Its `tz()` zone, for the `+hh:mm` of its times ([`zone_of`]).
    pub zone: Option<TimeZone>,
}

/// The zone of a `SELECT ... tz('Area/City')`; an unknown name is InfluxDB's
/// `unable to find time zone ...` (a 400 `error parsing query: ...` there).
pub fn zone_of(statement: &Statement) -> Result<Option<TimeZone>, UnknownZone> {
    match statement {
        Statement::Select(select) => select.timezone.as_deref().map(TimeZone::load).transpose(),
        _ => Ok(None),
    }
}

/// One statement's outcome: its answer, or the error InfluxDB words.
#[derive(Debug, Clone, Copy)]
pub enum Outcome<'a> {
    /// The answer.
    Answer(&'a StatementResult),
    /// `{"statement_id":N,"error":"..."}`.
    Error(&'a str),
}

/// An answer being written: statements in order, then [`Response::finish`].
pub struct Response<W: Write> {
    out: Sink<W>,
    format: Format,
    /// Statements written so far (non-chunked: whether `{"results":[` is out).
    written: usize,
}

impl<W: Write> Response<W> {
    /// Starts an answer written to `w`.
    pub fn new(w: W, format: Format) -> Self {
        Response {
            out: Sink::new(w, format.pretty),
            format,
            written: 0,
        }
    }

    /// Writes statement `id`'s outcome (`chunking` matters only when chunked;
    /// `zone` is the statement's `tz()`).
    pub fn statement(
        &mut self,
        id: usize,
        outcome: Outcome<'_>,
        chunking: Chunking,
        zone: Option<&TimeZone>,
    ) -> io::Result<()> {
        let times = Times::new(self.format.epoch, zone);
        match self.format.chunk_size {
            Some(size) => self.chunked(id, outcome, chunking, size, &times),
            None => self.whole(id, outcome, chunking, &times),
        }?;
        self.written += 1;
        Ok(())
    }

    /// Ends the answer and returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.end()?;
        Ok(self.out.w)
    }

    fn end(&mut self) -> io::Result<()> {
        if self.format.chunk_size.is_none() {
            // Go leaves out an empty `results` (omitempty): `{}`.
            self.out.put(if self.written == 0 { b"{}" } else { b"]}" });
            self.out.end_document()?;
        }
        self.out.w.flush()
    }

    /// Non-chunked: one element of the one `results` array.
    fn whole(
        &mut self,
        id: usize,
        outcome: Outcome<'_>,
        chunking: Chunking,
        times: &Times<'_>,
    ) -> io::Result<()> {
        self.out.put(if self.written == 0 {
            b"{\"results\":["
        } else {
            b","
        });
        let Outcome::Answer(result) = outcome else {
            return self.out.result(id, &[], &[], false, outcome, times);
        };
        let parts: Vec<Part<'_>> = result
            .series
            .iter()
            .flat_map(|s| Rows::parts(s).map(move |rows| (s, rows)))
            .map(|(s, rows)| Part {
                series: s,
                // InfluxDB's emitter splits (and flags) long series even here.
                partial: chunking == Chunking::Rows && rows.len() > DEFAULT_CHUNK_SIZE,
                rows,
            })
            .collect();
        self.out
            .result(id, &parts, &result.messages, false, outcome, times)
    }

    /// Chunked: whole JSON documents, one per line.
    fn chunked(
        &mut self,
        id: usize,
        outcome: Outcome<'_>,
        chunking: Chunking,
        size: usize,
        times: &Times<'_>,
    ) -> io::Result<()> {
        let Outcome::Answer(result) = outcome else {
            return self.line(id, &[], &[], false, outcome, times);
        };
        let lines = chunk_lines(&result.series, chunking, size);
        if lines.is_empty() {
            return self.line(id, &[], &result.messages, false, outcome, times);
        }
        let last = lines.len() - 1;
        for (i, parts) in lines.iter().enumerate() {
            // Messages ride on the statement's first line.
            let messages: &[(String, String)] = if i == 0 { &result.messages } else { &[] };
            let partial = chunking == Chunking::Rows && i < last;
            self.line(id, parts, messages, partial, outcome, times)?;
        }
        Ok(())
    }

    /// One chunked line: `{"results":[<result>]}` and a flush.
    fn line(
        &mut self,
        id: usize,
        parts: &[Part<'_>],
        messages: &[(String, String)],
        partial: bool,
        outcome: Outcome<'_>,
        times: &Times<'_>,
    ) -> io::Result<()> {
        self.out.put(b"{\"results\":[");
        self.out
            .result(id, parts, messages, partial, outcome, times)?;
        self.out.put(b"]}");
        self.out.end_document()?;
        self.out.w.flush()
    }
}

/// Cells (values, times included) up to which an answer is rendered at once
/// into one buffer on the request's own thread ([`respond`]): a dashboard's
/// answer (TSBS `lastpoint` at 200 hosts: 4,200 cells, at 1,000 hosts 21,000
/// in 448 KB; `high-cpu-1`: up to ~15,000) then skips the hand-off to a
/// blocking thread and the channel, and goes out with a `Content-Length`.
/// Larger ones stream, never held whole.
const RENDER_AT_ONCE_CELLS: usize = 32_768;

/// Cells (as [`RENDER_AT_ONCE_CELLS`]) from which an answer rendered at once
/// is freed after the response leaves ([`respond`]).
const FREE_LATER_CELLS: usize = 4_096;

/// The cells of `results` when small enough to render at once
/// ([`RENDER_AT_ONCE_CELLS`]).
fn small(results: &[Answered]) -> Option<usize> {
    let mut cells = 0usize;
    for r in results {
        if let Ok(answer) = &r.result {
            for s in &answer.series {
                cells = cells.saturating_add(s.len().saturating_mul(s.columns.len()));
            }
        }
        if cells > RENDER_AT_ONCE_CELLS {
            return None;
        }
    }
    Some(cells)
}

/// Frees `results` after the response is on its way where they are many:
/// in a task of their own, which the runtime runs once the request's task
/// yields (its connection's write of the body waiting for the socket), or
/// on an idle worker. TSBS `lastpoint` at 1,000 hosts: freeing its 1,000
/// series (a name, a tag, a row and nine shared strings each) came between
/// the render and the response, most of the ~0.25 ms of `Server-Timing`'s
/// `total` outside every named stage. Outside a runtime (tests), here.
fn free_later(results: Vec<Answered>, cells: usize) {
    if cells < FREE_LATER_CELLS {
        return;
    }
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move { drop(results) });
    }
}

/// The `/query` answer for `results` (one per statement, in order, with how
/// each chunks; see [`write_statements`]), and how long it took to render
/// when it was rendered at once (`None`: it streams). A 200 whose body is, for
/// a small answer, rendered here into one buffer; for a larger one, rendered
/// on a blocking thread and sent as it is written, so a large answer is never
/// held as one buffer. The bytes are the same either way.
pub fn respond(
    results: Vec<Answered>,
    format: Format,
) -> (axum::response::Response, Option<std::time::Duration>) {
    if let Some(cells) = small(&results) {
        let started = std::time::Instant::now();
        // A Vec's `Write` cannot fail.
        if let Ok(body) = render_at_once(format, &results) {
            let took = started.elapsed();
            free_later(results, cells);
            let response = (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                Body::from(body),
            )
                .into_response();
            return (response, Some(took));
        }
    }
    (stream(results, format), None)
}

/// [`respond`]'s streamed answer.
fn stream(results: Vec<Answered>, format: Format) -> axum::response::Response {
    // A few pieces in flight: the renderer waits for a slow client.
    let (tx, rx) = mpsc::channel(4);
    tokio::task::spawn_blocking(move || {
        // An error here is the client gone away: nobody to tell.
        let _ = write_statements(ChannelWriter::new(tx), format, &results);
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        Body::new(ChannelBody::new(rx)),
    )
        .into_response()
}

/// InfluxDB's error for the statements after a failed one.
const NOT_EXECUTED: &str = "not executed";

/// Writes a whole answer for `results` to `w`. InfluxDB 1.x stops at the
/// first failed statement and answers for it in its own way, reproduced
/// here: when statements follow the failed one, its error is replaced by
/// `not executed` (non-chunked) or followed by one `not executed` line per
/// following statement, all with the failed statement's id (chunked), and
/// the following statements have no result of their own. (Its executor sends
/// them with the failed statement's id, and its handler keeps the last error
/// per id.) A failed last statement shows its own error.
pub fn write_statements<W: Write>(w: W, format: Format, results: &[Answered]) -> io::Result<W> {
    let mut response = Response::new(w, format);
    write_results(&mut response, format, results)?;
    response.finish()
}

/// [`write_statements`] into one buffer, for an answer rendered at once
/// ([`respond`]): the compact JSON is written where it stays, not handed on
/// 64 KB at a time into a second vector that grows by copying (TSBS
/// `high-cpu-1`'s 80 KB were copied twice). The same bytes.
fn render_at_once(format: Format, results: &[Answered]) -> io::Result<Vec<u8>> {
    let mut response = Response::new(Vec::new(), format);
    response.out.hold();
    write_results(&mut response, format, results)?;
    response.end()?;
    let (mut w, buf) = (response.out.w, response.out.buf);
    if w.is_empty() {
        return Ok(buf);
    }
    w.extend_from_slice(&buf);
    Ok(w)
}

/// The statements of [`write_statements`].
fn write_results<W: Write>(
    response: &mut Response<W>,
    format: Format,
    results: &[Answered],
) -> io::Result<()> {
    let last = results.len().saturating_sub(1);
    for (id, answered) in results.iter().enumerate() {
        let (chunking, zone) = (answered.chunking, answered.zone.as_ref());
        let message = match &answered.result {
            Ok(answer) => {
                response.statement(id, Outcome::Answer(answer), chunking, zone)?;
                continue;
            }
            Err(message) => message,
        };
        let after = last - id;
        if format.chunk_size.is_some() {
            response.statement(id, Outcome::Error(message), chunking, None)?;
            for _ in 0..after {
                response.statement(id, Outcome::Error(NOT_EXECUTED), chunking, None)?;
            }
        } else {
            let shown = if after == 0 {
                message.as_str()
            } else {
                NOT_EXECUTED
            };
            response.statement(id, Outcome::Error(shown), chunking, None)?;
        }
        break;
    }
    Ok(())
}

/// The lines of a chunked statement, each a list of series parts.
fn chunk_lines(series: &[Series], chunking: Chunking, size: usize) -> Vec<Vec<Part<'_>>> {
    // Each series as written: a one-row carrier (`Series::one_row`) as the
    // series it stands for.
    let wholes = || {
        series.iter().flat_map(|s| {
            Rows::parts(s).map(move |rows| Part {
                series: s,
                rows,
                partial: false,
            })
        })
    };
    match chunking {
        Chunking::Whole if series.is_empty() => Vec::new(),
        Chunking::Whole => vec![wholes().collect()],
        Chunking::Series => wholes().map(|p| vec![p]).collect(),
        Chunking::Rows => wholes()
            .flat_map(|whole| {
                let len = whole.rows.len();
                let n = len.div_ceil(size).max(1);
                (0..n).map(move |i| {
                    let from = (i * size).min(len);
                    let to = ((i + 1) * size).min(len);
                    vec![Part {
                        series: whole.series,
                        rows: whole.rows.slice(from, to),
                        partial: i + 1 < n,
                    }]
                })
            })
            .collect(),
    }
}
