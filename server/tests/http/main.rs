//! HTTP-level tests against the real `chingest` binary: each test spawns its
//! own server process (one chDB engine per process) on a temp data dir and a
//! free port, and talks to it with a blocking client or raw sockets.

mod util;

mod auth;
mod backup;
mod backup_forged;
mod bounds;
mod cli;
mod cluster;
mod cluster_delete;
mod cluster_drop;
mod cluster_drop_database;
mod cluster_identity;
mod cluster_policies;
mod cluster_pushdown;
mod cluster_pushdown_identity;
mod cluster_replicas;
mod cluster_retention;
mod cluster_shard_down;
mod console;
mod cq;
mod crash;
mod dead_letter_delete;
mod delete;
mod deploy;
mod door;
mod drop_measurement;
mod grafana;
mod hot;
mod hot_read_your_writes;
mod hot_tag_values;
mod influxql;
mod influxql_diff;
mod influxql_render;
mod influxql_ties;
mod into;
mod last_point;
mod limits;
mod logs;
mod metrics_docs;
mod names;
mod overload;
mod prometheus;
mod python;
mod queries;
mod read_your_writes;
mod reliability;
mod retention;
mod shutdown;
mod sql_security;
mod sql_threads;
mod telegraf;
mod users;
mod write;
