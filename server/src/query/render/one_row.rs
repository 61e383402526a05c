//! The text one-row series share (`Series::one_row`, a last-point answer):
//! every series of the carrier has its name, tag keys and columns, so what
//! lies between its tag values and its cells is written once and copied:
//! `{"name":"cpu","tags":{"hostname":` before the first tag value and
//! `},"columns":[…],"values":[[` before the cells. TSBS `lastpoint` at 1,000
//! hosts wrote the name and the key as strings, the separators piece by
//! piece and checked the tags' order again for each of its 1,000 series.

use storage::influxql::series::{OneRowSeries, Series};

use super::json::{json_string, json_strings};

/// A carrier's shared text (see the module).
pub(super) struct OneRowText {
    /// The carrier it was made for (its address: the answer is borrowed
    /// while it is written, so an address seen again is the same carrier).
    of: usize,
    /// Up to the first tag value, or to the cells without tags.
    head: Vec<u8>,
    /// Before each later tag value: `,"key":`.
    keys: Vec<Vec<u8>>,
    /// After the last tag value, up to the cells.
    mid: Vec<u8>,
}

impl OneRowText {
    /// The shared text of `s`'s carrier `o`, where the plain writer would
    /// write it the same for every series: tag keys in order (each series'
    /// `tags` sorted as they come), a name and columns.
    pub(super) fn new(s: &Series, o: &OneRowSeries) -> Option<OneRowText> {
        let keys = &o.tag_keys;
        if s.name.is_empty() || s.columns.is_empty() || !keys.is_sorted_by(|a, b| a < b) {
            return None;
        }
        let mut head = b"{\"name\":".to_vec();
        json_string(&mut head, &s.name);
        // `"key":` of each key, the first at the end of the head, each later
        // one after a comma.
        let mut later = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            let mut text = match i {
                0 => b",\"tags\":{".to_vec(),
                _ => b",".to_vec(),
            };
            json_string(&mut text, k);
            text.push(b':');
            match i {
                0 => head.extend_from_slice(&text),
                _ => later.push(text),
            }
        }
        let mut mid = Vec::new();
        if !keys.is_empty() {
            mid.push(b'}');
        }
        mid.extend_from_slice(b",\"columns\":");
        json_strings(&mut mid, &s.columns);
        mid.extend_from_slice(b",\"values\":[[");
        Some(OneRowText {
            of: std::ptr::from_ref(o) as usize,
            head,
            keys: later,
            mid,
        })
    }

    /// Whether this is the text of carrier `o`.
    pub(super) fn is_of(&self, o: &OneRowSeries) -> bool {
        self.of == std::ptr::from_ref(o) as usize
    }

    /// Series `i` of `o` up to its cells: its name, tags and columns.
    pub(super) fn write_head(&self, buf: &mut Vec<u8>, o: &OneRowSeries, i: usize) {
        buf.extend_from_slice(&self.head);
        for (j, (_, v)) in o.tags(i).enumerate() {
            if j > 0 {
                buf.extend_from_slice(&self.keys[j - 1]);
            }
            json_string(buf, v);
        }
        buf.extend_from_slice(&self.mid);
    }
}
