//! Pushed-down reads: each shard's answer to a statement the node wrote over its table
//! (one row per group and interval of an aggregate, `storage/src/influxql/pushdown/`),
//! every shard's rows in one Arrow batch.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch};
use arrow::datatypes::{Field, Schema};
use engine::table::ColumnKind;

use crate::read::folds_listing;
use crate::row_binary::Builder;
use crate::series_tags::{GroupTag, GroupedBy};
use crate::{folded, schema, Cluster, ClusterError, Grouped, IdentitySnapshot, TagValues};

impl Cluster {
    /// The answer of `sql(k, snapshot)` on shard `k` — a `SELECT` whose columns are named
    /// `__p0`, `__p1`, … over [`Cluster::shard_table`] of `db`.`measurement`, grouping by
    /// point identity only the rows `snapshot` says may share a point (`None`: every row) —
    /// from every shard at once, each checked by its index after its read and read again
    /// if a rewrite landed meanwhile (`Cluster::read_identified`); every shard's rows in
    /// one batch, column `i` read as `out[i]` says (cast to the kind's shard type, so the
    /// binary answer's layout is known); `None` when no shard answers a row, with what the
    /// shards grouped. `columns` are made on a shard that lacks them first. More than
    /// `max_rows` rows over all shards fail the read: what a pushed-down aggregate sends
    /// (`storage/src/influxql/pushdown.rs`) is one row per group and interval. `prune`: the
    /// tag values its rows all hold; `sql` is then given the series of those on the shard,
    /// to add [`series_in`](crate::series_of_tags::series_in) of them to its condition
    /// (`None`: every series, [`crate::series_of_tags`]).
    #[allow(clippy::too_many_arguments)]
    pub fn read_partials(
        &self,
        db: &str,
        measurement: &str,
        columns: &[(String, ColumnKind)],
        prune: Option<&TagValues>,
        sql: impl Fn(usize, Option<&IdentitySnapshot>, Option<&[u64]>) -> String + Sync,
        out: &[(String, ColumnKind)],
        max_rows: u64,
    ) -> Result<(Option<RecordBatch>, Grouped), ClusterError> {
        let sql = |k, snapshot: Option<&IdentitySnapshot>, series: Option<&[u64]>, _| {
            sql(k, snapshot, series)
        };
        self.read_partials_by_series(db, measurement, columns, prune, &[], sql, out, max_rows)
    }

    /// [`Cluster::read_partials`] where the statement groups by the tags `tags` (columns of
    /// `out`): `sql`'s last argument says whether shard `k` groups by series instead, then
    /// with the series id (`series_id` cast to `String`) in each of those columns; the node
    /// puts each series' value of the tag in its place ([`crate::series_tags`]).
    #[allow(clippy::too_many_arguments)]
    pub fn read_partials_by_series(
        &self,
        db: &str,
        measurement: &str,
        columns: &[(String, ColumnKind)],
        prune: Option<&TagValues>,
        tags: &[GroupTag],
        sql: impl Fn(usize, Option<&IdentitySnapshot>, Option<&[u64]>, bool) -> String + Sync,
        out: &[(String, ColumnKind)],
        max_rows: u64,
    ) -> Result<(Option<RecordBatch>, Grouped), ClusterError> {
        let list: Vec<String> = out
            .iter()
            .enumerate()
            .map(|(i, (_, k))| format!("CAST(__p{i} AS {})", schema::shard_type(*k)))
            .collect();
        let cells: Vec<folded::Cell> = out.iter().map(|(_, k)| folded::Cell::Column(*k)).collect();
        let placeholders: Vec<String> = out.iter().map(|(_, k)| folded::placeholder(*k)).collect();
        let (answers, grouped) =
            self.read_identified(db, measurement, columns, prune, |k, snapshot, series| {
                let read = |by_series: bool| {
                    let from = format!("({})", sql(k, snapshot, series, by_series));
                    let limit = max_rows.saturating_add(1);
                    if snapshot.is_none() || !folds_listing() {
                        let sql = format!(
                            "SELECT {} FROM {from} LIMIT {limit} FORMAT RowBinary",
                            list.join(", ")
                        );
                        return Ok((self.http.statement_bytes(k, &sql)?, None));
                    }
                    let sql =
                        folded::statement(&list, &placeholders, &from, limit, db, measurement);
                    self.read_folded(k, &sql, &cells)
                };
                if !self.groups_by_series(k, db, measurement, tags)? {
                    if !tags.is_empty() {
                        GroupedBy::Tags.count();
                    }
                    return read(false);
                }
                let (rows, listed) = read(true)?;
                let cells = &cells;
                match self.tags_of_series(
                    k,
                    db,
                    measurement,
                    tags,
                    cells,
                    &rows,
                    listed.as_deref(),
                )? {
                    Some(rows) => {
                        GroupedBy::Series.count();
                        Ok((rows, listed))
                    }
                    None => {
                        GroupedBy::TagsAgain.count();
                        read(false)
                    }
                }
            })?;
        let mut cols: Vec<Builder> = out.iter().map(|(_, k)| Builder::new(*k)).collect();
        let rows = self.each_row(&answers, max_rows, |r| {
            cols.iter_mut().try_for_each(|b| b.read(r))
        })?;
        if rows == 0 {
            return Ok((None, grouped));
        }
        let arrays: Vec<ArrayRef> = cols.into_iter().map(Builder::finish).collect();
        let fields: Vec<Field> = out
            .iter()
            .zip(&arrays)
            .map(|((name, kind), a)| {
                Field::new(name, a.data_type().clone(), *kind != ColumnKind::Tag)
            })
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
            .map(|b| (Some(b), grouped))
            .map_err(|e| ClusterError::Engine(engine::EngineError::Arrow(e.to_string())))
    }

    /// Shard `k`'s answer to a folded read `sql` ([`folded::statement`]): its rows as the
    /// plain read would have answered them, and the listing's lines.
    pub(crate) fn read_folded(
        &self,
        k: usize,
        sql: &str,
        cells: &[folded::Cell],
    ) -> Result<(Vec<u8>, Option<String>), ClusterError> {
        let answer = self.http.statement_bytes(k, sql)?;
        let (rows, listed) =
            folded::split(&answer, cells).map_err(|message| self.unexpected_answer(k, message))?;
        Ok((rows, Some(listed)))
    }

    /// The table of `db`.`measurement` on each shard, as [`Cluster::read_partials`]'
    /// statements name it.
    pub fn shard_table(db: &str, measurement: &str) -> String {
        schema::table(db, measurement)
    }
}
