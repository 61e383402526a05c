//! The SQL of a pushed-down aggregate: the partial statement each shard runs (and the node
//! over its rows of series with undelivered rows), its columns, and the embedded-engine
//! statement that combines partial rows — the fallback of `combine.rs`, and the definition of
//! what that combination answers.

use engine::quote_ident;
use engine::table::ColumnKind;
use ingest::MeasurementSchema;

use super::{Call, FieldUse, Form, Pushdown, MAX_DISTINCT_VALUES};
use crate::influxql::field_call::Func;
use crate::influxql::plan::{Plan, Presence, Window};
use crate::influxql::sql::TIME_ALIAS;

/// The SQL type of a partial column of `kind`: a shard's (`cluster::schema::shard_type`),
/// which the embedded engine reads the same way.
pub(crate) fn sql_type(kind: ColumnKind) -> &'static str {
    match kind {
        ColumnKind::Tag => "String",
        ColumnKind::Float => "Nullable(Float64)",
        ColumnKind::Integer => "Nullable(Int64)",
        ColumnKind::Unsigned => "Nullable(UInt64)",
        ColumnKind::String => "Nullable(String)",
        ColumnKind::Boolean => "Nullable(UInt8)",
    }
}

fn sum_kind(k: ColumnKind) -> ColumnKind {
    match k {
        ColumnKind::Integer | ColumnKind::Unsigned => k,
        _ => ColumnKind::Float,
    }
}

/// An `Int64` literal every supported server reads as signed (18.16 computes `Int64 %
/// UInt64` unsigned).
fn int(v: i64) -> String {
    format!("toInt64({v})")
}

/// One column of a partial row after its group keys.
struct PartialColumn {
    name: String,
    kind: ColumnKind,
    /// Its SQL over the points of a group (`__t`, `__sid`, `__v<j>`, `__key`).
    points: String,
    /// Its SQL merging partial rows of a group (over the partial columns' names).
    merge: String,
}

impl Pushdown {
    /// Whether a call picks a point (`first`, `last`): then the shards compute each series'
    /// partial first (its point at the picked time), and the group's is picked among them
    /// ([`pick_key`]).
    fn picks(&self) -> bool {
        self.calls
            .iter()
            .any(|c| matches!(c.func, Func::First | Func::Last))
    }

    /// The group keys of a partial row: the interval's start (`b`), then the `GROUP BY`
    /// tags (`k<g>`), with their SQL over the points.
    fn keys(&self) -> Vec<(String, String)> {
        let bucket = match self.shard_window {
            Some(w) => {
                let (iv, off) = (int(w.interval), int(w.offset));
                format!("(__t - (((__t - {off}) % {iv}) + {iv}) % {iv})")
            }
            None => int(0),
        };
        let mut out = vec![("b".to_string(), bucket)];
        for (g, (_, known)) in self.groups.iter().enumerate() {
            let sql = match (*known, self.by_series) {
                // The series id, its tag value put back on the node (`by_series.rs`).
                (true, true) => "__sid".to_string(),
                (true, false) => format!("__k{g}"),
                (false, _) => "''".to_string(),
            };
            out.push((format!("k{g}"), sql));
        }
        out
    }

    /// The columns of a partial row after its keys, then `ms` (the largest `__seq` of the
    /// rows grouped by point).
    fn partial_columns(&self) -> Vec<PartialColumn> {
        let mut out = Vec::new();
        let mut col = |name: String, kind, points: String, merge: String| {
            out.push(PartialColumn {
                name,
                kind,
                points,
                merge,
            })
        };
        for (j, f) in self.fields.iter().enumerate() {
            // A point has a value of the field: its latest value is not null, or (only
            // counted) one of its rows has one.
            let points = if f.values {
                format!("count(__v{j})")
            } else {
                format!("sum(__v{j})")
            };
            col(
                format!("n{j}"),
                ColumnKind::Unsigned,
                points,
                format!("sum(n{j})"),
            );
        }
        for (i, c) in self.calls.iter().enumerate() {
            let f = &self.fields[c.field];
            let v = format!("__v{}", c.field);
            let n = format!("n{}", c.field);
            match c.func {
                _ if c.form.runs() => col(
                    format!("o{i}"),
                    ColumnKind::String,
                    super::values::partial_sql(i, &v, f.kind),
                    // Never merged in SQL (`decompose` pushes no selector beside it).
                    format!("any(o{i})"),
                ),
                _ if c.whole() => {
                    let sorted = format!("arraySort(groupArrayIf({v}, isNotNull({v})))");
                    let (kind, sql) = match c.form {
                        Form::Percentile(p) => (f.kind, percentile_sql(&v, &sorted, p, "")),
                        _ => (ColumnKind::Float, median_sql(&sorted)),
                    };
                    // Never merged in SQL (`decompose` pushes no selector beside it).
                    col(format!("w{i}"), kind, sql, format!("any(w{i})"));
                    if let (Form::Percentile(p), true) = (c.form, self.point_time) {
                        // The lone selector's point: values in order, then times.
                        let points = format!(
                            "arraySort(groupArrayIf((__v{}, __t), isNotNull({v})))",
                            c.field
                        );
                        col(
                            format!("t{i}"),
                            ColumnKind::Integer,
                            percentile_sql(&v, &points, p, ".2"),
                            format!("any(t{i})"),
                        );
                    }
                }
                _ if c.form == Form::Stddev => {
                    let (m1, m2) = super::stddev::partial_sql(&v);
                    col(format!("s{i}"), ColumnKind::Float, m1, format!("sum(s{i})"));
                    col(format!("q{i}"), ColumnKind::Float, m2, format!("sum(q{i})"));
                }
                Func::Count if c.form == Form::Distinct => {
                    let set = format!("groupUniqArray({})", distinct_element(&v, f.kind));
                    col(
                        format!("d{i}"),
                        ColumnKind::String,
                        format!(
                            "if(length({set}) > {MAX_DISTINCT_VALUES}, NULL, \
                             arrayStringConcat(arrayMap(x -> concat(toString(length(x)), ':', x), {set}), ''))"
                        ),
                        // Never merged in SQL (`decompose` pushes no selector beside it).
                        format!("any(d{i})"),
                    );
                }
                Func::Count => {}
                Func::Sum => col(
                    format!("s{i}"),
                    sum_kind(f.kind),
                    format!("sum({v})"),
                    format!("sum(s{i})"),
                ),
                Func::Mean => col(
                    format!("s{i}"),
                    ColumnKind::Float,
                    format!("sum(toFloat64({v}))"),
                    format!("sum(s{i})"),
                ),
                Func::Min | Func::Max if self.point_time => {
                    // The lone selector's point: the least (greatest) value, the earliest
                    // of its points (`agg::selector_order`).
                    let (name, value, arg) = if c.func == Func::Min {
                        (format!("m{i}"), "min", "argMinIf")
                    } else {
                        (format!("x{i}"), "max", "argMaxIf")
                    };
                    let key = |v: &str, t: &str| selector_key(c.func, v, t);
                    col(
                        name.clone(),
                        f.kind,
                        format!("{value}({v})"),
                        format!("{value}({name})"),
                    );
                    col(
                        format!("t{i}"),
                        ColumnKind::Integer,
                        format!("{arg}(__t, {}, isNotNull({v}))", key(&v, "__t")),
                        format!("{arg}(t{i}, {}, {n} > 0)", key(&name, &format!("t{i}"))),
                    );
                }
                Func::Min | Func::Max | Func::Spread => {
                    if c.func != Func::Max {
                        col(
                            format!("m{i}"),
                            f.kind,
                            format!("min({v})"),
                            format!("min(m{i})"),
                        );
                    }
                    if c.func != Func::Min {
                        col(
                            format!("x{i}"),
                            f.kind,
                            format!("max({v})"),
                            format!("max(x{i})"),
                        );
                    }
                }
                Func::First | Func::Last => {
                    let (arg, pick) = if c.func == Func::First {
                        ("argMinIf", "minIf")
                    } else {
                        ("argMaxIf", "maxIf")
                    };
                    let key = pick_key(c.func, &format!("t{i}"), &format!("v{i}"));
                    col(
                        format!("v{i}"),
                        f.kind,
                        format!("{arg}({v}, __t, isNotNull({v}))"),
                        format!("argMaxIf(v{i}, {key}, {n} > 0)"),
                    );
                    col(
                        format!("t{i}"),
                        ColumnKind::Integer,
                        format!("{pick}(__t, isNotNull({v}))"),
                        format!("{pick}(t{i}, {n} > 0)"),
                    );
                    col(
                        format!("y{i}"),
                        ColumnKind::Unsigned,
                        "any(__sid)".to_string(),
                        format!("argMaxIf(y{i}, {key}, {n} > 0)"),
                    );
                }
            }
        }
        col(
            "ms".to_string(),
            ColumnKind::Unsigned,
            "__ms".to_string(),
            "max(ms)".to_string(),
        );
        out
    }
}

/// The order `argMax` picks a `first` or `last` partial by: its time `t` (the earliest for
/// `first`), then among series at that time the larger value `v`, the rule of the embedded
/// path (`agg::selector_order`; InfluxDB 1.x has none: its merge order decides).
fn pick_key(func: Func, t: &str, v: &str) -> String {
    if func == Func::First {
        format!("(-{t}, assumeNotNull({v}))")
    } else {
        format!("({t}, assumeNotNull({v}))")
    }
}

/// The nearest-rank percentile `p` of a group's values `v` (`sorted`: them in order), as
/// the embedded statement computes it (`agg::percentile`): index `floor(n * p / 100 + 0.5)`;
/// `part`: what of the element to take (`.2`: a tuple's time), or nothing.
fn percentile_sql(v: &str, sorted: &str, p: f64, part: &str) -> String {
    let rank = format!("floor(count({v}) * {p:?} / 100 + 0.5)");
    format!("if({rank} BETWEEN 1 AND count({v}), {sorted}[toInt64({rank})]{part}, NULL)")
}

/// The median of a group's values (`sorted`: them in order) as the embedded engine's
/// `quantileExactInclusive(0.5)` computes it (18.16 lacks it): with `h = (n - 1) / 2 + 1`
/// and `k = floor(h)`, the `k`-th value plus `(h - k)` times the difference to the next,
/// in the values' type, as a float; the one value of a group of one.
fn median_sql(sorted: &str) -> String {
    let n = format!("length({sorted})");
    let k = format!("intDiv({n} + 1, 2)");
    format!(
        "if({n} = 0, NULL, if({n} = 1, toFloat64({sorted}[1]), \
         toFloat64({sorted}[{k}]) + ((({n} - 1) * 0.5 + 1) - {k}) * toFloat64({sorted}[{k} + 1] - {sorted}[{k}])))"
    )
}

/// One value of a `count(DISTINCT)` set as text that is the same on every server (18.16
/// and the embedded engine): a float's bytes in hex (`-0.0` as `0.0`; 18.16 cannot
/// reinterpret a float as an integer, and prints floats otherwise than today's servers),
/// an integer's digits, a string as it is.
fn distinct_element(v: &str, kind: ColumnKind) -> String {
    match kind {
        ColumnKind::Float => format!("hex(reinterpretAsString({v} + 0.))"),
        ColumnKind::String | ColumnKind::Tag => v.to_string(),
        _ => format!("toString({v})"),
    }
}

/// The start of the zone window of time `t` (SQL, ns) for the embedded engine, as
/// `fill::window_start_in` computes it.
fn zone_window_sql(w: Window, zone: &str, t: &str) -> String {
    let (iv, off) = (int(w.interval), int(w.offset));
    let z = engine::quote_string(zone);
    let local = |x: &str| {
        format!("(toInt64(timeZoneOffset(toDateTime(intDiv({x}, 1000000000), {z}))) * 1000000000)")
    };
    let t = format!("({t} - {off})");
    let start = format!("({t} - ((({t} + {}) % {iv}) + {iv}) % {iv})", local(&t));
    let shift = format!("({} - {})", local(&t), local(&start));
    format!("(if({shift} != 0 AND abs({shift}) < {iv}, {start} + {shift}, {start}) + {off})")
}

/// The order a lone `min` (`argMinIf`) or `max` (`argMaxIf`) picks its point by: the
/// value, then the earliest time (`agg::selector_order`).
fn selector_key(func: Func, v: &str, t: &str) -> String {
    if func == Func::Min {
        format!("(assumeNotNull({v}), {t})")
    } else {
        format!("(assumeNotNull({v}), -{t})")
    }
}

impl Pushdown {
    /// The points of `source` the partial statement aggregates, one row each: `__sid`,
    /// `__t`, the group tags `__k<g>`, each field's latest value `__v<j>` (or, where only
    /// counted, whether one of its rows has one). Point identity groups the rows by
    /// `(series_id, time)`; with `split`, only the rows of its series (the rest are points
    /// as they are: no other row shares their time), the two sets read as one.
    pub(super) fn points_sql(
        &self,
        source: &str,
        exclude: Option<&str>,
        split: Option<&[u64]>,
    ) -> String {
        let q = |c: &str| format!("__src.{}", quote_ident(c));
        // A point's write order: `__seq`, then `__row`, packed (`PACKED_SEQ_LIMIT`).
        let order = format!(
            "bitOr(bitShiftLeft({}, 32), toUInt64({}))",
            q("__seq"),
            q("__row")
        );
        let mut conds = Vec::new();
        if self.min > i64::MIN {
            conds.push(format!("{} >= {}", q("time"), int(self.min)));
        }
        if self.max < i64::MAX {
            conds.push(format!("{} <= {}", q("time"), int(self.max)));
        }
        if let Some(c) = &self.condition {
            conds.push(format!("({c})"));
        }
        if let Some(e) = exclude {
            conds.push(format!("{} NOT IN ({e})", q("series_id")));
        }
        // Both halves' values have the field's type (a `UNION ALL` of 18.16 does not cast);
        // without a second half there is nothing to cast to.
        let typed = |sql: String, f: &FieldUse| match split {
            Some([_, ..]) if f.values => format!("CAST({sql} AS {})", sql_type(f.kind)),
            _ => sql,
        };
        let branch = |grouped: bool, only: Option<String>| {
            let mut points = format!("SELECT {} AS __sid, {} AS __t", q("series_id"), q("time"));
            for (g, (tag, known)) in self.groups.iter().enumerate() {
                if *known && !self.by_series {
                    let t = q(tag);
                    let t = if grouped { format!("any({t})") } else { t };
                    points.push_str(&format!(", {t} AS __k{g}"));
                }
            }
            for (j, f) in self.fields.iter().enumerate() {
                let c = q(&f.name);
                let v = match (f.values, grouped) {
                    (true, true) => format!("argMaxIf({c}, {order}, isNotNull({c}))"),
                    (true, false) => c,
                    (false, true) => format!("max(isNotNull({c}))"),
                    (false, false) => format!("isNotNull({c})"),
                };
                points.push_str(&format!(", {} AS __v{j}", typed(v, f)));
            }
            // The largest `__seq` among the rows grouped by point: whether their write order
            // packs (`PACKED_SEQ_LIMIT`). Rows read as points as they are are never ordered
            // by it, so their `__seq` is not read (a tenth of a TSBS `double-groupby-all`
            // shard statement's time on 18.16), nor the `__seq` of rows not read at all.
            let seq = if grouped {
                format!("max({})", q("__seq"))
            } else {
                "toUInt64(0)".to_string()
            };
            points.push_str(&format!(", {seq} AS __ms"));
            let mut conds = conds.clone();
            conds.extend(only);
            points.push_str(&format!(" FROM {source} AS __src"));
            if !conds.is_empty() {
                points.push_str(&format!(" WHERE {}", conds.join(" AND ")));
            }
            if grouped {
                points.push_str(&format!(" GROUP BY {}, {}", q("series_id"), q("time")));
            }
            points
        };
        let Some(rewritten) = split else {
            return branch(true, None);
        };
        if rewritten.is_empty() {
            return branch(false, None);
        }
        let list: Vec<String> = rewritten.iter().map(u64::to_string).collect();
        let list = list.join(",");
        format!(
            "{} UNION ALL {}",
            branch(false, Some(format!("{} NOT IN ({list})", q("series_id")))),
            branch(true, Some(format!("{} IN ({list})", q("series_id"))))
        )
    }

    /// The partial statement over `source` (a table or subquery with the shard table's
    /// columns: `time` as `Int64` ns, `series_id`, `__seq`, `__row`, tags, fields), its
    /// columns named `__p<i>`; the series of `exclude` (a list) left out. `split`: only
    /// these series may hold a point written more than once (a shard's
    /// [`cluster::IdentitySnapshot`]): every other row is read as a point, not grouped
    /// (`None`: every row grouped).
    pub(super) fn partial_sql(
        &self,
        source: &str,
        exclude: Option<&str>,
        split: Option<&[u64]>,
    ) -> String {
        self.partial_sql_with(source, exclude, split, true)
    }

    /// [`Pushdown::partial_sql`]; `seq`: column `ms` is the largest `__seq` of the rows the
    /// statement groups by point (an Arrow scan, read once, is checked before: `toUInt64(0)`;
    /// 0 too where no row is grouped).
    pub(super) fn partial_sql_with(
        &self,
        source: &str,
        exclude: Option<&str>,
        split: Option<&[u64]>,
        seq: bool,
    ) -> String {
        let points = self.points_sql(source, exclude, split);
        // No row grouped by point (`split` empty): no write order to pack.
        let ms = if seq && split != Some(&[]) {
            "max(__ms)".to_string()
        } else {
            "toUInt64(0)".to_string()
        };
        let keys = self.keys();
        let columns = self.partial_columns();
        let values = |merge: bool| -> Vec<String> {
            columns
                .iter()
                .map(|c| match (c.points.as_str(), merge) {
                    ("__ms", false) => ms.clone(),
                    (_, false) => c.points.clone(),
                    (_, true) => c.merge.clone(),
                })
                .collect()
        };
        let numbered = |sql: Vec<String>| -> Vec<String> {
            sql.into_iter()
                .enumerate()
                .map(|(i, s)| format!("{s} AS __p{i}"))
                .collect()
        };
        let key_names: Vec<String> = (0..keys.len()).map(|i| format!("__p{i}")).collect();
        if !self.picks() {
            let list: Vec<String> = keys
                .iter()
                .map(|(_, sql)| sql.clone())
                .chain(values(false))
                .collect();
            return format!(
                "SELECT {} FROM ({points}) GROUP BY {}",
                numbered(list).join(", "),
                key_names.join(", ")
            );
        }
        // Each series' partial first (in its interval), named as the partial columns; then
        // the group's.
        let mut series: Vec<String> = vec![format!("{} AS b", keys[0].1)];
        for (name, sql) in &keys[1..] {
            let sql = if sql.starts_with("__k") {
                format!("any({sql})")
            } else {
                sql.clone()
            };
            series.push(format!("{sql} AS {name}"));
        }
        series.extend(
            columns
                .iter()
                .zip(values(false))
                .map(|(c, sql)| format!("{sql} AS {}", c.name)),
        );
        let series = format!(
            "SELECT {} FROM ({points}) GROUP BY __sid, b",
            series.join(", ")
        );
        let list: Vec<String> = keys
            .iter()
            .map(|(name, _)| name.clone())
            .chain(values(true))
            .collect();
        format!(
            "SELECT {} FROM ({series}) GROUP BY {}",
            numbered(list).join(", "),
            key_names.join(", ")
        )
    }

    /// The columns of a partial row as [`cluster::Cluster::read_partials`] reads them.
    pub(super) fn partial_kinds(&self) -> Vec<(String, ColumnKind)> {
        let keys = self.keys().into_iter().enumerate().map(|(i, (n, _))| {
            let kind = if i == 0 {
                ColumnKind::Integer
            } else {
                ColumnKind::Tag
            };
            (n, kind)
        });
        keys.chain(self.partial_columns().into_iter().map(|c| (c.name, c.kind)))
            .collect()
    }

    /// The statement combining the partial rows of `parts` (a table expression with the
    /// columns of [`Pushdown::partial_kinds`]) into the answer `sql.rs`'s aggregate gives.
    pub(super) fn combine_sql(&self, parts: &str) -> String {
        let n = |c: &Call| format!("n{}", c.field);
        let time = if self.window.is_some() {
            "any(b)".to_string()
        } else if self.point_time {
            let c = &self.calls[0];
            let pick = match c.func {
                Func::First => "minIf(assumeNotNull(t0)".to_string(),
                // `assumeNotNull`: 0 over no partial row, as `minIf`'s default is.
                Func::Min => format!(
                    "argMinIf(assumeNotNull(t0), {}",
                    selector_key(c.func, "m0", "t0")
                ),
                Func::Max => format!(
                    "argMaxIf(assumeNotNull(t0), {}",
                    selector_key(c.func, "x0", "t0")
                ),
                _ => "maxIf(assumeNotNull(t0)".to_string(),
            };
            format!("if(sum({n}) = 0, NULL, {pick}, {n} > 0))", n = n(c))
        } else {
            int(self.start)
        };
        let mut sql = format!("SELECT {time} AS {TIME_ALIAS}");
        for g in 0..self.groups.len() {
            sql.push_str(&format!(", k{g} AS __iq_g{g}"));
        }
        for (i, c) in self.calls.iter().enumerate() {
            let n = n(c);
            let col = match c.func {
                // Not combined by the engine (its sets are read in Rust or the rows read).
                _ if c.rust_only() => "NULL".to_string(),
                Func::Count => format!("if(sum({n}) = 0, NULL, toInt64(sum({n})))"),
                Func::Sum => format!("sum(s{i})"),
                Func::Mean => format!("if(sum({n}) = 0, NULL, sum(s{i}) / sum({n}))"),
                Func::Min => format!("min(m{i})"),
                Func::Max => format!("max(x{i})"),
                Func::Spread => format!("max(x{i}) - min(m{i})"),
                Func::First | Func::Last => format!(
                    "argMaxIf(v{i}, {}, {n} > 0)",
                    pick_key(c.func, &format!("assumeNotNull(t{i})"), &format!("v{i}"))
                ),
            };
            sql.push_str(&format!(", {col} AS __iq_c{i}"));
        }
        match (&self.zone, self.window) {
            (Some(zone), Some(w)) => {
                // Each shard interval `b` in its zone window (`sql.rs`'s `bucket_in_zone`).
                let cols: Vec<String> = self
                    .partial_kinds()
                    .into_iter()
                    .filter(|(name, _)| name != "b")
                    .map(|(name, _)| quote_ident(&name))
                    .collect();
                sql.push_str(&format!(
                    " FROM (SELECT {} AS b, {} FROM {parts}) AS __parts",
                    zone_window_sql(w, &zone.name, "b"),
                    cols.join(", ")
                ));
            }
            _ => sql.push_str(&format!(" FROM {parts} AS __parts")),
        }
        let groups: Vec<String> = (0..self.groups.len())
            .map(|g| format!("__iq_g{g}"))
            .collect();
        let mut by = groups.clone();
        if self.window.is_some() {
            by.insert(0, "b".to_string());
        }
        if !by.is_empty() {
            sql.push_str(&format!(" GROUP BY {}", by.join(", ")));
        }
        if self.presence == Presence::InSql {
            let present: Vec<String> = (0..self.fields.len())
                .map(|j| format!("sum(n{j})"))
                .collect();
            sql.push_str(&format!(" HAVING {} > 0", present.join(" + ")));
        }
        let mut order = groups;
        order.push(TIME_ALIAS.to_string());
        sql.push_str(&format!(" ORDER BY {}", order.join(", ")));
        sql
    }

    /// The shard columns the statements read (made on a shard that lacks them).
    pub(super) fn columns(
        &self,
        plan: &Plan,
        schema: &MeasurementSchema,
    ) -> Vec<(String, ColumnKind)> {
        let tags = schema
            .tag_keys
            .iter()
            .filter(|t| plan.tags.contains(t) || self.groups.iter().any(|(g, _)| g == *t))
            .map(|t| (t.clone(), ColumnKind::Tag));
        tags.chain(self.fields.iter().map(|f| (f.name.clone(), f.kind)))
            .collect()
    }
}
