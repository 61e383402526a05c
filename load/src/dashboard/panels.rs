//! A Grafana dashboard's InfluxQL panels, and the queries one refresh of them sends, with
//! the variables and macros expanded as Grafana expands them (`super::macros`, the port
//! of Grafana 11's InfluxDB data source that `server/tests/http/grafana.rs` checks).

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::macros::{self, Frame, Variable};
use crate::error::{Error, Result};

/// The width in pixels of a dashboard 24 grid units wide, as on a 1920-pixel screen.
const SCREEN_PX: i64 = 1920;

/// One query target of one panel.
#[derive(Debug, Clone)]
pub struct Panel {
    /// The panel's title.
    pub title: String,
    /// The raw query, variables and macros unexpanded.
    pub query: String,
    /// Grafana's `maxDataPoints` for it: the panel's width in pixels when unset.
    pub max_data_points: i64,
}

/// The InfluxQL targets of every panel of a dashboard JSON, in panel order.
pub fn load(path: &Path) -> Result<Vec<Panel>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::InvalidArgument(format!("{}: {e}", path.display())))?;
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| Error::InvalidArgument(format!("{}: {e}", path.display())))?;
    let mut out = Vec::new();
    for p in json["panels"].as_array().into_iter().flatten() {
        let width = p["gridPos"]["w"].as_i64().unwrap_or(12);
        let max_data_points = p["maxDataPoints"]
            .as_i64()
            .unwrap_or(width * SCREEN_PX / 24);
        for t in p["targets"].as_array().into_iter().flatten() {
            if let Some(q) = t["query"].as_str() {
                out.push(Panel {
                    title: p["title"].as_str().unwrap_or("").to_string(),
                    query: q.to_string(),
                    max_data_points,
                });
            }
        }
    }
    if out.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{}: no InfluxQL panel targets",
            path.display()
        )));
    }
    Ok(out)
}

/// How one dashboard tab shows its panels: its time range and whether `$host`
/// is one host or `All` (every host the variable lists, as Grafana sends them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    /// The time range, seconds before now.
    pub range_secs: i64,
    /// `$host` is `All`.
    pub all: bool,
}

impl View {
    /// `1h`, `6h`, `30m`, `1h:all`: a range and optionally `:all`.
    pub fn parse(spec: &str) -> Result<View> {
        let bad = || Error::InvalidArgument(format!("view {spec:?}: want e.g. 1h, 6h or 1h:all"));
        let (range, all) = match spec.trim().split_once(':') {
            Some((r, "all")) => (r, true),
            Some(_) => return Err(bad()),
            None => (spec.trim(), false),
        };
        let unit = match range.chars().last().ok_or_else(bad)? {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(bad()),
        };
        let n: i64 = range[..range.len() - 1].parse().map_err(|_| bad())?;
        if n <= 0 {
            return Err(bad());
        }
        Ok(View {
            range_secs: n * unit,
            all,
        })
    }

    /// `1h`, `6h:all`, as parsed.
    pub fn label(&self) -> String {
        let r = self.range_secs;
        let range = if r % 3600 == 0 {
            format!("{}h", r / 3600)
        } else if r % 60 == 0 {
            format!("{}m", r / 60)
        } else {
            format!("{r}s")
        };
        if self.all {
            format!("{range}:all")
        } else {
            range
        }
    }
}

/// Parses a comma-separated list of views.
pub fn views(spec: &str) -> Result<Vec<View>> {
    let v: Vec<View> = spec.split(',').map(View::parse).collect::<Result<_>>()?;
    if v.is_empty() {
        return Err(Error::InvalidArgument("no views".into()));
    }
    Ok(v)
}

/// One panel on the wall: a dashboard target, the tab's view and its host.
#[derive(Debug, Clone)]
pub struct Slot {
    /// The dashboard's panel target.
    pub panel: Panel,
    /// Its tab's view.
    pub view: View,
    /// `$host` when the view is not `All`.
    pub host: String,
}

impl Slot {
    /// `Memory used · 1h · host-0007`.
    pub fn label(&self) -> String {
        let host = if self.view.all { "All" } else { &self.host };
        format!(
            "{} · {} · {host}",
            self.panel.title,
            self.view.label().trim_end_matches(":all")
        )
    }

    /// The text Grafana sends for this panel over the `range` before `now_ms`;
    /// `hosts`: every host, for `All`.
    pub fn query(&self, hosts: &[String], now_ms: i64, min_interval_ms: i64) -> String {
        let values = if self.view.all {
            hosts.to_vec()
        } else {
            vec![self.host.clone()]
        };
        expand(
            &self.panel,
            &values,
            now_ms,
            self.view.range_secs * 1000,
            min_interval_ms,
        )
    }
}

/// `count` panels: the dashboard's panels in order, again and again, each pass (one
/// dashboard open in one browser tab) in the next of `views` and showing the next of
/// `hosts` in `$host`.
pub fn layout(panels: &[Panel], count: usize, hosts: &[String], views: &[View]) -> Vec<Slot> {
    (0..count)
        .map(|i| {
            let tab = i / panels.len();
            // Spread the tabs over the hosts.
            let host = &hosts[(tab * 7919) % hosts.len()];
            Slot {
                panel: panels[i % panels.len()].clone(),
                view: views[tab % views.len()],
                host: host.clone(),
            }
        })
        .collect()
}

/// The queries of the dashboard's query variables (`SHOW TAG VALUES …`), which
/// Grafana sends when the dashboard loads.
pub fn variables(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::InvalidArgument(format!("{}: {e}", path.display())))?;
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| Error::InvalidArgument(format!("{}: {e}", path.display())))?;
    Ok(json["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["type"] == "query")
        .filter_map(|v| v["query"].as_str().map(str::to_string))
        .collect())
}

/// The text Grafana sends for `panel` with `hosts` selected in `$host` over the last
/// `range_ms` to `now_ms`.
pub fn expand(
    panel: &Panel,
    hosts: &[String],
    now_ms: i64,
    range_ms: i64,
    min_interval_ms: i64,
) -> String {
    let vars = [Variable {
        name: "host".into(),
        multi: true,
        values: hosts.to_vec(),
    }];
    let frame = Frame::new(
        now_ms - range_ms,
        now_ms,
        panel.max_data_points,
        min_interval_ms,
    );
    macros::expand_macros(&macros::interpolate_variables(&panel.query, &vars), frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dashboard() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../deploy/grafana/provisioning/dashboards/telegraf-hosts.json")
    }

    #[test]
    fn the_host_dashboard_expands_as_grafana_sends_it() {
        let panels = load(&dashboard()).unwrap();
        assert_eq!(panels.len(), 8);
        let mem = panels.iter().find(|p| p.title == "Memory used").unwrap();
        assert_eq!(mem.max_data_points, 960);
        let q = expand(mem, &["web.2".into()], 3_600_000, 3_600_000, 10_000);
        assert_eq!(
            q,
            "SELECT mean(\"used_percent\") FROM \"mem\" WHERE (\"host\" =~ /^(web\\.2)$/) \
             AND time >= 0ms and time <= 3600000ms GROUP BY time(10s), \"host\" fill(null)"
        );
    }

    #[test]
    fn twenty_panels_are_the_dashboard_two_and_a_half_times_over_three_hosts() {
        let panels = load(&dashboard()).unwrap();
        let hosts: Vec<String> = (0..100).map(|i| format!("h{i}")).collect();
        let l = layout(&panels, 20, &hosts, &views("1h,6h,1h:all").unwrap());
        assert_eq!(l.len(), 20);
        let tabs: std::collections::BTreeSet<&str> = l.iter().map(|s| s.host.as_str()).collect();
        assert_eq!(tabs.len(), 3);
        assert_eq!(l[8].panel.title, l[0].panel.title);
        assert_eq!((l[8].view.range_secs, l[8].view.all), (6 * 3600, false));
        assert!(l[19].view.all);
        // 6 h at 960 px: 22.5 s a pixel, rounded as Grafana rounds it.
        let q = l[12].query(&hosts, 21_600_000, 10_000);
        assert!(q.contains("GROUP BY time(20s)"), "{q}");
        // All: every host the variable lists.
        let q = l[16].query(&hosts[..2], 3_600_000, 10_000);
        assert!(q.contains("/^(h0|h1)$/"), "{q}");
        assert_eq!(l[16].label(), "Uptime · 1h · All");
    }

    #[test]
    fn views_parse_and_print_back() {
        for spec in ["1h", "6h", "30m", "1h:all", "90s"] {
            assert_eq!(View::parse(spec).unwrap().label(), spec);
        }
        assert!(View::parse("1x").is_err() && View::parse("1h:some").is_err());
        assert_eq!(
            variables(&dashboard()).unwrap(),
            vec!["SHOW TAG VALUES FROM \"cpu\" WITH KEY = \"host\"".to_string()]
        );
    }
}
