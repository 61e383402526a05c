//! The TSBS-shaped query benchmark (issue #23): TSBS's `cpu-only` data and
//! its 15 InfluxQL query types, on chingest and on InfluxDB 1.x in the same
//! run, every answer compared value by value.
//!
//! * [`data`] generates the data set (our code, TSBS's shape);
//! * [`queries`] draws each type's queries from a seed;
//! * [`run`] creates the database as TSBS's loader does, writes the data,
//!   then times every type one query at a time, each server's back to back;
//! * [`report`] is the markdown of `tsbs_bench.json`.

pub mod data;
pub mod queries;
pub mod report;
pub mod run;
