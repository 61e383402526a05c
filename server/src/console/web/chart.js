// Time-series charts with uPlot (embedded, see server/src/console/assets.rs): one chart
// draws every series of a result; drag to zoom, double-click or "Reset zoom" to go back.

import { h } from "./dom.js";

/** Series colours, in order; distinct in light and dark themes. */
export const PALETTE = [
  "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#0b6e4f", "#c2185b",
];

/** At most this many series in one chart (the rest are named in a note). */
export const MAX_SERIES = 24;

const FRACTION = /^(\d{4}-\d\d-\d\d)(?:[ T](\d\d:\d\d(?::\d\d)?)(?:\.(\d+))?)?(Z|[+-]\d\d:?\d\d)?$/;

/**
 * Seconds since the epoch (fractional) of a time as InfluxQL (RFC 3339, nanoseconds) or
 * the engine (`2026-01-02 03:04:05.123456789`, UTC) prints it; null if it is not one.
 */
export function parseTime(v) {
  if (typeof v === "number") return v;
  if (typeof v !== "string") return null;
  const m = FRACTION.exec(v.trim());
  if (!m) return null;
  const [, date, clock = "00:00:00", frac = "", zone = "Z"] = m;
  const ms = Date.parse(`${date}T${clock.length === 5 ? clock + ":00" : clock}.${(frac + "000").slice(0, 3)}${zone}`);
  if (Number.isNaN(ms)) return null;
  return ms / 1000 + Number(`0.${frac.slice(3) || "0"}`) / 1000;
}

/** Tick steps of a clock axis (seconds): whole seconds at least, so no label repeats. */
const CLOCK_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];

function clockTime(t) {
  return new Date(t * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

function css(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

function axis() {
  return {
    stroke: css("--muted", "#666"),
    grid: { stroke: css("--grid", "#e5e5e5"), width: 1 },
    ticks: { stroke: css("--grid", "#e5e5e5"), width: 1 },
  };
}

/**
 * A uPlot chart in a new element: `series` are `{label, color}`, `data` is uPlot's
 * `[xs, ys0, ys1, …]` (seconds). `opts.height` in pixels; `opts.unit` labels the y axis;
 * `opts.clock` labels the x axis with the time of day only; `opts.small` hides the legend.
 */
export function timeChart(series, data, opts = {}) {
  if (typeof window.uPlot !== "function") {
    throw new Error("uPlot did not load: the chart cannot be drawn");
  }
  const el = h("div", {
    class: opts.small ? "chart small" : "chart",
    data: { series: String(series.length), colors: series.map((s) => s.color).join(" ") },
  });
  const height = opts.height || 320;
  const u = new window.uPlot({
    width: 600,
    height,
    series: [
      {},
      ...series.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: 2,
        spanGaps: true,
        points: { size: 5, fill: s.color },
      })),
    ],
    axes: [
      opts.clock ? { ...axis(), space: 100, incrs: CLOCK_STEPS, values: (_, ticks) => ticks.map(clockTime) } : axis(),
      { ...axis(), label: opts.unit, size: 60 },
    ],
    scales: { x: { time: true } },
    cursor: { drag: { x: true, y: false } },
    legend: { show: !opts.small },
  }, data, el);
  // Follow the container's width (the element is sized once it is in the page).
  const fit = () => {
    const w = el.clientWidth;
    if (w > 0 && w !== u.width) u.setSize({ width: w, height });
  };
  new ResizeObserver(fit).observe(el);
  requestAnimationFrame(fit);
  el.uplot = u;
  return el;
}

/** `[[x, y], …]` per series → uPlot's aligned `[xs, ys…]` (nulls where a series has no point). */
export function align(seriesPoints) {
  const tables = seriesPoints.map((pts) => {
    const byX = new Map();
    for (const [x, y] of pts) if (x !== null) byX.set(x, y);
    const xs = [...byX.keys()].sort((a, b) => a - b);
    return [xs, xs.map((x) => byX.get(x))];
  });
  if (tables.length === 1) return tables[0];
  return window.uPlot.join(tables);
}

/** A chart of `plot` (`{series: [{label, points}], omitted}`) with a zoom reset. */
export function resultChart(plot) {
  const series = plot.series.map((s, i) => ({ label: s.label, color: PALETTE[i % PALETTE.length] }));
  const data = align(plot.series.map((s) => s.points));
  const chart = timeChart(series, data);
  const reset = h("button", {
    type: "button",
    text: "Reset zoom",
    on: { click: () => chart.uplot.setScale("x", { min: data[0][0], max: data[0][data[0].length - 1] }) },
  });
  return h("div", { class: "chart-box" },
    h("div", { class: "toolbar" }, reset, h("span", { class: "muted", text: "drag across the chart to zoom, double-click to zoom out" })),
    chart,
    plot.omitted ? h("p", { class: "muted", text: `${plot.omitted} more series not drawn (at most ${MAX_SERIES} per chart)` }) : null);
}
