//! A packed raw answer's rows (`storage`'s `influxql/packed.rs`) as JSON:
//! the cells a source's rows share are written once per source, a run of
//! them side by side as one text with its commas, and copied into each row;
//! the fields are written from their typed columns. The bytes are those of
//! the same rows plain (`json_value` of each cell): `packed_tests.rs`.

use std::ops::Range;

use storage::influxql::series::{FieldCells, FieldColumn, Packed, Slot, Value};

use super::json::{go_float, json_string, json_value, small_int, Times};

/// One part of a row after its time.
enum Piece {
    /// A run of the source's fixed cells: its text's index among each
    /// source's runs.
    Fixed(usize),
    /// A field column.
    Field(usize),
}

/// The layout of a packed answer's rows and each source's fixed cells'
/// text.
pub(super) struct PackedText {
    pieces: Vec<Piece>,
    /// Runs per source.
    runs: usize,
    /// Every source's runs' text, source after source.
    text: Vec<u8>,
    /// Where each (source, run) lies in `text`: `spans[source * runs + run]`.
    spans: Vec<Range<usize>>,
}

impl PackedText {
    pub(super) fn new(p: &Packed, times: &Times<'_>) -> PackedText {
        // The runs of fixed slots side by side, as their fixed indexes.
        let mut pieces = Vec::new();
        let mut runs: Vec<Vec<usize>> = Vec::new();
        for slot in &p.slots {
            match *slot {
                Slot::Fixed(k) => match pieces.last() {
                    Some(Piece::Fixed(r)) => runs[*r].push(k),
                    _ => {
                        pieces.push(Piece::Fixed(runs.len()));
                        runs.push(vec![k]);
                    }
                },
                Slot::Field(j) => pieces.push(Piece::Field(j)),
            }
        }
        let mut text = Vec::new();
        let mut spans = Vec::with_capacity(p.sources.len() * runs.len());
        for source in &p.sources {
            for run in &runs {
                let start = text.len();
                for (n, &k) in run.iter().enumerate() {
                    if n > 0 {
                        text.push(b',');
                    }
                    json_value(&mut text, &source.fixed[k], times);
                }
                spans.push(start..text.len());
            }
        }
        PackedText {
            pieces,
            runs: runs.len(),
            text,
            spans,
        }
    }

    /// Row `i` of `p`: `[time,cells…]`.
    pub(super) fn row(&self, buf: &mut Vec<u8>, p: &Packed, i: usize, times: &Times<'_>) {
        buf.push(b'[');
        json_value(buf, &Value::Time(p.times[i]), times);
        let source = p.source_of[i] as usize;
        for piece in &self.pieces {
            buf.push(b',');
            match *piece {
                Piece::Fixed(r) => {
                    let span = self.spans[source * self.runs + r].clone();
                    buf.extend_from_slice(&self.text[span]);
                }
                Piece::Field(j) => field_cell(buf, &p.fields[j], i),
            }
        }
        buf.push(b']');
    }
}

/// Row `i`'s cell of a field column, as `json_value` writes its value.
fn field_cell(buf: &mut Vec<u8>, c: &FieldColumn, i: usize) {
    if !c.valid[i] {
        buf.extend_from_slice(b"null");
        return;
    }
    match &c.cells {
        FieldCells::Float(v) => go_float(buf, v[i]),
        FieldCells::Integer(v) => match u8::try_from(v[i]) {
            Ok(small) => small_int(buf, small),
            Err(_) => buf.extend_from_slice(itoa::Buffer::new().format(v[i]).as_bytes()),
        },
        FieldCells::Unsigned(v) => match u8::try_from(v[i]) {
            Ok(small) => small_int(buf, small),
            Err(_) => buf.extend_from_slice(itoa::Buffer::new().format(v[i]).as_bytes()),
        },
        FieldCells::Boolean(v) => buf.extend_from_slice(if v[i] { b"true" } else { b"false" }),
        FieldCells::String(v) => json_string(buf, &v[i]),
    }
}
