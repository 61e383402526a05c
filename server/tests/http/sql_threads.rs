//! `[sql] max_threads`: 0 (the default) gives a statement the cores the write
//! path left idle; a number pins it. Read back from the engine itself.

use crate::util::{data_dir, Server, Spawn};

/// The engine's `max_threads` for a statement run now through `/api/v1/sql`.
fn engine_threads(s: &Server) -> u64 {
    let r = s
        .client
        .post(s.url("/api/v1/sql?format=jsoneachrow"))
        .body("SELECT toUInt64(getSetting('max_threads')) AS t")
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let row: serde_json::Value = serde_json::from_str(r.text().unwrap().trim()).unwrap();
    row["t"]
        .as_u64()
        .or_else(|| row["t"].as_str().and_then(|t| t.parse().ok()))
        .unwrap_or_else(|| panic!("no thread count in {row}"))
}

#[test]
fn an_idle_server_gives_a_statement_every_core_and_a_number_pins_it() {
    let cores = std::thread::available_parallelism().unwrap().get() as u64;
    // Nothing written: the write path kept no core busy.
    let dir = data_dir();
    let s = Spawn::new(dir.path()).start();
    assert_eq!(engine_threads(&s), cores);
    let dir = data_dir();
    let s = Spawn::new(dir.path())
        .config("[sql]\nmax_threads = 1\n")
        .start();
    assert_eq!(engine_threads(&s), 1);
}
