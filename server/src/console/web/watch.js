// The Watch view: the server's own health, from `/metrics` and `/health` every 2 s while
// the view is shown (docs/metrics.md names the metrics): ingest rate, p95 write latency,
// unflushed points and WAL bytes, flush lag, refusals, quarantine, and on a cluster each
// shard's state and delivery lag.

import * as api from "./api.js";
import { byId, bytes, fill, h, human, note } from "./dom.js";
import { PALETTE, timeChart } from "./chart.js";
import * as prom from "./prom.js";

const PERIOD_MS = 2000;
const KEEP = 150; // 5 minutes of samples
const WRITE_ROUTES = new Set(["/write", "/api/v2/write", "/api/v1/prom/write"]);
const LATENCY = "chingest_http_request_duration_seconds";

let timer = null;
let paused = false;
let previous = null; // {t, samples}
const history = { t: [], rate: [], p95: [] };
let charts = null;

function tile(key, label, value, sub, level = "") {
  return h("div", { class: `tile ${level}`, data: { metric: key } },
    h("div", { class: "label", text: label }),
    h("div", { class: "value", text: value }),
    h("div", { class: "sub muted", text: sub || "" }));
}

function secs(s) {
  if (s === null || s === undefined) return "–";
  return s < 1 ? `${(s * 1000).toFixed(0)} ms` : s < 120 ? `${s.toFixed(1)} s` : `${(s / 60).toFixed(1)} min`;
}

/** What one pair of scrapes says: every tile's number. */
function compute(samples, prev, seconds, health) {
  const writes = { route: (r) => WRITE_ROUTES.has(r) };
  const g = (name, filter) => prom.sum(samples, name, filter);
  const r = (name, filter) => (prev ? prom.rate(prom.sum(prev, name, filter), g(name, filter), seconds) : null);
  const p95 = prev ? prom.quantile(0.95, prom.buckets(prev, LATENCY, writes), prom.buckets(samples, LATENCY, writes)) : null;
  const refusedByLimit = prom.sumBy(samples, "chingest_backpressure_rejections_total", "limit");
  const wal = health?.wal || {};
  return {
    accepted: g("chingest_points_accepted_total"),
    rate: r("chingest_points_accepted_total"),
    writeRate: r(`${LATENCY}_count`, writes),
    p95,
    unflushed: g("chingest_wal_unflushed_points") ?? wal.unflushed_points ?? null,
    walBytes: g("chingest_wal_unflushed_bytes") ?? wal.unflushed_bytes ?? null,
    lag: wal.lag_seconds ?? g("chingest_wal_lag_seconds"),
    refusalRate: r("chingest_backpressure_rejections_total"),
    refusals: g("chingest_backpressure_rejections_total") ?? 0,
    refusedByLimit,
    connectionsRefused: g("chingest_http_connections_refused_total") ?? 0,
    failedWrites: prom.sumBy(samples, "chingest_write_requests_failed_total", "reason"),
    quarantinedTables: g("chingest_quarantined_tables") ?? (health?.quarantine || []).length,
    quarantinedPoints: g("chingest_dead_letter_points") ?? (health?.quarantine || []).reduce((n, q) => n + q.points, 0),
  };
}

function tiles(m, health) {
  const flush = health?.flush || {};
  const wal = health?.wal || {};
  const limits = [...m.refusedByLimit.entries()].filter(([, n]) => n > 0).map(([k, n]) => `${k} ${human(n)}`).join(", ");
  return [
    tile("health", "Health", health ? health.status : "–", health?.message, health?.status === "pass" ? "good" : "bad"),
    tile("ingest", "Ingest rate", m.rate === null ? "…" : `${human(m.rate)} pts/s`, `${human(m.accepted ?? 0)} points accepted since start`),
    tile("p95", "Write latency p95", m.p95 === null ? "–" : secs(m.p95),
      m.writeRate ? `${human(m.writeRate)} writes/s` : "no writes in the last interval"),
    tile("unflushed", "Unflushed points", human(m.unflushed ?? 0), `flush ${flush.state || "–"}, ${human(flush.pending_points ?? 0)} pending`),
    tile("wal", "WAL (unflushed)", bytes(m.walBytes ?? 0), `queue ${wal.queue_depth ?? "–"} / ${wal.queue_capacity ?? "–"}`),
    tile("lag", "Flush lag", secs(m.lag ?? 0), flush.consecutive_failures ? `${flush.consecutive_failures} failed flushes in a row` : "oldest unflushed write",
      (m.lag ?? 0) > 10 || flush.consecutive_failures ? "warn" : ""),
    tile("refusals", "Refusals", m.refusalRate === null ? human(m.refusals) : `${human(m.refusalRate)}/s`,
      limits ? `since start: ${limits}` : `none since start${m.connectionsRefused ? `; ${m.connectionsRefused} connections refused` : ""}`,
      m.refusals > 0 || m.connectionsRefused > 0 ? "warn" : ""),
    tile("quarantine", "Quarantined", `${human(m.quarantinedPoints)} pts`, `${m.quarantinedTables} table(s)`, m.quarantinedPoints > 0 ? "bad" : ""),
  ];
}

function table(columns, rows) {
  return h("div", { class: "table-wrap" }, h("table", { class: "grid" },
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { text: c })))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((v) => h("td", { text: v === null || v === undefined ? "–" : String(v) })))))));
}

function details(m, health) {
  const out = [];
  if (health?.flush?.last_error) out.push(note("error", h("strong", { text: "Last flush error: " }), health.flush.last_error));
  const q = health?.quarantine || [];
  if (q.length) {
    out.push(h("h2", { text: "Quarantined batches" }), table(["database", "measurement", "entries", "points", "since", "error"],
      q.map((t) => [t.db, t.measurement, t.entries, t.points, secs(t.quarantined_secs) + " ago", t.error])));
  }
  const cluster = health?.cluster || [];
  if (cluster.length) {
    out.push(h("h2", { text: "Cluster shards" }), h("div", { data: { cluster: String(cluster.length) } }, table(
      ["shard", "endpoint", "state", "delivery lag", "waiting rows", "confirmed", "replicas", "last error"],
      cluster.map((s) => [s.shard, s.endpoint, s.up ? "up" : "down", secs(s.oldest_waiting_secs ?? 0), human(s.waiting_rows ?? 0),
        s.confirmed_secs_ago === null || s.confirmed_secs_ago === undefined ? "never" : `${secs(s.confirmed_secs_ago)} ago`,
        (s.replicas || []).map((r) => `${r.endpoint} ${r.up ? "up" : "down"}${r.delay_secs ? ` (${secs(r.delay_secs)} behind)` : ""}`).join("; "),
        s.last_error]))));
  }
  const failed = [...m.failedWrites.entries()].filter(([, n]) => n > 0);
  if (failed.length) {
    out.push(h("h2", { text: "Write requests that did not answer 204, since start" }), table(["reason", "requests"], failed.map(([k, n]) => [k, n])));
  }
  return out;
}

function draw() {
  const data = (ys) => [history.t, ys];
  if (!charts) {
    if (history.t.length < 2) return;
    charts = {
      rate: timeChart([{ label: "points/s", color: PALETTE[0] }], data(history.rate), { height: 160, small: true, clock: true }),
      p95: timeChart([{ label: "p95 ms", color: PALETTE[1] }], data(history.p95), { height: 160, small: true, clock: true }),
    };
    fill(byId("w-chart-rate"), charts.rate);
    fill(byId("w-chart-p95"), charts.p95);
    return;
  }
  charts.rate.uplot.setData(data(history.rate));
  charts.p95.uplot.setData(data(history.p95));
}

async function poll() {
  const err = byId("w-error");
  try {
    const [text, health] = await Promise.all([api.metrics(), api.health().catch(() => null)]);
    const now = Date.now() / 1000;
    const samples = prom.parse(text);
    const m = compute(samples, previous?.samples, previous ? now - previous.t : 0, health);
    previous = { t: now, samples };
    if (health) window.dispatchEvent(new CustomEvent("console:health", { detail: health }));
    fill(byId("w-tiles"), tiles(m, health));
    fill(byId("w-detail"), details(m, health));
    err.hidden = true;
    if (m.rate !== null) {
      history.t.push(now);
      history.rate.push(m.rate);
      history.p95.push(m.p95 === null ? null : m.p95 * 1000);
      for (const k of Object.keys(history)) if (history[k].length > KEEP) history[k].shift();
      draw();
    }
    byId("w-state").textContent = `every 2 s from /metrics and /health · updated ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    err.hidden = false;
    err.textContent = `Cannot read the server's metrics: ${e.message}`;
  }
}

function schedule() {
  clearTimeout(timer);
  timer = null;
  if (paused || document.hidden || byId("view-watch").hidden) return;
  timer = setTimeout(async () => {
    await poll();
    schedule();
  }, PERIOD_MS);
}

/** Sets the view up (once). */
export function init() {
  byId("w-pause").addEventListener("click", (e) => {
    paused = !paused;
    e.target.textContent = paused ? "Resume" : "Pause";
    if (!paused) poll().then(schedule);
    else schedule();
  });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && !byId("view-watch").hidden) shown();
    else schedule();
  });
}

/** The view was shown: read now, then every 2 s while it stays shown. */
export function shown() {
  if (!paused) poll().then(schedule);
}

/** The view was hidden: stop reading. */
export function hidden() {
  schedule();
}
