//! Arrow batch building: accepted points of one measurement become one `RecordBatch`.
//!
//! Layout (docs/architecture.md): `time` Int64 (ns), `series_id` UInt64, one non-null Utf8
//! column per tag key (`""` where a point lacks the tag), one nullable typed column per field.
//! Tag columns follow sorted by name, then field columns sorted by name. Buffers are sized up
//! front from the row count; values are appended directly into them (no per-value builders).
//! Bytes that are not UTF-8 are stored with U+FFFD replacement (Arrow Utf8 requires UTF-8).

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, NullBufferBuilder, StringArray, UInt64Array,
};
use arrow::buffer::{BooleanBuffer, Buffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;

use crate::catalog::Resolution;
use crate::point::{extend_short, FieldType, ParsedBatch};

/// One measurement's batch of a write.
#[derive(Debug, Clone)]
pub struct MeasurementBatch {
    /// Measurement name (lossy UTF-8).
    pub measurement: String,
    /// The rows, layout as documented in this module.
    pub batch: RecordBatch,
}

struct StrCol {
    offsets: Vec<i32>,
    data: Vec<u8>,
    nulls: Option<NullBufferBuilder>,
}

impl StrCol {
    fn new(rows: usize, nullable: bool) -> StrCol {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        StrCol {
            offsets,
            data: Vec::with_capacity(rows * 8),
            nulls: nullable.then(|| NullBufferBuilder::new(rows)),
        }
    }
    fn len(&self) -> usize {
        self.offsets.len() - 1
    }
    #[inline]
    fn pad(&mut self, row: usize) {
        let n = row - self.len();
        if n > 0 {
            let last = *self.offsets.last().unwrap_or(&0);
            self.offsets.extend(std::iter::repeat_n(last, n));
            if let Some(nb) = &mut self.nulls {
                nb.append_n_nulls(n);
            }
        }
    }
    #[inline(always)]
    fn push(&mut self, row: usize, v: &[u8]) -> Result<(), ArrowError> {
        if row > self.len() {
            self.pad(row);
        }
        // UTF-8 is validated once per column in `finish` (whole buffer + offsets on char
        // boundaries, which implies every value is valid).
        extend_short(&mut self.data, v);
        let end = i32::try_from(self.data.len())
            .map_err(|_| ArrowError::ComputeError("string column exceeds 2 GiB".into()))?;
        self.offsets.push(end);
        if let Some(nb) = &mut self.nulls {
            nb.append_non_null();
        }
        Ok(())
    }

    /// Replaces invalid UTF-8 values with their lossy form (rare path).
    #[cold]
    fn make_valid(&mut self) -> Result<(), ArrowError> {
        let mut data = Vec::with_capacity(self.data.len());
        let mut offsets = Vec::with_capacity(self.offsets.len());
        offsets.push(0i32);
        for w in self.offsets.windows(2) {
            let v = &self.data[w[0] as usize..w[1] as usize];
            data.extend_from_slice(String::from_utf8_lossy(v).as_bytes());
            offsets.push(
                i32::try_from(data.len())
                    .map_err(|_| ArrowError::ComputeError("string column exceeds 2 GiB".into()))?,
            );
        }
        self.data = data;
        self.offsets = offsets;
        Ok(())
    }
    fn finish(mut self, rows: usize) -> Result<ArrayRef, ArrowError> {
        self.pad(rows);
        let nulls = self.nulls.as_mut().and_then(|nb| nb.finish());
        // Arrow validates UTF-8 of the whole buffer and that every offset is a char boundary,
        // which together mean every value is valid; only on failure do we repair and retry.
        let offsets = OffsetBuffer::new(ScalarBuffer::from(std::mem::take(&mut self.offsets)));
        let data = Buffer::from_vec(std::mem::take(&mut self.data));
        match StringArray::try_new(offsets.clone(), data.clone(), nulls.clone()) {
            Ok(a) => Ok(Arc::new(a)),
            Err(_) => {
                self.offsets = offsets.iter().copied().collect();
                self.data = data.as_slice().to_vec();
                self.make_valid()?;
                Ok(Arc::new(StringArray::try_new(
                    OffsetBuffer::new(ScalarBuffer::from(self.offsets)),
                    Buffer::from_vec(self.data),
                    nulls,
                )?))
            }
        }
    }
}

struct PrimCol<T> {
    values: Vec<T>,
    nulls: NullBufferBuilder,
}

impl<T: Copy + Default> PrimCol<T> {
    fn new(rows: usize) -> Self {
        PrimCol {
            values: Vec::with_capacity(rows),
            nulls: NullBufferBuilder::new(rows),
        }
    }
    #[inline]
    fn push(&mut self, row: usize, v: T) {
        let n = row - self.values.len();
        if n > 0 {
            self.values.extend(std::iter::repeat_n(T::default(), n));
            self.nulls.append_n_nulls(n);
        }
        self.values.push(v);
        self.nulls.append_non_null();
    }
    fn finish_parts(mut self, rows: usize) -> (Vec<T>, Option<arrow::buffer::NullBuffer>) {
        let n = rows - self.values.len();
        if n > 0 {
            self.values.extend(std::iter::repeat_n(T::default(), n));
            self.nulls.append_n_nulls(n);
        }
        (self.values, self.nulls.finish())
    }
}

enum FieldCol {
    F64(PrimCol<f64>),
    I64(PrimCol<i64>),
    U64(PrimCol<u64>),
    Bool(PrimCol<bool>),
    Str(StrCol),
}

impl FieldCol {
    fn new(t: FieldType, rows: usize) -> FieldCol {
        match t {
            FieldType::Float => FieldCol::F64(PrimCol::new(rows)),
            FieldType::Integer => FieldCol::I64(PrimCol::new(rows)),
            FieldType::UInteger => FieldCol::U64(PrimCol::new(rows)),
            FieldType::Boolean => FieldCol::Bool(PrimCol::new(rows)),
            FieldType::String => FieldCol::Str(StrCol::new(rows, true)),
        }
    }

    fn finish(self, rows: usize) -> Result<ArrayRef, ArrowError> {
        Ok(match self {
            FieldCol::F64(c) => {
                let (v, n) = c.finish_parts(rows);
                Arc::new(Float64Array::new(ScalarBuffer::from(v), n))
            }
            FieldCol::I64(c) => {
                let (v, n) = c.finish_parts(rows);
                Arc::new(Int64Array::new(ScalarBuffer::from(v), n))
            }
            FieldCol::U64(c) => {
                let (v, n) = c.finish_parts(rows);
                Arc::new(UInt64Array::new(ScalarBuffer::from(v), n))
            }
            FieldCol::Bool(c) => {
                let (v, n) = c.finish_parts(rows);
                let bits = BooleanBuffer::from_iter(v.iter().copied());
                Arc::new(BooleanArray::new(bits, n))
            }
            FieldCol::Str(c) => c.finish(rows)?,
        })
    }
}

struct Builder {
    time: Vec<i64>,
    series: Vec<u64>,
    tags: Vec<StrCol>,
    fields: Vec<FieldCol>,
    row: usize,
}

/// Builds one batch per measurement from the accepted points of `batch` (see [`Resolution`]).
pub fn build_batches(
    batch: &ParsedBatch<'_>,
    res: &Resolution<'_>,
) -> Result<Vec<MeasurementBatch>, ArrowError> {
    let mut builders: Vec<Builder> = res
        .measurements
        .iter()
        .map(|m| Builder {
            time: Vec::with_capacity(m.rows),
            series: Vec::with_capacity(m.rows),
            tags: m
                .tag_keys
                .iter()
                .map(|_| StrCol::new(m.rows, false))
                .collect(),
            fields: m
                .fields
                .iter()
                .map(|(_, t)| FieldCol::new(*t, m.rows))
                .collect(),
            row: 0,
        })
        .collect();
    for &pi in &res.accepted {
        let p = &batch.points[pi as usize];
        let b = &mut builders[res.point_meas[pi as usize] as usize];
        let row = b.row;
        b.time.push(p.time);
        b.series.push(p.series_id);
        for ti in p.tags.start as usize..p.tags.end as usize {
            b.tags[res.tag_cols[ti] as usize].push(row, batch.own_bytes(batch.tags[ti].1))?;
        }
        for fi in p.fields.start as usize..p.fields.end as usize {
            let col = &mut b.fields[res.field_cols[fi] as usize];
            let v = batch.fields[fi].1;
            // The payload is read by the column's type; the check keeps a conflicting value
            // (which resolve never accepts) from being reinterpreted.
            match (col, v.field_type()) {
                (FieldCol::F64(c), FieldType::Float) => c.push(row, v.as_f64()),
                (FieldCol::I64(c), FieldType::Integer) => c.push(row, v.as_i64()),
                (FieldCol::U64(c), FieldType::UInteger) => c.push(row, v.as_u64()),
                (FieldCol::Bool(c), FieldType::Boolean) => c.push(row, v.as_bool()),
                (FieldCol::Str(c), FieldType::String) => {
                    c.push(row, batch.own_bytes(v.as_span()))?
                }
                _ => {
                    return Err(ArrowError::ComputeError(
                        "internal: accepted point with a conflicting field type".into(),
                    ))
                }
            }
        }
        b.row += 1;
    }

    let mut out = Vec::with_capacity(builders.len());
    for (plan, b) in res.measurements.iter().zip(builders) {
        if plan.rows == 0 {
            continue;
        }
        let rows = plan.rows;
        let mut cols: Vec<(Field, ArrayRef)> =
            Vec::with_capacity(2 + b.tags.len() + b.fields.len());
        cols.push((
            Field::new("time", DataType::Int64, false),
            Arc::new(Int64Array::from(b.time)),
        ));
        cols.push((
            Field::new("series_id", DataType::UInt64, false),
            Arc::new(UInt64Array::from(b.series)),
        ));
        let mut tag_cols: Vec<(String, ArrayRef)> = Vec::with_capacity(b.tags.len());
        for (name, col) in plan.tag_keys.iter().zip(b.tags) {
            if col.data.is_empty() {
                // Tag seen only on dropped points (tag values are never empty).
                continue;
            }
            tag_cols.push((
                String::from_utf8_lossy(name).into_owned(),
                col.finish(rows)?,
            ));
        }
        tag_cols.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, arr) in tag_cols {
            cols.push((Field::new(name, DataType::Utf8, false), arr));
        }
        let mut field_cols: Vec<(String, FieldType, ArrayRef)> = Vec::with_capacity(b.fields.len());
        for ((name, t), col) in plan.fields.iter().zip(b.fields) {
            field_cols.push((
                String::from_utf8_lossy(name).into_owned(),
                *t,
                col.finish(rows)?,
            ));
        }
        field_cols.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, t, arr) in field_cols {
            if arr.null_count() == rows {
                // A field used only by dropped points: no column for it.
                continue;
            }
            cols.push((Field::new(name, t.data_type(), true), arr));
        }
        let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = cols.into_iter().unzip();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?;
        out.push(MeasurementBatch {
            measurement: String::from_utf8_lossy(plan.name).into_owned(),
            batch,
        });
    }
    Ok(out)
}
