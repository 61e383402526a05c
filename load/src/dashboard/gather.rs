//! The Telegraf-shaped data every server gets (`telegraf_data`): each host's
//! gathers, every 10 s, written as they fall due.

use bytes::Bytes;

use super::{telegraf_data, uri, DashboardConfig, Subject, GATHER_MS};
use crate::error::{Error, Result};
use crate::query::http::{encode_component, Http};

/// Tries of a gather's write the server sheds, and the pause between them.
const RETRIES: u32 = 100;
const RETRY_AFTER: std::time::Duration = std::time::Duration::from_millis(200);

/// Writes every gather of every host after the last one written up to `until_ms`, and
/// creates the database first time round.
pub(super) async fn gather(
    cfg: &DashboardConfig,
    http: &Http,
    hosts: &[String],
    s: &mut Subject,
    until_ms: i64,
) -> Result<()> {
    let base = &s.server.base;
    let from = match s.gathered_ms {
        Some(t) => t + GATHER_MS,
        None => {
            let q = format!(
                "{base}/query?q={}",
                encode_component(&format!("CREATE DATABASE \"{}\"", cfg.db))
            );
            let r = http.post(&uri(&q)?, "text/plain", Bytes::new()).await?;
            if r.status != 200 {
                return Err(Error::InvalidArgument(format!(
                    "{}: CREATE DATABASE answered {}",
                    s.server.name, r.status
                )));
            }
            until_ms - cfg.history_secs() * 1000 - GATHER_MS
        }
    };
    let first = from.div_euclid(GATHER_MS);
    let last = until_ms.div_euclid(GATHER_MS);
    let write = uri(&format!(
        "{base}/write?db={}&precision=ns",
        encode_component(&cfg.db)
    ))?;
    let mut body = String::new();
    for step in first..=last {
        let mut points = Vec::new();
        for (h, host) in hosts.iter().enumerate() {
            telegraf_data::gather(&mut points, h as i64, host, step, step * GATHER_MS);
        }
        for p in points {
            body.push_str(&p.line());
            body.push('\n');
        }
        if body.len() > 4 << 20 || step == last {
            let body = Bytes::from(std::mem::take(&mut body));
            // A server shedding the write load beside (503, 429) takes the gathers later,
            // as Telegraf retries: the panels need every one of them.
            let mut tries = 0;
            let r = loop {
                let r = http
                    .post(&write, "text/plain; charset=utf-8", body.clone())
                    .await?;
                tries += 1;
                if !matches!(r.status, 429 | 503) || tries == RETRIES {
                    break r;
                }
                tokio::time::sleep(RETRY_AFTER).await;
            };
            if r.status != 204 {
                return Err(Error::InvalidArgument(format!(
                    "{}: a gather's write answered {}: {}",
                    s.server.name,
                    r.status,
                    String::from_utf8_lossy(&r.body)
                )));
            }
        }
    }
    s.gathered_ms = Some(last * GATHER_MS);
    Ok(())
}
