//! The `WHERE` conditions (time taken out) the evaluator tests: on a series'
//! tags, `=`/`!=` against a string, `=~`/`!~` against a regex (`pattern.rs`),
//! a series without the tag having `""` as the engine's tag column reads; on a
//! point's fields, a comparison with a literal (`usage_user > 90.0`), false
//! where the point lacks the field (the engine's NULL: InfluxQL has no `NOT`,
//! so a NULL anywhere under `AND`/`OR` acts as false). Joined by `AND`/`OR`.

use std::cmp::Ordering;
use std::ops::Range;

use influxql::ast::{BinaryOp, DataType, Expr, Literal};
use ingest::{FieldType, MeasurementSchema};

use super::pattern::TagMatch;
use crate::hot::table::{Bounds, Plain, Series, TagIndex, Values};
use crate::hot::tag_index::{intersect, union};
use crate::influxql::expr::strip_parens;

/// A tag condition.
#[derive(Debug)]
pub(super) enum Cond {
    /// `tag = 'v'` (true) or `tag != 'v'` (false).
    Eq(String, String, bool),
    /// `tag =~ /re/` (true) or `tag !~ /re/` (false).
    Match(String, TagMatch, bool),
    /// A field compared with a literal.
    Field(FieldCmp),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
}

impl Cond {
    /// `e` as a tag condition of `schema`, `None` where it is anything else.
    pub(super) fn of(e: &Expr, schema: &MeasurementSchema) -> Option<Cond> {
        let Expr::Binary { op, lhs, rhs } = strip_parens(e) else {
            return None;
        };
        match op {
            BinaryOp::And => Some(Cond::And(
                Box::new(Cond::of(lhs, schema)?),
                Box::new(Cond::of(rhs, schema)?),
            )),
            BinaryOp::Or => Some(Cond::Or(
                Box::new(Cond::of(lhs, schema)?),
                Box::new(Cond::of(rhs, schema)?),
            )),
            op if is_comparison(*op) && (is_field(lhs, schema) || is_field(rhs, schema)) => {
                FieldCmp::of(*op, lhs, rhs, schema).map(Cond::Field)
            }
            BinaryOp::Eq | BinaryOp::NotEq => {
                let text = |e: &Expr| match strip_parens(e) {
                    Expr::Literal(Literal::String(s)) => Some(s.clone()),
                    _ => None,
                };
                let (t, v) = match (tag(lhs, schema), text(rhs)) {
                    (Some(t), Some(v)) => (t, v),
                    _ => (tag(rhs, schema)?, text(lhs)?),
                };
                Some(Cond::Eq(t, v, *op == BinaryOp::Eq))
            }
            // The engine takes the regex on the right only (an error otherwise).
            BinaryOp::EqRegex | BinaryOp::NotEqRegex => {
                let Expr::Literal(Literal::Regex(re)) = strip_parens(rhs) else {
                    return None;
                };
                Some(Cond::Match(
                    tag(lhs, schema)?,
                    TagMatch::new(&re.0)?,
                    *op == BinaryOp::EqRegex,
                ))
            }
            _ => None,
        }
    }

    /// Finds the fields' columns in a table with these `fields` (by index).
    pub(super) fn bind(&mut self, fields: &[String]) {
        match self {
            Cond::Field(f) => f.column = fields.iter().position(|n| *n == f.field),
            Cond::And(a, b) | Cond::Or(a, b) => {
                a.bind(fields);
                b.bind(fields);
            }
            Cond::Eq(..) | Cond::Match(..) => {}
        }
    }

    /// What the condition is for every point of `s`: `None` where it
    /// depends on the point's fields.
    pub(super) fn on_series(&self, s: &Series) -> Option<bool> {
        match self {
            Cond::Eq(t, v, eq) => Some((s.tag(t) == v) == *eq),
            Cond::Match(t, m, eq) => Some(m.is_match(s.tag(t)) == *eq),
            Cond::Field(f) => match f.column.filter(|&c| s.has_field(c)) {
                // The series never had the field: null, so false, everywhere.
                Some(_) if !f.never => None,
                _ => Some(false),
            },
            Cond::And(a, b) => match (a.on_series(s), b.on_series(s)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Cond::Or(a, b) => match (a.on_series(s), b.on_series(s)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
        }
    }

    /// The ids (sorted) of every series the condition may be true for, from
    /// the table's tag index, or `None` where it may hold for a series the
    /// index cannot name (`!=`, `!~`, a regex that is no set of values, a
    /// tag compared with `''`: a series without it, a field alone). A
    /// superset: each series named is still tested (`on_series`).
    pub(super) fn candidates(&self, index: &TagIndex) -> Option<Vec<u64>> {
        match self {
            Cond::Eq(t, v, true) if !v.is_empty() => Some(index.series_with(t, v).to_vec()),
            Cond::Match(t, TagMatch::Values(values), true) if !values.contains("") => Some(
                values
                    .iter()
                    .fold(Vec::new(), |ids, v| union(&ids, index.series_with(t, v))),
            ),
            Cond::And(a, b) => match (a.candidates(index), b.candidates(index)) {
                (Some(a), Some(b)) => Some(intersect(&a, &b)),
                (x, None) | (None, x) => x,
            },
            Cond::Or(a, b) => Some(union(&a.candidates(index)?, &b.candidates(index)?)),
            Cond::Eq(..) | Cond::Match(..) | Cond::Field(_) => None,
        }
    }

    /// Adds the fields (the table's indexes) it reads of a point to `out`.
    pub(super) fn fields(&self, out: &mut Vec<usize>) {
        match self {
            Cond::Field(f) => out.extend(f.column),
            Cond::And(a, b) | Cond::Or(a, b) => {
                a.fields(out);
                b.fields(out);
            }
            Cond::Eq(..) | Cond::Match(..) => {}
        }
    }

    /// The condition on `s`'s points with its tag parts decided once: a
    /// point then tests its fields only, with no tag looked up (or regex
    /// matched) per point (TSBS `high-cpu-1`'s `hostname = 'host_3'` under
    /// its `AND` was a quarter of the read's samples).
    pub(super) fn decide(&self, s: &Series) -> Decided<'_> {
        use Decided::Always;
        match self {
            Cond::Eq(..) | Cond::Match(..) => Always(self.on_series(s) == Some(true)),
            Cond::Field(f) => Decided::Field(f),
            Cond::And(a, b) => match (a.decide(s), b.decide(s)) {
                (Always(false), _) | (_, Always(false)) => Always(false),
                (Always(true), x) | (x, Always(true)) => x,
                (x, y) => Decided::And(Box::new(x), Box::new(y)),
            },
            Cond::Or(a, b) => match (a.decide(s), b.decide(s)) {
                (Always(true), _) | (_, Always(true)) => Always(true),
                (Always(false), x) | (x, Always(false)) => x,
                (x, y) => Decided::Or(Box::new(x), Box::new(y)),
            },
        }
    }

    /// Whether some point of `s` whose fields lie in `bounds` (by the table's
    /// field index: a sealed chunk's, `Chunk::bounds`) may pass; false only
    /// where none can, so that a chunk refused here is never decoded.
    pub(super) fn may_pass(&self, s: &Series, bounds: &impl Fn(usize) -> Bounds) -> bool {
        match self {
            Cond::Eq(..) | Cond::Match(..) => self.on_series(s) != Some(false),
            Cond::Field(f) => f.may_pass(bounds),
            Cond::And(a, b) => a.may_pass(s, bounds) && b.may_pass(s, bounds),
            Cond::Or(a, b) => a.may_pass(s, bounds) || b.may_pass(s, bounds),
        }
    }
}

/// [`Cond::candidates`] of conditions joined by `AND` (a statement's).
pub(super) fn candidates(conds: &[Cond], index: &TagIndex) -> Option<Vec<u64>> {
    conds
        .iter()
        .filter_map(|c| c.candidates(index))
        .reduce(|a, b| intersect(&a, &b))
}

/// A [`Cond`] with one series' tags decided ([`Cond::decide`]).
#[derive(Debug)]
pub(super) enum Decided<'c> {
    Always(bool),
    Field(&'c FieldCmp),
    And(Box<Decided<'c>>, Box<Decided<'c>>),
    Or(Box<Decided<'c>>, Box<Decided<'c>>),
}

impl Decided<'_> {
    /// Whether point `i` of `p` (a point of the series decided on) passes:
    /// a tag condition as the series' tags say (`=`/`!=` against a string,
    /// a regex), a field comparison on the point.
    pub(super) fn on_point(&self, p: &Plain, i: usize) -> bool {
        match self {
            Decided::Always(b) => *b,
            Decided::Field(f) => f.on_point(p, i),
            Decided::And(a, b) => a.on_point(p, i) && b.on_point(p, i),
            Decided::Or(a, b) => a.on_point(p, i) || b.on_point(p, i),
        }
    }
}

impl Decided<'_> {
    /// [`Decided::on_point`] of each point in `range` of `p`, into `out`
    /// (cleared first): a comparison of an integer or float column with its
    /// literal runs as one loop over the column (TSBS `high-cpu-1` tests
    /// ~4,300 points a host; a call per point was 4.5 % of the server's
    /// samples).
    pub(super) fn mark(&self, p: &Plain, range: Range<usize>, out: &mut Vec<bool>) {
        out.clear();
        match self {
            Decided::Always(b) => out.resize(range.len(), *b),
            Decided::Field(f) => f.mark(p, range, out),
            Decided::And(a, b) | Decided::Or(a, b) => {
                a.mark(p, range.clone(), out);
                let mut other = Vec::new();
                b.mark(p, range, &mut other);
                let and = matches!(self, Decided::And(..));
                for (x, y) in out.iter_mut().zip(other) {
                    *x = if and { *x && y } else { *x || y };
                }
            }
        }
    }
}

/// A literal a field is compared with.
#[derive(Debug)]
enum Lit {
    Float(f64),
    Integer(i64),
    String(String),
    Boolean(bool),
}

/// `field op literal` (the literal on the left flipped to the right), as the
/// engine's `compare` renders it: numbers with numbers (an integer against a
/// float exactly, as ClickHouse compares them), strings with strings (bytes),
/// booleans with booleans; any other pair is false.
#[derive(Debug)]
pub(super) struct FieldCmp {
    field: String,
    /// Its column in the table (`Cond::bind`).
    column: Option<usize>,
    op: BinaryOp,
    lit: Lit,
    /// The kinds cannot be compared: false for every point.
    never: bool,
    /// The literal as an integer value is ordered against it, worked out
    /// once: TSBS `high-cpu-1` compares ~4,300 integer points per host with
    /// `90.0`, and the exact float-against-integer order per point was a
    /// tenth of its evaluation.
    int_image: IntImage,
}

/// How an integer compares with a literal.
#[derive(Debug, Clone, Copy)]
enum IntImage {
    /// As with this integer, and as the tie says where equal to it (a float
    /// literal's whole part, its fraction's sign deciding the tie).
    At(i64, Ordering),
    /// The same for every integer (a float beyond the integers' range).
    Always(Ordering),
    /// Not ordered (a string or boolean literal).
    Unordered,
}

impl IntImage {
    fn of(lit: &Lit) -> IntImage {
        const TWO_63: f64 = 9_223_372_036_854_775_808.0;
        match *lit {
            Lit::Integer(n) => IntImage::At(n, Ordering::Equal),
            Lit::Float(x) if x.is_nan() => IntImage::Unordered,
            Lit::Float(x) if x >= TWO_63 => IntImage::Always(Ordering::Less),
            Lit::Float(x) if x < -TWO_63 => IntImage::Always(Ordering::Greater),
            Lit::Float(x) => {
                // In range: the whole part exact, the fraction orders a tie
                // (an integer equal to the whole part lies below a positive one).
                let whole = x.trunc();
                let tie = 0.0.partial_cmp(&(x - whole)).unwrap_or(Ordering::Equal);
                IntImage::At(whole as i64, tie)
            }
            Lit::String(_) | Lit::Boolean(_) => IntImage::Unordered,
        }
    }
}

impl FieldCmp {
    fn of(op: BinaryOp, lhs: &Expr, rhs: &Expr, schema: &MeasurementSchema) -> Option<FieldCmp> {
        let (field, lit, op) = match (field(lhs, schema), strip_parens(rhs)) {
            (Some(f), Expr::Literal(l)) => (f, l, op),
            _ => match (strip_parens(lhs), field(rhs, schema)) {
                (Expr::Literal(l), Some(f)) => (f, l, flip(op)),
                _ => return None,
            },
        };
        let (name, kind) = field;
        let lit = match lit {
            Literal::Integer(i) => Lit::Integer(*i),
            Literal::Duration(d) => Lit::Integer(d.0),
            Literal::Float(f) if f.is_finite() => Lit::Float(*f),
            Literal::String(s) => Lit::String(s.clone()),
            Literal::Boolean(b) => Lit::Boolean(*b),
            // Unsigned literals, non-finite floats (null), regexes (an error).
            _ => return None,
        };
        let never = !matches!(
            (kind, &lit),
            (
                FieldType::Float | FieldType::Integer,
                Lit::Float(_) | Lit::Integer(_)
            ) | (FieldType::String, Lit::String(_))
                | (FieldType::Boolean, Lit::Boolean(_))
        );
        Some(FieldCmp {
            field: name,
            column: None,
            op,
            int_image: IntImage::of(&lit),
            lit,
            never,
        })
    }

    fn on_point(&self, p: &Plain, i: usize) -> bool {
        if self.never {
            return false;
        }
        let Some(Some(c)) = self.column.and_then(|c| p.columns.get(c)) else {
            return false;
        };
        if !c.valid[i] {
            return false;
        }
        let order = match (&c.values, &self.lit) {
            (Values::Float(v), _) => self.float_order(v[i]),
            (Values::Integer(v), _) => self.int_order(v[i]),
            (Values::String(v), Lit::String(x)) => Some(v[i].as_bytes().cmp(x.as_bytes())),
            (Values::Boolean(v), Lit::Boolean(x)) => Some(v[i].cmp(x)),
            _ => None,
        };
        order.is_some_and(|o| self.holds(o))
    }

    /// [`Decided::mark`] of this comparison: `out` is empty.
    fn mark(&self, p: &Plain, range: Range<usize>, out: &mut Vec<bool>) {
        let column = match self.column.and_then(|c| p.columns.get(c)) {
            Some(Some(c)) if !self.never => c,
            _ => return out.resize(range.len(), false),
        };
        // Which orders against the literal pass, by `Ordering as i8 + 1`.
        let pass = [Ordering::Less, Ordering::Equal, Ordering::Greater].map(|o| self.holds(o));
        let at = |o: Ordering| pass[(o as i8 + 1) as usize];
        let valid = &column.valid[range.clone()];
        match (&column.values, self.int_image, &self.lit) {
            (Values::Integer(v), IntImage::At(n, tie), _) => out.extend(
                v[range]
                    .iter()
                    .zip(valid)
                    .map(|(x, &ok)| ok && at(x.cmp(&n).then(tie))),
            ),
            (Values::Float(v), _, Lit::Float(x)) => out.extend(
                v[range]
                    .iter()
                    .zip(valid)
                    .map(|(v, &ok)| ok && v.partial_cmp(x).is_some_and(at)),
            ),
            _ => out.extend(range.map(|i| self.on_point(p, i))),
        }
    }

    /// A float value against the literal.
    fn float_order(&self, v: f64) -> Option<Ordering> {
        match self.lit {
            Lit::Float(x) => v.partial_cmp(&x),
            Lit::Integer(n) => float_vs_int(v, n),
            _ => None,
        }
    }

    /// An integer value against the literal.
    fn int_order(&self, v: i64) -> Option<Ordering> {
        match self.int_image {
            IntImage::At(n, tie) => Some(v.cmp(&n).then(tie)),
            IntImage::Always(o) => Some(o),
            IntImage::Unordered => None,
        }
    }

    /// Whether a value in `bounds` may pass: the orders of the smallest and
    /// largest value against the literal bound those of every value between
    /// (each order above grows with the value), so this is exact for `<`,
    /// `<=`, `>`, `>=`, `=` and nearly so for `!=` (false only where every
    /// value equals the literal).
    fn may_pass(&self, bounds: &impl Fn(usize) -> Bounds) -> bool {
        if self.never {
            return false;
        }
        let Some(column) = self.column else {
            return false;
        };
        let (lo, hi) = match bounds(column) {
            Bounds::Empty => return false,
            Bounds::Unknown => return true,
            Bounds::Float(lo, hi) => (self.float_order(lo), self.float_order(hi)),
            Bounds::Integer(lo, hi) => (self.int_order(lo), self.int_order(hi)),
        };
        let (Some(lo), Some(hi)) = (lo, hi) else {
            // No order (another kind of literal): no value passes.
            return false;
        };
        match self.op {
            BinaryOp::Eq => lo != Ordering::Greater && hi != Ordering::Less,
            BinaryOp::NotEq => !(lo == Ordering::Equal && hi == Ordering::Equal),
            BinaryOp::Lt | BinaryOp::LtEq => self.holds(lo),
            BinaryOp::Gt | BinaryOp::GtEq => self.holds(hi),
            _ => false,
        }
    }

    /// Whether a value of order `o` against the literal passes.
    fn holds(&self, o: Ordering) -> bool {
        match self.op {
            BinaryOp::Eq => o == Ordering::Equal,
            BinaryOp::NotEq => o != Ordering::Equal,
            BinaryOp::Lt => o == Ordering::Less,
            BinaryOp::LtEq => o != Ordering::Greater,
            BinaryOp::Gt => o == Ordering::Greater,
            BinaryOp::GtEq => o != Ordering::Less,
            _ => false,
        }
    }
}

/// `x` against `n` exactly (not `n as f64`, which rounds above 2^53).
fn float_vs_int(x: f64, n: i64) -> Option<Ordering> {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if x.is_nan() {
        return None;
    }
    if x >= TWO_63 {
        return Some(Ordering::Greater);
    }
    if x < -TWO_63 {
        return Some(Ordering::Less);
    }
    let whole = x.trunc();
    // In range: exact.
    let w = whole as i64;
    Some(match w.cmp(&n) {
        Ordering::Equal => (x - whole).partial_cmp(&0.0).unwrap_or(Ordering::Equal),
        other => other,
    })
}

fn flip(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::LtEq => BinaryOp::GtEq,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::GtEq => BinaryOp::LtEq,
        other => other,
    }
}

fn is_comparison(op: BinaryOp) -> bool {
    crate::influxql::expr::is_comparison(op)
}

/// Whether `e` names a field (which a name that is both a field and a tag
/// means without a cast).
fn is_field(e: &Expr, schema: &MeasurementSchema) -> bool {
    matches!(strip_parens(e), Expr::VarRef { name, .. } if schema.fields.iter().any(|(f, _)| f == name))
}

/// The float, integer, string or boolean field `e` names, as written or cast
/// to its own type (`usage::field`, `usage::float`); `None` for other casts.
fn field(e: &Expr, schema: &MeasurementSchema) -> Option<(String, FieldType)> {
    let Expr::VarRef { name, data_type } = strip_parens(e) else {
        return None;
    };
    let (_, t) = schema.fields.iter().find(|(f, _)| f == name)?;
    let own = match t {
        FieldType::Float => DataType::Float,
        FieldType::Integer => DataType::Integer,
        FieldType::String => DataType::String,
        FieldType::Boolean => DataType::Boolean,
        FieldType::UInteger => return None,
    };
    match data_type {
        None | Some(DataType::Field) => Some((name.clone(), *t)),
        Some(d) if *d == own => Some((name.clone(), *t)),
        _ => None,
    }
}

/// The tag `e` names: a tag key of `schema` that is not also a field (`::tag`
/// or no cast).
fn tag(e: &Expr, schema: &MeasurementSchema) -> Option<String> {
    match strip_parens(e) {
        Expr::VarRef { name, data_type }
            if schema.tag_keys.contains(name)
                && !schema.fields.iter().any(|(f, _)| f == name)
                && matches!(data_type, None | Some(DataType::Tag)) =>
        {
            Some(name.clone())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::float_vs_int;
    use std::cmp::Ordering::{Equal, Greater, Less};

    #[test]
    fn integers_compare_with_floats_exactly() {
        assert_eq!(float_vs_int(10.0, 10), Some(Equal));
        assert_eq!(float_vs_int(10.5, 10), Some(Greater));
        assert_eq!(float_vs_int(-0.5, 0), Some(Less));
        assert_eq!(float_vs_int(-10.5, -10), Some(Less));
        // 2^53 + 1 is no f64: `as f64` would call them equal.
        assert_eq!(
            float_vs_int(9_007_199_254_740_992.0, 9_007_199_254_740_993),
            Some(Less)
        );
        assert_eq!(float_vs_int(9.3e18, i64::MAX), Some(Greater));
        assert_eq!(float_vs_int(-9.3e18, i64::MIN), Some(Less));
        assert_eq!(
            float_vs_int(-9_223_372_036_854_775_808.0, i64::MIN),
            Some(Equal)
        );
        assert_eq!(float_vs_int(f64::NAN, 0), None);
    }

    /// The integer image of a literal orders every integer as the exact
    /// comparison does, at the edges (ties, fractions, ±0, 2^53, the
    /// integers' range) and over random pairs.
    #[test]
    fn an_integer_image_orders_as_the_exact_comparison() {
        use super::{BinaryOp, FieldCmp, IntImage, Lit};
        let cmp = |lit: Lit| FieldCmp {
            field: "f".into(),
            column: None,
            op: BinaryOp::Gt,
            int_image: IntImage::of(&lit),
            lit,
            never: false,
        };
        let mut literals = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            90.0,
            90.5,
            -90.5,
            1e-300,
            -1e-300,
            9_007_199_254_740_992.0,
            9_007_199_254_740_994.0,
            9.2e18,
            -9.2e18,
            9_223_372_036_854_775_808.0,
            -9_223_372_036_854_775_808.0,
            1e19,
            -1e19,
            f64::MAX,
            f64::MIN,
            f64::NAN,
        ];
        let mut ints = vec![
            0,
            1,
            -1,
            90,
            91,
            89,
            -90,
            -91,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
            9_007_199_254_740_992,
            9_007_199_254_740_993,
            9_200_000_000_000_000_000,
        ];
        let mut x = 0x44_c0de_u64;
        for _ in 0..2_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ints.push(x as i64 >> (x % 60));
            let f = (x >> 11) as f64 / (1u64 << 20) as f64 - (1u64 << 32) as f64;
            literals.push(if x.is_multiple_of(3) { f.trunc() } else { f });
        }
        for &lit in &literals {
            let c = cmp(Lit::Float(lit));
            for &v in &ints {
                let exact = float_vs_int(lit, v).map(std::cmp::Ordering::reverse);
                assert_eq!(c.int_order(v), exact, "{v} against {lit}");
            }
        }
        for &n in &ints {
            let c = cmp(Lit::Integer(n));
            for &v in &ints {
                assert_eq!(c.int_order(v), Some(v.cmp(&n)), "{v} against {n}");
            }
        }
    }
}
