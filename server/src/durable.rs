//! Small files chingest keeps beside the WAL and the engine (`users.json`,
//! `continuous_queries.json`): rewritten whole on every change, atomically and durably.
//!
//! A temporary file is written and fsynced, renamed over the old one, and the directory
//! fsynced: a crash leaves the old file or the new one, never a mix, and a change is
//! answered only after the rename is durable. Mode 0600: these hold password hashes and
//! who may read what.

use std::io::Write as _;
use std::path::Path;

/// Replaces `path` with `body`, durably (see the module doc).
pub fn replace(path: &Path, body: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    {
        let mut f = open_private(&tmp)?;
        f.write_all(body)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Creates (truncating) a file only its owner may read.
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options.open(path)
}
