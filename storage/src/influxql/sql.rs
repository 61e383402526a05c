//! A [`Plan`] as one engine statement.
//!
//! Every read goes through the point merge ([`merged`]): one row per
//! (series, time), each field its latest write's value (InfluxDB's point
//! identity: a point written twice is one point, last write wins field by
//! field). Tag conditions and the time range apply before the merge (a
//! series' tags and a point's time are its identity), field conditions after.
//!
//! The answer's columns: `__iq_t` (ns), `__iq_g<i>` (the `GROUP BY` tags),
//! `__iq_c<i>` (the output columns), in that order. Names and literals are
//! quoted by `engine::quote_ident`/`quote_string`; nothing from the statement
//! is pasted.

use std::cell::Cell;

use engine::quote_ident;
use flush::Rewrites;

use super::agg::T;
use super::expr::SRC;
use super::plan::{Plan, Presence, Window};
use super::row_order::RowOrder;

/// Prefix of the answer's own column aliases.
pub(crate) const TIME_ALIAS: &str = "__iq_t";

/// Acknowledged rows of the plan's measurement the engine does not hold
/// yet, readable as Arrow scans (`flush::unflushed`): `table(k)` names the
/// `k`-th reference (the engine reads each registration once, so every
/// reference in the statement gets its own), and `[min, max]` (ns) is the
/// span of their times: rows of the table inside it may share a point with
/// them (or be them: an insert that ended after the snapshot), so they are
/// grouped together.
pub(crate) struct Unflushed<'a> {
    table: &'a dyn Fn(usize) -> String,
    used: Cell<usize>,
    min: i64,
    max: i64,
}

impl<'a> Unflushed<'a> {
    pub(crate) fn new(table: &'a dyn Fn(usize) -> String, min: i64, max: i64) -> Self {
        Unflushed {
            table,
            used: Cell::new(0),
            min,
            max,
        }
    }

    /// References rendered so far (each needs its registration).
    pub(crate) fn used(&self) -> usize {
        self.used.get()
    }

    fn next_table(&self) -> String {
        let k = self.used.get();
        self.used.set(k + 1);
        (self.table)(k)
    }

    /// Table rows that may share a point with an unflushed row.
    fn span_condition(&self) -> String {
        format!(
            "(toUnixTimestamp64Nano({SRC}`time`) BETWEEN {} AND {})",
            self.min, self.max
        )
    }
}

/// The statement for `plan`, grouping rows into points where `rewrites`
/// says two may share one.
#[cfg(test)]
pub(crate) fn render(plan: &Plan, rewrites: &Rewrites) -> String {
    render_with(plan, rewrites, None)
}

/// The statement for `plan` over the table and, when given, the
/// acknowledged rows not in it yet.
pub(crate) fn render_with(
    plan: &Plan,
    rewrites: &Rewrites,
    unflushed: Option<&Unflushed>,
) -> String {
    match &plan.aggregate {
        None => raw(plan, rewrites, unflushed, false).0,
        Some(_) => aggregate(plan, rewrites, unflushed),
    }
}

/// [`render_with`], but a raw answer the engine need not order comes unordered,
/// with the order its rows are to be sorted in here (`row_order.rs`).
pub(crate) fn render_read(
    plan: &Plan,
    rewrites: &Rewrites,
    unflushed: Option<&Unflushed>,
) -> (String, Option<RowOrder>) {
    match &plan.aggregate {
        // A subquery's answer keeps its inner order: the engine's.
        None => raw(plan, rewrites, unflushed, plan.source.is_none()),
        Some(_) => (aggregate(plan, rewrites, unflushed), None),
    }
}

/// [`render_read`] over a cluster's shard rows (the plan's source): points of series,
/// with their series ids, every row grouped into points.
pub(crate) fn render_shard_rows(plan: &Plan) -> (String, Option<RowOrder>) {
    match &plan.aggregate {
        None => raw(plan, &Rewrites::All, None, true),
        Some(_) => (aggregate(plan, &Rewrites::All, None), None),
    }
}

/// The merged points of the plan's measurement, with the columns it reads:
/// one row per (series, time). Rows no other row shares a point with (the
/// flusher's [`Rewrites`]) are read as they are; only the others are grouped,
/// each field its latest write's value.
pub(crate) fn merged(plan: &Plan, rewrites: &Rewrites, unflushed: Option<&Unflushed>) -> String {
    // Each call renders the conditions again: a tail read's condition reads
    // the unflushed rows through a reference of its own.
    let conds = || table_and_conditions(plan, unflushed).1;
    let table = table_of(plan);
    // A subquery's answer is not the flusher's: grouped whole.
    let rewrites = if plan.source.is_some() {
        &Rewrites::All
    } else {
        rewrites
    };
    let unflushed = unflushed.filter(|_| plan.source.is_none());
    // The rows that may share a point with another: grouped, beside the
    // others read as written. Unflushed rows are always among them, with the
    // table's rows of their time span.
    let shared = match (rewrites, unflushed) {
        (Rewrites::None, None) => return as_written(plan, &table, &conds()),
        (Rewrites::All, None) => return grouped(plan, &table, &conds()),
        (Rewrites::All, Some(u)) => {
            let rows = all_rows(plan, &table, u, &conds(), &conds());
            return grouped(plan, &format!("({rows})"), &[]);
        }
        (Rewrites::Ranges(ranges), None) => may_share_a_point(ranges),
        (Rewrites::None, Some(u)) => u.span_condition(),
        (Rewrites::Ranges(ranges), Some(u)) => {
            format!("({} OR {})", u.span_condition(), may_share_a_point(ranges))
        }
    };
    let mut alone = conds();
    alone.push(format!("NOT {shared}"));
    let mut rest = conds();
    rest.push(shared);
    let grouped_rows = match unflushed {
        Some(u) => {
            let rows = all_rows(plan, &table, u, &rest, &conds());
            grouped(plan, &format!("({rows})"), &[])
        }
        None => grouped(plan, &table, &rest),
    };
    format!(
        "{} UNION ALL {grouped_rows}",
        as_written(plan, &table, &alone)
    )
}

/// The table's rows meeting `table_conds` and the unflushed rows meeting
/// `unflushed_conds`, with every column a merge reads.
fn all_rows(
    plan: &Plan,
    table: &str,
    u: &Unflushed,
    table_conds: &[String],
    unflushed_conds: &[String],
) -> String {
    let mut cols = vec![
        "time".to_string(),
        "series_id".to_string(),
        "__seq".to_string(),
        "__row".to_string(),
    ];
    cols.extend(plan.tags.iter().chain(&plan.fields).cloned());
    let list = cols
        .iter()
        .map(|c| format!("{SRC}{q} AS {q}", q = quote_ident(c)))
        .collect::<Vec<_>>()
        .join(", ");
    let mut from_table = format!("SELECT {list} FROM {table} AS __src");
    where_clause(&mut from_table, table_conds);
    let mut from_unflushed = format!("SELECT {list} FROM {} AS __src", u.next_table());
    where_clause(&mut from_unflushed, unflushed_conds);
    format!("{from_table} UNION ALL {from_unflushed}")
}

/// The table the plan reads: the measurement's, or a subquery's answer.
fn table_of(plan: &Plan) -> String {
    match &plan.source {
        Some(t) => t.clone(),
        None => engine::table::qualified(&plan.db, &plan.measurement),
    }
}

/// The table the plan reads and the conditions on its rows: the time range,
/// the tag conditions, and the tail read's.
fn table_and_conditions(plan: &Plan, unflushed: Option<&Unflushed>) -> (String, Vec<String>) {
    let table = table_of(plan);
    let mut conds = range_conditions(plan);
    conds.extend(plan.inner_where.iter().cloned());
    if let Some(latest) = latest_per_series(plan, &table, &conds, unflushed) {
        conds.push(latest);
    }
    (table, conds)
}

/// What the answer's statement reads its points from: `FROM …`, conditions
/// to add to its own `WHERE`, and how it names a point's series.
struct Points {
    from: String,
    conds: Vec<String>,
    series: String,
}

/// The points of the plan. Where every row is a point (no rewrites) the
/// statement reads the table itself, whose columns have the names the merged
/// points would have: one statement level less for the engine to analyse
/// (about half of a small query's engine time).
fn points(plan: &Plan, rewrites: &Rewrites, unflushed: Option<&Unflushed>) -> Points {
    if *rewrites == Rewrites::None && plan.source.is_none() && unflushed.is_none() {
        let (table, conds) = table_and_conditions(plan, None);
        return Points {
            from: format!("{table} AS __src"),
            conds,
            series: format!("{SRC}`series_id`"),
        };
    }
    Points {
        from: format!("({})", merged(plan, rewrites, unflushed)),
        conds: Vec::new(),
        series: "`__iq_sid`".to_string(),
    }
}

/// A point's time and series: the first columns of every merged row.
fn point_key() -> String {
    format!("SELECT {SRC}`time` AS `time`, {SRC}`series_id` AS `__iq_sid`")
}

/// Rows as points: no other row has their series and time.
fn as_written(plan: &Plan, table: &str, conds: &[String]) -> String {
    let q = |c: &str| format!("{SRC}{}", quote_ident(c));
    let mut sql = point_key();
    for c in plan.tags.iter().chain(&plan.fields) {
        sql.push_str(&format!(", {} AS {}", q(c), quote_ident(c)));
    }
    sql.push_str(&format!(" FROM {table} AS __src"));
    where_clause(&mut sql, conds);
    sql
}

/// Rows grouped into points, each field its latest write's value.
fn grouped(plan: &Plan, table: &str, conds: &[String]) -> String {
    let q = |c: &str| format!("{SRC}{}", quote_ident(c));
    let mut sql = point_key();
    for t in &plan.tags {
        sql.push_str(&format!(", any({}) AS {}", q(t), quote_ident(t)));
    }
    // A write's order: its WAL sequence, then its row within the write,
    // packed into one UInt128 (`__row` is a UInt32). Comparing one integer
    // instead of a tuple took the merge of 10M points from 12.8 s to 7.2 s
    // (docs/influxql.md, "What point identity costs"); the engine computes
    // the shared expression once per row.
    let order = format!(
        "bitOr(bitShiftLeft(toUInt128({}), 32), toUInt128({}))",
        q("__seq"),
        q("__row")
    );
    for f in &plan.fields {
        sql.push_str(&format!(
            ", argMaxIf({c}, {order}, {c} IS NOT NULL) AS {a}",
            c = q(f),
            a = quote_ident(f)
        ));
    }
    sql.push_str(&format!(" FROM {table} AS __src"));
    where_clause(&mut sql, conds);
    sql.push_str(&format!(" GROUP BY {}, {}", q("series_id"), q("time")));
    sql
}

/// The rows of the listed series inside their ranges (ns, inclusive). A row
/// of another series finds index 0, whose range reads as (0, 0): only a
/// point at the epoch itself lands there, and grouping a point alone changes
/// nothing.
fn may_share_a_point(ranges: &[(u64, i64, i64)]) -> String {
    let list =
        |f: &dyn Fn(&(u64, i64, i64)) -> String| ranges.iter().map(f).collect::<Vec<_>>().join(",");
    let ids = list(&|r| r.0.to_string());
    let firsts = list(&|r| r.1.to_string());
    let lasts = list(&|r| r.2.to_string());
    // `transform` looks the series up in a hash table: per row O(1), not a
    // scan of the list. A series not listed gets an empty range.
    let bound = |values: &str, default: i64| {
        format!(
            "transform({SRC}`series_id`, CAST([{ids}], 'Array(UInt64)'), \
             CAST([{values}], 'Array(Int64)'), toInt64({default}))"
        )
    };
    let t = format!("toUnixTimestamp64Nano({SRC}`time`)");
    format!(
        "({t} BETWEEN {} AND {})",
        bound(&firsts, i64::MAX),
        bound(&lasts, i64::MIN)
    )
}

/// The earliest time of a row the plan reads (`None`: no lower bound).
fn rows_from(plan: &Plan) -> Option<i64> {
    let min = plan.range.min?;
    match (plan.aggregate.as_ref().and_then(|a| a.window), &plan.source) {
        // A subquery's rows are its intervals, stamped with their starts:
        // the outer range takes whole intervals, as InfluxDB passes it down.
        (Some(w), Some(_)) => Some(super::fill::window_start(min, w.interval, w.offset)),
        _ => Some(min),
    }
}

/// `WHERE time …` of the plan, on the table's rows.
fn range_conditions(plan: &Plan) -> Vec<String> {
    let q = |c: &str| format!("{SRC}{}", quote_ident(c));
    let mut conds = Vec::new();
    if let Some(min) = rows_from(plan) {
        conds.push(format!(
            "{} >= fromUnixTimestamp64Nano(toInt64({min}))",
            q("time")
        ));
    }
    if let Some(max) = plan.range.max {
        conds.push(format!(
            "{} <= fromUnixTimestamp64Nano(toInt64({max}))",
            q("time")
        ));
    }
    conds
}

/// A raw read of each group's last point (`ORDER BY time DESC LIMIT 1`:
/// Grafana's "current value", TSBS `lastpoint`) needs only each series' last
/// point: the condition that keeps the rows at each series' latest time with
/// one of the shown fields present, and nothing else, so the statement reads
/// one point per series instead of the whole table. The key lookup is the
/// table's sort key (`series_id, time`), so the engine reads those rows'
/// granules only. `max(time)` over rows is exact with rewritten points (they
/// share the time); a group's last point is the latest of its series' last
/// points (ties keep their order: all tied series are kept). Not applied
/// when a condition on fields, a transformation, an offset or a limit past
/// one could pick another point, or a shown value is more than one field.
fn latest_per_series(
    plan: &Plan,
    table: &str,
    conds: &[String],
    unflushed: Option<&Unflushed>,
) -> Option<String> {
    if !plan.asks_last_point() {
        return None;
    }
    // Each shown value must be one field's merged column: then a point shows
    // iff one of its rows has one of those fields.
    let present: Option<Vec<String>> = plan
        .nonnull
        .iter()
        .map(|c| {
            let field = plan.fields.iter().find(|f| quote_ident(f) == *c)?;
            Some(format!("{SRC}{} IS NOT NULL", quote_ident(field)))
        })
        .collect();
    let present = present?;
    let mut inner = conds.to_vec();
    // Every point has a field: with all of them shown, every row counts,
    // and the tail read touches the sort key's two columns only.
    if !plan.shows_every_point {
        inner.push(format!("({})", present.join(" OR ")));
    }
    let q = |c: &str| format!("{SRC}{}", quote_ident(c));
    let (sid, time) = (q("series_id"), q("time"));
    // A series' last point may be one not flushed yet.
    let source = match unflushed {
        Some(u) => format!("({})", all_rows(plan, table, u, &[], &[])),
        None => table.to_string(),
    };
    let mut latest = format!("SELECT {sid}, max({time}) FROM {source} AS __src");
    where_clause(&mut latest, &inner);
    Some(format!("({sid}, {time}) IN ({latest} GROUP BY {sid})"))
}

fn where_clause(sql: &mut String, conds: &[String]) {
    if !conds.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conds.join(" AND "));
    }
}

/// `SELECT` list shared by both shapes: time, group tags, columns.
fn select_list(plan: &Plan, time_sql: &str) -> String {
    let mut s = format!("SELECT {time_sql} AS {TIME_ALIAS}");
    for (i, t) in plan.group_tags.iter().enumerate() {
        // A tag the measurement does not have groups as `''` (one group).
        let sql = if plan.tags.contains(t) {
            quote_ident(t)
        } else {
            "''".to_string()
        };
        s.push_str(&format!(", {sql} AS __iq_g{i}"));
    }
    for (i, c) in plan.columns.iter().enumerate() {
        s.push_str(&format!(", {} AS __iq_c{i}", c.sql));
    }
    s
}

fn group_aliases(plan: &Plan) -> Vec<String> {
    (0..plan.group_tags.len())
        .map(|i| format!("__iq_g{i}"))
        .collect()
}

/// Raw points, ordered by series then time, limited per series; unordered with
/// the order to sort them in when `order_here` and the engine need not order them.
fn raw(
    plan: &Plan,
    rewrites: &Rewrites,
    unflushed: Option<&Unflushed>,
    order_here: bool,
) -> (String, Option<RowOrder>) {
    let mut sql = select_list(plan, T);
    let points = points(plan, rewrites, unflushed);
    let here = RowOrder::of(plan, &points.series).filter(|_| order_here);
    if let Some((_, added)) = &here {
        for item in added {
            sql.push_str(", ");
            sql.push_str(item);
        }
    }
    sql.push_str(&format!(" FROM {}", points.from));
    let mut conds = points.conds;
    conds.extend(plan.outer_where.iter().cloned());
    if !plan.nonnull_implied {
        conds.push(format!(
            "({})",
            plan.nonnull
                .iter()
                .map(|c| format!("{c} IS NOT NULL"))
                .collect::<Vec<_>>()
                .join(" OR ")
        ));
    }
    where_clause(&mut sql, &conds);
    if let Some((order, _)) = here {
        return (sql, Some(order));
    }
    let groups = group_aliases(plan);
    let dir = if plan.order_desc { " DESC" } else { "" };
    let mut order: Vec<String> = groups.clone();
    order.push(format!("{TIME_ALIAS}{dir}"));
    order.extend(plan.order_tags.iter().map(|t| quote_ident(t)));
    // Then by series (a subquery's rows: in the inner answer's order).
    order.push(points.series);
    sql.push_str(&format!(" ORDER BY {}", order.join(", ")));
    if (plan.limit.is_some() || plan.offset.is_some()) && !plan.transforms() {
        let n = plan.limit.unwrap_or(u64::MAX >> 1);
        let off = plan.offset.unwrap_or(0);
        sql.push_str(&format!(" LIMIT {off}, {n}"));
        if !groups.is_empty() {
            sql.push_str(&format!(" BY {}", groups.join(", ")));
        }
    }
    (sql, None)
}

/// One row per group (and bucket); buckets without values are the caller's
/// to fill.
fn aggregate(plan: &Plan, rewrites: &Rewrites, unflushed: Option<&Unflushed>) -> String {
    let agg = plan.aggregate.as_ref().expect("an aggregate plan");
    let time_sql = match (&agg.window, &agg.point_time) {
        (Some(w), _) => match &agg.zone {
            Some(z) => bucket_in_zone(w, &z.name),
            None => bucket(w, rows_from(plan)),
        },
        (None, Some(t)) => t.clone(),
        (None, None) => format!("toInt64({})", plan.range.min.unwrap_or(0)),
    };
    let mut sql = select_list(plan, &time_sql);
    let points = points(plan, rewrites, unflushed);
    sql.push_str(&format!(" FROM {}", points.from));
    let mut conds = points.conds;
    conds.extend(plan.outer_where.iter().cloned());
    where_clause(&mut sql, &conds);
    let groups = group_aliases(plan);
    let mut group_by = groups.clone();
    if agg.window.is_some() {
        group_by.insert(0, TIME_ALIAS.to_string());
    }
    if !group_by.is_empty() {
        sql.push_str(&format!(" GROUP BY {}", group_by.join(", ")));
    }
    let present: Vec<String> = agg
        .fields
        .iter()
        .map(|f| format!("count({})", quote_ident(f)))
        .collect();
    if present.is_empty() {
        sql.push_str(" HAVING 0");
    } else if agg.presence == Presence::InSql {
        sql.push_str(&format!(" HAVING {} > 0", present.join(" + ")));
    }
    let mut order = groups;
    order.push(TIME_ALIAS.to_string());
    sql.push_str(&format!(" ORDER BY {}", order.join(", ")));
    sql
}

/// The start of a point's bucket: epoch-aligned, shifted by the offset,
/// floored (also before 1970). Where every row read is at or after the offset
/// (`rows_from`, the plan's lower bound; the offset is under the interval) the
/// remainder is never negative and the plain one is the floor: the engine's
/// analysis costs per expression, ~0.4 ms of a one-host hour's ~3 here.
fn bucket(w: &Window, rows_from: Option<i64>) -> String {
    let (iv, off) = (w.interval, w.offset);
    if rows_from.is_some_and(|min| min >= off) {
        return format!("({T} - ({T} - {off}) % {iv})");
    }
    // Signed literals: the engine computes `Int64 % UInt64` unsigned, which put a point
    // before the offset (`T - off` negative) in a bucket of its own, off the grid.
    format!("({T} - ((({T} - toInt64({off})) % toInt64({iv})) + toInt64({iv})) % toInt64({iv}))")
}

/// The start of a point's bucket in a `tz()` zone, as InfluxDB's `Window`
/// computes it (`fill/grid.rs`'s `window_start_in`): aligned on local time with
/// the zone's offset at the point, moved by the offset change when the
/// bucket's start has another offset (and the change is shorter than the
/// interval). The engine knows the zone's offsets.
fn bucket_in_zone(w: &Window, zone: &str) -> String {
    // Signed literals, as in `bucket`.
    let (iv, off) = (format!("toInt64({})", w.interval), w.offset);
    let z = engine::quote_string(zone);
    let local = |x: &str| {
        format!("(toInt64(timeZoneOffset(toDateTime(intDiv({x}, 1000000000), {z}))) * 1000000000)")
    };
    let t = format!("({T} - {off})");
    let start = format!("({t} - ((({t} + {}) % {iv}) + {iv}) % {iv})", local(&t));
    let shift = format!("({} - {})", local(&t), local(&start));
    format!("(if({shift} != 0 AND abs({shift}) < {iv}, {start} + {shift}, {start}) + {off})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::influxql::plan::{Aggregate, Column};
    use crate::influxql::range::TimeRange;
    use influxql::ast::Fill;

    fn plan() -> Plan {
        Plan {
            db: "d`b".into(),
            measurement: "c'pu".into(),
            source: None,
            tags: vec!["host".into()],
            fields: vec!["f".into()],
            columns: vec![Column {
                name: "f".into(),
                sql: "`f`".into(),
                fill: Default::default(),
                transform: None,
                reducer: None,
                companion: None,
            }],
            aggregate: None,
            group_tags: vec!["host".into()],
            order_tags: vec![],
            range: TimeRange {
                min: Some(10),
                max: None,
            },
            inner_where: vec!["(__src.`host` = 'a')".into()],
            outer_where: vec!["(`f` > toInt64(1))".into()],
            nonnull: vec!["`f`".into()],
            shows_every_point: false,
            nonnull_implied: false,
            order_desc: true,
            limit: Some(2),
            offset: Some(1),
        }
    }

    #[test]
    fn raw_reads_merged_points_with_conditions_on_each_side() {
        let sql = render(&plan(), &Rewrites::All);
        assert_eq!(
            sql,
            "SELECT toUnixTimestamp64Nano(`time`) AS __iq_t, `host` AS __iq_g0, `f` AS __iq_c0 \
             FROM (SELECT __src.`time` AS `time`, __src.`series_id` AS `__iq_sid`, any(__src.`host`) AS `host`, \
             argMaxIf(__src.`f`, bitOr(bitShiftLeft(toUInt128(__src.`__seq`), 32), toUInt128(__src.`__row`)), \
             __src.`f` IS NOT NULL) AS `f` \
             FROM `d\\`b`.`c'pu` AS __src WHERE __src.`time` >= fromUnixTimestamp64Nano(toInt64(10)) \
             AND (__src.`host` = 'a') GROUP BY __src.`series_id`, __src.`time`) \
             WHERE (`f` > toInt64(1)) AND (`f` IS NOT NULL) \
             ORDER BY __iq_g0, __iq_t DESC, `__iq_sid` LIMIT 1, 2 BY __iq_g0"
        );
    }

    #[test]
    fn aggregates_group_by_bucket_and_tags() {
        let mut p = plan();
        p.aggregate = Some(Aggregate {
            window: Some(Window {
                interval: 60,
                offset: 5,
            }),
            point_time: None,
            fields: vec!["f".into()],
            fill: Fill::Null,
            zone: None,
            presence: Presence::InSql,
        });
        let sql = render(&p, &Rewrites::All);
        assert!(
            sql.contains(
                " GROUP BY __iq_t, __iq_g0 HAVING count(`f`) > 0 ORDER BY __iq_g0, __iq_t"
            ),
            "{sql}"
        );
        // Rows without values dropped after the engine: no HAVING.
        p.aggregate.as_mut().unwrap().presence = Presence::AfterEngine;
        let sql = render(&p, &Rewrites::All);
        assert!(
            sql.contains(" GROUP BY __iq_t, __iq_g0 ORDER BY __iq_g0, __iq_t"),
            "{sql}"
        );
        // Every row read is at or after the offset (the range starts at 10, the offset is
        // 5): the plain remainder is the floor.
        assert!(sql.starts_with("SELECT (toUnixTimestamp64Nano(`time`) - (toUnixTimestamp64Nano(`time`) - 5) % 60) AS __iq_t"), "{sql}");
        // Rows before it, or no lower bound: floored for negative remainders too.
        for min in [Some(4), Some(-100), None] {
            p.range.min = min;
            let sql = render(&p, &Rewrites::All);
            assert!(sql.starts_with("SELECT (toUnixTimestamp64Nano(`time`) - (((toUnixTimestamp64Nano(`time`) - toInt64(5)) % toInt64(60)) + toInt64(60)) % toInt64(60)) AS __iq_t"), "{min:?}: {sql}");
        }
    }

    #[test]
    fn rows_no_other_row_shares_a_point_with_are_read_as_written() {
        // Straight off the table: no merge, no subquery.
        assert_eq!(
            render(&plan(), &Rewrites::None),
            "SELECT toUnixTimestamp64Nano(`time`) AS __iq_t, `host` AS __iq_g0, `f` AS __iq_c0 \
             FROM `d\\`b`.`c'pu` AS __src WHERE __src.`time` >= fromUnixTimestamp64Nano(toInt64(10)) \
             AND (__src.`host` = 'a') AND (`f` > toInt64(1)) AND (`f` IS NOT NULL) \
             ORDER BY __iq_g0, __iq_t DESC, __src.`series_id` LIMIT 1, 2 BY __iq_g0"
        );
        // Rows of the listed ranges only are grouped, beside the rest as written.
        let sql = render(&plan(), &Rewrites::Ranges(vec![(1, 2, 3)]));
        assert!(
            sql.contains("FROM (SELECT __src.`time` AS `time`, __src.`series_id` AS `__iq_sid`, __src.`host` AS `host`, __src.`f` AS `f` FROM `d\\`b`.`c'pu` AS __src WHERE "),
            "{sql}"
        );
    }

    #[test]
    fn only_the_listed_series_ranges_are_grouped() {
        let sql = render(&plan(), &Rewrites::Ranges(vec![(7, 100, 200), (9, -5, 5)]));
        let shared = "(toUnixTimestamp64Nano(__src.`time`) BETWEEN \
            transform(__src.`series_id`, CAST([7,9], 'Array(UInt64)'), CAST([100,-5], 'Array(Int64)'), toInt64(9223372036854775807)) \
            AND transform(__src.`series_id`, CAST([7,9], 'Array(UInt64)'), CAST([200,5], 'Array(Int64)'), toInt64(-9223372036854775808)))";
        let (alone, rest) = sql.split_once(" UNION ALL ").expect("two branches");
        assert!(alone.contains(&format!("AND NOT {shared}")), "{alone}");
        assert!(!alone.contains("GROUP BY"), "{alone}");
        assert!(
            rest.contains(&format!(
                "AND {shared} GROUP BY __src.`series_id`, __src.`time`"
            )),
            "{rest}"
        );
    }

    #[test]
    fn the_last_point_of_each_group_reads_each_series_tail() {
        let mut p = plan();
        p.outer_where.clear();
        p.offset = None;
        p.limit = Some(1);
        let sql = render(&p, &Rewrites::None);
        assert!(
            sql.contains("(__src.`series_id`, __src.`time`) IN (SELECT __src.`series_id`, max(__src.`time`) FROM `d\\`b`.`c'pu` AS __src \
                          WHERE __src.`time` >= fromUnixTimestamp64Nano(toInt64(10)) AND (__src.`host` = 'a') AND (__src.`f` IS NOT NULL) GROUP BY __src.`series_id`)"),
            "{sql}"
        );
        // Every field shown: every row is a point that shows.
        let mut all = p.clone();
        all.shows_every_point = true;
        assert!(
            render(&all, &Rewrites::None)
                .contains("AND (__src.`host` = 'a') GROUP BY __src.`series_id`)"),
            "{}",
            render(&all, &Rewrites::None)
        );
        // No condition at all: the tail of every series.
        let mut bare = all.clone();
        bare.inner_where.clear();
        bare.range.min = None;
        assert!(
            render(&bare, &Rewrites::None).contains("IN (SELECT __src.`series_id`, max(__src.`time`) FROM `d\\`b`.`c'pu` AS __src GROUP BY __src.`series_id`)"),
            "{}",
            render(&bare, &Rewrites::None)
        );
        // Another point could be the answer: a field condition, a limit past
        // one, an offset, ascending order.
        let mut cond = p.clone();
        cond.outer_where = vec!["(`f` > toInt64(1))".into()];
        let mut two = p.clone();
        two.limit = Some(2);
        let mut offset = p.clone();
        offset.offset = Some(1);
        let mut asc = p.clone();
        asc.order_desc = false;
        for other in [cond, two, offset, asc] {
            assert!(!render(&other, &Rewrites::None).contains("max(__src.`time`)"));
        }
    }

    #[test]
    fn unflushed_rows_are_grouped_with_the_table_rows_of_their_span() {
        let table = |k: usize| format!("ArrowStream('t_{k}')");
        let u = Unflushed::new(&table, 100, 200);
        let sql = render_with(&plan(), &Rewrites::None, Some(&u));
        let span = "(toUnixTimestamp64Nano(__src.`time`) BETWEEN 100 AND 200)";
        // Rows outside the span as written; inside it, grouped with the
        // unflushed rows; every reference of the batch its own name.
        assert!(sql.contains(&format!("AND NOT {span} UNION ALL ")), "{sql}");
        assert!(
            sql.contains(&format!(
                "FROM `d\\`b`.`c'pu` AS __src WHERE __src.`time` >= fromUnixTimestamp64Nano(toInt64(10)) \
                 AND (__src.`host` = 'a') AND {span} UNION ALL SELECT __src.`time` AS `time`, \
                 __src.`series_id` AS `series_id`, __src.`__seq` AS `__seq`, __src.`__row` AS `__row`, \
                 __src.`host` AS `host`, __src.`f` AS `f` FROM ArrowStream('t_0') AS __src WHERE"
            )),
            "{sql}"
        );
        assert_eq!(u.used(), 1);
        // A tail read looks for each series' last time in both, through
        // references of its own (one per use of the conditions).
        let mut p = plan();
        p.outer_where.clear();
        p.offset = None;
        p.limit = Some(1);
        let u = Unflushed::new(&table, 100, 200);
        let sql = render_with(&p, &Rewrites::All, Some(&u));
        let names: Vec<usize> = (0..u.used())
            .filter(|k| sql.contains(&format!("ArrowStream('t_{k}')")))
            .collect();
        assert_eq!(names.len(), u.used(), "{sql}");
        assert_eq!(sql.matches("ArrowStream(").count(), u.used(), "{sql}");
        assert!(u.used() >= 3, "{sql}");
        // Nothing unflushed: the statement is the one without.
        assert_eq!(
            render_with(&plan(), &Rewrites::None, None),
            render(&plan(), &Rewrites::None)
        );
    }
}
