//! The document's layout: `results[]` elements and `models.Row` series as
//! Go's `encoding/json` lays them out, written compact into a buffer that is
//! handed on (indented for `pretty=true`) once it is large.

use std::io::{self, Write};

use std::ops::Range;
use std::sync::Arc;

use storage::influxql::series::{Columns, OneRowSeries, Packed, Series, Value};

use super::indent::Indenter;
use super::json::{json_cell, json_string, json_strings, json_value, Times};
use super::one_row::OneRowText;
use super::packed::PackedText;
use super::shared::SharedCells;
use super::Outcome;

/// Flush the compact buffer to the writer past this many bytes.
const BUFFER_BYTES: usize = 64 * 1024;

/// Bytes a row usually takes at most (TSBS `SELECT *`: ~180).
const ROW_ROOM: usize = 16 * 1024;

/// A series, or a run of its rows, as written in one place.
#[derive(Debug, Clone)]
pub(super) struct Part<'a> {
    pub(super) series: &'a Series,
    pub(super) rows: Rows<'a>,
    pub(super) partial: bool,
}

/// A run of a series' rows: plain, or packed (`storage`'s `influxql/packed.rs`),
/// or the one row of one of a [`OneRowSeries`]'s series, with its tags.
#[derive(Debug, Clone)]
pub(super) enum Rows<'a> {
    Cells(&'a [Vec<Value>]),
    Packed(&'a Packed, Range<usize>),
    One(&'a OneRowSeries, usize),
}

impl<'a> Rows<'a> {
    /// The parts `s` is written as: itself, or each series it stands for
    /// (`Series::one_row`).
    pub(super) fn parts(s: &'a Series) -> impl Iterator<Item = Rows<'a>> {
        let (one, n) = match &s.one_row {
            Some(o) => (Some(&**o), o.len()),
            None => (None, 1),
        };
        (0..n).map(move |i| match one {
            Some(o) => Rows::One(o, i),
            None => match &s.packed {
                Some(p) => Rows::Packed(p, 0..p.len()),
                None => Rows::Cells(&s.values),
            },
        })
    }

    /// Rows held.
    pub(super) fn len(&self) -> usize {
        match self {
            Rows::Cells(c) => c.len(),
            Rows::Packed(_, r) => r.len(),
            Rows::One(..) => 1,
        }
    }

    /// Its rows `from..to`.
    pub(super) fn slice(&self, from: usize, to: usize) -> Rows<'a> {
        match self {
            Rows::Cells(c) => Rows::Cells(&c[from..to]),
            Rows::Packed(p, r) => Rows::Packed(p, r.start + from..r.start + to),
            Rows::One(..) => self.clone(),
        }
    }
}

/// The output: a compact JSON buffer, indented on its way out for
/// `pretty=true`.
pub(super) struct Sink<W: Write> {
    pub(super) w: W,
    pub(super) buf: Vec<u8>,
    /// The whole answer stays in `buf`, never handed on (`render_at_once`).
    held: bool,
    indent: Option<Indenter>,
    scratch: Vec<u8>,
    /// The last series' column names and their JSON array: the series of one
    /// statement share them (TSBS `lastpoint`: 20 names written again for each
    /// of 1,000 series); shared names are known equal without comparing them.
    columns: (Columns, Vec<u8>),
    /// Where the string cells last written in each column are (one list
    /// for the whole answer: TSBS `lastpoint` writes 200 one-row series).
    shared: SharedCells,
    /// The text the one-row series last written share (`one_row.rs`).
    one_row: Option<OneRowText>,
}

impl<W: Write> Sink<W> {
    pub(super) fn new(w: W, pretty: bool) -> Self {
        Sink {
            w,
            // Room for the row that crosses the mark: handed on then, never
            // grown (copied) for it.
            buf: Vec::with_capacity(BUFFER_BYTES + ROW_ROOM),
            held: false,
            indent: pretty.then(Indenter::default),
            scratch: Vec::new(),
            columns: (Columns::default(), Vec::new()),
            shared: SharedCells::default(),
            one_row: None,
        }
    }

    pub(super) fn put(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Keeps the whole answer in `buf` (compact only: `pretty` indents it
    /// on its way out).
    pub(super) fn hold(&mut self) {
        self.held = self.indent.is_none();
    }

    /// Whether `buf` is to be handed on (past [`BUFFER_BYTES`]).
    fn full(&self) -> bool {
        !self.held && self.buf.len() >= BUFFER_BYTES
    }

    pub(super) fn drain(&mut self) -> io::Result<()> {
        if self.held {
            return Ok(());
        }
        match &mut self.indent {
            Some(indenter) => {
                self.scratch.clear();
                indenter.feed(&self.buf, &mut self.scratch);
                self.w.write_all(&self.scratch)?;
            }
            None => self.w.write_all(&self.buf)?,
        }
        self.buf.clear();
        Ok(())
    }

    /// Ends one JSON document: Go's encoder writes a newline after it.
    pub(super) fn end_document(&mut self) -> io::Result<()> {
        self.put(b"\n");
        self.drain()?;
        if let Some(indenter) = &mut self.indent {
            *indenter = Indenter::default();
        }
        Ok(())
    }

    /// One `results[]` element: `statement_id`, `series`, `messages`,
    /// `partial`, `error`, in `query.Result`'s field order.
    pub(super) fn result(
        &mut self,
        id: usize,
        parts: &[Part<'_>],
        messages: &[(String, String)],
        partial: bool,
        outcome: Outcome<'_>,
        times: &Times<'_>,
    ) -> io::Result<()> {
        self.put(format!("{{\"statement_id\":{id}").as_bytes());
        if !parts.is_empty() {
            self.put(b",\"series\":[");
            for (i, part) in parts.iter().enumerate() {
                if i > 0 {
                    self.put(b",");
                }
                self.series(part, times)?;
            }
            self.put(b"]");
        }
        if !messages.is_empty() {
            self.put(b",\"messages\":[");
            for (i, (level, text)) in messages.iter().enumerate() {
                if i > 0 {
                    self.put(b",");
                }
                self.put(b"{\"level\":");
                json_string(&mut self.buf, level);
                self.put(b",\"text\":");
                json_string(&mut self.buf, text);
                self.put(b"}");
            }
            self.put(b"]");
        }
        if partial {
            self.put(b",\"partial\":true");
        }
        if let Outcome::Error(message) = outcome {
            self.put(b",\"error\":");
            json_string(&mut self.buf, message);
        }
        self.put(b"}");
        Ok(())
    }

    /// A `tags` object, its members sorted as Go writes a map's. They come
    /// sorted nearly always (one key: TSBS `lastpoint`'s 1,000 series): then
    /// no list of them is built to sort.
    fn tags<'t>(&mut self, tags: impl Iterator<Item = (&'t str, &'t str)> + Clone) {
        self.put(b"\"tags\":{");
        if tags.clone().is_sorted() {
            self.tag_pairs(tags);
        } else {
            let mut sorted: Vec<(&str, &str)> = tags.collect();
            sorted.sort();
            self.tag_pairs(sorted.into_iter());
        }
        self.put(b"}");
    }

    fn tag_pairs<'t>(&mut self, tags: impl Iterator<Item = (&'t str, &'t str)>) {
        for (i, (k, v)) in tags.enumerate() {
            if i > 0 {
                self.put(b",");
            }
            json_string(&mut self.buf, k);
            self.put(b":");
            json_string(&mut self.buf, v);
        }
    }

    /// One `models.Row`: `name`, `tags`, `columns`, `values`, `partial`, each
    /// left out when empty.
    pub(super) fn series(&mut self, part: &Part<'_>, times: &Times<'_>) -> io::Result<()> {
        let s = part.series;
        if let Rows::One(o, i) = part.rows {
            if !self.one_row.as_ref().is_some_and(|t| t.is_of(o)) {
                self.one_row = OneRowText::new(s, o);
            }
            if let Some(text) = &self.one_row {
                text.write_head(&mut self.buf, o, i);
                return self.one_row_cells(o, i, part.partial, times);
            }
        }
        let mut fields = 0;
        let mut sep = |buf: &mut Vec<u8>| {
            if fields > 0 {
                buf.push(b',');
            }
            fields += 1;
        };
        self.put(b"{");
        if !s.name.is_empty() {
            sep(&mut self.buf);
            self.put(b"\"name\":");
            json_string(&mut self.buf, &s.name);
        }
        if let Rows::One(o, i) = part.rows {
            if !o.tag_keys.is_empty() {
                sep(&mut self.buf);
                self.tags(o.tags(i));
            }
        } else if !s.tags.is_empty() {
            sep(&mut self.buf);
            self.tags(s.tags.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        }
        if !s.columns.is_empty() {
            sep(&mut self.buf);
            self.put(b"\"columns\":");
            let (names, text) = &mut self.columns;
            if !Arc::ptr_eq(names, &s.columns) && *names != s.columns {
                *names = s.columns.clone();
                text.clear();
                json_strings(text, &s.columns);
            }
            self.buf.extend_from_slice(text);
        }
        if let Rows::Packed(p, range) = &part.rows {
            if !range.is_empty() {
                sep(&mut self.buf);
                self.put(b"\"values\":[");
                self.packed(p, range.clone(), times)?;
                self.put(b"]");
            }
        }
        if let Rows::One(o, i) = part.rows {
            sep(&mut self.buf);
            self.put(b"\"values\":[[");
            return self.one_row_cells(o, i, part.partial, times);
        }
        let rows = match &part.rows {
            Rows::Cells(rows) => rows,
            Rows::Packed(..) | Rows::One(..) => &[][..],
        };
        if !rows.is_empty() {
            sep(&mut self.buf);
            self.put(b"\"values\":[");
            // The strings of another series are not this one's; a series of
            // one row (TSBS `lastpoint`: 200 of them) repeats none.
            self.shared.forget();
            let repeats = rows.len() > 1;
            for (i, row) in rows.iter().enumerate() {
                if i > 0 {
                    self.put(b",");
                }
                self.put(b"[");
                let mut j = 0;
                while j < row.len() {
                    if j > 0 {
                        self.put(b",");
                    }
                    match &row[j] {
                        // A run of the row before's strings, copied at once.
                        Value::String(_) if repeats => {
                            j += self.shared.write_run(&mut self.buf, j, &row[j..]);
                        }
                        v => {
                            json_value(&mut self.buf, v, times);
                            j += 1;
                        }
                    }
                }
                self.put(b"]");
                if self.full() {
                    // The cells' text leaves the buffer: written anew.
                    self.shared.forget();
                    self.drain()?;
                }
            }
            self.put(b"]");
        }
        if part.partial {
            sep(&mut self.buf);
            self.put(b"\"partial\":true");
        }
        self.put(b"}");
        Ok(())
    }

    /// The rest of one-row series `i` of `o` from its first cell on.
    fn one_row_cells(
        &mut self,
        o: &OneRowSeries,
        i: usize,
        partial: bool,
        times: &Times<'_>,
    ) -> io::Result<()> {
        for (j, v) in o.row(i).enumerate() {
            if j > 0 {
                self.put(b",");
            }
            json_cell(&mut self.buf, v, times);
        }
        self.put(b"]]");
        if partial {
            self.put(b",\"partial\":true");
        }
        self.put(b"}");
        if self.full() {
            self.shared.forget();
            self.drain()?;
        }
        Ok(())
    }

    /// Packed rows `range` of `p`, comma-separated: each row's time, then
    /// its source's fixed cells, written once per source and copied (TSBS
    /// `high-cpu-1`: ten tag cells a row), and its field cells from their
    /// typed columns. The same bytes as its plain rows (`Packed::rows`).
    fn packed(&mut self, p: &Packed, range: Range<usize>, times: &Times<'_>) -> io::Result<()> {
        let layout = PackedText::new(p, times);
        let first = range.start;
        for i in range {
            if i > first {
                self.put(b",");
            }
            layout.row(&mut self.buf, p, i, times);
            if self.full() {
                self.shared.forget();
                self.drain()?;
            }
        }
        Ok(())
    }
}
