// DOM helpers. The console builds every element from nodes and text, never from HTML
// strings: what the server answers (tag values, engine errors) is shown, never parsed.
// The page's policy (require-trusted-types-for 'script') refuses HTML strings anyway.

/** `h("td", {class: "num", title: "x"}, "text", childNode, …)`: an element. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === "data") for (const [dk, dv] of Object.entries(v)) el.dataset[dk] = dv;
    else if (k === "style") throw new Error("inline styles are refused by the page's policy");
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

/** The element with id `id` (throws if the page lacks it: a bug, not a state). */
export function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`no #${id} on the page`);
  return el;
}

/** Replaces `el`'s children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** `<option>`s of `select` from `values`, keeping the selection when it is still there. */
export function options(select, values, keep) {
  const current = keep ?? select.value;
  fill(select, values.map((v) => h("option", { value: v, text: v })));
  if (values.includes(current)) select.value = current;
}

/** A short message box: `kind` is "error", "ok" or "info". */
export function note(kind, ...children) {
  return h("div", { class: `note ${kind}`, role: kind === "error" ? "alert" : undefined }, ...children);
}

/** 1234567 → "1.23 M"; small numbers as they are. */
export function human(n, unit = "") {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  const abs = Math.abs(n);
  const [div, suffix] = abs >= 1e9 ? [1e9, " G"] : abs >= 1e6 ? [1e6, " M"] : abs >= 1e4 ? [1e3, " k"] : [1, ""];
  const v = n / div;
  const s = div === 1 && Number.isInteger(v) ? String(v) : v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2);
  return s + suffix + unit;
}

/** Bytes as KiB/MiB/GiB. */
export function bytes(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i === 0 ? n : n.toFixed(n >= 100 ? 0 : 1)} ${units[i]}`;
}
