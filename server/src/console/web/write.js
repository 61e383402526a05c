// The Write view: line protocol pasted or uploaded into a database through `POST /write`,
// and InfluxDB's answer to a partial write shown line by line (each refused line with
// its line number and reason; the good lines are written).

import * as api from "./api.js";
import { byId, bytes, fill, h, note } from "./dom.js";

let file = null;

/**
 * InfluxDB 1.x's write error, in parts: `partial write: <part>\n<part>… dropped=N`, each
 * part `unable to parse '<line>': <reason>` or a reason that names no line (a point
 * dropped after parsing, e.g. a field type conflict).
 */
export function explain(message) {
  let text = message;
  const partial = text.startsWith("partial write: ");
  if (partial) text = text.slice("partial write: ".length);
  let dropped = null;
  const d = / dropped=(\d+)$/.exec(text);
  if (d) {
    dropped = Number(d[1]);
    text = text.slice(0, d.index);
  }
  const parts = text.split("\n").filter((p) => p !== "").map((p) => {
    const m = /^unable to parse '(.*)': (.*)$/s.exec(p);
    return m ? { line: m[1], reason: m[2] } : { line: null, reason: p };
  });
  return { partial, dropped, parts };
}

/** The data lines of a body: `[{number, text}]` (1-based; blank lines and comments skipped). */
export function dataLines(body) {
  return body.split("\n").map((l, i) => ({ number: i + 1, text: l.replace(/\r$/, "").replace(/^\s+/, "") }))
    .filter((l) => l.text !== "" && !l.text.startsWith("#"));
}

/** Each part's line number in `lines` (a refused line matched once, in order), or null. */
function locate(parts, lines) {
  const used = new Set();
  return parts.map((p) => {
    if (p.line === null) return null;
    const hit = lines.find((l) => !used.has(l.number) && l.text === p.line)
      || lines.find((l) => !used.has(l.number) && p.line.length > 0 && l.text.startsWith(p.line));
    if (!hit) return null;
    used.add(hit.number);
    return hit.number;
  });
}

function outcome(status, error, body) {
  const lines = dataLines(body);
  if (status === 204) {
    return note("ok", h("strong", { text: "Written." }), ` ${lines.length} line(s) accepted (204).`);
  }
  const e = explain(error);
  const at = locate(e.parts, lines);
  const unparsed = e.parts.filter((p) => p.line !== null).length;
  const refused = unparsed + (e.dropped || 0);
  const written = e.partial ? Math.max(0, lines.length - refused) : 0;
  const summary = e.partial
    ? `partial write: ${written} of ${lines.length} line(s) written, ${unparsed} did not parse, ${e.dropped ?? 0} point(s) dropped`
    : "nothing was written";
  const rows = e.parts.map((p, i) => h("tr", { data: { line: at[i] === null ? "" : String(at[i]) } },
    h("td", { class: "num", text: at[i] === null ? "–" : String(at[i]) }),
    h("td", { class: "code", text: p.line === null ? "(a point, after parsing)" : p.line }),
    h("td", { text: p.reason })));
  return [
    note("error", h("strong", { text: `HTTP ${status}: ` }), summary),
    h("div", { class: "table-wrap" }, h("table", { class: "grid line-errors" },
      h("thead", {}, h("tr", {}, h("th", { text: "line" }), h("th", { text: "text" }), h("th", { text: "why" }))),
      h("tbody", {}, rows))),
    h("details", {}, h("summary", { class: "muted", text: "the server's answer, as sent" }), h("pre", { class: "raw", text: error })),
  ];
}

async function send() {
  const db = byId("w-db").value.trim();
  const status = byId("w-status");
  const out = byId("w-result");
  if (!db) {
    fill(out, note("error", "Choose or type a database first (CREATE DATABASE in the Query view makes one)."));
    return;
  }
  const body = file ? await file.text() : byId("w-text").value;
  if (body.trim() === "") {
    fill(out, note("error", "Nothing to write: paste line protocol or choose a file."));
    return;
  }
  byId("w-send").disabled = true;
  status.textContent = `writing ${bytes(new Blob([body]).size)} to ${db}…`;
  const started = performance.now();
  try {
    const r = await api.write(db, byId("w-rp").value.trim(), byId("w-precision").value, body);
    fill(out, outcome(r.status, r.error, body));
    status.textContent = `${file ? file.name : "pasted text"} → ${db} · ${(performance.now() - started).toFixed(0)} ms`;
  } catch (e) {
    fill(out, note("error", e.message));
    status.textContent = "";
  } finally {
    byId("w-send").disabled = false;
  }
}

/** Sets the view up (once). */
export function init() {
  byId("w-file").addEventListener("change", (e) => {
    file = e.target.files[0] || null;
    byId("w-text").disabled = file !== null;
    byId("w-status").textContent = file ? `file: ${file.name} (${bytes(file.size)}); clear it to write the text instead` : "";
    if (!file) e.target.value = "";
  });
  byId("w-send").addEventListener("click", send);
  byId("w-text").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      send();
    }
  });
}

/** The databases the user may read (writes need WRITE; the server decides). */
export function setDatabases(dbs) {
  // A name may be typed too: a user that may write to a database but not read it does not
  // see it in SHOW DATABASES (InfluxDB lists only the readable ones), yet may write there.
  fill(byId("w-dbs"), dbs.map((v) => h("option", { value: v })));
  const input = byId("w-db");
  if (input.value === "" && dbs.length > 0) input.value = dbs[0];
}
