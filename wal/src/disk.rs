//! The free-space guard: data entries are refused with [`WalError::DiskFull`] while the WAL's
//! file system has less than `min_free_bytes` free, so a filling disk turns into 503s that stop
//! by themselves when space returns, instead of a failed RocksDB write that poisons the WAL.
//!
//! `statvfs` costs about a microsecond; the writer asks before every group, everyone else reads
//! the last answer unless it is older than [`REFRESH`] (so `stats()` also notices when space
//! comes back while every write is being refused before it reaches the WAL).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::time::Duration;

use crate::shared::now_ns;
use crate::WalError;

/// How stale a cached answer may be for callers other than the writer.
const REFRESH: Duration = Duration::from_millis(100);

/// The guard's state: the reserve and the last `statvfs` answer.
pub(crate) struct DiskGuard {
    path: PathBuf,
    reserve: u64,
    /// Free bytes at the last check (u64::MAX before the first, or when statvfs failed).
    free: AtomicU64,
    checked_ns: AtomicU64,
}

impl DiskGuard {
    pub(crate) fn new(path: &Path, reserve: u64) -> Self {
        let g = DiskGuard {
            path: path.to_path_buf(),
            reserve,
            free: AtomicU64::new(u64::MAX),
            checked_ns: AtomicU64::new(0),
        };
        g.refresh();
        g
    }

    /// Asks the file system now.
    pub(crate) fn refresh(&self) -> u64 {
        if self.reserve == 0 {
            return u64::MAX;
        }
        let free = free_bytes(&self.path).unwrap_or(u64::MAX);
        self.free.store(free, Relaxed);
        self.checked_ns.store(now_ns(), Relaxed);
        free
    }

    /// Free bytes, from a cached answer at most [`REFRESH`] old.
    pub(crate) fn free(&self) -> u64 {
        if self.reserve == 0 {
            return u64::MAX;
        }
        let age = now_ns().saturating_sub(self.checked_ns.load(Relaxed));
        if age >= REFRESH.as_nanos() as u64 {
            self.refresh()
        } else {
            self.free.load(Relaxed)
        }
    }

    /// `DiskFull` when `free` is below the reserve.
    pub(crate) fn check_free(&self, free: u64) -> Result<(), WalError> {
        if free < self.reserve {
            Err(WalError::DiskFull {
                free,
                reserve: self.reserve,
                path: self.path.clone(),
            })
        } else {
            Ok(())
        }
    }

    /// `DiskFull` when the (cached) free space is below the reserve.
    pub(crate) fn check(&self) -> Result<(), WalError> {
        self.check_free(self.free())
    }

    /// True when the last answer was below the reserve (no refresh).
    pub(crate) fn is_low(&self) -> bool {
        self.free.load(Relaxed) < self.reserve
    }
}

/// Bytes available to unprivileged users on the file system holding `path`.
fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid NUL-terminated path; `st` is written by statvfs on success only
    // and read only then.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return None;
        }
        Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reserve_above_the_free_space_refuses_and_zero_disables() {
        let dir = std::env::temp_dir();
        let off = DiskGuard::new(&dir, 0);
        assert!(off.check().is_ok());
        let huge = DiskGuard::new(&dir, u64::MAX - 1);
        let e = huge.check().unwrap_err();
        assert!(matches!(e, WalError::DiskFull { .. }), "{e}");
        assert!(huge.is_low());
        let small = DiskGuard::new(&dir, 1);
        assert!(small.check().is_ok());
        assert!(small.free() > 1);
    }
}
