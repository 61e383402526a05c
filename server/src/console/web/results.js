// Results as tables and as a chart. Both languages' answers become "frames" first:
// `{name, tags, columns, types, rows}` (InfluxQL: one per series; SQL: one).

import { h, note } from "./dom.js";
import { MAX_SERIES, parseTime, resultChart } from "./chart.js";

/** At most this many rows of a frame are put in the page (the rest are counted). */
export const MAX_TABLE_ROWS = 1000;

/** The frames of one InfluxQL statement's result. */
export function influxFrames(result) {
  return (result.series || []).map((s) => ({
    name: s.name || "",
    tags: s.tags || {},
    columns: s.columns || [],
    types: null,
    rows: s.values || [],
  }));
}

/** The frame of an SQL answer (`format=json`: `{meta, data}`). */
export function sqlFrame(answer) {
  const columns = (answer.meta || []).map((m) => m.name);
  return {
    name: "",
    tags: {},
    columns,
    types: (answer.meta || []).map((m) => m.type),
    rows: (answer.data || []).map((row) => (Array.isArray(row) ? row : columns.map((c) => row[c]))),
  };
}

const NUMERIC_TYPE = /^(Nullable\()?(LowCardinality\()?(U?Int\d+|Float\d+|Decimal)/;
const TIME_TYPE = /^(Nullable\()?(DateTime|Date)/;
const GROUP_TYPE = /^(Nullable\()?(LowCardinality\()?(Nullable\()?(String|FixedString|Enum|Bool|UUID)/;

function isNumber(v) {
  return typeof v === "number" || (typeof v === "string" && v.trim() !== "" && !Number.isNaN(Number(v)));
}

/** How a frame's columns chart: its time column, value columns and grouping columns. */
function roles(frame) {
  const { columns, types, rows } = frame;
  if (types) {
    const time = types.findIndex((t) => TIME_TYPE.test(t));
    const values = types.map((t, i) => (i !== time && NUMERIC_TYPE.test(t) ? i : -1)).filter((i) => i >= 0);
    const groups = types.map((t, i) => (GROUP_TYPE.test(t) ? i : -1)).filter((i) => i >= 0);
    return { time, values, groups };
  }
  const time = columns.indexOf("time");
  const values = columns
    .map((_, i) => i)
    .filter((i) => i !== time && rows.some((r) => typeof r[i] === "number"));
  return { time, values, groups: [] };
}

/** The series a chart of `frames` draws: `{series: [{label, points}], omitted}`, or null. */
export function plotOf(frames) {
  const series = [];
  for (const frame of frames) {
    const { time, values, groups } = roles(frame);
    if (time < 0 || values.length === 0) continue;
    const tagText = Object.entries(frame.tags).map(([k, v]) => `${k}=${v}`).join(",");
    const prefix = [frame.name, tagText && `{${tagText}}`].filter(Boolean).join("");
    const bySeries = new Map();
    for (const row of frame.rows) {
      const x = parseTime(row[time]);
      if (x === null) continue;
      const group = groups.map((g) => `${frame.columns[g]}=${row[g]}`).join(",");
      for (const v of values) {
        const label = [prefix, group && `{${group}}`, frame.columns[v]].filter(Boolean).join(" ");
        if (!bySeries.has(label)) bySeries.set(label, []);
        const y = row[v];
        bySeries.get(label).push([x, isNumber(y) ? Number(y) : null]);
      }
    }
    for (const [label, points] of bySeries) series.push({ label, points });
  }
  if (series.length === 0) return null;
  return { series: series.slice(0, MAX_SERIES), omitted: Math.max(0, series.length - MAX_SERIES) };
}

function cell(v) {
  if (v === null || v === undefined) return h("td", { class: "null", text: "null" });
  if (typeof v === "object") return h("td", { text: JSON.stringify(v) });
  return h("td", { class: isNumber(v) && typeof v !== "string" ? "num" : undefined, text: String(v) });
}

/** A frame as a table (at most MAX_TABLE_ROWS rows). */
export function frameTable(frame) {
  const tagText = Object.entries(frame.tags).map(([k, v]) => `${k}=${v}`).join(", ");
  const caption = [frame.name, tagText].filter(Boolean).join(" · ");
  const shown = frame.rows.slice(0, MAX_TABLE_ROWS);
  return h("div", { class: "table-wrap" },
    h("table", { class: "grid" },
      caption ? h("caption", { text: caption }) : null,
      h("thead", {}, h("tr", {}, frame.columns.map((c, i) =>
        h("th", { text: c, title: frame.types ? frame.types[i] : undefined })))),
      h("tbody", {}, shown.map((row) => h("tr", {}, row.map(cell))))),
    frame.rows.length > shown.length
      ? h("p", { class: "muted", text: `showing ${shown.length} of ${frame.rows.length} rows` })
      : null);
}

/**
 * Where an engine or parser error points in `text` (the statement as sent): InfluxQL's
 * `at line L, char C`, the engine's `(line L, col C)` or `failed at position N`.
 * Returns the offset into `text`, or null.
 */
export function errorOffset(message, text) {
  let m = /at line (\d+), char (\d+)/.exec(message) || /\(line (\d+), col (\d+)\)/.exec(message);
  if (m) {
    const lines = text.split("\n");
    const line = Number(m[1]) - 1;
    if (line >= lines.length) return null;
    const before = lines.slice(0, line).reduce((n, l) => n + l.length + 1, 0);
    return Math.min(before + Number(m[2]) - 1, text.length);
  }
  m = /failed at position (\d+)/.exec(message);
  if (m) return Math.min(Number(m[1]) - 1, text.length);
  return null;
}

/** An error box: the message, and the line it points at with a caret under the spot. */
export function errorBox(where, message, text) {
  const at = text === undefined ? null : errorOffset(message, text);
  let excerpt = null;
  if (at !== null) {
    const start = text.lastIndexOf("\n", at - 1) + 1;
    const endNl = text.indexOf("\n", at);
    const line = text.slice(start, endNl < 0 ? text.length : endNl);
    excerpt = h("pre", { class: "caret" }, line, "\n", " ".repeat(at - start) + "^");
  }
  return note("error", h("strong", { text: where }), " ", h("span", { class: "message", text: message }), excerpt);
}

/** Table and chart tabs over `frames` (the chart tab only when there is a time series). */
export function framesView(frames, preferChart) {
  if (frames.length === 0) return h("p", { class: "muted empty", text: "no rows" });
  const tables = h("div", { class: "tables" }, frames.map(frameTable));
  const plot = plotOf(frames);
  if (!plot) return tables;
  const chartHolder = h("div", { class: "chart-holder" });
  let drawn = false;
  const tabs = h("div", { class: "tabs", role: "tablist" });
  const show = (which) => {
    tables.hidden = which !== "table";
    chartHolder.hidden = which !== "chart";
    for (const b of tabs.children) b.setAttribute("aria-selected", String(b.dataset.tab === which));
    if (which === "chart" && !drawn) {
      drawn = true;
      try {
        chartHolder.append(resultChart(plot));
      } catch (e) {
        chartHolder.append(note("error", e.message));
      }
    }
  };
  for (const [tab, label] of [["table", "Table"], ["chart", "Chart"]]) {
    tabs.append(h("button", { type: "button", role: "tab", data: { tab }, text: label, on: { click: () => show(tab) } }));
  }
  const view = h("div", { class: "frames" }, tabs, tables, chartHolder);
  queueMicrotask(() => show(preferChart ? "chart" : "table"));
  return view;
}

function rowCount(frames) {
  return frames.reduce((n, f) => n + f.rows.length, 0);
}

/** An InfluxQL answer: one block per statement, each with its own error or frames. */
export function influxView(answer, text, preferChart) {
  const results = answer.results || [];
  return results.map((r, i) => {
    const frames = influxFrames(r);
    const where = results.length > 1 ? `statement ${i + 1}` : "";
    const head = h("div", { class: "result-head muted" },
      results.length > 1 ? h("strong", { text: `Statement ${i + 1}` }) : null,
      r.error ? null : ` ${frames.length} series · ${rowCount(frames)} rows`);
    const messages = (r.messages || []).map((m) => note("info", `${m.level}: ${m.text}`));
    const body = r.error ? errorBox(where ? `${where}:` : "Error:", r.error, text) : framesView(frames, preferChart);
    return h("section", { class: "result", data: { statement: String(i) } }, head, messages, body);
  });
}

/** An SQL answer. */
export function sqlView(answer, preferChart) {
  const frame = sqlFrame(answer);
  const elapsed = answer.statistics?.elapsed;
  const head = h("div", { class: "result-head muted" },
    `${frame.rows.length} rows`, elapsed !== undefined ? ` · engine ${(elapsed * 1000).toFixed(1)} ms` : "");
  return [h("section", { class: "result", data: { statement: "0" } }, head, framesView([frame], preferChart))];
}
