//! What an InfluxQL statement answers: series of rows, in InfluxDB 1.x's
//! shape (`name`, `tags`, `columns`, `values`), before any JSON. Times stay
//! nanoseconds since the epoch ([`Value::Time`]); the HTTP layer formats them
//! (RFC3339 by default, `epoch=` units otherwise).

use std::sync::Arc;

pub use super::last_rows::LastRow;
pub use super::one_row::{plain, OneRowSeries, Row};
pub use super::packed::{FieldCells, FieldColumn, Packed, Slot, Source};

/// One value of a result cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// No value (a missing field, an empty `fill(null)` interval).
    Null,
    /// A point's or an interval's time, ns since the epoch.
    Time(i64),
    /// A float.
    Float(f64),
    /// A signed integer.
    Integer(i64),
    /// An unsigned integer.
    Unsigned(u64),
    /// A string: shared, so the cell of a tag is one count more in every row of its series
    /// rather than a copy (a hot `high-cpu-1` answer of 668 rows has 6,680 tag cells; as
    /// `String`s their allocations were most of glibc's ~28 % of the read's samples,
    /// `test_results/history/ab_mimalloc.md`).
    String(Arc<str>),
    /// A boolean.
    Boolean(bool),
}

/// A [`Value`] borrowed: what a reader of cells held elsewhere gets (a
/// last-point answer's cells lie in the last points, `last_rows.rs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    /// [`Value::Null`].
    Null,
    /// [`Value::Time`].
    Time(i64),
    /// [`Value::Float`].
    Float(f64),
    /// [`Value::Integer`].
    Integer(i64),
    /// [`Value::Unsigned`].
    Unsigned(u64),
    /// [`Value::String`]: the shared string itself, so an owned copy is a
    /// count more.
    String(&'a Arc<str>),
    /// [`Value::Boolean`].
    Boolean(bool),
}

impl ValueRef<'_> {
    /// The value owned.
    pub fn to_value(self) -> Value {
        match self {
            ValueRef::Null => Value::Null,
            ValueRef::Time(t) => Value::Time(t),
            ValueRef::Float(f) => Value::Float(f),
            ValueRef::Integer(i) => Value::Integer(i),
            ValueRef::Unsigned(u) => Value::Unsigned(u),
            ValueRef::String(s) => Value::String(s.clone()),
            ValueRef::Boolean(b) => Value::Boolean(b),
        }
    }
}

impl Value {
    /// The value borrowed.
    #[inline]
    pub fn borrowed(&self) -> ValueRef<'_> {
        match self {
            Value::Null => ValueRef::Null,
            Value::Time(t) => ValueRef::Time(*t),
            Value::Float(f) => ValueRef::Float(*f),
            Value::Integer(i) => ValueRef::Integer(*i),
            Value::Unsigned(u) => ValueRef::Unsigned(*u),
            Value::String(s) => ValueRef::String(s),
            Value::Boolean(b) => ValueRef::Boolean(*b),
        }
    }

    /// A number as a float (`None` for anything but a float or an integer).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Float(f) => Some(*f),
            Value::Integer(i) => Some(*i as f64),
            Value::Unsigned(u) => Some(*u as f64),
            _ => None,
        }
    }
}

/// A series' column names (see [`Series::columns`]).
pub type Columns = Arc<Vec<String>>;

/// One series of an answer: a measurement (or `SHOW` result name) and a tag
/// set (`GROUP BY`), its columns and rows in answer order. Data answers have
/// `time` as their first column; `SHOW` answers usually have none.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// The measurement name (empty for `SHOW` answers InfluxDB leaves unnamed).
    pub name: String,
    /// The `GROUP BY` tags, sorted by key; empty when not grouped by tags
    /// (rendered without a `tags` object).
    pub tags: Vec<(String, String)>,
    /// Column names: shared by every series of one statement's answer
    /// (`exec.rs`'s `to_series`: TSBS `lastpoint` copied 20 names for each
    /// of its 200 series), copied only where one is changed
    /// (`Arc::make_mut`).
    pub columns: Columns,
    /// Rows, one value per column (empty where `packed` holds them).
    pub values: Vec<Vec<Value>>,
    /// A hot raw answer's rows, for the JSON renderer only (`packed.rs`):
    /// then `values` is empty.
    pub packed: Option<Box<Packed>>,
    /// Where set, this entry stands for that many one-row series of its
    /// `name` and `columns` (its own `tags` and `values` empty): a
    /// last-point answer, for the JSON renderer only (`one_row.rs`).
    pub one_row: Option<Box<OneRowSeries>>,
}

impl Series {
    /// A series without tags (`SHOW` answers, ungrouped data).
    pub fn untagged(name: &str, columns: &[&str], values: Vec<Vec<Value>>) -> Series {
        Series {
            name: name.to_string(),
            tags: Vec::new(),
            columns: Arc::new(columns.iter().map(|c| c.to_string()).collect()),
            values,
            packed: None,
            one_row: None,
        }
    }

    /// Rows held, plain or packed (one-row series: one each).
    pub fn len(&self) -> usize {
        if let Some(o) = &self.one_row {
            return o.len();
        }
        self.packed.as_ref().map_or(self.values.len(), |p| p.len())
    }

    /// Whether it holds no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its rows as plain cells where they are packed (`packed.rs`).
    pub fn unpack(&mut self) {
        if let Some(p) = self.packed.take() {
            self.values = p.rows();
        }
    }
}

/// The answer of one statement: its series and the messages InfluxDB attaches.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StatementResult {
    /// The series, in answer order.
    pub series: Vec<Series>,
    /// Informational messages (`messages[]` in the JSON: `{"level","text"}`).
    pub messages: Vec<(String, String)>,
}

impl StatementResult {
    /// An answer of `series` without messages.
    pub fn of(series: Vec<Series>) -> StatementResult {
        StatementResult {
            series,
            messages: Vec::new(),
        }
    }
}
