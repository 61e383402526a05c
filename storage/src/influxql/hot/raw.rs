//! Raw points from the hot store: the rows `sql.rs`'s `raw` statement returns
//! (ordered by group, then time, ascending or `DESC`, then the series' tag
//! values; `LIMIT`/`OFFSET` per group), a point only where it has one of the
//! shown fields. Columns are fields and tags as written (`*` as the plan
//! expanded it: InfluxDB's order); a column that is anything else (arithmetic,
//! a cast, a transformation) leaves the statement to the engine.

use std::sync::Arc;

use ingest::MeasurementSchema;

use super::scratch::Scratch;
use super::{Chosen, Test};
use crate::hot::table::{Column, Plain, Series, Values};
use crate::influxql::inline;
use crate::influxql::plan::Plan;
use crate::influxql::rows::Row;
use crate::influxql::series::{FieldCells, FieldColumn, Packed, Slot, Source, Value};
use crate::influxql::shown::{Col, Names};

/// A raw statement's columns, and the fields of which one shows a point.
pub(super) struct Shown {
    cols: Vec<Col>,
    present: Vec<String>,
}

impl Shown {
    /// The plan's columns when each is a field, a tag or null as `expr.rs`'s
    /// `value_ref` renders them.
    pub(super) fn of(plan: &Plan, schema: &MeasurementSchema) -> Option<Shown> {
        let names = Names::of(schema);
        let cols = names.columns(plan)?;
        let present = plan
            .nonnull
            .iter()
            .map(|sql| names.field(sql))
            .collect::<Option<Vec<_>>>()?;
        Some(Shown { cols, present })
    }
}

impl Shown {
    /// The fields it shows or tests for presence, by name (some twice).
    pub(super) fn fields(&self) -> impl Iterator<Item = &String> {
        self.present
            .iter()
            .chain(self.cols.iter().filter_map(|c| match c {
                Col::Field(f) => Some(f),
                _ => None,
            }))
    }
}

/// The rows of `chosen`'s points, as the engine's raw statement returns them;
/// `None` where an inline read (`inline::MAX_VALUES`) would build more cells
/// than it may (refused there: the count that let it run inline was of the
/// fields it decodes, and a row shows tags too).
pub(super) fn rows(
    plan: &Plan,
    shown: &Shown,
    fields: &[String],
    chosen: &Chosen<'_>,
    packed: bool,
) -> Option<RawRows> {
    let column = |s: &'_ Series, name: &str| -> Option<usize> {
        let i = fields.iter().position(|f| f == name)?;
        s.has_field(i).then_some(i)
    };
    // Series ranked by their tag values (then id): the engine's tie-break
    // among points of one time.
    let mut ranked: Vec<&(u64, &Series, Test<'_>)> = chosen.series.iter().collect();
    ranked.sort_by(|a, b| {
        let key = |s: &Series| -> Vec<String> {
            plan.order_tags
                .iter()
                .map(|t| s.tag(t).to_string())
                .collect()
        };
        key(a.1).cmp(&key(b.1)).then(a.0.cmp(&b.0))
    });
    // Each series' points in the range, decoded where compressed (the
    // fields shown, tested for presence, or in conditions).
    let named = shown.fields();
    let reads = chosen.reads(
        named
            .filter_map(|name| fields.iter().position(|f| f == name))
            .collect(),
    );
    let mut scratch: Vec<Scratch> = ranked.iter().map(|_| Scratch::take()).collect();
    let held: Vec<&Plain> = ranked
        .iter()
        .zip(scratch.iter_mut())
        .map(|(r, scratch)| chosen.points(r.1, &r.2, &reads, scratch))
        .collect();
    // (group, time, rank, series' position in `ranked`, point).
    let mut points: Vec<Point> = Vec::new();
    // Whether each point in the range passes the conditions.
    let mut passing = Vec::new();
    for (rank, &&(_, s, ref test)) in ranked.iter().enumerate() {
        let p = held[rank];
        let present: Vec<&Column> = shown
            .present
            .iter()
            .filter_map(|f| column(s, f).and_then(|i| p.columns[i].as_ref()))
            .collect();
        if present.is_empty() {
            continue;
        }
        let group: Vec<String> = plan
            .group_tags
            .iter()
            .map(|t| s.tag(t).to_string())
            .collect();
        let span = p.span(chosen.min, chosen.max);
        Chosen::marks(test, p, span.clone(), &mut passing);
        for (i, &ok) in span.zip(&passing) {
            if ok && present.iter().any(|c| c.valid[i]) {
                points.push((group.clone(), p.times[i], rank, i));
            }
        }
    }
    let desc = plan.order_desc;
    points.sort_unstable_by(|a, b| {
        let time = if desc { b.1.cmp(&a.1) } else { a.1.cmp(&b.1) };
        a.0.cmp(&b.0).then(time).then(a.2.cmp(&b.2))
    });
    let offset = usize::try_from(plan.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let limit = plan
        .limit
        .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    if inline::active()
        && points.len().saturating_mul(shown.cols.len()) > inline::MAX_VALUES
        && inline::refuse()
    {
        return None;
    }
    let series: Vec<&Series> = ranked.iter().map(|r| r.1).collect();
    let columns = |rank: usize, f: &str| -> Option<&Column> {
        column(series[rank], f).and_then(|c| held[rank].columns[c].as_ref())
    };
    if packed {
        if let Some(groups) = pack(shown, &series, &columns, &points, (offset, limit)) {
            return Some(RawRows::Packed(groups));
        }
    }
    // Each series' cells as far as they are the series' (its tags), and
    // where its fields are, found once: a row then looks up no name (the
    // tags and names compared per row were a fifth of TSBS `high-cpu-1`).
    let cells: Vec<Vec<Cell<'_>>> = ranked
        .iter()
        .zip(&held)
        .map(|(&&(_, s, _), p)| {
            shown
                .cols
                .iter()
                .map(|c| match c {
                    Col::Null => Cell::Fixed(Value::Null),
                    Col::Tag(t) => Cell::Fixed(match s.tag(t) {
                        "" => Value::Null,
                        v => Value::String(v.into()),
                    }),
                    Col::Field(f) => match column(s, f).and_then(|c| p.columns[c].as_ref()) {
                        Some(c) => Cell::Field(c),
                        None => Cell::Fixed(Value::Null),
                    },
                })
                .collect()
        })
        .collect();
    let mut rows = Vec::new();
    let mut at = 0;
    while at < points.len() {
        let end = at + points[at..].partition_point(|p| p.0 == points[at].0);
        for &(ref group, time, rank, i) in points[at..end].iter().skip(offset).take(limit) {
            // A slot for the time `exec.rs` puts first: no reallocation per row.
            let mut values = Vec::with_capacity(shown.cols.len() + 1);
            values.extend(cells[rank].iter().map(|c| match c {
                Cell::Fixed(v) => v.clone(),
                Cell::Field(c) => value(c, i),
            }));
            rows.push(Row {
                time: Some(time),
                group: group.clone(),
                values,
            });
        }
        at = end;
    }
    Some(RawRows::Rows(rows))
}

/// A raw statement's rows: plain, or packed per group (`influxql/packed.rs`).
pub(crate) enum RawRows {
    Rows(Vec<Row>),
    /// Each group's tag values and rows, in answer order.
    Packed(Vec<(Vec<String>, Packed)>),
}

impl RawRows {
    pub(crate) fn len(&self) -> usize {
        match self {
            RawRows::Rows(r) => r.len(),
            RawRows::Packed(g) => g.iter().map(|(_, p)| p.len()).sum(),
        }
    }
}

/// A point of the answer: (group, time, rank of its series, its index in
/// the series' points).
type Point = (Vec<String>, i64, usize, usize);

/// `points` (sorted, each group's paged by `(offset, limit)`) packed per
/// group: a source per series (its tags), a typed column per field shown.
/// `None` where a field's columns differ in type between series (never: a
/// field's type is fixed at the door; then the plain rows say what they say).
fn pack<'p>(
    shown: &Shown,
    series: &[&Series],
    columns: &dyn Fn(usize, &str) -> Option<&'p Column>,
    points: &[Point],
    (offset, limit): (usize, usize),
) -> Option<Vec<(Vec<String>, Packed)>> {
    // Each shown column: fixed per series, or a field column of the type
    // its series hold.
    let mut slots = Vec::with_capacity(shown.cols.len());
    let mut fixed: Vec<&Col> = Vec::new();
    let mut field_names: Vec<(&str, Values)> = Vec::new();
    for c in &shown.cols {
        let kind = match c {
            Col::Field(f) => (0..series.len())
                .find_map(|r| columns(r, f))
                .map(|c| (f, c)),
            _ => None,
        };
        match kind {
            Some((f, c)) => {
                slots.push(Slot::Field(field_names.len()));
                field_names.push((f.as_str(), empty_like(&c.values)));
            }
            None => {
                slots.push(Slot::Fixed(fixed.len()));
                fixed.push(c);
            }
        }
    }
    let mut groups = Vec::new();
    // Per series, its source's index in the group being packed.
    let mut local: Vec<u32> = vec![u32::MAX; series.len()];
    let mut at = 0;
    while at < points.len() {
        let end = at + points[at..].partition_point(|p| p.0 == points[at].0);
        let page: Vec<&Point> = points[at..end].iter().skip(offset).take(limit).collect();
        let mut p = Packed {
            slots: slots.clone(),
            sources: Vec::new(),
            times: Vec::with_capacity(page.len()),
            source_of: Vec::with_capacity(page.len()),
            fields: Vec::with_capacity(field_names.len()),
        };
        let mut seen = Vec::new();
        for &&(_, time, rank, _) in &page {
            if local[rank] == u32::MAX {
                local[rank] = p.sources.len() as u32;
                seen.push(rank);
                p.sources.push(Source {
                    fixed: fixed.iter().map(|c| fixed_cell(series[rank], c)).collect(),
                });
            }
            p.times.push(time);
            p.source_of.push(local[rank]);
        }
        for r in seen {
            local[r] = u32::MAX;
        }
        for (name, kind) in &field_names {
            p.fields.push(field_column(name, kind, columns, &page)?);
        }
        groups.push((points[at].0.clone(), p));
        at = end;
    }
    Some(groups)
}

/// A column that is the same in every row of series `s`.
fn fixed_cell(s: &Series, c: &Col) -> Value {
    match c {
        Col::Tag(t) => match s.tag(t) {
            "" => Value::Null,
            v => Value::String(v.into()),
        },
        Col::Null | Col::Field(_) => Value::Null,
    }
}

/// No values, of `v`'s type.
fn empty_like(v: &Values) -> Values {
    match v {
        Values::Float(_) => Values::Float(Vec::new()),
        Values::Integer(_) => Values::Integer(Vec::new()),
        Values::Unsigned(_) => Values::Unsigned(Vec::new()),
        Values::Boolean(_) => Values::Boolean(Vec::new()),
        Values::String(_) => Values::String(Vec::new()),
    }
}

/// Field `name`'s cells of the rows `page`, typed as `kind`; `None` where a
/// series holds it as another type.
fn field_column<'p>(
    name: &str,
    kind: &Values,
    columns: &dyn Fn(usize, &str) -> Option<&'p Column>,
    page: &[&Point],
) -> Option<FieldColumn> {
    let n = page.len();
    let mut valid = Vec::with_capacity(n);
    // Each row's series' column, looked up once per run of rows of one series.
    let mut last: Option<(usize, Option<&Column>)> = None;
    let mut column_of = |rank: usize| match last {
        Some((r, c)) if r == rank => c,
        _ => {
            let c = columns(rank, name);
            last = Some((rank, c));
            c
        }
    };
    macro_rules! typed {
        ($variant:ident, $default:expr) => {{
            let mut out = Vec::with_capacity(n);
            for &&(_, _, rank, i) in page {
                match column_of(rank) {
                    Some(Column {
                        values: Values::$variant(v),
                        valid: ok,
                    }) => {
                        out.push(v[i].clone());
                        valid.push(ok[i]);
                    }
                    Some(_) => return None,
                    None => {
                        out.push($default);
                        valid.push(false);
                    }
                }
            }
            FieldCells::$variant(out)
        }};
    }
    let cells = match kind {
        Values::Float(_) => typed!(Float, 0.0),
        Values::Integer(_) => typed!(Integer, 0),
        Values::Unsigned(_) => typed!(Unsigned, 0),
        Values::Boolean(_) => typed!(Boolean, false),
        Values::String(_) => typed!(String, Arc::from("")),
    };
    Some(FieldColumn { cells, valid })
}

/// One shown column of one series' rows.
enum Cell<'p> {
    /// The same in every row (a tag, or a field the series lacks).
    Fixed(Value),
    /// The series' column of a field.
    Field(&'p Column),
}

fn value(c: &Column, i: usize) -> Value {
    if !c.valid[i] {
        return Value::Null;
    }
    match &c.values {
        Values::Float(v) => Value::Float(v[i]),
        Values::Integer(v) => Value::Integer(v[i]),
        Values::Unsigned(v) => Value::Unsigned(v[i]),
        Values::Boolean(v) => Value::Boolean(v[i]),
        Values::String(v) => Value::String(v[i].clone()),
    }
}
