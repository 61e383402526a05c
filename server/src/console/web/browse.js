// The Browse view: databases → retention policies and measurements (with their series
// counts) → fields (with types) and tag keys → tag values, each branch read when first
// opened, through InfluxQL's SHOW statements (so a user sees only what it may read).
// A name's "query" button opens a statement about it in the Query view.

import * as api from "./api.js";
import { byId, fill, h, human, note } from "./dom.js";

/** `SHOW SERIES` keys counted per measurement, at most this many keys read. */
const SERIES_SCAN = 100000;
const TAG_VALUES = 1000;
const NUMERIC_FIELD = new Set(["float", "integer", "unsigned"]);

/** An InfluxQL identifier, quoted. */
export function ident(s) {
  return `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** An InfluxQL string literal. */
export function literal(s) {
  return `'${s.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

/** The measurement of a series key (`cpu,host=a`; `\,` and `\ ` escape). */
export function measurementOf(key) {
  let out = "";
  for (let i = 0; i < key.length; i++) {
    const c = key[i];
    if (c === "\\" && i + 1 < key.length) { out += key[++i]; continue; }
    if (c === ",") break;
    out += c;
  }
  return out;
}

function ask(db, text, chart = false) {
  window.dispatchEvent(new CustomEvent("console:query", { detail: { lang: "influxql", db, text, chart } }));
}

function queryButton(title, db, text, chart) {
  return h("button", {
    type: "button",
    class: "link run",
    title,
    text: chart ? "chart" : "query",
    on: { click: (e) => { e.preventDefault(); e.stopPropagation(); ask(db, text, chart); } },
  });
}

/** A `<details>` whose body `load()`s when first opened (again after a failure). */
function branch(kind, name, summary, load) {
  const body = h("div", { class: "branch" });
  const d = h("details", { data: { kind, name } }, h("summary", {}, summary), body);
  let loaded = false;
  d.addEventListener("toggle", async () => {
    if (!d.open || loaded) return;
    loaded = true;
    fill(body, h("span", { class: "muted", text: "loading…" }));
    try {
      fill(body, await load());
    } catch (e) {
      loaded = false;
      fill(body, note("error", e.message));
    }
  });
  return d;
}

function rows(series) {
  return series.flatMap((s) => s.values || []);
}

function tagValues(db, m, key) {
  return branch("tag", key, [h("span", { class: "name", text: key }), h("span", { class: "badge", text: "tag" })], async () => {
    const q = `SHOW TAG VALUES ON ${ident(db)} FROM ${ident(m)} WITH KEY = ${ident(key)} LIMIT ${TAG_VALUES}`;
    const values = rows(await api.showRows(q)).map((r) => r[1]);
    if (values.length === 0) return h("p", { class: "muted", text: "no values" });
    return h("ul", { class: "leaves" }, values.map((v) => h("li", { data: { kind: "tag-value", name: v } },
      h("span", { class: "name", text: v }),
      queryButton(`points where ${key} = ${v}`, db,
        `SELECT * FROM ${ident(m)} WHERE ${ident(key)} = ${literal(v)} ORDER BY time DESC LIMIT 100`))),
    values.length === TAG_VALUES ? h("li", { class: "muted", text: `first ${TAG_VALUES} shown` }) : null);
  });
}

function measurement(db, m, series, capped) {
  const count = series === undefined ? null
    : h("span", { class: "badge", title: "series (SHOW SERIES)", text: `${capped ? "≥ " : ""}${human(series)} series` });
  const summary = [h("span", { class: "name", text: m }), count,
    queryButton(`latest points of ${m}`, db, `SELECT * FROM ${ident(m)} ORDER BY time DESC LIMIT 100`)];
  return branch("measurement", m, summary, async () => {
    const [fields, tags] = await Promise.all([
      api.showRows(`SHOW FIELD KEYS ON ${ident(db)} FROM ${ident(m)}`),
      api.showRows(`SHOW TAG KEYS ON ${ident(db)} FROM ${ident(m)}`),
    ]);
    const fieldRows = rows(fields);
    const tagKeys = rows(tags).map((r) => r[0]);
    return [
      h("div", { class: "group muted", text: `Fields (${fieldRows.length})` }),
      h("ul", { class: "leaves" }, fieldRows.map(([f, type]) => h("li", { data: { kind: "field", name: f, type } },
        h("span", { class: "name", text: f }), h("span", { class: "badge type", text: type }),
        NUMERIC_FIELD.has(type)
          ? queryButton(`${f} over time, per series`, db, `SELECT ${ident(f)} FROM ${ident(m)} GROUP BY * ORDER BY time DESC LIMIT 1000`, true)
          : queryButton(`latest values of ${f}`, db, `SELECT ${ident(f)} FROM ${ident(m)} ORDER BY time DESC LIMIT 100`)))),
      h("div", { class: "group muted", text: `Tag keys (${tagKeys.length})` }),
      tagKeys.length ? h("div", { class: "tags" }, tagKeys.map((k) => tagValues(db, m, k))) : null,
    ];
  });
}

function database(db) {
  return branch("db", db, [h("span", { class: "name", text: db }), h("span", { class: "badge", text: "database" })], async () => {
    const [policies, measurements, series] = await Promise.all([
      api.showRows(`SHOW RETENTION POLICIES ON ${ident(db)}`),
      api.showRows(`SHOW MEASUREMENTS ON ${ident(db)}`),
      api.showRows(`SHOW SERIES ON ${ident(db)} LIMIT ${SERIES_SCAN}`),
    ]);
    const keys = rows(series);
    const counts = new Map();
    for (const [key] of keys) {
      const m = measurementOf(key);
      counts.set(m, (counts.get(m) || 0) + 1);
    }
    const capped = keys.length >= SERIES_SCAN;
    const names = rows(measurements).map((r) => r[0]);
    return [
      h("div", { class: "group muted", text: "Retention policies" }),
      h("ul", { class: "leaves" }, rows(policies).map(([name, duration, , , isDefault]) =>
        h("li", { data: { kind: "rp", name } }, h("span", { class: "name", text: name }),
          h("span", { class: "badge", text: duration === "0s" ? "kept forever" : `kept ${duration}` }),
          isDefault ? h("span", { class: "badge", text: "default" }) : null))),
      h("div", { class: "group muted", text: `Measurements (${names.length})` }),
      names.length ? h("div", {}, names.map((m) => measurement(db, m, counts.get(m) || 0, capped)))
        : h("p", { class: "muted", text: "no measurements yet: write some points" }),
    ];
  });
}

/** Sets the view up (once). */
export function init(reload) {
  byId("b-refresh").addEventListener("click", reload);
}

/** Draws the tree of `dbs` (closed; branches load when opened). */
export function setDatabases(dbs) {
  const tree = byId("b-tree");
  if (dbs.length === 0) {
    fill(tree, note("info", "No database to show: none exists yet, or this user may read none. Create one with CREATE DATABASE in the Query view."));
    return;
  }
  fill(tree, dbs.map(database));
}
