//! How much freed memory the allocator keeps for the next request instead
//! of giving it back to the system (glibc on Linux).
//!
//! glibc gives a heap's free top back once it passes `M_TRIM_THRESHOLD`
//! and serves an allocation past `M_MMAP_THRESHOLD` from a mapping of its
//! own. Both start low (128 KiB) and rise only after a mapped chunk is
//! freed, to that chunk's size (and twice it), at most 32 and 64 MiB. A
//! server whose answers are a few MiB never gets there: after each large
//! answer is freed the heap's top is given back, and the next answer faults
//! every page in again. TSBS `lastpoint` at 1,000 hosts (a 451 KB answer of
//! 1,000 series) spent 16 % of the server's samples in page faults and
//! `madvise`, and its server time fell from 1.9–2.4 to 1.3–1.7 ms with
//! freed memory kept (same-run A/B, `test_results/history/ab_heap.md`).
//!
//! [`keep_freed_memory`] starts both thresholds where glibc's own rule ends
//! (32 MiB mapped, 64 MiB trimmed). Fixed thresholds turn off glibc's
//! raising of them, which would stop there anyway. What it costs: up to
//! 64 MiB of free memory per heap (glibc keeps one per thread that
//! allocated at once, at most eight per core) that a quiet server holds
//! rather than gives back; the hot store's refill still gives back what it
//! freed at once (`storage/src/hot/trim.rs`, `malloc_trim`, which ignores
//! the threshold).
//!
//! An operator's `GLIBC_TUNABLES` with any `glibc.malloc.` setting wins:
//! then nothing is changed here.

/// The most an allocation served from a heap may take (glibc's own ceiling
/// for its raised threshold on 64-bit).
pub const MMAP_THRESHOLD: usize = 32 << 20;

/// A heap's free top past this is given back (twice [`MMAP_THRESHOLD`], as
/// glibc raises it).
pub const TRIM_THRESHOLD: usize = 64 << 20;

/// Whether the operator set the allocator's tunables themselves.
fn operator_tuned(tunables: Option<&str>) -> bool {
    tunables.is_some_and(|t| t.contains("glibc.malloc."))
}

/// Sets the thresholds above, unless `GLIBC_TUNABLES` sets the allocator's.
/// Call before the runtime starts its threads. Returns whether it set them.
#[allow(unsafe_code)]
pub fn keep_freed_memory() -> bool {
    let tunables = std::env::var("GLIBC_TUNABLES").ok();
    if operator_tuned(tunables.as_deref()) {
        return false;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only changes the allocator's parameters; both
        // values are in range for an `int` and for glibc's checks.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) == 1
                && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operators_malloc_tunables_win() {
        assert!(!operator_tuned(None));
        assert!(!operator_tuned(Some("glibc.pthread.rseq=0")));
        assert!(operator_tuned(Some(
            "glibc.pthread.rseq=0:glibc.malloc.trim_threshold=1048576"
        )));
    }
}
