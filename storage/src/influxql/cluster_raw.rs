//! A cluster's raw read whose condition the shards apply whole (issue #43: TSBS
//! `high-cpu-all`, `SELECT * FROM cpu WHERE usage_user > 90` over every host): the answer
//! rows are built here from the shards' rows, with no engine statement over them.
//!
//! A series lives on one shard, and a shard applies the condition only to the series its
//! index lists as holding no point written twice (`cluster::RowSelection::pointwise`):
//! there a row is a point, and a row sent is a point the statement keeps. Only the other
//! series' rows (sent whole: rewritten on their shard, or with rows this node has not
//! delivered yet) and the undelivered rows need the engine's merge into points and its
//! condition; they take the engine statement every shard row took before. Both kinds of
//! rows are then sorted together here (`row_order.rs`).
//!
//! Why: that statement over every shard row (96,589 rows of 21 columns) was 437 ms of the
//! cluster's 860 ms p50 for `high-cpu-all` at 200 hosts, where building the rows here is a
//! few tens (`test_results/latest/tsbs_cluster.md`, run 14).

use std::sync::Arc;
use std::time::{Duration, Instant};

use cluster::{Cluster, RowSelection, Unfiltered};
use engine::arrow::array::{Array, AsArray, RecordBatch, StringArray};
use engine::arrow::datatypes::{TimestampNanosecondType, UInt64Type};
use influxql::ast::Expr;
use ingest::MeasurementSchema;

use super::cluster::{columns_read, series_of, shard_condition, unavailable, MAX_WHOLE_SERIES};
use super::error::InfluxqlError;
use super::plan::Plan;
use super::point_condition::exact_point_condition;
use super::row_order::RowOrder;
use super::rows::{Cells, Row};
use super::series::Value;
use super::series_prune::tag_values;
use super::shown::{Col, Names};
use super::InfluxqlRequest;
use crate::Storage;

/// The plan of the same statement over a table of shard rows (its SQL name given).
pub(crate) type Replan<'a> = dyn Fn(&str) -> Result<Option<Plan>, InfluxqlError> + 'a;

/// What the rows built here hold: the plan's columns, then what the sort reads
/// ([`RowOrder::of`]: each order tag not shown, as the engine has it, then the series id).
struct Layout {
    cols: Vec<Col>,
    order_tags: Vec<String>,
    /// Fields of which one set shows a point (empty: the condition implies one).
    present: Vec<String>,
}

impl Layout {
    /// The plan's when each column is a field, a tag or null as `expr.rs`'s `value_ref`
    /// renders them (as the hot store's raw read takes them, `hot/raw.rs`), and the sort's
    /// added columns are the order tags not shown and the series id.
    fn of(plan: &Plan, schema: &MeasurementSchema, added: usize) -> Option<Layout> {
        let names = Names::of(schema);
        let cols = names.columns(plan)?;
        let order_tags: Vec<String> = plan
            .order_tags
            .iter()
            .filter(|t| !cols.iter().any(|c| matches!(c, Col::Tag(k) if k == *t)))
            .cloned()
            .collect();
        let present = match plan.nonnull_implied {
            true => Vec::new(),
            false => plan
                .nonnull
                .iter()
                .map(|sql| names.field(sql))
                .collect::<Option<Vec<_>>>()?,
        };
        (order_tags.len() + 1 == added).then_some(Layout {
            cols,
            order_tags,
            present,
        })
    }
}

/// Whether `plan` is a raw read whose rows need nothing after the merge but the sort: no
/// aggregate, transformation or subquery, no `LIMIT`/`OFFSET` (the engine's), not a last
/// point (read by its own path).
fn applies(plan: &Plan) -> bool {
    plan.aggregate.is_none()
        && plan.source.is_none()
        && !plan.transforms()
        && plan.limit.is_none()
        && plan.offset.is_none()
        && !plan.asks_last_point()
        && plan.columns.iter().all(|c| c.reducer.is_none())
}

impl Storage {
    /// The answer rows of `probe` (a raw read of `schema` on `cluster`), in the answer's
    /// order, and the time the engine took to merge some of them (none if it had none to
    /// merge); `None` when the shards cannot apply its whole condition (`condition`, the
    /// time taken out) or its columns are not plain fields and tags: then nothing was read.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn cluster_raw_rows(
        &self,
        cluster: &Cluster,
        db: &str,
        schema: &MeasurementSchema,
        probe: &Plan,
        condition: &[Expr],
        req: &InfluxqlRequest<'_>,
        replan: &Replan<'_>,
    ) -> Result<Option<(Vec<Row>, Duration)>, InfluxqlError> {
        if !applies(probe) || std::env::var("CHINGEST_CLUSTER_RAW_ROWS").as_deref() == Ok("0") {
            return Ok(None);
        }
        let Some((order, added)) = RowOrder::of(probe, "`series_id`") else {
            return Ok(None);
        };
        let Some(layout) = Layout::of(probe, schema, added.len()) else {
            return Ok(None);
        };
        let columns = columns_read(schema, probe);
        let Some(pointwise) = exact_point_condition(condition, schema, &columns) else {
            return Ok(None);
        };
        let range = &probe.range;
        let (min, max) = (range.min.unwrap_or(i64::MIN), range.max.unwrap_or(i64::MAX));
        let pending = self.undelivered(db, schema, &columns, (min, max), req.cancel)?;
        let whole: Vec<u64> = pending.as_ref().map(series_of).unwrap_or_default();
        if whole.len() > MAX_WHOLE_SERIES {
            return Ok(None);
        }
        super::pushdown::count_read("rows");
        let unavailable = unavailable(format!("{:?}", schema.name));
        let tags = shard_condition(condition, schema);
        let series_of_tags = tag_values(condition, schema);
        let selection = RowSelection {
            min,
            max,
            condition: tags.as_deref(),
            last_per_series: false,
            pointwise: Some(&pointwise),
            whole_series: &whole,
            series_of: series_of_tags.as_ref(),
            source: None,
        };
        let (stored, unfiltered) = cluster
            .read_points(db, &schema.name, &columns, selection, self.row_limit())
            .map_err(|e| match e {
                cluster::ClusterError::TooManyRows { .. } => {
                    InfluxqlError::from(engine::SqlError::LimitExceeded(e.to_string()))
                }
                other => unavailable(other.to_string()),
            })?;
        let (mut rows, merge) = match &stored {
            Some(batch) => built_rows(probe, &layout, batch, &unfiltered)?,
            None => (Vec::new(), None),
        };
        // The rows the engine merges into points and tests: the unfiltered series' and the
        // undelivered ones.
        let merge: Vec<RecordBatch> = merge.into_iter().chain(pending).collect();
        let merging = Instant::now();
        let mut merged = Duration::ZERO;
        if let Some(first) = merge.first() {
            let batch = engine::arrow::compute::concat_batches(&first.schema(), &merge)
                .map_err(|e| unavailable(e.to_string()))?;
            let engine = self
                .engine()
                .map_err(|_| engine::SqlError::Unavailable("the server is shutting down".into()))?;
            let scan = engine
                .arrow_scan(batch)
                .map_err(|e| unavailable(e.to_string()))?;
            let name = scan.table_sql(0);
            if let Some(plan) = replan(&name)? {
                let (engine_rows, engine_order) =
                    self.source_rows(&plan, req, &name, &scan, true)?;
                if engine_order.as_ref() != Some(&order) {
                    return Err(InfluxqlError::EngineAnswer(
                        "the merged shard rows are not in the built rows' layout".into(),
                    ));
                }
                rows.extend(engine_rows);
            }
            merged = merging.elapsed();
        }
        order.sort(&mut rows);
        Ok(Some((rows, merged)))
    }
}

/// The answer rows of `batch`'s filtered series (each row a point the statement keeps, but
/// where no shown field is set), and the rows of its unfiltered series, left to the engine.
fn built_rows(
    plan: &Plan,
    layout: &Layout,
    batch: &RecordBatch,
    unfiltered: &Unfiltered,
) -> Result<(Vec<Row>, Option<RecordBatch>), InfluxqlError> {
    let bad = |what: &str| InfluxqlError::EngineAnswer(format!("shard rows without {what}"));
    let column = |name: &str| batch.column_by_name(name).ok_or_else(|| bad(name));
    let time = column(engine::table::TIME)?
        .as_primitive_opt::<TimestampNanosecondType>()
        .ok_or_else(|| bad("a time column"))?;
    let series = column(engine::table::SERIES_ID)?
        .as_primitive_opt::<UInt64Type>()
        .ok_or_else(|| bad("a series column"))?;
    // A tag column a shard's rows lack reads as '' (`engine_schema`); one the read did not
    // ask for is '' too.
    let empty: Arc<dyn Array> = Arc::new(StringArray::from(vec![""; batch.num_rows()]));
    let tag = |name: &String| -> Result<&StringArray, InfluxqlError> {
        let c = batch.column_by_name(name).unwrap_or(&empty);
        c.as_string_opt::<i32>()
            .ok_or_else(|| bad(&format!("a string column {name:?}")))
    };
    let field = |name: &String| -> Result<Cells<'_>, InfluxqlError> {
        match batch.column_by_name(name) {
            Some(c) => Cells::of(c),
            None => Ok(Cells::Null),
        }
    };
    enum Cell<'b> {
        Field(Cells<'b>),
        Tag(&'b StringArray),
        Null,
    }
    let cells: Vec<Cell<'_>> = layout
        .cols
        .iter()
        .map(|c| {
            Ok(match c {
                Col::Field(f) => Cell::Field(field(f)?),
                Col::Tag(t) => Cell::Tag(tag(t)?),
                Col::Null => Cell::Null,
            })
        })
        .collect::<Result<_, InfluxqlError>>()?;
    let groups: Vec<&StringArray> = plan.group_tags.iter().map(tag).collect::<Result<_, _>>()?;
    let order_tags: Vec<&StringArray> = layout
        .order_tags
        .iter()
        .map(tag)
        .collect::<Result<_, _>>()?;
    let present: Vec<Cells<'_>> = layout.present.iter().map(field).collect::<Result<_, _>>()?;
    let mut unfiltered_rows = Vec::new();
    let mut rows = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let id = series.value(i);
        if unfiltered.holds(id) {
            unfiltered_rows.push(i as u32);
            continue;
        }
        if !present.is_empty() && present.iter().all(|c| matches!(c.get(i), Value::Null)) {
            continue;
        }
        // One slot more: the answer row puts the time in front (`exec::to_series`).
        let mut values = Vec::with_capacity(cells.len() + order_tags.len() + 2);
        values.extend(cells.iter().map(|c| match c {
            Cell::Field(f) => f.get(i),
            Cell::Tag(t) => match t.value(i) {
                "" => Value::Null,
                v => Value::String(v.into()),
            },
            Cell::Null => Value::Null,
        }));
        values.extend(order_tags.iter().map(|t| Value::String(t.value(i).into())));
        values.push(Value::Unsigned(id));
        rows.push(Row {
            time: Some(time.value(i)),
            group: groups.iter().map(|t| t.value(i).to_string()).collect(),
            values,
        });
    }
    let merge = match unfiltered_rows.len() {
        0 => None,
        _ => {
            let indices = engine::arrow::array::UInt32Array::from(unfiltered_rows);
            let columns = batch
                .columns()
                .iter()
                .map(|c| engine::arrow::compute::take(c, &indices, None))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| InfluxqlError::EngineAnswer(e.to_string()))?;
            let taken = RecordBatch::try_new(batch.schema(), columns)
                .map_err(|e| InfluxqlError::EngineAnswer(e.to_string()))?;
            Some(taken)
        }
    };
    Ok((rows, merge))
}
