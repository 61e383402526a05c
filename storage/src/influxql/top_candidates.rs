//! `top()` and `bottom()` on a ClickHouse cluster (issue #43): each shard sends only the
//! points that can be picked, not every row of the range. A series lives on one shard, so a
//! shard applies point identity to its own rows (each field the latest write's value, as
//! `cluster.rs`'s rows are merged on the node) and ranks the points of each output group and
//! window as the embedded path does (`selector::rank`: value, then the earlier time). A point
//! with `n` points of its group and window strictly ahead of it on its shard is never picked:
//! those `n` are in the node's answer too. So each shard sends, per group and window, its
//! points at or ahead of its `n`-th (ties on value and time included: equal points of
//! several series, which the embedded path orders by their place in the group's array), one
//! row each with the point's merged columns; the node reads them, with every row of the
//! series it holds undelivered rows of, as it reads the rows path's, and the embedded
//! statement answers over them exactly as over all rows.
//!
//! `top(f, tag…, n)` keeps the best point of each tag value, then the best `n` of those:
//! a tag value's best point is its series' best on some shard, so each shard sends each
//! series' best point per window (a series has one point per time: no ties).
//!
//! Memory: per group and window the node receives at most `n` points plus the points that
//! tie with the `n`-th on value and time (one per series of the group); per series and window
//! one point in the tag form. A shard holds one group-window's points as an array while it
//! ranks them, as the embedded engine does for the same statement.

use engine::arrow::array::RecordBatch;
use engine::quote_ident;
use engine::table::ColumnKind;
use influxql::ast::Expr;
use ingest::{FieldType, MeasurementSchema};

use super::cluster::strict_shard_condition;
use super::plan::{Plan, Window};
use super::pushdown::sql_type;

/// `n` past which the rows are read instead (a literal index in the shards' statement).
const MAX_N: usize = 1_000_000;

/// The shards' selection of `top`/`bottom` candidates for one statement.
#[derive(Debug, Clone)]
pub(crate) struct TopCandidates {
    /// Points kept per partition (ties with the last included).
    keep: usize,
    /// `bottom`: smaller values first.
    bottom: bool,
    /// `top(f, tag…, n)`: partitioned by series, each series' best point kept.
    per_series: bool,
    /// The ranked field.
    field: String,
    /// `GROUP BY` tags the measurement has (the others are `''` on every point).
    groups: Vec<String>,
    window: Option<Window>,
    /// The statement's tag conditions for the shards.
    condition: Option<String>,
}

/// `plan`'s `top`/`bottom` as shard candidates; `None` where the statement is not a lone
/// `top`/`bottom` of a numeric field (with or without the columns it shows of the picked
/// points) grouped by tags and `time(…)` without `tz()`, with conditions on tags only.
pub(crate) fn top_candidates(
    plan: &Plan,
    schema: &MeasurementSchema,
    condition: &[Expr],
) -> Option<TopCandidates> {
    let agg = plan.aggregate.as_ref()?;
    if plan.source.is_some()
        || plan.transforms()
        || !plan.outer_where.is_empty()
        || agg.zone.is_some()
        || plan.range.is_empty()
    {
        return None;
    }
    let mut reducers = plan.columns.iter().filter_map(|c| c.reducer.as_ref());
    let r = reducers.next()?;
    let bottom = match r.function.as_str() {
        "top" => false,
        "bottom" => true,
        _ => return None,
    };
    // Every other column shows a value of the picked points.
    if reducers.next().is_some()
        || plan
            .columns
            .iter()
            .any(|c| c.reducer.is_none() && c.companion.is_none())
        || r.n > MAX_N
    {
        return None;
    }
    // The one field ranked: a group without a value of it has no row either way.
    let [field] = agg.fields.as_slice() else {
        return None;
    };
    let numeric = schema.fields.iter().any(|(f, t)| {
        f == field
            && matches!(
                t,
                FieldType::Float | FieldType::Integer | FieldType::UInteger
            )
    });
    if !numeric || !plan.fields.contains(field) {
        return None;
    }
    let per_series = r.tag_args > 0;
    Some(TopCandidates {
        keep: if per_series { 1 } else { r.n },
        bottom,
        per_series,
        field: field.clone(),
        groups: plan
            .group_tags
            .iter()
            .filter(|t| schema.tag_keys.contains(t))
            .cloned()
            .collect(),
        window: agg.window,
        condition: strict_shard_condition(condition, schema)?,
    })
}

/// An `Int64` literal every supported server reads as signed.
fn int(v: i64) -> String {
    format!("toInt64({v})")
}

impl TopCandidates {
    /// The shards' statement of the candidates in `table` between `min` and `max` (ns), the
    /// series of `whole` left out (the node reads those whole): one row per candidate point
    /// with the shard table's `time`, `series_id`, `__seq` (the point's latest), `__row`
    /// (`0`) and `columns` under their names, each field its latest value. `split`: only
    /// these series may hold a point written more than once (a shard's
    /// [`cluster::IdentitySnapshot`]): the other rows are points as they are, not grouped
    /// (`None`: every row grouped).
    pub(crate) fn sql(
        &self,
        table: &str,
        columns: &[(String, ColumnKind)],
        (min, max): (i64, i64),
        whole: &[u64],
        split: Option<&[u64]>,
    ) -> Option<String> {
        let ranked = columns.iter().position(|(n, _)| *n == self.field)?;
        // `1` keeps the statement's shape where the range is unbounded on both sides.
        let mut conds = vec!["1".to_string()];
        if min > i64::MIN {
            conds.push(format!("`time` >= {}", int(min)));
        }
        if max < i64::MAX {
            conds.push(format!("`time` <= {}", int(max)));
        }
        if let Some(c) = &self.condition {
            conds.push(format!("({c})"));
        }
        if !whole.is_empty() {
            let list: Vec<String> = whole.iter().map(u64::to_string).collect();
            conds.push(format!("`series_id` NOT IN ({})", list.join(",")));
        }
        // Point identity: each field the latest write's value (`__seq`, then `__row`); each
        // value cast to its column's type, so both halves of a split read alike (a `UNION
        // ALL` of 18.16 does not cast).
        let branch = |grouped: bool, only: Option<String>| {
            let pick = |c: &str, any: bool| match (grouped, any) {
                (false, _) => c.to_string(),
                (true, true) => format!("any({c})"),
                (true, false) => format!("argMaxIf({c}, (`__seq`, `__row`), isNotNull({c}))"),
            };
            let ms = if grouped { "max(`__seq`)" } else { "`__seq`" };
            let mut points = format!("SELECT `series_id` AS __sid, `time` AS __t, {ms} AS __ms");
            for (j, (name, kind)) in columns.iter().enumerate() {
                let v = pick(&quote_ident(name), *kind == ColumnKind::Tag);
                points.push_str(&format!(", CAST({v} AS {}) AS __c{j}", sql_type(*kind)));
            }
            for g in &self.groups {
                let v = pick(&quote_ident(g), true);
                points.push_str(&format!(", CAST({v} AS String) AS {}", group_alias(g)));
            }
            let mut conds = conds.clone();
            conds.extend(only);
            points.push_str(&format!(" FROM {table} WHERE {}", conds.join(" AND ")));
            if grouped {
                points.push_str(" GROUP BY `series_id`, `time`");
            }
            points
        };
        let points = match split {
            None => branch(true, None),
            Some([]) => branch(false, None),
            Some(rewritten) => {
                let list: Vec<String> = rewritten.iter().map(u64::to_string).collect();
                let list = list.join(",");
                format!(
                    "{} UNION ALL {}",
                    branch(false, Some(format!("`series_id` NOT IN ({list})"))),
                    branch(true, Some(format!("`series_id` IN ({list})")))
                )
            }
        };
        let bucket = match self.window {
            Some(w) => {
                let (iv, off) = (int(w.interval), int(w.offset));
                format!("(__t - (((__t - {off}) % {iv}) + {iv}) % {iv})")
            }
            None => int(0),
        };
        let mut keys = vec![bucket];
        if self.per_series {
            keys.push("__sid".to_string());
        } else {
            keys.extend(self.groups.iter().map(|g| group_alias(g)));
        }
        // Element 1 the rank key's value, 2 the time, then the row's columns.
        let cells: Vec<String> = (0..columns.len()).map(|j| format!("__c{j}")).collect();
        let tuple = format!(
            "(assumeNotNull(__c{ranked}), __t, __sid, __ms, {})",
            cells.join(", ")
        );
        // Best first: the value (greatest for `top`), then the earlier time.
        let (sort, ahead) = if self.bottom {
            ("arraySort(x -> (x.1, x.2), ", "<")
        } else {
            ("arrayReverseSort(x -> (x.1, -x.2), ", ">")
        };
        let keep = self.keep;
        let ranked_sql = format!(
            "SELECT {sort}groupArray({tuple})) AS __s, __s[{keep}] AS __n, \
             if(length(__s) <= {keep}, __s, arrayFilter(x -> x.1 {ahead} __n.1 OR \
             (x.1 = __n.1 AND x.2 <= __n.2), __s)) AS __k \
             FROM ({points}) WHERE isNotNull(__c{ranked}) GROUP BY {}",
            keys.join(", ")
        );
        let mut out = "__p.2 AS `time`, __p.3 AS `series_id`, __p.4 AS `__seq`, \
                       toUInt32(0) AS `__row`"
            .to_string();
        for (j, (name, _)) in columns.iter().enumerate() {
            out.push_str(&format!(", __p.{} AS {}", j + 5, quote_ident(name)));
        }
        Some(format!(
            "SELECT {out} FROM ({ranked_sql}) ARRAY JOIN __k AS __p"
        ))
    }
}

/// What a read of candidates reads besides the statement's ranking.
pub(crate) struct CandidatesRead<'a> {
    pub(crate) db: &'a str,
    pub(crate) measurement: &'a str,
    /// The shard table ([`cluster::Cluster::shard_table`]).
    pub(crate) table: &'a str,
    pub(crate) columns: &'a [(String, ColumnKind)],
    /// `[min, max]` (ns).
    pub(crate) range: (i64, i64),
    /// The series with undelivered rows on the node: every row of theirs is read.
    pub(crate) whole: &'a [u64],
    /// The statement's tag conditions for those rows (or fewer: the statement applies all).
    pub(crate) whole_condition: Option<String>,
}

impl TopCandidates {
    /// The candidates on the shards, and every row of `read.whole`'s series, in the
    /// embedded layout of `read.columns` (what the rows path reads, cut down).
    pub(crate) fn read(
        &self,
        cluster: &cluster::Cluster,
        read: &CandidatesRead<'_>,
        max_rows: u64,
    ) -> Result<Vec<RecordBatch>, cluster::ClusterError> {
        let (min, max) = read.range;
        // Each shard's statement, given the series its index lists as rewritten.
        let statement = |split: Option<&[u64]>| {
            let sql = self.sql(read.table, read.columns, read.range, read.whole, split);
            sql.unwrap_or_default()
        };
        let selection = cluster::RowSelection {
            min,
            max,
            condition: None,
            last_per_series: false,
            pointwise: None,
            whole_series: &[],
            series_of: None,
            source: Some(cluster::Source(&statement)),
        };
        let (db, m) = (read.db, read.measurement);
        let mut out: Vec<RecordBatch> = cluster
            .read_rows(db, m, read.columns, selection, max_rows)?
            .into_iter()
            .collect();
        if !read.whole.is_empty() {
            let list: Vec<String> = read.whole.iter().map(u64::to_string).collect();
            let mut cond = format!("`series_id` IN ({})", list.join(","));
            if let Some(c) = &read.whole_condition {
                cond = format!("{cond} AND ({c})");
            }
            let rows = cluster::RowSelection {
                condition: Some(&cond),
                source: None,
                ..selection
            };
            out.extend(cluster.read_rows(db, m, read.columns, rows, max_rows)?);
        }
        Ok(out)
    }
}

/// The alias of group tag `g` in the shards' statement (a name of any characters).
fn group_alias(g: &str) -> String {
    quote_ident(&format!("__g_{g}"))
}

#[cfg(test)]
mod tests;
