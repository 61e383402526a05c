//! The real Python clients (`influxdb`, `influxdb-client`) against the server:
//! writes of both, and the `influxdb` client's InfluxQL `query()`/`get_points()`.

use std::path::PathBuf;
use std::process::Command;

use crate::util::*;

#[test]
fn python_influxdb_clients_write_and_read_back_exactly() {
    let Some(python) = test_dep_or_skip(
        cache_dir().join("venv/bin/python"),
        "Python venv with the InfluxDB clients",
        "python_influxdb_clients_write_and_read_back_exactly",
    ) else {
        return;
    };
    let dir = data_dir();
    let config = format!(
        "[auth]\nenabled = true\n[[auth.users]]\nname = \"py\"\npassword_hash = \"{}\"\ntoken_hashes = [\"{}\"]\nadmin = true\n",
        hash("pypw"),
        hash("py-token")
    );
    let s = Spawn::new(dir.path()).config(&config).start();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/test_clients.py");
    let out = Command::new(&python)
        .arg(&script)
        .env("CHINGEST_URL", &s.base)
        .env("CHINGEST_USER", "py")
        .env("CHINGEST_PASSWORD", "pypw")
        .env("CHINGEST_TOKEN", "py-token")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python client tests failed:\n{stderr}\nserver log:\n{}",
        s.log_text()
    );
    assert!(stderr.contains("Ran 9 tests"), "{stderr}");
}
