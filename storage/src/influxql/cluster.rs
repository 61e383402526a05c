//! Reads of points on a ClickHouse cluster (`[storage] engine = "clickhouse"`, issue #25):
//! a measurement's rows in the statement's time range from every shard, with the
//! acknowledged rows not delivered yet, handed to the engine as one Arrow batch in the
//! embedded table's layout, which the statement reads as it reads a subquery's answer:
//! every row grouped into points (InfluxDB's identity: a point written twice reads as
//! one, the later write winning field by field), bounded by `[sql] max_result_rows`.
//! What the shards send is cut down where that cannot change the answer: only the
//! columns the statement's plan reads, only the rows of series that meet its
//! tag-only conditions ([`shard_condition`]), and only the points that meet its field
//! comparisons where a row is known to be a point (`point_condition.rs`).

use cluster::Cluster;
use engine::table::ColumnKind;
use engine::{quote_ident, quote_string, ArrowScan};
use influxql::ast::{BinaryOp, DataType, Expr, Literal};
use ingest::MeasurementSchema;

use super::error::InfluxqlError;
use super::plan::Plan;
use super::point_condition::point_condition;
use super::series_prune::tag_values;
use super::top_candidates::{top_candidates, CandidatesRead};
use super::unflushed::{acked_parts, kind};
use crate::Storage;

/// Undelivered series beyond which a raw read's field condition stays on the node (each is
/// named in the shards' statement).
pub(crate) const MAX_WHOLE_SERIES: usize = 2_000;

/// The distinct `series_id`s of `batch` (undelivered rows), sorted.
pub(crate) fn series_of(batch: &engine::arrow::array::RecordBatch) -> Vec<u64> {
    use engine::arrow::array::AsArray;
    let mut ids: Vec<u64> = batch
        .column_by_name(engine::table::SERIES_ID)
        .and_then(|c| {
            c.as_primitive_opt::<engine::arrow::datatypes::UInt64Type>()
                .cloned()
        })
        .map(|c| c.values().to_vec())
        .unwrap_or_default();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The shard columns a plan reads: only its tags and fields cross the network.
pub(crate) fn columns_read(schema: &MeasurementSchema, plan: &Plan) -> Vec<(String, ColumnKind)> {
    let tags = schema.tag_keys.iter().filter(|t| plan.tags.contains(t));
    let fields = schema
        .fields
        .iter()
        .filter(|(f, _)| plan.fields.contains(f));
    tags.map(|t| (t.clone(), ColumnKind::Tag))
        .chain(fields.map(|(f, t)| (f.clone(), kind(*t))))
        .collect()
}

/// The error of a read of `what` from the cluster that could not be done now.
pub(crate) fn unavailable(what: String) -> impl Fn(String) -> InfluxqlError {
    move |e| {
        InfluxqlError::from(engine::SqlError::Unavailable(format!(
            "cannot read {what} from the ClickHouse cluster: {e}"
        )))
    }
}

impl Storage {
    /// This node's acknowledged rows of `schema`'s measurement in `[min, max]` with
    /// `columns`, those the shards may not hold yet. Taken before the shards are read: a
    /// row delivered meanwhile is in both, and reads as one point (same version).
    pub(crate) fn undelivered(
        &self,
        db: &str,
        schema: &MeasurementSchema,
        columns: &[(String, ColumnKind)],
        (min, max): (i64, i64),
        cancel: &engine::SqlCancel,
    ) -> Result<Option<engine::arrow::array::RecordBatch>, InfluxqlError> {
        let acked = self.wal.last_seq();
        let parts = acked_parts(
            self.reads.unflushed(),
            db,
            &schema.name,
            min,
            max,
            acked,
            self.row_limit(),
            cancel,
        )?;
        let rows = parts.map(|parts| flush::unflushed::rows_in(&parts, columns, min, max));
        let rows = rows.transpose();
        Ok(rows
            .map_err(|e| unavailable(format!("{:?}", schema.name))(e.to_string()))?
            .flatten())
    }

    /// The engine for a read, unless the server is shutting down.
    fn read_engine(&self) -> Result<engine::Engine, InfluxqlError> {
        self.engine()
            .map_err(|_| engine::SqlError::Unavailable("the server is shutting down".into()).into())
    }

    /// The rows of `schema` in `range` (shards and not yet delivered) as an Arrow scan in
    /// the embedded layout; `None` when there is none.
    pub(crate) fn cluster_scan(
        &self,
        cluster: &Cluster,
        db: &str,
        schema: &MeasurementSchema,
        probe: &Plan,
        condition: &[Expr],
        cancel: &engine::SqlCancel,
    ) -> Result<Option<ArrowScan>, InfluxqlError> {
        let range = &probe.range;
        let engine = self.read_engine()?;
        let unavailable = unavailable(format!("{:?}", schema.name));
        let columns = columns_read(schema, probe);
        let (min, max) = (range.min.unwrap_or(i64::MIN), range.max.unwrap_or(i64::MAX));
        let max_rows = self.row_limit();
        let pending = self.undelivered(db, schema, &columns, (min, max), cancel)?;
        let first = first_points(probe, db, schema, condition, min, max);
        // Each group's last point (Grafana's current value, TSBS lastpoint) is one of its
        // series' last points: only those cross the network. Every point must show (a point
        // without the selected fields would hide it).
        let last_per_series = probe.asks_last_point() && probe.shows_every_point;
        // A field condition on the shards, but for the series with undelivered rows (one may
        // rewrite the field it reads): those send every row.
        let whole: Vec<u64> = pending.as_ref().map(series_of).unwrap_or_default();
        let pointwise = (first.is_none() && !last_per_series && whole.len() <= MAX_WHOLE_SERIES)
            .then(|| point_condition(condition, schema, &columns))
            .flatten();
        let series_of = tag_values(condition, schema);
        // A lone `top`/`bottom`: each shard sends only the points that can be picked, the
        // series with undelivered rows read whole beside them (`top_candidates.rs`;
        // `CHINGEST_CLUSTER_TOP_CANDIDATES=0`: every row, for comparisons).
        let table = Cluster::shard_table(db, &schema.name);
        let candidates = (first.is_none()
            && !last_per_series
            && whole.len() <= MAX_WHOLE_SERIES
            && std::env::var("CHINGEST_CLUSTER_TOP_CANDIDATES").as_deref() != Ok("0"))
        .then(|| top_candidates(probe, schema, condition))
        .flatten()
        .filter(|c| c.sql(&table, &columns, (min, max), &whole, None).is_some());
        super::pushdown::count_read(match candidates {
            Some(_) => "candidates",
            None => "rows",
        });
        let too_many = |e: cluster::ClusterError| match e {
            cluster::ClusterError::TooManyRows { .. } => {
                InfluxqlError::from(engine::SqlError::LimitExceeded(e.to_string()))
            }
            other => unavailable(other.to_string()),
        };
        if let Some(candidates) = &candidates {
            let read = CandidatesRead {
                db,
                measurement: &schema.name,
                table: &table,
                columns: &columns,
                range: (min, max),
                whole: &whole,
                whole_condition: shard_condition(condition, schema),
            };
            let stored = candidates
                .read(cluster, &read, max_rows)
                .map_err(too_many)?;
            let batches: Vec<_> = stored.into_iter().chain(pending).collect();
            let Some(first) = batches.first() else {
                return Ok(None);
            };
            let batch = engine::arrow::compute::concat_batches(&first.schema(), &batches)
                .map_err(|e| unavailable(e.to_string()))?;
            return engine
                .arrow_scan(batch)
                .map(Some)
                .map_err(|e| unavailable(e.to_string()));
        }
        let stored = cluster
            .read_rows(
                db,
                &schema.name,
                &columns,
                cluster::RowSelection {
                    min,
                    max,
                    condition: first
                        .or_else(|| shard_condition(condition, schema))
                        .as_deref(),
                    last_per_series,
                    pointwise: pointwise.as_deref(),
                    whole_series: &whole,
                    series_of: series_of.as_ref(),
                    source: None,
                },
                max_rows,
            )
            .map_err(too_many)?;
        let batch = match (stored, pending) {
            (None, None) => return Ok(None),
            (Some(b), None) | (None, Some(b)) => b,
            (Some(a), Some(b)) => {
                engine::arrow::compute::concat_batches(&a.schema(), &[a.clone(), b])
                    .map_err(|e| unavailable(e.to_string()))?
            }
        };
        engine
            .arrow_scan(batch)
            .map(Some)
            .map_err(|e| unavailable(e.to_string()))
    }
}

impl Storage {
    /// Every series of `schema` on the cluster — the shards' distinct tag values and those of
    /// the acknowledged rows not delivered yet — as an Arrow scan with one string column per
    /// tag key (one `__iq_none` column for a measurement without tags): what `SHOW … WHERE`
    /// reads in place of the table, so the condition runs as it does on the embedded engine.
    /// `None`: no series.
    pub(crate) fn cluster_tag_scan(
        &self,
        cluster: &Cluster,
        db: &str,
        schema: &MeasurementSchema,
        cancel: &engine::SqlCancel,
    ) -> Result<Option<ArrowScan>, InfluxqlError> {
        use engine::arrow::array::{ArrayRef, RecordBatch, StringArray};
        use engine::arrow::datatypes::{DataType, Field, Schema};
        let engine = self.read_engine()?;
        let unavailable = unavailable(format!("the series of {:?}", schema.name));
        let max_rows = self.row_limit();
        let keys = &schema.tag_keys;
        let acked = self.wal.last_seq();
        let columns: Vec<(String, ColumnKind)> =
            keys.iter().map(|t| (t.clone(), ColumnKind::Tag)).collect();
        let pending = acked_parts(
            self.reads.unflushed(),
            db,
            &schema.name,
            i64::MIN,
            i64::MAX,
            acked,
            max_rows,
            cancel,
        )?
        .map(|parts| flush::unflushed::rows_in(&parts, &columns, i64::MIN, i64::MAX))
        .transpose()
        .map_err(|e| unavailable(e.to_string()))?
        .flatten();
        let mut tuples = cluster
            .distinct_tags(db, &schema.name, keys, max_rows)
            .map_err(|e| match e {
                cluster::ClusterError::TooManyRows { .. } => {
                    InfluxqlError::from(engine::SqlError::LimitExceeded(e.to_string()))
                }
                other => unavailable(other.to_string()),
            })?;
        if let Some(batch) = &pending {
            let cols: Vec<ArrayRef> = keys
                .iter()
                .map(|k| {
                    let c = batch
                        .column_by_name(k)
                        .ok_or_else(|| unavailable(format!("no column {k:?}")))?;
                    engine::arrow::compute::cast(c, &DataType::Utf8)
                        .map_err(|e| unavailable(e.to_string()))
                })
                .collect::<Result<_, _>>()?;
            for i in 0..batch.num_rows() {
                tuples.insert(
                    cols.iter()
                        .map(|c| {
                            c.as_any()
                                .downcast_ref::<StringArray>()
                                .map_or("", |s| s.value(i))
                                .to_string()
                        })
                        .collect(),
                );
            }
        }
        let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = if keys.is_empty() {
            // A measurement without tags has one series (when it has rows).
            let stored = cluster
                .has_rows(db, &schema.name)
                .map_err(|e| unavailable(e.to_string()))?;
            let n = usize::from(pending.is_some() || stored);
            (
                vec![Field::new("__iq_none", DataType::Utf8, false)],
                vec![std::sync::Arc::new(StringArray::from(vec![""; n])) as ArrayRef],
            )
        } else {
            keys.iter()
                .enumerate()
                .map(|(i, k)| {
                    let values: StringArray = tuples.iter().map(|t| Some(t[i].as_str())).collect();
                    (
                        Field::new(k, DataType::Utf8, false),
                        std::sync::Arc::new(values) as ArrayRef,
                    )
                })
                .unzip()
        };
        if arrays[0].is_empty() {
            return Ok(None);
        }
        let batch = RecordBatch::try_new(std::sync::Arc::new(Schema::new(fields)), arrays)
            .map_err(|e| unavailable(e.to_string()))?;
        engine
            .arrow_scan(batch)
            .map(Some)
            .map_err(|e| unavailable(e.to_string()))
    }
}

/// A raw read with `LIMIT n` (and `OFFSET m`), ascending or descending, whose condition the
/// shards evaluate whole (tags only): each group's first `m + n` points in the statement's
/// order are among its series' first `m + n` points that show (a selected field set), so only
/// those points' rows cross the network: the shard condition for them, `None` where that cut
/// does not apply (a field condition could skip points, a transformation reads past the limit;
/// the last point of each group has its own cut). A rewrite not delivered yet cannot move a
/// point into them: it never unsets a field.
fn first_points(
    plan: &Plan,
    db: &str,
    schema: &MeasurementSchema,
    condition: &[Expr],
    min: i64,
    max: i64,
) -> Option<String> {
    let n = plan.limit?.checked_add(plan.offset.unwrap_or(0))?;
    if plan.aggregate.is_some()
        || plan.source.is_some()
        || !plan.outer_where.is_empty()
        || plan.transforms()
        || plan.asks_last_point()
    {
        return None;
    }
    // Each shown value one field's column: a point shows iff a row of it has one of them.
    let shown: Vec<String> = plan
        .nonnull
        .iter()
        .map(|c| {
            let f = plan.fields.iter().find(|f| quote_ident(f) == *c)?;
            Some(format!("isNotNull({})", quote_ident(f)))
        })
        .collect::<Option<_>>()?;
    if shown.is_empty() {
        return None;
    }
    let tags = strict_shard_condition(condition, schema)?;
    let mut filter = vec![
        format!("`time` >= {min}"),
        format!("`time` <= {max}"),
        format!("({})", shown.join(" OR ")),
    ];
    filter.extend(tags.map(|t| format!("({t})")));
    let filter = filter.join(" AND ");
    let table = Cluster::shard_table(db, &schema.name);
    let dir = if plan.order_desc { " DESC" } else { "" };
    Some(format!(
        "{filter} AND (`series_id`, `time`) IN (SELECT `series_id`, `time` FROM \
         (SELECT DISTINCT `series_id`, `time` FROM {table} WHERE {filter}) \
         ORDER BY `series_id`, `time`{dir} LIMIT {n} BY `series_id`)"
    ))
}

/// The conjuncts of a statement's condition (time taken out) that only compare tags of
/// `schema` with strings or regular expressions, as one condition every supported shard
/// server evaluates as the embedded engine does (`=`, `!=`, `match()` over `String` tag
/// columns, `''` where a row lacks the tag); `None` when no conjunct qualifies. The shards
/// then send only the rows of matching series; the statement still applies its whole
/// condition to them, so leaving a conjunct out only moves more rows.
pub(crate) fn shard_condition(rest: &[Expr], schema: &MeasurementSchema) -> Option<String> {
    let pushed: Vec<String> = rest
        .iter()
        .filter_map(|e| tag_condition(e, schema))
        .collect();
    (!pushed.is_empty()).then(|| pushed.join(" AND "))
}

/// The whole of a statement's condition (time taken out) as [`shard_condition`] writes it,
/// every conjunct: what the shards apply for an aggregate they compute
/// (`pushdown.rs`); `None` when a conjunct cannot be written so, `Some(None)` when there is
/// no condition.
pub(crate) fn strict_shard_condition(
    rest: &[Expr],
    schema: &MeasurementSchema,
) -> Option<Option<String>> {
    let pushed: Vec<String> = rest
        .iter()
        .map(|e| condition(e, schema, true))
        .collect::<Option<_>>()?;
    Some((!pushed.is_empty()).then(|| pushed.join(" AND ")))
}

fn tag_condition(e: &Expr, schema: &MeasurementSchema) -> Option<String> {
    condition(e, schema, false)
}

/// `e` as SQL for the shards; `strict`: all of it, else the conjuncts that can be.
fn condition(e: &Expr, schema: &MeasurementSchema, strict: bool) -> Option<String> {
    let tag_condition = |e: &Expr, schema: &MeasurementSchema| condition(e, schema, strict);
    match e {
        Expr::Paren(inner) => tag_condition(inner, schema),
        Expr::Binary { op, lhs, rhs } => match op {
            BinaryOp::And => match (tag_condition(lhs, schema), tag_condition(rhs, schema)) {
                (Some(l), Some(r)) => Some(format!("({l} AND {r})")),
                // A conjunct left out widens the read, never narrows it.
                (Some(one), None) | (None, Some(one)) if !strict => Some(one),
                _ => None,
            },
            BinaryOp::Or => Some(format!(
                "({} OR {})",
                tag_condition(lhs, schema)?,
                tag_condition(rhs, schema)?
            )),
            BinaryOp::Eq | BinaryOp::NotEq => {
                let (tag, value) = match (strip(lhs), strip(rhs)) {
                    (Expr::VarRef { name, data_type }, Expr::Literal(Literal::String(v)))
                    | (Expr::Literal(Literal::String(v)), Expr::VarRef { name, data_type }) => {
                        (tag_of(name, *data_type, schema)?, v)
                    }
                    _ => return None,
                };
                let op = if *op == BinaryOp::Eq { "=" } else { "!=" };
                Some(format!("{} {op} {}", quote_ident(tag), quote_string(value)))
            }
            BinaryOp::EqRegex | BinaryOp::NotEqRegex => {
                let (Expr::VarRef { name, data_type }, Expr::Literal(Literal::Regex(re))) =
                    (strip(lhs), strip(rhs))
                else {
                    return None;
                };
                let m = format!(
                    "match({}, {})",
                    quote_ident(tag_of(name, *data_type, schema)?),
                    quote_string(&re.0)
                );
                Some(if *op == BinaryOp::EqRegex {
                    m
                } else {
                    format!("(NOT {m})")
                })
            }
            _ => None,
        },
        _ => None,
    }
}

pub(super) fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(inner) => strip(inner),
        other => other,
    }
}

/// `name` when it is a tag of `schema` and can only mean the tag.
pub(super) fn tag_of<'a>(
    name: &'a str,
    cast: Option<DataType>,
    schema: &MeasurementSchema,
) -> Option<&'a str> {
    let tag = schema.tag_keys.iter().any(|k| k == name);
    let field = schema.fields.iter().any(|(f, _)| f == name);
    match cast {
        Some(DataType::Tag) if tag => Some(name),
        None if tag && !field => Some(name),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use influxql::ast::Statement;
    use ingest::FieldType;

    use super::*;

    fn pushed(q: &str) -> Option<String> {
        let Statement::Select(stmt) = influxql::parse_statement(q).unwrap() else {
            panic!("not a SELECT: {q}");
        };
        let filter = super::super::range::split(stmt.condition.as_ref(), 0).unwrap();
        let schema = MeasurementSchema {
            name: "cpu".into(),
            tag_keys: vec!["both".into(), "host".into(), "region".into()],
            fields: vec![
                ("both".into(), FieldType::Float),
                ("v".into(), FieldType::Float),
            ],
        };
        shard_condition(&filter.rest, &schema)
    }

    #[test]
    fn only_tag_conditions_reach_the_shards_and_quoted() {
        assert_eq!(
            pushed(
                "SELECT v FROM cpu WHERE (host = 'a' OR 'b' = host) AND v > 1 \
                 AND region =~ /^us/ AND time > 0"
            )
            .as_deref(),
            Some("(`host` = 'a' OR `host` = 'b') AND match(`region`, '^us')")
        );
        // A conjunct with a field widens nothing: it stays on the node.
        assert_eq!(pushed("SELECT v FROM cpu WHERE host != 'a' OR v > 1"), None);
        assert_eq!(
            pushed("SELECT v FROM cpu WHERE host !~ /x/ AND (v > 1 AND region = 'r')").as_deref(),
            Some("(NOT match(`host`, 'x')) AND `region` = 'r'")
        );
        // A name that is a tag and a field is the tag only when cast so; an unknown name
        // (InfluxDB's absent tag, '') and a non-string comparison are not pushed.
        assert_eq!(pushed("SELECT v FROM cpu WHERE both = 'x'"), None);
        assert_eq!(
            pushed("SELECT v FROM cpu WHERE both::tag = 'x'").as_deref(),
            Some("`both` = 'x'")
        );
        assert_eq!(pushed("SELECT v FROM cpu WHERE nosuch = ''"), None);
        assert_eq!(pushed("SELECT v FROM cpu WHERE host = 1"), None);
        // Hostile values stay literals.
        assert_eq!(
            pushed(r"SELECT v FROM cpu WHERE host = 'a\'); DROP TABLE cpu; --\\'").as_deref(),
            Some(r"`host` = 'a\'); DROP TABLE cpu; --\\'")
        );
    }
}
