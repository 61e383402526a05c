//! engine's integration tests: one binary, one engine per process (chDB binds
//! one data path per process); every test works in a database of its own.

mod engine;
mod sandbox;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use ::engine::{quote_ident, Engine, EngineConfig};

/// The process's engine, on a temporary data path.
pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<(tempfile::TempDir, Engine)> = OnceLock::new();
    &ENGINE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("temp dir");
            // The SQL sandbox's tests (sandbox.rs) need a reader role for one
            // database, and a short time limit.
            let engine = Engine::open_with(
                &EngineConfig {
                    data_dir: dir.path().join("chdb"),
                    connections: 2,
                },
                &::engine::EngineAccess::new([::engine::ReadScope::from_list(&[
                    sandbox::READABLE_DB,
                ])]),
                ::engine::SqlConfig {
                    max_execution_secs: 2,
                    max_result_rows: 500_000,
                    ..Default::default()
                },
                Arc::new(()),
            )
            .expect("engine opens");
            (dir, engine)
        })
        .1
}

/// The process engine's SQL sandbox has two slots (`max_concurrent_queries`)
/// for every test: a test that runs user SQL through it, or counts on its
/// slots being free, holds this while it does, one test at a time.
pub fn sandbox_serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A fresh, created database for one test.
pub fn database(name: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let db = format!("t_{name}_{}", N.fetch_add(1, Ordering::Relaxed));
    engine()
        .execute(&format!("CREATE DATABASE {}", quote_ident(&db)))
        .expect("create database");
    db
}
