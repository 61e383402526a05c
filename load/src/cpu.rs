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

/// A CPU reading of the server (if a pid was given) and of this process.
#[derive(Debug, Clone, Copy)]
pub struct CpuMark {
    at: Instant,
    server: Option<f64>,
    client: Option<f64>,
}

impl CpuMark {
    /// Reads both processes now.
    pub fn now(server_pid: Option<u32>) -> CpuMark {
        CpuMark {
            at: Instant::now(),
            server: server_pid.and_then(|p| cpu_seconds(Some(p))),
            client: cpu_seconds(None),
        }
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
