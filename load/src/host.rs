//! The host block: what machine and build produced a number. Every probe is
//! best-effort; a missing source reads "unknown" rather than failing the run.

use std::process::Command;

use serde::{Deserialize, Serialize};

const UNKNOWN: &str = "unknown";

/// Machine and build facts recorded next to every result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Logical CPUs available to this process.
    pub cores: usize,
    /// Total memory, bytes (`/proc/meminfo`).
    pub memory_bytes: u64,
    /// File system of the current directory (from `df`).
    pub disk: String,
    /// OS name and kernel release.
    pub os: String,
    /// `rustc --version`.
    pub rustc: String,
    /// `git rev-parse --short HEAD` (with `-dirty` when the tree has changes).
    pub git_commit: String,
    /// UTC time of collection, RFC 3339.
    pub date: String,
}

fn run(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn disk() -> Option<String> {
    // `df -PT .`: device, type, 1K-blocks, used, available, capacity, mount point.
    let out = run("df", &["-PT", "."])?;
    let line = out.lines().nth(1)?;
    let f: Vec<&str> = line.split_whitespace().collect();
    if f.len() < 7 {
        return None;
    }
    let gib = f[2].parse::<f64>().ok()? / (1024.0 * 1024.0);
    let dev = f[0].rsplit('/').next().unwrap_or(f[0]);
    // Rotational flag tells SSD from HDD when the device is a plain block device.
    let kind = std::fs::read_to_string(format!("/sys/block/{dev}/queue/rotational"))
        .ok()
        .map(|r| {
            if r.trim() == "0" {
                ", SSD"
            } else {
                ", rotational"
            }
        })
        .unwrap_or("");
    Some(format!(
        "{} {} on {} ({gib:.0} GiB{kind})",
        f[1], f[0], f[6]
    ))
}

fn os() -> Option<String> {
    let name = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        });
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_string());
    match (name, kernel) {
        (Some(n), Some(k)) => Some(format!("{n}, Linux {k}")),
        (n, k) => n.or(k),
    }
}

fn git_commit() -> Option<String> {
    let head = run("git", &["rev-parse", "--short", "HEAD"])?;
    let dirty = run("git", &["status", "--porcelain", "--untracked-files=no"]).is_some();
    Some(if dirty { format!("{head}-dirty") } else { head })
}

/// Formats seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (empty past chrono's range,
/// ±262,000 years).
pub fn rfc3339(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// The current UTC time, RFC 3339.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    rfc3339(secs)
}

/// Collects the host block for the current directory's machine and checkout.
pub fn collect() -> Host {
    Host {
        cpu_model: cpu_model().unwrap_or_else(|| UNKNOWN.into()),
        cores: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        memory_bytes: memory_bytes().unwrap_or(0),
        disk: disk().unwrap_or_else(|| UNKNOWN.into()),
        os: os().unwrap_or_else(|| UNKNOWN.into()),
        rustc: run("rustc", &["--version"]).unwrap_or_else(|| UNKNOWN.into()),
        git_commit: git_commit().unwrap_or_else(|| UNKNOWN.into()),
        date: now_rfc3339(),
    }
}

impl Host {
    /// A markdown bullet list.
    pub fn markdown(&self) -> String {
        format!(
            "- CPU: {} ({} logical cores)\n- Memory: {:.1} GiB\n- Disk: {}\n- OS: {}\n- Rust: {}\n- Commit: {}\n- Date: {}\n",
            self.cpu_model,
            self.cores,
            self.memory_bytes as f64 / (1u64 << 30) as f64,
            self.disk,
            self.os,
            self.rustc,
            self.git_commit,
            self.date
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_767_225_600 + 3661), "2026-01-01T01:01:01Z");
    }

    #[test]
    fn collect_fills_what_linux_provides() {
        let h = collect();
        assert!(h.cores >= 1);
        assert!(h.memory_bytes > 0);
        assert!(h.date.ends_with('Z'));
        assert!(h.markdown().contains("logical cores"));
    }
}
