//! Storage on a ClickHouse cluster (`[storage] engine = "clickhouse"`, issue #25): the
//! glue between this crate and the `cluster` crate's client.
//!
//! Brief overview:
//! - `destination.rs`: the cluster as the flusher's `flush::Destination` (flushed rows
//!   delivered to the shards, exactly once).
//! - `catalog.rs`: this node's catalog kept in step with the cluster's ([`catalog::ClusterSync`],
//!   a thread of its own), and what it learns there applied here: another node's
//!   databases, field types, drops, retention.
//! - `delete.rs`: `DELETE` and `DROP SERIES` on every shard behind a cluster-wide fence
//!   (every node delivered what it acknowledged before the statement).
//! - `drop_measurement.rs`, `drop_database.rs`: `DROP MEASUREMENT` and `DROP DATABASE`,
//!   on the shards and on every node.
//! - `named.rs`: a statement naming a measurement the catalog lacks asks the shards first.
//! - `retention.rs`: a database's retention set on the shards first, expired partitions
//!   dropped there.
//!
//! InfluxQL reads from the shards are the executor's (`influxql/cluster.rs`).

pub(crate) mod catalog;
pub(crate) mod delete;
pub(crate) mod destination;
pub(crate) mod drop_database;
pub(crate) mod drop_measurement;
pub(crate) mod named;
pub(crate) mod retention;
