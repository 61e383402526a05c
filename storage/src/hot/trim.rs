//! Giving back what a refill freed. A refill reads a measurement's window
//! from the engine in slices (Arrow answers of ~100,000 rows) and merges
//! them into the store's small chunks; glibc's allocator keeps the freed
//! slices' pages in its heaps, interleaved with the chunks that stay. After
//! the first read's refill of TSBS's 1,000 hosts × 24 h that was ~440 MB of
//! anonymous memory above what the store and the engine hold, never given
//! back (measured with `gdb … call malloc_trim(0)`: 724 → 276 MB). One
//! `malloc_trim(0)` after each refill returns those pages to the system; it
//! walks the heaps once (milliseconds) and frees no live memory.

/// Returns the allocator's free pages to the system (glibc on Linux; a no-op
/// elsewhere). The crate's one `unsafe`: a libc call with no arguments to
/// get wrong.
#[allow(unsafe_code)]
pub(crate) fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases free memory the allocator holds and
    // is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
