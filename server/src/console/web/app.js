// The console's entry point: the views behind the tabs (VIEWS, one `#name` each), the
// sign-in when the server asks for credentials, the databases the user may read (one
// SHOW DATABASES for every view), and the health pill.

import * as api from "./api.js";
import { byId } from "./dom.js";
import * as query from "./query.js";
import * as browse from "./browse.js";
import * as watch from "./watch.js";
import * as write from "./write.js";

const VIEWS = ["query", "browse", "watch", "write"];
let signInNeeded = false;

function currentView() {
  const v = location.hash.replace(/^#/, "");
  return VIEWS.includes(v) ? v : "query";
}

function route() {
  const view = currentView();
  byId("login").hidden = !signInNeeded;
  byId("tabs").hidden = signInNeeded;
  for (const v of VIEWS) byId(`view-${v}`).hidden = signInNeeded || v !== view;
  for (const a of byId("tabs").querySelectorAll("a")) {
    if (a.dataset.view === view) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (!signInNeeded && view === "watch") watch.shown();
  else watch.hidden();
}

function needSignIn(why) {
  signInNeeded = true;
  const err = byId("login-error");
  err.hidden = !why;
  err.textContent = why || "";
  route();
  byId("login-user").focus();
}

/** Reads the databases this user may read and gives them to every view. */
async function loadDatabases() {
  let dbs;
  try {
    dbs = await api.databases();
  } catch (e) {
    if (e.status === 401) {
      needSignIn(api.user() ? "The server refused this user name and password." : "");
      api.setCredentials(null);
      return false;
    }
    // Auth on and no user yet: only the first admin's creation is answered.
    byId("q-status").textContent = `Cannot list databases: ${e.message}`;
    dbs = [];
  }
  query.setDatabases(dbs);
  write.setDatabases(dbs);
  browse.setDatabases(dbs);
  return true;
}

async function signIn(e) {
  e.preventDefault();
  const user = byId("login-user").value;
  const password = byId("login-password").value;
  api.setCredentials(user, password);
  byId("login-submit").disabled = true;
  try {
    if (await loadDatabases()) {
      signInNeeded = false;
      byId("login-password").value = "";
      byId("who").textContent = `signed in as ${user}`;
      byId("logout").hidden = false;
      route();
    }
  } finally {
    byId("login-submit").disabled = false;
  }
}

function signOut() {
  api.setCredentials(null);
  // A fresh page: nothing of this user's answers stays on screen or in memory.
  location.reload();
}

function showHealth(health) {
  const pill = byId("health");
  pill.textContent = `health: ${health.status}`;
  pill.className = `pill ${health.status === "pass" ? "good" : "bad"}`;
  pill.title = health.message || "";
}

async function pollHealth() {
  try {
    showHealth(await api.health());
  } catch (e) {
    const pill = byId("health");
    pill.textContent = "health: unreachable";
    pill.className = "pill bad";
    pill.title = e.message;
  }
}

async function start() {
  query.init();
  browse.init(() => loadDatabases());
  watch.init();
  write.init();
  byId("login-form").addEventListener("submit", signIn);
  byId("logout").addEventListener("click", signOut);
  window.addEventListener("hashchange", route);
  window.addEventListener("console:unauthorized", () => {
    if (!signInNeeded) needSignIn(api.user() ? "The server asks to sign in again." : "");
  });
  window.addEventListener("console:health", (e) => showHealth(e.detail));
  window.addEventListener("console:query", (e) => {
    const { lang, db, text, chart } = e.detail;
    location.hash = "#query";
    query.show(lang, db, text, chart);
  });
  route();
  pollHealth();
  setInterval(() => { if (!document.hidden && currentView() !== "watch") pollHealth(); }, 10000);
  await loadDatabases();
  // When the page is usable (milliseconds since navigation start): the browser tests read it.
  document.body.dataset.readyMs = performance.now().toFixed(0);
  document.body.dataset.ready = "true";
}

start();
