//! flush's integration tests: one binary, one engine per process (chDB binds
//! one data path per process); every test works in a database of its own.

mod engine;
mod flusher;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use flush::{quote_ident, Engine, EngineConfig};

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

/// A fresh database name for one test; `create` also creates it.
pub fn database_name(name: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("t_{name}_{}", N.fetch_add(1, Ordering::Relaxed))
}

/// A fresh, created database for one test.
pub fn database(name: &str) -> String {
    let db = database_name(name);
    engine()
        .execute(&format!("CREATE DATABASE {}", quote_ident(&db)))
        .expect("create database");
    db
}
