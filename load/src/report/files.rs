//! Reading results and writing reports: files that may be missing are read as
//! `None` (the page then says "not measured"); files written create their directory.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::summary::RunResult;

/// Writes `data` to `path`, creating its directory first.
pub(crate) fn write(path: &Path, data: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    std::fs::write(path, data).map_err(|e| Error::io(path, e))
}

/// Writes `value` as pretty JSON to `DIR/NAME.json`; returns the path.
pub(crate) fn write_json<T: serde::Serialize>(
    dir: &Path,
    name: &str,
    value: &T,
) -> Result<PathBuf> {
    let path = dir.join(format!("{name}.json"));
    let json = serde_json::to_vec_pretty(value).map_err(|source| Error::Json {
        path: path.clone(),
        source,
    })?;
    write(&path, &json)?;
    Ok(path)
}

/// Reads a JSON file; `None` when it is missing or unreadable (the caller says "not measured").
pub(super) fn read_json(path: &Path) -> Option<Value> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Reads a run's result file; `None` when it is missing or not a run.
pub(super) fn load_run(path: &Path) -> Option<RunResult> {
    serde_json::from_value(read_json(path)?).ok()
}

/// `to` relative to directory `from` (both relative to the current directory or absolute).
pub fn relative_path(from: &Path, to: &Path) -> PathBuf {
    let (f, t) = (absolute_parts(from), absolute_parts(to));
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for p in &t[common..] {
        out.push(p);
    }
    out
}

/// The normal components of `p` made absolute, with `..` applied.
fn absolute_parts(p: &Path) -> Vec<String> {
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    let mut parts: Vec<String> = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            Component::ParentDir => {
                parts.pop();
            }
            _ => {}
        }
    }
    parts
}

/// Reads the JSON at `path`; the type's default when the file does not exist.
pub(crate) fn load_or_default<T: serde::de::DeserializeOwned + Default>(path: &Path) -> Result<T> {
    match std::fs::read(path) {
        Ok(b) => serde_json::from_slice(&b).map_err(|source| Error::Json {
            path: path.into(),
            source,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
        Err(e) => Err(Error::io(path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_path(Path::new("docs"), Path::new("test_results/latest/ramp.svg")),
            PathBuf::from("../test_results/latest/ramp.svg")
        );
        assert_eq!(
            relative_path(Path::new("/a/b"), Path::new("/a/b/c.svg")),
            PathBuf::from("c.svg")
        );
    }
}
