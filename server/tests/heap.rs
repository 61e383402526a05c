//! The allocator keeps what a large answer freed for the next one
//! (`chingest::heap`): its own test binary, so no other test allocates or
//! frees while the process's resident memory is read.

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Resident KiB that freeing a touched allocation of `mib` MiB gave back.
fn given_back_kib(mib: usize) -> i64 {
    let v = std::hint::black_box(vec![1u8; mib << 20]);
    let held = rss_kib();
    drop(v);
    held as i64 - rss_kib() as i64
}

#[test]
fn freed_answers_stay_in_the_heap_below_the_thresholds_and_go_back_above() {
    if std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("glibc.malloc.")) {
        eprintln!("GLIBC_TUNABLES sets the allocator: nothing to check");
        return;
    }
    // glibc's default would map 24 MiB of its own and unmap it when freed
    // (the first large allocation in a process): ~24 MiB given back.
    assert!(chingest::heap::keep_freed_memory());
    let kept = given_back_kib(24);
    assert!(
        kept < 4 * 1024,
        "a freed 24 MiB answer gave back {kept} KiB"
    );
    // Past the mapping threshold an allocation is mapped and given back.
    let mapped = given_back_kib(48);
    assert!(
        mapped > 40 * 1024,
        "a freed 48 MiB answer gave back {mapped} KiB"
    );
}
