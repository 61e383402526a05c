//! Start-up repairs of the engine's directory, before the engine opens.
//!
//! The engine refuses to start when one of its metadata files (`metadata/<db>.sql`,
//! `store/<xxx>/<uuid>/<table>.sql`) is empty: a `CREATE TABLE` that ran out of disk space
//! can leave one behind (observed with libchdb 26.7.3 on a full tmpfs:
//! `Empty query: Cannot parse definition from metadata file …`). An empty definition holds
//! nothing to lose, so it is moved aside to `broken_metadata/` (reported, never deleted) and
//! the engine starts; what the table was to hold is still in the WAL and replays into a table
//! created afresh.

use std::path::{Path, PathBuf};

/// Moves every empty (or whitespace-only) `.sql` metadata file under `engine_dir` aside;
/// returns where each went. Errors are logged: a repair never stops a start.
pub(crate) fn move_aside_empty_metadata(engine_dir: &Path) -> Vec<PathBuf> {
    let mut candidates = Vec::new();
    collect_sql(&engine_dir.join("metadata"), 2, &mut candidates);
    collect_sql(&engine_dir.join("store"), 3, &mut candidates);
    let mut moved = Vec::new();
    for file in candidates {
        let empty = std::fs::read(&file).is_ok_and(|b| b.iter().all(u8::is_ascii_whitespace));
        if !empty {
            continue;
        }
        let rel = file.strip_prefix(engine_dir).unwrap_or(&file);
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let to = engine_dir
            .join("broken_metadata")
            .join(stamp.to_string())
            .join(rel);
        let done = to
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::rename(&file, &to));
        match done {
            Ok(()) => {
                tracing::error!(from = %file.display(), to = %to.display(),
                    "the engine's metadata file is empty (a CREATE that ran out of disk?); moved aside so the engine can start, the WAL replays what it was to hold");
                moved.push(to);
            }
            Err(e) => tracing::error!(file = %file.display(), error = %e,
                "cannot move an empty engine metadata file aside"),
        }
    }
    moved
}

/// `.sql` files at most `depth` directory levels below `dir`.
fn collect_sql(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() && depth > 1 {
            collect_sql(&p, depth - 1, out);
        } else if ft.is_file() && p.extension().is_some_and(|x| x == "sql") {
            out.push(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_empty_definitions_move_aside() {
        let dir = tempfile::tempdir().unwrap();
        let table = dir.path().join("store/4dd/4dda886e");
        std::fs::create_dir_all(&table).unwrap();
        std::fs::create_dir_all(dir.path().join("metadata")).unwrap();
        std::fs::write(table.join("g.sql"), "").unwrap();
        std::fs::write(table.join("h.sql"), "ATTACH TABLE _ UUID '…' (x UInt8)").unwrap();
        std::fs::write(dir.path().join("metadata/db.sql"), " \n").unwrap();
        let moved = move_aside_empty_metadata(dir.path());
        assert_eq!(moved.len(), 2, "{moved:?}");
        assert!(!table.join("g.sql").exists());
        assert!(table.join("h.sql").exists());
        assert!(!dir.path().join("metadata/db.sql").exists());
        assert!(moved.iter().all(|p| p.exists()));
    }
}
