//! A last-point answer read in place (issue #44): each group's cells stay
//! where the read found them, in the last points it took, until the answer
//! is written.
//!
//! Why: copied out as values, every string cell (TSBS `lastpoint`: ten a
//! series) was a count raised on a shared string when the answer was built
//! and lowered when it was dropped, 20,000 atomic updates and 480 KB of
//! values written and read again at 1,000 hosts: a fifth of the server's
//! samples. Here the answer holds the table's last points themselves (one
//! count: an insert ending meanwhile merges into a copy, `flush`'s
//! `LastPoints`) and the unflushed rows' points, and borrows each cell.

use std::sync::Arc;

use flush::{Cell, TableLasts};
use self_cell::self_cell;

use super::last_point::Picked;
use super::series::ValueRef;

/// What a last-point answer reads: the table's last points as the read
/// took them, and the points of the rows not flushed yet (merged over them).
#[derive(Debug)]
pub(crate) struct Tables {
    pub(crate) base: Arc<TableLasts>,
    pub(crate) overlay: TableLasts,
}

self_cell!(
    /// Each group's last point, its cells borrowed from the [`Tables`] it
    /// holds.
    pub(crate) struct LastRows {
        owner: Tables,
        #[covariant]
        dependent: Picked,
    }
    impl {Debug}
);

impl LastRows {
    /// Series (groups) held.
    pub(crate) fn len(&self) -> usize {
        self.borrow_dependent().len()
    }

    /// Series `i`'s group tag `k` (`""`: none); series by descending group,
    /// as the answer lists them.
    pub(crate) fn tag(&self, i: usize, k: usize) -> &str {
        self.borrow_dependent().tag(i, k)
    }

    /// Series `i`'s row: its time, then its shown cells.
    pub(crate) fn row(&self, i: usize) -> LastRow<'_> {
        self.borrow_dependent().row(i)
    }
}

/// One group's row (see [`LastRows::row`]).
#[derive(Debug, Clone)]
pub struct LastRow<'a> {
    time: Option<i64>,
    /// The point's cells, read as `shown` says.
    cells: &'a [Option<&'a Cell>],
    /// Per shown column: its cell's index and whether it is a tag.
    shown: std::slice::Iter<'a, (usize, bool)>,
}

impl<'a> LastRow<'a> {
    pub(super) fn new(
        time: i64,
        cells: &'a [Option<&'a Cell>],
        shown: &'a [(usize, bool)],
    ) -> LastRow<'a> {
        LastRow {
            time: Some(time),
            cells,
            shown: shown.iter(),
        }
    }
}

impl<'a> Iterator for LastRow<'a> {
    type Item = ValueRef<'a>;

    #[inline]
    fn next(&mut self) -> Option<ValueRef<'a>> {
        if let Some(t) = self.time.take() {
            return Some(ValueRef::Time(t));
        }
        let &(i, tag) = self.shown.next()?;
        Some(shown_value(self.cells[i], tag))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::from(self.time.is_some()) + self.shown.len();
        (n, Some(n))
    }
}

/// A shown column's value from its cell: a tag without a value (`''`) and
/// a float InfluxDB cannot write (NaN, infinite) show as null.
#[inline]
fn shown_value(cell: Option<&Cell>, tag: bool) -> ValueRef<'_> {
    if tag {
        return match cell {
            Some(Cell::String(v)) if !v.is_empty() => ValueRef::String(v),
            _ => ValueRef::Null,
        };
    }
    match cell {
        None => ValueRef::Null,
        Some(Cell::Float(f)) if f.is_finite() => ValueRef::Float(*f),
        Some(Cell::Float(_)) => ValueRef::Null,
        Some(Cell::Integer(i)) => ValueRef::Integer(*i),
        Some(Cell::Unsigned(u)) => ValueRef::Unsigned(*u),
        Some(Cell::String(s)) => ValueRef::String(s),
        Some(Cell::Boolean(b)) => ValueRef::Boolean(*b),
    }
}
