// The Query view: an editor for InfluxQL (`/query`) and SQL (`/api/v1/sql`), a database
// picker, a history, Ctrl/Cmd+Enter to run; results as tables and a chart.
//
// The history lives in this page's memory only (statements can carry passwords:
// `CREATE USER … WITH PASSWORD`), so nothing of it is left in the browser's storage.

import * as api from "./api.js";
import { byId, fill, h, options } from "./dom.js";
import { errorBox, errorOffset, influxView, sqlView } from "./results.js";

const HISTORY_MAX = 50;
const EXAMPLES = {
  influxql: "SHOW MEASUREMENTS",
  sql: "SELECT name, engine, total_rows FROM system.tables WHERE database NOT IN ('system', 'INFORMATION_SCHEMA', 'information_schema')",
};

const history = [];
let running = false;

const lang = () => byId("q-lang");
const editor = () => byId("q-text");

/** Sets the view up (once). */
export function init() {
  editor().value = EXAMPLES.influxql;
  editor().addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      run();
    }
  });
  byId("q-run").addEventListener("click", () => run());
  lang().addEventListener("change", () => {
    const other = lang().value === "sql" ? EXAMPLES.influxql : EXAMPLES.sql;
    if (editor().value.trim() === "" || editor().value === other) editor().value = EXAMPLES[lang().value];
  });
  byId("q-history").addEventListener("change", (e) => {
    const item = history[Number(e.target.value)];
    e.target.value = "";
    if (!item) return;
    lang().value = item.lang;
    if (item.db && [...byId("q-db").options].some((o) => o.value === item.db)) byId("q-db").value = item.db;
    editor().value = item.text;
    editor().focus();
  });
}

/** The databases the user may read, for the picker. */
export function setDatabases(dbs) {
  const select = byId("q-db");
  const first = select.options.length === 0;
  options(select, ["", ...dbs]);
  select.options[0].textContent = "(none)";
  // The first time, a database to start with (SHOW MEASUREMENTS needs one).
  if (first && dbs.length > 0) select.value = dbs[0];
}

/** Opens `text` in the editor and runs it (used by Browse's links). */
export function show(language, db, text, preferChart) {
  lang().value = language;
  if (db !== undefined) {
    const select = byId("q-db");
    if (![...select.options].some((o) => o.value === db)) select.append(h("option", { value: db, text: db }));
    select.value = db;
  }
  editor().value = text;
  return run(preferChart);
}

function remember(item) {
  const same = history.findIndex((x) => x.text === item.text && x.lang === item.lang && x.db === item.db);
  if (same >= 0) history.splice(same, 1);
  history.unshift(item);
  history.length = Math.min(history.length, HISTORY_MAX);
  const select = byId("q-history");
  fill(select, h("option", { value: "", text: `History (${history.length})` }),
    history.map((x, i) => h("option", {
      value: String(i),
      text: `${x.lang === "sql" ? "SQL" : "InfluxQL"}${x.db ? ` @${x.db}` : ""}: ${x.text.replace(/\s+/g, " ").slice(0, 90)}`,
    })));
}

/** Marks where an error points in the editor (selection), when it points somewhere. */
function markError(message, sent, base) {
  const at = errorOffset(message, sent);
  if (at === null) return;
  const ed = editor();
  ed.focus();
  ed.setSelectionRange(base + at, Math.min(base + at + 1, ed.value.length));
}

/** Runs the selection, or the whole editor. */
export async function run(preferChart = false) {
  if (running) return;
  const ed = editor();
  const selected = ed.selectionEnd > ed.selectionStart;
  const base = selected ? ed.selectionStart : 0;
  const text = selected ? ed.value.slice(ed.selectionStart, ed.selectionEnd) : ed.value;
  if (text.trim() === "") return;
  const language = lang().value;
  const db = byId("q-db").value;
  const status = byId("q-status");
  const out = byId("q-results");
  running = true;
  byId("q-run").disabled = true;
  status.textContent = "running…";
  out.setAttribute("aria-busy", "true");
  const started = performance.now();
  try {
    let blocks;
    if (language === "sql") {
      blocks = sqlView(await api.sql(text, db || undefined), preferChart);
    } else {
      const answer = await api.influxql(text, db || undefined);
      blocks = influxView(answer, text, preferChart);
      const failed = (answer.results || []).find((r) => r.error);
      if (failed) markError(failed.error, text, base);
    }
    const ms = performance.now() - started;
    fill(out, blocks);
    status.textContent = `${language === "sql" ? "SQL" : "InfluxQL"} · ${ms.toFixed(0)} ms`;
  } catch (e) {
    fill(out, h("section", { class: "result", data: { statement: "0" } },
      errorBox(e.status ? `HTTP ${e.status}:` : "Error:", e.message, text)));
    status.textContent = `failed after ${(performance.now() - started).toFixed(0)} ms`;
    markError(e.message, text, base);
  } finally {
    remember({ lang: language, db, text });
    running = false;
    byId("q-run").disabled = false;
    out.removeAttribute("aria-busy");
    out.dataset.renderedAt = performance.now().toFixed(0);
  }
}
