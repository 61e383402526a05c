// The Prometheus text format of `/metrics`, read into samples, and what the Watch view
// computes from two scrapes: rates of counters and quantiles of histograms.

/** `[{name, labels, value}]` of the text (comments and malformed lines skipped). */
export function parse(text) {
  const out = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    let name;
    let labels = {};
    let rest;
    const brace = line.indexOf("{");
    const space = line.indexOf(" ");
    if (brace >= 0 && (space < 0 || brace < space)) {
      name = line.slice(0, brace);
      const end = parseLabels(line, brace + 1, labels);
      if (end < 0) continue;
      rest = line.slice(end + 1).trim();
    } else {
      name = line.slice(0, space);
      rest = line.slice(space + 1).trim();
    }
    const value = Number(rest.split(/\s+/)[0].replace(/^\+Inf$/, "Infinity").replace(/^-Inf$/, "-Infinity"));
    if (name && !Number.isNaN(value)) out.push({ name, labels, value });
  }
  return out;
}

/** Reads `k="v",…}` from `i` into `labels`; the index of the closing brace, or -1. */
function parseLabels(line, i, labels) {
  while (i < line.length) {
    while (line[i] === " " || line[i] === ",") i++;
    if (line[i] === "}") return i;
    const eq = line.indexOf("=", i);
    if (eq < 0 || line[eq + 1] !== '"') return -1;
    const key = line.slice(i, eq).trim();
    let j = eq + 2;
    let v = "";
    while (j < line.length && line[j] !== '"') {
      if (line[j] === "\\" && j + 1 < line.length) {
        const n = line[++j];
        v += n === "n" ? "\n" : n;
      } else v += line[j];
      j++;
    }
    labels[key] = v;
    i = j + 1;
  }
  return -1;
}

function matches(labels, filter) {
  return Object.entries(filter).every(([k, want]) =>
    typeof want === "function" ? want(labels[k]) : labels[k] === want);
}

/** The sum of the samples named `name` whose labels match `filter` (null when none). */
export function sum(samples, name, filter = {}) {
  let total = null;
  for (const s of samples) if (s.name === name && matches(s.labels, filter)) total = (total ?? 0) + s.value;
  return total;
}

/** The sums of `name` per value of label `by`. */
export function sumBy(samples, name, by, filter = {}) {
  const out = new Map();
  for (const s of samples) {
    if (s.name !== name || !matches(s.labels, filter)) continue;
    const k = s.labels[by] ?? "";
    out.set(k, (out.get(k) || 0) + s.value);
  }
  return out;
}

/** Per second between two scrapes of a counter (null when unknown or reset). */
export function rate(before, after, seconds) {
  if (before === null || after === null || seconds <= 0 || after < before) return null;
  return (after - before) / seconds;
}

/** A histogram's cumulative buckets `[[le, count]]` summed over the matching series. */
export function buckets(samples, name, filter = {}) {
  const byLe = sumBy(samples, `${name}_bucket`, "le", filter);
  return [...byLe.entries()]
    .map(([le, n]) => [le === "+Inf" ? Infinity : Number(le), n])
    .sort((a, b) => a[0] - b[0]);
}

/**
 * The `q` quantile of what a histogram observed between two scrapes (Prometheus's
 * `histogram_quantile`: linear within the bucket); null when nothing was observed.
 */
export function quantile(q, before, after) {
  const prev = new Map(before.map(([le, n]) => [le, n]));
  const delta = after.map(([le, n]) => [le, n - (prev.get(le) || 0)]);
  const total = delta.length ? delta[delta.length - 1][1] : 0;
  if (!(total > 0)) return null;
  const rank = q * total;
  let lowerLe = 0;
  let lowerCount = 0;
  for (const [le, n] of delta) {
    if (n >= rank) {
      if (le === Infinity) return lowerLe;
      const inBucket = n - lowerCount;
      return inBucket > 0 ? lowerLe + (le - lowerLe) * ((rank - lowerCount) / inBucket) : le;
    }
    lowerLe = le;
    lowerCount = n;
  }
  return lowerLe;
}
