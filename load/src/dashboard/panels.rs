//! A Grafana dashboard's InfluxQL panels, and the queries one refresh of them sends, with
//! the variables and macros expanded as Grafana expands them (`super::macros`, the port
//! of Grafana 11's InfluxDB data source that `server/tests/http/grafana.rs` checks).

use std::path::Path;

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

/// `count` panels: the dashboard's panels in order, again and again, each pass (one
/// dashboard open in one browser tab) showing the next of `hosts` in `$host`.
pub fn layout(panels: &[Panel], count: usize, hosts: &[String]) -> Vec<(Panel, String)> {
    (0..count)
        .map(|i| {
            let tab = i / panels.len();
            // Spread the tabs over the hosts.
            let host = &hosts[(tab * 7919) % hosts.len()];
            (panels[i % panels.len()].clone(), host.clone())
        })
        .collect()
}

/// The text Grafana sends for `panel` showing `host` over the last `range_ms` to `now_ms`.
pub fn expand(
    panel: &Panel,
    host: &str,
    now_ms: i64,
    range_ms: i64,
    min_interval_ms: i64,
) -> String {
    let vars = [Variable {
        name: "host".into(),
        multi: true,
        values: vec![host.to_string()],
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
        let q = expand(mem, "web.2", 3_600_000, 3_600_000, 10_000);
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
        let l = layout(&panels, 20, &hosts);
        assert_eq!(l.len(), 20);
        let tabs: std::collections::BTreeSet<&str> = l.iter().map(|(_, h)| h.as_str()).collect();
        assert_eq!(tabs.len(), 3);
        assert_eq!(l[8].0.title, l[0].0.title);
    }
}
