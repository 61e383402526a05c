//! String cells that repeat down a column, written once per series: a raw
//! answer's tag cells are one shared string per series (`Value::String`'s
//! `Arc<str>`, `storage`'s `hot/raw.rs`), the same in every row (TSBS
//! `high-cpu-1`: ten tags in each of ~670 rows, a third of the body). A
//! cell holding the very string its column's last cell held copies that
//! cell's JSON from where it was written in the buffer instead of escaping
//! the string again.

use std::ops::Range;
use std::sync::Arc;

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

    /// The buffer was handed on, or another series begins: nothing written
    /// before is to be copied.
    pub(super) fn forget(&mut self) {
        self.last.fill(None);
    }
}
