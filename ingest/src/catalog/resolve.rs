//! [`Catalog::resolve`]: which points of a request are accepted, and where their values go.
//!
//! Three passes over the points: column layout and field types (pass 1), series (pass 2, with
//! the slow path for new series in `create`), and registration of fields first seen in this
//! request (pass 3).

use std::collections::HashMap;

use super::record::{field_record, MetaRecord};
use super::rules::{columns_exceeded, field_name_refused};
use super::state::{shard_of, DbCatalog};
use super::{Catalog, Limits};
use crate::error::{DropKind, DroppedPoint};
use crate::names::column_cost;
use crate::point::{same, FieldType, ParsedBatch, PointEntry};

/// Per-request, per-measurement resolution: column layout and types.
#[derive(Debug, Clone)]
pub struct MeasurementPlan<'b> {
    /// Measurement name.
    pub name: &'b [u8],
    /// Tag keys in first-seen order; `tag_cols` index into this.
    pub tag_keys: Vec<&'b [u8]>,
    /// Fields in first-seen order with their (winning) type; `field_cols` index into this.
    pub fields: Vec<(&'b [u8], FieldType)>,
    /// Accepted points of this measurement (rows of its batch).
    pub rows: usize,
    field_new: Vec<bool>,
    field_used: Vec<bool>,
    /// Fields new to the catalog in this plan, and their [`column_cost`]s.
    new_columns: usize,
    new_bytes: usize,
    /// Column by name once a plan has more than [`SMALL`] tag keys / fields (a scan per
    /// lookup made wide points quadratic).
    tag_index: HashMap<&'b [u8], usize>,
    field_index: HashMap<&'b [u8], usize>,
}

impl<'b> MeasurementPlan<'b> {
    fn new(name: &'b [u8]) -> MeasurementPlan<'b> {
        MeasurementPlan {
            name,
            tag_keys: Vec::new(),
            fields: Vec::new(),
            rows: 0,
            field_new: Vec::new(),
            field_used: Vec::new(),
            new_columns: 0,
            new_bytes: 0,
            tag_index: HashMap::new(),
            field_index: HashMap::new(),
        }
    }

    /// The column of tag key `key`, if the plan has it.
    #[inline]
    fn tag_col(&self, key: &[u8]) -> Option<usize> {
        if self.tag_keys.len() <= SMALL {
            self.tag_keys.iter().position(|name| same(name, key))
        } else {
            self.tag_index.get(key).copied()
        }
    }

    /// The column of field `key`, if the plan has it.
    #[inline]
    fn field_col(&self, key: &[u8]) -> Option<usize> {
        if self.fields.len() <= SMALL {
            self.fields.iter().position(|(name, _)| same(name, key))
        } else {
            self.field_index.get(key).copied()
        }
    }

    fn push_tag(&mut self, key: &'b [u8]) -> usize {
        self.tag_keys.push(key);
        let n = self.tag_keys.len();
        if n == SMALL + 1 {
            self.tag_index = self
                .tag_keys
                .iter()
                .enumerate()
                .map(|(i, k)| (*k, i))
                .collect();
        } else if n > SMALL {
            self.tag_index.insert(key, n - 1);
        }
        n - 1
    }

    fn push_field(&mut self, key: &'b [u8], ty: FieldType, new: bool) -> usize {
        self.fields.push((key, ty));
        self.field_new.push(new);
        self.field_used.push(false);
        let n = self.fields.len();
        if n == SMALL + 1 {
            self.field_index = self
                .fields
                .iter()
                .enumerate()
                .map(|(i, f)| (f.0, i))
                .collect();
        } else if n > SMALL {
            self.field_index.insert(key, n - 1);
        }
        n - 1
    }
}

/// Result of [`Catalog::resolve`]: which points are accepted and where their values go.
#[derive(Debug, Default)]
pub struct Resolution<'b> {
    /// Indices (into the batch's points) of accepted points, in input order.
    pub accepted: Vec<u32>,
    /// Per point: index into `measurements` (meaningful for accepted points).
    pub point_meas: Vec<u32>,
    /// Per entry of the batch's tag pool: column index in its measurement's `tag_keys`.
    pub tag_cols: Vec<u32>,
    /// Per entry of the batch's field pool: column index in its measurement's `fields`.
    pub field_cols: Vec<u32>,
    /// Measurements seen in this request.
    pub measurements: Vec<MeasurementPlan<'b>>,
    /// Points dropped after parsing, grouped by reason (first-seen order).
    pub dropped: Vec<DroppedPoint>,
    /// Number of dropped points.
    pub dropped_count: usize,
    /// New metadata records to persist with this request's data.
    pub meta: Vec<MetaRecord>,
    /// Series created by this request.
    pub new_series: usize,
}

/// Points dropped so far, identical reasons counted once.
#[derive(Default)]
pub(super) struct Drops {
    list: Vec<DroppedPoint>,
    index: HashMap<String, usize>,
    count: usize,
}

impl Drops {
    pub(super) fn add(&mut self, kind: DropKind, reason: String) {
        self.count += 1;
        if let Some(&i) = self.index.get(&reason) {
            self.list[i].count += 1;
        } else {
            self.index.insert(reason.clone(), self.list.len());
            self.list.push(DroppedPoint {
                kind,
                reason,
                count: 1,
            });
        }
    }
}

pub(super) fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

fn conflict_reason(field: &[u8], meas: &[u8], got: FieldType, have: FieldType) -> String {
    format!(
        "field type conflict: input field \"{}\" on measurement \"{}\" is type {}, already exists as type {}",
        lossy(field),
        lossy(meas),
        got.influxql_name(),
        have.influxql_name()
    )
}

fn column_conflict_reason(what: &str, key: &[u8], meas: &[u8], other: &str) -> String {
    format!(
        "conflicting field and tag key: input {what} \"{}\" on measurement \"{}\" is already a {other} key",
        lossy(key),
        lossy(meas)
    )
}

/// Why a point cannot be written, found while laying out its columns.
type Conflict = Option<(DropKind, String)>;

/// Few measurements per request: up to this many a linear scan with cheap comparisons beats
/// hashing; beyond it a map takes over.
const SMALL: usize = 16;

/// The request's measurement plans and the map that indexes them once there are many.
struct Plans<'r, 'b> {
    res: &'r mut Resolution<'b>,
    index: HashMap<&'b [u8], u32>,
}

impl<'b> Plans<'_, 'b> {
    /// The index of `name`'s plan, created if new.
    #[inline]
    fn index_of(&mut self, name: &'b [u8]) -> u32 {
        let plans = &mut self.res.measurements;
        let found = if plans.len() <= SMALL {
            plans
                .iter()
                .position(|m| same(m.name, name))
                .map(|i| i as u32)
        } else {
            self.index.get(name).copied()
        };
        if let Some(i) = found {
            return i;
        }
        plans.push(MeasurementPlan::new(name));
        let i = (plans.len() - 1) as u32;
        if plans.len() == SMALL + 1 {
            for (j, m) in plans.iter().enumerate() {
                self.index.insert(m.name, j as u32);
            }
        } else if plans.len() > SMALL {
            self.index.insert(name, i);
        }
        i
    }
}

impl Catalog {
    /// Resolves series, field types and limits for the points of `batch` written to `db`, in
    /// input order; registers what is new and returns the records to persist.
    pub fn resolve<'b>(&self, db_name: &str, batch: &'b ParsedBatch<'_>) -> Resolution<'b> {
        let db = self.db(db_name);
        let n = batch.points.len();
        let mut res = Resolution {
            accepted: Vec::with_capacity(n),
            point_meas: vec![u32::MAX; n],
            tag_cols: vec![u32::MAX; batch.tags.len()],
            field_cols: vec![u32::MAX; batch.fields.len()],
            ..Resolution::default()
        };
        let mut drops = Drops::default();
        let mut ok = plan_points(&db, self.limits, batch, &mut res, &mut drops);
        let misses = series_misses(&db, batch, &ok);
        if !misses.is_empty() {
            self.create_series(&db, batch, &misses, &mut ok, &mut drops, &mut res);
        }
        register_fields(&db, self.limits, batch, &mut res, &mut ok, &mut drops);
        for (pi, keep) in ok.iter().enumerate() {
            if *keep {
                res.accepted.push(pi as u32);
                res.measurements[res.point_meas[pi] as usize].rows += 1;
            }
        }
        res.dropped = drops.list;
        res.dropped_count = drops.count;
        res
    }
}

/// Pass 1: the column layout of every point and its field types (the catalog's read lock only
/// for fields first seen in this request). Returns which points can be written so far.
fn plan_points<'b>(
    db: &DbCatalog,
    limits: Limits,
    batch: &'b ParsedBatch<'_>,
    res: &mut Resolution<'b>,
    drops: &mut Drops,
) -> Vec<bool> {
    let mut ok = vec![false; batch.points.len()];
    let mut plans = Plans {
        res,
        index: HashMap::new(),
    };
    for (pi, p) in batch.points.iter().enumerate() {
        let mname: &'b [u8] = batch.own_bytes(p.measurement);
        let mi = plans.index_of(mname);
        let res = &mut *plans.res;
        res.point_meas[pi] = mi;
        let plan = &mut res.measurements[mi as usize];
        if p.fields.is_empty() {
            drops.add(
                DropKind::InvalidField,
                format!(
                    "invalid field name: input field \"time\" on measurement \"{}\" is invalid",
                    lossy(mname)
                ),
            );
            continue;
        }
        let counted = (plan.new_columns, plan.new_bytes);
        let mut conflict = plan_fields(db, limits, batch, p, plan, &mut res.field_cols);
        if conflict.is_none() {
            conflict = plan_tags(db, batch, p, plan, &mut res.tag_cols);
        }
        if conflict.is_some() {
            // A dropped point's new fields stay in the plan, unused; they must not count
            // against the columns of the points that follow.
            (plan.new_columns, plan.new_bytes) = counted;
        }
        match conflict {
            Some((kind, reason)) => drops.add(kind, reason),
            None => ok[pi] = true,
        }
    }
    ok
}

/// The field columns of `p` in its measurement's plan; a field first seen in this request
/// gets its known type, or the type of this value. Stops at a field that is a tag key; the
/// first type conflict is reported after every field has a column.
#[inline]
fn plan_fields<'b>(
    db: &DbCatalog,
    limits: Limits,
    batch: &'b ParsedBatch<'_>,
    p: &PointEntry,
    plan: &mut MeasurementPlan<'b>,
    field_cols: &mut [u32],
) -> Conflict {
    let mut conflict: Conflict = None;
    for (j, fi) in (p.fields.start as usize..p.fields.end as usize).enumerate() {
        let (key, value) = batch.fields[fi];
        let key: &'b [u8] = batch.own_bytes(key);
        let col = match plan.fields.get(j) {
            Some((name, _)) if same(name, key) => j,
            _ => match plan.field_col(key) {
                Some(c) => c,
                None => match new_field_column(db, limits, plan, key, value.field_type()) {
                    Ok(c) => c,
                    Err(c) => return Some(c),
                },
            },
        };
        let have = plan.fields[col].1;
        field_cols[fi] = col as u32;
        if have != value.field_type() && conflict.is_none() {
            conflict = Some((
                DropKind::TypeConflict,
                conflict_reason(key, plan.name, value.field_type(), have),
            ));
        }
    }
    conflict
}

/// A column for the field `key` first seen in this request (typed as the catalog knows it, or
/// as `ty`), or why there cannot be one: `key` is a tag key of the measurement, or (for a
/// field new to the catalog) a name storage cannot hold or one column too many. The column
/// count here is the request's view (the catalog's columns plus the fields this request met
/// first, used or not); the exact check is [`persist_new_fields`]'s.
fn new_field_column<'b>(
    db: &DbCatalog,
    limits: Limits,
    plan: &mut MeasurementPlan<'b>,
    key: &'b [u8],
    ty: FieldType,
) -> Result<usize, (DropKind, String)> {
    let (known, is_tag, columns, column_bytes) = {
        let schema = db.schema.read();
        let m = schema.get(plan.name);
        (
            m.and_then(|m| m.fields.get(key).copied()),
            m.is_some_and(|m| m.tag_keys.contains(key)),
            m.map_or(0, |m| m.columns()),
            m.map_or(0, |m| m.column_bytes),
        )
    };
    // One name cannot be both a tag column and a field column.
    if is_tag || plan.tag_col(key).is_some() {
        let reason = column_conflict_reason("field", key, plan.name, "tag");
        return Err((DropKind::ColumnConflict, reason));
    }
    if known.is_none() {
        if let Some(reason) = field_name_refused(key, plan.name) {
            return Err((DropKind::InvalidName, reason));
        }
        let cost = column_cost(key);
        if let Some(reason) = columns_exceeded(
            limits,
            plan.name,
            columns + plan.new_columns,
            column_bytes + plan.new_bytes,
            1,
            cost,
        ) {
            return Err((DropKind::TooManyColumns, reason));
        }
        plan.new_columns += 1;
        plan.new_bytes += cost;
    }
    Ok(plan.push_field(key, known.unwrap_or(ty), known.is_none()))
}

/// The tag columns of `p` in its measurement's plan; a conflict when a tag key is a field.
#[inline]
fn plan_tags<'b>(
    db: &DbCatalog,
    batch: &'b ParsedBatch<'_>,
    p: &PointEntry,
    plan: &mut MeasurementPlan<'b>,
    tag_cols: &mut [u32],
) -> Conflict {
    for (j, ti) in (p.tags.start as usize..p.tags.end as usize).enumerate() {
        let key: &'b [u8] = batch.own_bytes(batch.tags[ti].0);
        let col = match plan.tag_keys.get(j) {
            Some(name) if same(name, key) => j,
            _ => match plan.tag_col(key) {
                Some(c) => c,
                None => {
                    let is_field = plan.field_col(key).is_some()
                        || db
                            .schema
                            .read()
                            .get(plan.name)
                            .is_some_and(|m| m.fields.contains_key(key));
                    if is_field {
                        let reason = column_conflict_reason("tag", key, plan.name, "field");
                        return Some((DropKind::ColumnConflict, reason));
                    }
                    plan.push_tag(key)
                }
            },
        };
        tag_cols[ti] = col as u32;
    }
    None
}

/// Pass 2: the points still accepted whose series the registry lacks (one lookup each, under
/// read locks held for the pass).
fn series_misses(db: &DbCatalog, batch: &ParsedBatch<'_>, ok: &[bool]) -> Vec<usize> {
    let mut misses = Vec::new();
    let guards: Vec<_> = db.series.iter().map(|s| s.read()).collect();
    for (pi, p) in batch.points.iter().enumerate() {
        if ok[pi] && !guards[shard_of(p.series_id)].contains(&p.series_id) {
            misses.push(pi);
        }
    }
    misses
}

/// Pass 3: registers the fields first seen in this request that accepted points use (first
/// type wins, also across concurrent requests: a lost race turns into conflicts for this
/// request's points).
fn register_fields(
    db: &DbCatalog,
    limits: Limits,
    batch: &ParsedBatch<'_>,
    res: &mut Resolution<'_>,
    ok: &mut [bool],
    drops: &mut Drops,
) {
    let any_new = res
        .measurements
        .iter()
        .any(|m| m.field_new.iter().any(|n| *n));
    // Warm path (no field new to the catalog): nothing to mark.
    if any_new {
        mark_used_fields(batch, res, ok);
    }
    let to_register = res
        .measurements
        .iter()
        .any(|m| m.field_new.iter().zip(&m.field_used).any(|(n, u)| *n && *u));
    if !to_register {
        return;
    }
    let raced = persist_new_fields(db, limits, res);
    if !raced.is_empty() {
        drop_raced(batch, res, ok, drops, &raced);
    }
}

/// Marks the plan's fields that accepted points use.
fn mark_used_fields(batch: &ParsedBatch<'_>, res: &mut Resolution<'_>, ok: &[bool]) {
    for (pi, p) in batch.points.iter().enumerate() {
        if ok[pi] {
            let plan = &mut res.measurements[res.point_meas[pi] as usize];
            for fi in p.fields.start as usize..p.fields.end as usize {
                plan.field_used[res.field_cols[fi] as usize] = true;
            }
        }
    }
}

/// A new field this request could not register as planned: (measurement, column, why).
type Raced = (u32, usize, Lost);

/// Why a new field was not registered as planned.
enum Lost {
    /// Another request registered it first with this type (the plan takes it).
    Type(FieldType),
    /// The column limits, checked exactly here (concurrent requests may have added columns
    /// since the request's first look): the points using it are dropped with this reason.
    Refused(String),
}

/// Registers the new, used fields under the schema's write lock and records them; returns the
/// ones a concurrent request registered first with another type (the plan takes that type)
/// and the ones past the column limits.
fn persist_new_fields(db: &DbCatalog, limits: Limits, res: &mut Resolution<'_>) -> Vec<Raced> {
    let mut raced = Vec::new();
    let mut schema = db.schema.write();
    for (mi, plan) in res.measurements.iter_mut().enumerate() {
        for c in 0..plan.fields.len() {
            if !(plan.field_new[c] && plan.field_used[c]) {
                continue;
            }
            let (fname, ftype) = plan.fields[c];
            let m = schema.entry(plan.name.to_vec()).or_default();
            match m.fields.get(fname) {
                Some(&existing) if existing != ftype => {
                    plan.fields[c].1 = existing;
                    raced.push((mi as u32, c, Lost::Type(existing)));
                }
                Some(_) => {}
                None => {
                    let cost = column_cost(fname);
                    let (have, bytes) = (m.columns(), m.column_bytes);
                    if let Some(why) = columns_exceeded(limits, plan.name, have, bytes, 1, cost) {
                        raced.push((mi as u32, c, Lost::Refused(why)));
                        continue;
                    }
                    m.add_field(fname, ftype);
                    res.meta
                        .push(field_record(&db.name, plan.name, fname, ftype));
                }
            }
        }
    }
    raced
}

/// Drops the accepted points whose value of a raced field has the losing type, or that use a
/// refused field.
fn drop_raced(
    batch: &ParsedBatch<'_>,
    res: &Resolution<'_>,
    ok: &mut [bool],
    drops: &mut Drops,
    raced: &[Raced],
) {
    for (pi, p) in batch.points.iter().enumerate() {
        if !ok[pi] {
            continue;
        }
        let mi = res.point_meas[pi];
        for fi in p.fields.start as usize..p.fields.end as usize {
            let c = res.field_cols[fi] as usize;
            let Some((_, _, lost)) = raced.iter().find(|(m, rc, _)| *m == mi && *rc == c) else {
                continue;
            };
            let (key, value) = batch.fields[fi];
            match lost {
                Lost::Type(have) if value.field_type() != *have => {
                    let name = res.measurements[mi as usize].name;
                    let reason = conflict_reason(batch.bytes(key), name, value.field_type(), *have);
                    drops.add(DropKind::TypeConflict, reason);
                }
                Lost::Type(_) => continue,
                Lost::Refused(why) => drops.add(DropKind::TooManyColumns, why.clone()),
            }
            ok[pi] = false;
            break;
        }
    }
}
