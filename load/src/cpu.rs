//! CPU time of a process from `/proc/<pid>/stat`, to show where the box is spent
//! during each step (server vs. load generator).

use std::sync::OnceLock;
use std::time::Instant;

fn clock_ticks_per_sec() -> f64 {
    static HZ: OnceLock<f64> = OnceLock::new();
    *HZ.get_or_init(|| {
        // No libc dependency for one sysconf: ask getconf, fall back to Linux's usual 100.
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|hz| *hz > 0.0)
            .unwrap_or(100.0)
    })
}

/// Parses user + system CPU seconds from the text of a `/proc/<pid>/stat` file.
pub fn parse_stat_cpu_seconds(stat: &str, hz: f64) -> Option<f64> {
    // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After ')': index 0 is field 3 (state), so utime (14) is 11 and stime (15) is 12.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / hz)
}

/// User + system CPU seconds consumed so far by `pid` (`None` for ourselves).
pub fn cpu_seconds(pid: Option<u32>) -> Option<f64> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/stat"),
        None => "/proc/self/stat".to_string(),
    };
    let text = std::fs::read_to_string(path).ok()?;
    parse_stat_cpu_seconds(&text, clock_ticks_per_sec())
}

/// Bytes `pid` has caused to be written to storage so far (`write_bytes` of
/// `/proc/<pid>/io`: what reached the block layer, page cache write-back included).
pub fn write_bytes(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    parse_io_write_bytes(&text)
}

/// The `write_bytes` line of a `/proc/<pid>/io` text.
pub fn parse_io_write_bytes(io: &str) -> Option<u64> {
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// A CPU reading of the server (if a pid was given) and of this process.
#[derive(Debug, Clone, Copy)]
pub struct CpuMark {
    at: Instant,
    server: Option<f64>,
    client: Option<f64>,
    server_write_bytes: Option<u64>,
}

impl CpuMark {
    /// Reads both processes now.
    pub fn now(server_pid: Option<u32>) -> CpuMark {
        CpuMark {
            at: Instant::now(),
            server: server_pid.and_then(|p| cpu_seconds(Some(p))),
            client: cpu_seconds(None),
            server_write_bytes: server_pid.and_then(write_bytes),
        }
    }

    /// Bytes the server wrote to storage between `self` and `later`.
    pub fn server_bytes_written_until(&self, later: &CpuMark) -> Option<u64> {
        Some(
            later
                .server_write_bytes?
                .saturating_sub(self.server_write_bytes?),
        )
    }

    /// CPU % (100 = one core busy) of (server, client) between `self` and `later`.
    pub fn percent_until(&self, later: &CpuMark) -> (Option<f64>, Option<f64>) {
        let wall = later.at.duration_since(self.at).as_secs_f64();
        let pct = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if wall > 0.0 => Some(((b - a) / wall * 100.0).max(0.0)),
            _ => None,
        };
        (
            pct(self.server, later.server),
            pct(self.client, later.client),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_write_bytes_of_proc_io() {
        let io = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 123456\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_io_write_bytes(io), Some(123_456));
        assert_eq!(parse_io_write_bytes("rchar: 1\n"), None);
        // Our own process is readable.
        assert!(write_bytes(std::process::id()).is_some());
    }

    #[test]
    fn parses_stat_with_spaces_in_name() {
        let stat = "1234 (my (weird) proc) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 4 0 100 0 0";
        assert_eq!(parse_stat_cpu_seconds(stat, 100.0), Some(3.0));
        assert_eq!(parse_stat_cpu_seconds("garbage", 100.0), None);
        assert_eq!(parse_stat_cpu_seconds("1 (x) S 1 2", 100.0), None);
    }

    #[test]
    fn reads_own_cpu_time() {
        assert!(cpu_seconds(None).is_some());
    }
}
