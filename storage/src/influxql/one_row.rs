//! A last-point answer's series side by side (`last_point.rs`, issue #44):
//! one series a group, each of one row, all of one name, tag keys and
//! columns. As `Series` each cost six allocations and frees (its name, its
//! tags and their two strings, its row and the vector around it) and a
//! count update per tag cell twice: TSBS `lastpoint` at 1,000 hosts spent
//! a quarter of the server's samples allocating and freeing, and another
//! tenth dropping the rows' cells. Here the tag values and the rows lie in
//! one vector each.
//!
//! Only the JSON renderer reads this form (`server/src/query/render/`), as
//! it alone reads [`super::packed::Packed`]: a statement run for anyone
//! else, or one with `SLIMIT`/`SOFFSET` (which count series), gets the same
//! series plain ([`OneRowSeries::series`] gives them, cell for cell).

use std::sync::Arc;

use super::series::{Columns, Series, Value};

/// One-row series of one name and columns (see the module).
#[derive(Debug, Clone, PartialEq)]
pub struct OneRowSeries {
    /// The group tags' keys, in the order each series' `tags` lists them.
    pub tag_keys: Vec<String>,
    /// Per series its group tags' values (`""`: none), `tag_keys.len()`
    /// each, series after series.
    pub tag_values: Vec<Arc<str>>,
    /// Per series its row (its time first), `width` cells each.
    pub cells: Vec<Value>,
    /// Cells a row: the columns' count.
    pub width: usize,
}

impl OneRowSeries {
    /// Series held.
    pub fn len(&self) -> usize {
        self.cells.len().checked_div(self.width).unwrap_or(0)
    }

    /// Whether it holds no series.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Series `i`'s tags, as its `Series::tags` would list them.
    pub fn tags(&self, i: usize) -> impl Iterator<Item = (&str, &str)> + Clone {
        let k = self.tag_keys.len();
        self.tag_keys
            .iter()
            .map(String::as_str)
            .zip(self.tag_values[i * k..(i + 1) * k].iter().map(|v| &**v))
    }

    /// Series `i`'s row.
    pub fn row(&self, i: usize) -> &[Value] {
        &self.cells[i * self.width..(i + 1) * self.width]
    }

    /// The same series plain, each of `name` and `columns`.
    pub fn series(&self, name: &str, columns: &Columns) -> Vec<Series> {
        (0..self.len())
            .map(|i| Series {
                name: name.to_string(),
                tags: self
                    .tags(i)
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                columns: columns.clone(),
                values: vec![self.row(i).to_vec()],
                packed: None,
                one_row: None,
            })
            .collect()
    }
}

/// `series` with every row plain: packed rows unpacked and one-row series
/// laid out as a `Series` each (what the JSON renderer writes of them).
pub fn plain(series: Vec<Series>) -> Vec<Series> {
    let mut out = Vec::with_capacity(series.len());
    for mut s in series {
        match s.one_row.take() {
            Some(o) => out.extend(o.series(&s.name, &s.columns)),
            None => {
                s.unpack();
                out.push(s);
            }
        }
    }
    out
}
