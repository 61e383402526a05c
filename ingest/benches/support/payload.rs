//! The standard payload shared by the `parse` bench and the `stage_cpu` example:
//! 50,000 points per request, 1,000 hosts × cpu/mem/disk/net, 4–8 fields of mixed types,
//! deterministic (seeded), so every run parses the same bytes.

pub(crate) const POINTS: usize = 50_000;
pub(crate) const HOSTS: usize = 1_000;
pub(crate) const NOW: i64 = 1_700_000_000_000_000_000;

/// Deterministic xorshift generator (seeded) so every run parses the same bytes.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn f(&mut self, max: f64) -> f64 {
        (self.next() % 1_000_000) as f64 / 1_000_000.0 * max
    }
}

/// The standard payload as line protocol.
pub(crate) fn standard_payload() -> Vec<u8> {
    use std::fmt::Write;
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut s = String::with_capacity(POINTS * 200);
    let regions = ["us-east-1", "us-west-2", "eu-central-1", "ap-south-1"];
    for i in 0..POINTS {
        let round = i / 4;
        let host = round % HOSTS;
        let region = regions[host % regions.len()];
        let ts = NOW + (round / HOSTS) as i64 * 10_000_000_000 + host as i64;
        match i % 4 {
            0 => writeln!(
                s,
                "cpu,host=host{host:04},region={region},cpu=cpu-total usage_user={:.2},usage_system={:.2},usage_idle={:.2},usage_iowait={:.3},cores=8i,online=true {ts}",
                rng.f(100.0), rng.f(100.0), rng.f(100.0), rng.f(5.0)
            ),
            1 => writeln!(
                s,
                "mem,host=host{host:04},region={region} used={}i,free={}i,cached={}i,available_percent={:.2} {ts}",
                rng.next() % 64_000_000_000, rng.next() % 64_000_000_000, rng.next() % 8_000_000_000, rng.f(100.0)
            ),
            2 => writeln!(
                s,
                "disk,host=host{host:04},region={region},device=sda1,path=/ used={}i,free={}i,used_percent={:.2},inodes_free={}u,fstype=\"ext4\",mounted=true,total=512000000000i {ts}",
                rng.next() % 500_000_000_000, rng.next() % 500_000_000_000, rng.f(100.0), rng.next() % 30_000_000
            ),
            _ => writeln!(
                s,
                "net,host=host{host:04},region={region},interface=eth0 bytes_recv={}u,bytes_sent={}u,packets_recv={}i,packets_sent={}i,err_in=0i,drop_in={}i,up=true {ts}",
                rng.next() % 1_000_000_000_000, rng.next() % 1_000_000_000_000, rng.next() % 1_000_000_000, rng.next() % 1_000_000_000, rng.next() % 100
            ),
        }
        .unwrap();
    }
    s.into_bytes()
}
