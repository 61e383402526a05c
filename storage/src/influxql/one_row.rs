//! A last-point answer's series side by side (`last_point.rs`, issue #44):
//! one series a group, each of one row, all of one name, tag keys and
//! columns. As `Series` each cost six allocations and frees (its name, its
//! tags and their two strings, its row and the vector around it) and a
//! count update per tag cell twice: TSBS `lastpoint` at 1,000 hosts spent
//! a quarter of the server's samples allocating and freeing, and another
//! tenth dropping the rows' cells. Here the series are read in place: from
//! the last points the answer borrowed ([`LastRows`]), or from one vector
//! of tag values and one of cells.
//!
//! Only the JSON renderer reads this form (`server/src/query/render/`), as
//! it alone reads [`super::packed::Packed`]: a statement run for anyone
//! else, or one with `SLIMIT`/`SOFFSET` (which count series), gets the same
//! series plain ([`OneRowSeries::series`] gives them, cell for cell).

use std::sync::Arc;

use super::last_rows::{LastRow, LastRows};
use super::series::{Columns, Series, Value, ValueRef};

/// One-row series of one name and columns (see the module).
#[derive(Debug, Clone)]
pub struct OneRowSeries {
    /// The group tags' keys, in the order each series' `tags` lists them.
    pub tag_keys: Vec<String>,
    rows: Rows,
}

/// Where the series' tag values and rows lie.
#[derive(Debug, Clone)]
enum Rows {
    /// Per series its group tags' values (`""`: none), `tag_keys.len()`
    /// each, series after series; per series its row (its time first),
    /// `width` cells each. Any cells a caller has as values: the render
    /// tests' carriers of every cell type and tricky text.
    Values {
        tag_values: Vec<Arc<str>>,
        cells: Vec<Value>,
        width: usize,
    },
    /// In the last points a read borrowed.
    Lasts(Arc<LastRows>),
}

impl OneRowSeries {
    /// Series from their tag values (`tag_keys.len()` a series, `""`:
    /// none) and rows (`width` cells a series, its time first).
    pub fn from_values(
        tag_keys: Vec<String>,
        tag_values: Vec<Arc<str>>,
        cells: Vec<Value>,
        width: usize,
    ) -> OneRowSeries {
        OneRowSeries {
            tag_keys,
            rows: Rows::Values {
                tag_values,
                cells,
                width,
            },
        }
    }

    /// The series of a last-point answer, grouped by `tag_keys`.
    pub(super) fn from_last_rows(tag_keys: Vec<String>, rows: LastRows) -> OneRowSeries {
        OneRowSeries {
            tag_keys,
            rows: Rows::Lasts(Arc::new(rows)),
        }
    }

    /// Series held.
    pub fn len(&self) -> usize {
        match &self.rows {
            Rows::Values { cells, width, .. } => cells.len().checked_div(*width).unwrap_or(0),
            Rows::Lasts(l) => l.len(),
        }
    }

    /// Whether it holds no series.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Series `i`'s tag `k`'s value (`""`: none).
    fn tag(&self, i: usize, k: usize) -> &str {
        match &self.rows {
            Rows::Values { tag_values, .. } => &tag_values[i * self.tag_keys.len() + k],
            Rows::Lasts(l) => l.tag(i, k),
        }
    }

    /// Series `i`'s tags, as its `Series::tags` would list them.
    pub fn tags(&self, i: usize) -> impl Iterator<Item = (&str, &str)> + Clone {
        self.tag_keys
            .iter()
            .enumerate()
            .map(move |(k, key)| (key.as_str(), self.tag(i, k)))
    }

    /// Series `i`'s row, its time first.
    pub fn row(&self, i: usize) -> Row<'_> {
        match &self.rows {
            Rows::Values { cells, width, .. } => {
                Row::Values(cells[i * width..(i + 1) * width].iter())
            }
            Rows::Lasts(l) => Row::Lasts(l.row(i)),
        }
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
                values: vec![self.row(i).map(ValueRef::to_value).collect()],
                packed: None,
                one_row: None,
            })
            .collect()
    }
}

/// The same series, cell for cell, wherever they lie.
impl PartialEq for OneRowSeries {
    fn eq(&self, other: &OneRowSeries) -> bool {
        self.tag_keys == other.tag_keys
            && self.len() == other.len()
            && (0..self.len())
                .all(|i| self.tags(i).eq(other.tags(i)) && self.row(i).eq(other.row(i)))
    }
}

/// One series' cells (see [`OneRowSeries::row`]).
#[derive(Debug, Clone)]
pub enum Row<'a> {
    /// Cells given as values.
    Values(std::slice::Iter<'a, Value>),
    /// Cells read from the last points.
    Lasts(LastRow<'a>),
}

impl<'a> Iterator for Row<'a> {
    type Item = ValueRef<'a>;

    #[inline]
    fn next(&mut self) -> Option<ValueRef<'a>> {
        match self {
            Row::Values(cells) => cells.next().map(Value::borrowed),
            Row::Lasts(row) => row.next(),
        }
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
