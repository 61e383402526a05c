//! flush's integration tests: one binary, one engine per process (chDB binds
//! one data path per process); every test works in a database of its own.

mod batch;
mod flusher;
mod quarantine;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use engine::{quote_ident, Engine, EngineConfig};
use flush::ReadState;

/// The process's engine, on a temporary data path, and its read state (whose
/// identity index the engine's SQL sandbox tells of admin writes).
fn engine_and_reads() -> &'static (tempfile::TempDir, Engine, ReadState) {
    static ENGINE: OnceLock<(tempfile::TempDir, Engine, ReadState)> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let sql = engine::SqlConfig {
            max_execution_secs: 2,
            max_result_rows: 500_000,
            ..Default::default()
        };
        let reads = ReadState::new(sql.last_point_cache_series);
        let engine = Engine::open_with(
            &EngineConfig {
                data_dir: dir.path().join("chdb"),
                connections: 2,
            },
            &engine::EngineAccess::new([]),
            sql,
            reads.admin_writes(),
        )
        .expect("engine opens");
        (dir, engine, reads)
    })
}

/// The process's engine, on a temporary data path.
pub fn engine() -> &'static Engine {
    &engine_and_reads().1
}

/// The process engine's read state: every flusher of the process keeps it.
pub fn reads() -> &'static ReadState {
    &engine_and_reads().2
}

/// The process engine's SQL sandbox has two slots (`max_concurrent_queries`)
/// for every test: a test that runs user SQL through it, or counts on its
/// slots being free, holds this while it does, one test at a time.
pub fn sandbox_serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
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
