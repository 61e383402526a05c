//! cluster's integration tests: one binary, one embedded engine per process
//! (the cluster's client; chDB binds one data path per process), Debian's
//! ClickHouse 18.16 servers (and ZooKeeper) run by each test on free loopback
//! ports; every test works in a database of its own.

// Test batches in ingest's layout, shared with flush's tests.
#[path = "../../../flush/tests/it/batch.rs"]
mod batch;
mod clickhouse_server;
mod cluster;
mod cluster_delete;
mod cluster_replicas;
mod cluster_retention;
mod folded_read;
mod identity;
mod newer_server;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use engine::{Engine, EngineConfig};

/// The process's engine, on a temporary data path.
pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<(tempfile::TempDir, Engine)> = OnceLock::new();
    &ENGINE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("temp dir");
            let engine = Engine::open(&EngineConfig {
                data_dir: dir.path().join("chdb"),
                connections: 2,
            })
            .expect("engine opens");
            (dir, engine)
        })
        .1
}

/// A fresh database name for one test.
pub fn database_name(name: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("t_{name}_{}", N.fetch_add(1, Ordering::Relaxed))
}
