//! String cells that repeat down a column, written once per series: a raw
//! answer's tag cells in plain rows are one shared string per series
//! (`Value::String`'s `Arc<str>`, `storage`'s `hot/raw.rs` for a caller that
//! takes no packed rows; the last points), the same in every row (TSBS
//! `high-cpu-1`: ten tags in each of ~670 rows, a third of the body). A
//! cell holding the very string its column's last cell held copies that
//! cell's JSON from where it was written in the buffer instead of escaping
//! the string again; a run of such cells side by side (TSBS `high-cpu-1`'s
//! ten tag columns, which `SELECT *` orders together) is copied at once,
//! commas included, from where the row before wrote it.

use std::ops::Range;
use std::sync::Arc;

use storage::influxql::series::Value;

use super::json::json_string;

/// Per column: the string its last string cell held (by address and
/// length: known equal without comparing bytes) and where in the buffer
/// that cell's JSON lies.
#[derive(Default)]
pub(super) struct SharedCells {
    last: Vec<Option<(usize, usize, Range<usize>)>>,
}

impl SharedCells {
    /// Writes column `column`'s string cell `s` to `buf`. Valid while every
    /// cell written since the last [`SharedCells::forget`] is still alive and
    /// `buf` was only appended to: the renderer borrows the whole answer while
    /// it writes a series, so an address seen again is the same string.
    pub(super) fn write(&mut self, buf: &mut Vec<u8>, column: usize, s: &Arc<str>) {
        let key = (Arc::as_ptr(s).cast::<u8>() as usize, s.len());
        if self.last.len() <= column {
            self.last.resize(column + 1, None);
        }
        let start = buf.len();
        match &self.last[column] {
            Some((ptr, len, at)) if (*ptr, *len) == key => {
                buf.extend_from_within(at.clone());
            }
            _ => json_string(buf, s),
        }
        self.last[column] = Some((key.0, key.1, start..buf.len()));
    }

    /// Writes the cells at the start of `cells` (columns `column` on) that
    /// hold the very strings their columns' last string cells held and were
    /// written side by side there (one comma apart), as one copy of that
    /// text, and says how many it wrote: per cell copied, the copy of each
    /// cell was a tenth of TSBS `high-cpu-1`'s rendering. Where the first
    /// cell is not such, it is written as [`SharedCells::write`] writes it
    /// (1). `cells[0]` must be a string; the same conditions as `write`.
    pub(super) fn write_run(&mut self, buf: &mut Vec<u8>, column: usize, cells: &[Value]) -> usize {
        let mut span: Option<Range<usize>> = None;
        let mut n = 0;
        for (k, v) in cells.iter().enumerate() {
            let Value::String(s) = v else { break };
            let Some(Some((ptr, len, at))) = self.last.get(column + k) else {
                break;
            };
            if (*ptr, *len) != (Arc::as_ptr(s).cast::<u8>() as usize, s.len()) {
                break;
            }
            span = match span {
                None => Some(at.clone()),
                // The next cell of the same row: only a comma between.
                Some(r) if at.start == r.end + 1 && buf.get(r.end) == Some(&b',') => {
                    Some(r.start..at.end)
                }
                Some(_) => break,
            };
            n += 1;
        }
        let Some(span) = span else {
            if let Some(Value::String(s)) = cells.first() {
                self.write(buf, column, s);
            }
            return 1;
        };
        let shift = buf.len() - span.start;
        buf.extend_from_within(span);
        for (_, _, at) in self.last[column..column + n].iter_mut().flatten() {
            *at = at.start + shift..at.end + shift;
        }
        n
    }

    /// The buffer was handed on, or another series begins: nothing written
    /// before is to be copied.
    pub(super) fn forget(&mut self) {
        self.last.fill(None);
    }
}
