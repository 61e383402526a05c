//! `[hot]`: the in-memory recent window of every series (issue #44).

use serde::{Deserialize, Serialize};

/// `[hot]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct HotConfig {
    /// Keep recent points in memory and answer small dashboard statements from
    /// them instead of the engine. Default: true. With `hold = "read"` (the
    /// default) only the measurements read are held, so a server whose writes
    /// nobody reads pays a lookup per batch: the same-run ramp A/B of one build
    /// with the store off and on sustained the same rate
    /// (test_results/history/ab_stop49_hold_read.md). Holding every measurement
    /// (`hold = "all"`) cost a step of sustainable rate on 2 cores
    /// (test_results/history/ab_stop48_hot.md).
    /// Only with
    /// `[storage] engine = "embedded"` (with a ClickHouse cluster other nodes
    /// may write the same series: nothing is held or served then).
    pub enabled: bool,
    /// How far back from a series' newest point its points are held: a duration
    /// (`30m`, `24h`, `7d`; units `s`, `m`, `h`, `d`, `w`). "Recent" is relative to
    /// the series' newest point, not the wall clock, so a backfill of old data is
    /// served as well as live data. Default `24h`.
    pub window: String,
    /// The most bytes the held points may take (times and values, 8 bytes each, a
    /// validity byte per value, string bytes, each series' tag strings): past it the largest measurements are
    /// emptied and held again from their next points on. Default 2 GiB (a twelfth
    /// of a 24 GiB machine).
    pub max_memory: u64,
    /// A statement whose conditions leave more series than this (per measurement)
    /// goes to the engine. Default 1,000: Grafana's "All" (a regex of every host)
    /// measured 2-3.5x faster from the hot store than from the engine at 200 and
    /// 1,000 series (CHANGELOG, issue #44).
    pub max_series: usize,
    /// The most bytes (Arrow buffers) of received writes waiting for the
    /// applier thread (`hot/apply.rs`): past it the backlog is dropped and the
    /// measurements it held are refilled (`hot/refill.rs`), read from the
    /// engine meanwhile. Default 256 MiB: an eighth of `max_memory`; the queued
    /// batches are mostly the very buffers the flusher holds until they are
    /// inserted, and at 1M values/s of TSBS-like rows (about 20 MB/s of
    /// batches) it is ten seconds or more of a starved applier.
    pub max_backlog: u64,
    /// How long a read that could be answered here waits for the applier to
    /// have applied every write to its measurement acknowledged before it (and then for the
    /// tables' read lock), in milliseconds, before it goes to the engine
    /// instead (`chingest_hot_fallbacks_total`). Default 3: the engine's own
    /// floor is 3–4 ms a statement (docs/influxql.md), so waiting longer than
    /// that costs more than the engine would.
    pub apply_wait_ms: u64,
    /// Which measurements are held: `read` (the default) holds a measurement
    /// only once a statement the store could answer has read it (that
    /// statement and the ones during its refill go to the engine), and drops
    /// it after `idle` without such a read; until then its writes cost the
    /// write path a hash lookup per batch and nothing more. `all` holds every
    /// measurement written (every acknowledged point readable from the store
    /// at once, at the insert's cost for every write).
    pub hold: Hold,
    /// With `hold = "read"`: how long a held measurement may go unread before it
    /// is dropped from the store and its writes stop being fed to it (a
    /// duration as `window`). Default `1h`.
    pub idle: String,
}

/// [`HotConfig::hold`].
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Hold {
    /// The measurements reads ask for.
    #[default]
    Read,
    /// Every measurement written.
    All,
}

impl Default for HotConfig {
    fn default() -> Self {
        HotConfig {
            enabled: true,
            window: "24h".to_string(),
            max_memory: 2 << 30,
            max_series: 1000,
            max_backlog: 256 << 20,
            apply_wait_ms: 3,
            hold: Hold::Read,
            idle: "1h".to_string(),
        }
    }
}

impl HotConfig {
    /// [`HotConfig::window`] in ns; an error names what is wrong.
    pub fn window_ns(&self) -> Result<i64, String> {
        parse_duration(&self.window)
            .ok_or_else(|| format!("hot.window: not a duration: {:?}", self.window))
    }

    /// [`HotConfig::idle`] in ns; an error names what is wrong.
    pub fn idle_ns(&self) -> Result<i64, String> {
        parse_duration(&self.idle)
            .ok_or_else(|| format!("hot.idle: not a duration: {:?}", self.idle))
    }

    /// [`HotConfig::apply_wait_ms`].
    pub(crate) fn apply_wait(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.apply_wait_ms)
    }
}

/// `<integer><unit>` with unit `s`, `m`, `h`, `d` or `w`, positive.
fn parse_duration(s: &str) -> Option<i64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = s.split_at(split);
    let n: i64 = n.parse().ok()?;
    let secs: i64 = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return None,
    };
    let ns = n.checked_mul(secs)?.checked_mul(1_000_000_000)?;
    (ns > 0).then_some(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_parse_with_units_and_refuse_the_rest() {
        assert_eq!(parse_duration("24h"), Some(86_400_000_000_000));
        assert_eq!(parse_duration("30m"), Some(1_800_000_000_000));
        assert_eq!(parse_duration("2w"), Some(1_209_600_000_000_000));
        for bad in ["", "h", "0h", "10", "1.5h", "-1h", "1y", "99999999999999w"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
