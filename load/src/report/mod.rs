//! Markdown and JSON output: one file set per run (`<name>.md`, `<name>.json`,
//! `<name>.svg`) and the every-layer report assembled from all results.
//!
//! The every-layer report reads whatever is there and says "not measured" for
//! whatever is not, so it can always be regenerated.
//!
//! * `run`: one run's files ([`write_run`], [`run_markdown`]);
//! * `every_layer`: the every-layer page ([`regenerate`], [`every_layer_markdown`]);
//! * building blocks both use: the step tables (`tables`) with their cells
//!   (`cells`) and notes (`notes`), the `verdict` on what holds the server
//!   back, the server's own profile (`server`), the component benches' JSON
//!   (`bench_json`), and reading and writing files (`files`);
//! * `overload`: the overload run's page and its section of the every-layer page;
//! * `query`: the query benchmark's page and its section of the every-layer page.

mod bench_json;
pub(crate) mod cells;
mod every_layer;
pub(crate) mod files;
mod notes;
mod overload;
mod query;
mod run;
mod server;
mod tables;
mod verdict;

pub use bench_json::find_rates;
pub use every_layer::{
    every_layer_markdown, regenerate, ReportInputs, TARGET_FRACTION_OF_CEILING, TARGET_SUSTAINABLE,
};
pub use files::relative_path;
pub use overload::{overload_markdown, write_overload, OVERLOAD_NAME};
pub use query::{query_bench_markdown, write_query_bench, QUERY_BENCH_NAME};
pub use run::{run_markdown, write_run};
pub use server::{cpu_by_role, stage_times, thread_role};
pub use tables::{closed_table, ramp_table, stage_step_table};
pub use verdict::limit_verdict;
