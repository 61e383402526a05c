//! Where the engine benches write their tables, shared by the benches that
//! `#[path]`-include it.

use std::path::{Path, PathBuf};

/// Writes `<name>.md` and `<name>.json` (a JSON array of `items`) to the
/// directory in `$<out_var>`, else `test_results/latest/` at the workspace root.
pub(crate) fn write_results(out_var: &str, name: &str, md: &str, items: &[String]) {
    let dir = std::env::var_os(out_var)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .unwrap()
                .join("test_results/latest")
        });
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.md")), md).unwrap();
    std::fs::write(
        dir.join(format!("{name}.json")),
        format!("[\n  {}\n]\n", items.join(",\n  ")),
    )
    .unwrap();
    eprintln!("wrote {}/{name}.{{md,json}}", dir.display());
}
