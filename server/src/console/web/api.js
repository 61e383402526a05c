// The server's own endpoints, as any client calls them: the console has no API of its
// own and no other rights than the user's.
//
// Credentials live in this module's memory only: sent as an `Authorization: Basic`
// header on each request, never in a URL, a cookie or the browser's storage; a reload
// forgets them. Statements go in POST bodies (never in URLs, so not in logs or history),
// which also lets the server tell them from a link: a GET changes nothing.

let credentials = null;

/** Raised for an answer that is not a success: `status` and the server's message. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** Signs in (kept in memory) or out (`null`). */
export function setCredentials(user, password) {
  credentials = user === null ? null : { user, password };
}

/** The signed-in user's name, or null. */
export function user() {
  return credentials ? credentials.user : null;
}

function basic({ user, password }) {
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return "Basic " + btoa(s);
}

/** One request; a 401 also tells the page that it needs a sign-in. */
async function call(method, path, { params, body, headers } = {}) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params || {})) if (v) url.searchParams.set(k, v);
  const h = new Headers(headers || {});
  if (credentials) h.set("Authorization", basic(credentials));
  let resp;
  try {
    resp = await fetch(url, { method, headers: h, body, credentials: "omit", cache: "no-store" });
  } catch (e) {
    throw new ApiError(0, `the server did not answer (${e.message})`);
  }
  if (resp.status === 401) window.dispatchEvent(new CustomEvent("console:unauthorized"));
  return resp;
}

/** The `error` of a JSON answer, else its text. */
async function failure(resp) {
  const text = await resp.text();
  let message = text.trim() || resp.statusText;
  try {
    const j = JSON.parse(text);
    if (typeof j.error === "string") message = j.error;
    else if (typeof j.message === "string") message = j.message;
  } catch (_) { /* not JSON: the text as it is */ }
  return new ApiError(resp.status, message);
}

/** InfluxQL through `POST /query`: the parsed `{results: [...]}`. */
export async function influxql(q, db) {
  const body = new URLSearchParams({ q });
  if (db) body.set("db", db);
  const resp = await call("POST", "/query", { body });
  if (!resp.ok) throw await failure(resp);
  return resp.json();
}

/** SQL through `POST /api/v1/sql?format=json`: the engine's `{meta, data, rows}`. */
export async function sql(statement, db) {
  const resp = await call("POST", "/api/v1/sql", {
    params: { format: "json", db },
    body: statement,
    headers: { "Content-Type": "text/plain; charset=utf-8" },
  });
  if (!resp.ok) throw await failure(resp);
  const text = await resp.text();
  try {
    return JSON.parse(text);
  } catch (_) {
    // A failure after the first block cuts the answer (docs/security.md).
    throw new ApiError(resp.status, "the engine stopped part way through its answer (the statement failed or hit a limit)");
  }
}

/** Line protocol through `POST /write`: `{status, error}` (`error` null on 204). */
export async function write(db, rp, precision, body) {
  const resp = await call("POST", "/write", {
    params: { db, rp, precision },
    body,
    headers: { "Content-Type": "text/plain; charset=utf-8" },
  });
  if (resp.status === 204) return { status: 204, error: null };
  const e = await failure(resp);
  return { status: resp.status, error: e.message };
}

/** `GET /metrics`: the Prometheus text. */
export async function metrics() {
  const resp = await call("GET", "/metrics");
  if (!resp.ok) throw await failure(resp);
  return resp.text();
}

/** `GET /health`: its JSON, also when it answers 503. */
export async function health() {
  const resp = await call("GET", "/health");
  const text = await resp.text();
  try {
    return JSON.parse(text);
  } catch (_) {
    throw new ApiError(resp.status, text.trim() || resp.statusText);
  }
}

/** The databases this user may read (`SHOW DATABASES` filters them). */
export async function databases() {
  const r = await influxql("SHOW DATABASES");
  const res = r.results[0];
  if (res.error) throw new ApiError(200, res.error);
  const values = res.series?.[0]?.values || [];
  return values.map((v) => v[0]);
}

/** The rows of the first series of a one-statement InfluxQL answer (throws its error). */
export async function showRows(q, db) {
  const r = await influxql(q, db);
  const res = r.results[0];
  if (res.error) throw new ApiError(200, res.error);
  return res.series || [];
}
