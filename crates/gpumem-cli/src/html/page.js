"use strict";
// The page's behaviour: draw curves as SVG, zoom by drag, list live
// allocations at a clicked point (the stacked timeline is timeline.js,
// the start start.js). No network, no libraries.
const ERRORS = [];
function pageError(message) {
  ERRORS.push(String(message));
  document.body.dataset.errors = ERRORS.length;
  document.getElementById("errors").textContent = "The page hit an error: " + ERRORS.join("; ");
}
window.addEventListener("error", e => pageError(e.message));
window.addEventListener("unhandledrejection", e => pageError(e.reason));
const DATA = JSON.parse(document.getElementById("data").textContent);
const COLORS = ["#d62728", "#1f77b4", "#9467bd", "#ff7f0e", "#2ca02c", "#8c564b", "#17becf", "#e377c2"];
const SVG = "http://www.w3.org/2000/svg";
const chart = document.getElementById("chart");
let view = fullRange();
let selected = null;

function fullRange() {
  let lo = Infinity, hi = -Infinity;
  for (const c of DATA.curves.concat(DATA.bands)) {
    for (const [x] of c.points) { lo = Math.min(lo, x); hi = Math.max(hi, x); }
  }
  for (const [s, e] of DATA.intervals) { lo = Math.min(lo, s); hi = Math.max(hi, e === null ? s : e); }
  if (!isFinite(lo)) { lo = 0; hi = 1; }
  return [lo, hi > lo ? hi : lo + 1];
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let u = 0;
  while (n >= 1024 && u + 1 < units.length) { n /= 1024; u++; }
  return u === 0 ? n + " B" : n.toFixed(2) + " " + units[u];
}

function el(name, attrs, parent) {
  const e = document.createElementNS(SVG, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  parent.appendChild(e);
  return e;
}

function scale(svg, maxY) {
  const w = svg.clientWidth || 900, h = svg.clientHeight || 300, pad = 50;
  const [lo, hi] = view;
  return {
    w, h, pad,
    x: v => pad + (v - lo) / (hi - lo) * (w - pad - 10),
    y: v => h - 32 - v / (maxY || 1) * (h - 42),
    inv: px => lo + (px - pad) / (w - pad - 10) * (hi - lo),
  };
}

function visible(points) {
  const [lo, hi] = view;
  return points.filter(([x]) => x >= lo && x <= hi);
}

function drawChart() {
  chart.innerHTML = "";
  const curves = DATA.curves.map(c => ({ name: c.name, points: visible(c.points) }));
  const maxY = Math.max(1, ...curves.flatMap(c => c.points.map(p => p[1])));
  const s = scale(chart, maxY);
  for (let i = 0; i <= 4; i++) {
    const v = maxY * i / 4;
    el("line", { x1: s.pad, x2: s.w - 10, y1: s.y(v), y2: s.y(v), stroke: "#eee" }, chart);
    el("text", { x: 2, y: s.y(v) + 4, "font-size": 10, fill: "#777" }, chart).textContent = bytes(Math.round(v));
  }
  curves.forEach((c, i) => {
    if (!c.points.length) return;
    const d = c.points.map(([x, y], k) => (k ? "L" : "M") + s.x(x).toFixed(1) + "," + s.y(y).toFixed(1)).join("");
    el("path", { d, fill: "none", stroke: COLORS[i % COLORS.length], "stroke-width": 1.5, class: "curve" }, chart);
  });
  drawAxis(chart, s);
  if (selected !== null) {
    el("line", { x1: s.x(selected), x2: s.x(selected), y1: 0, y2: s.h - 30, stroke: "#000", "stroke-dasharray": "4 3", id: "cursor" }, chart);
  }
  document.getElementById("legend").innerHTML = DATA.curves.map((c, i) =>
    '<span><i style="background:' + COLORS[i % COLORS.length] + '"></i>' + escapeHtml(c.name) + "</span>").join("");
}

function escapeHtml(t) {
  return String(t).replace(/[&<>"]/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
}

function liveAt(x) {
  const groups = new Map();
  let total = 0, count = 0;
  for (const [start, end, size, origin, stack] of DATA.intervals) {
    if (start <= x && (end === null || end > x)) {
      const name = origin >= 0 ? DATA.origins[origin] : "untagged " + bytes(size);
      const g = groups.get(name) || { bytes: 0, count: 0, stacks: new Map() };
      g.bytes += size; g.count += 1; groups.set(name, g);
      g.stacks.set(stack, (g.stacks.get(stack) || 0) + size);
      total += size; count += 1;
    }
  }
  return { total, count, groups: [...groups.entries()].sort((a, b) => b[1].bytes - a[1].bytes) };
}

// One stack as memory_viz lists it: the Python frames (innermost first),
// then the native ones beneath them, dimmed.
function stackHtml(stack, name) {
  if (stack < 0) {
    return '<div class="note">' + (name === "before recording"
      ? "allocated before recording began: the snapshot kept no stack"
      : "no stack recorded") + "</div>";
  }
  const frames = DATA.stacks[stack].map(f => DATA.frames[f]);
  const line = ([file, ln, name]) => escapeHtml(name) + " <span class=\"note\">" + escapeHtml(file) + ":" + ln + "</span>";
  const python = frames.filter(f => f[3]), native = frames.filter(f => !f[3]);
  const forward = ((DATA.forward || [])[stack] || []).map(f => DATA.frames[f]);
  const created = forward.length ? '<div class="note">its autograd node was created in the forward pass at:</div><ol class="frames forward">' +
    forward.map(f => "<li>" + line(f) + "</li>").join("") + "</ol>" : "";
  return created + '<ol class="frames python">' + python.map(f => "<li>" + line(f) + "</li>").join("") + "</ol>" +
    (native.length ? '<details><summary class="note">' + native.length + " native frames</summary><ol class=\"frames native\">" +
      native.map(f => "<li>" + line(f) + "</li>").join("") + "</ol></details>" : "");
}

let shown = [];
function toggleStacks(row) {
  const next = row.nextElementSibling;
  if (next && next.classList.contains("stack-row")) { next.remove(); return; }
  const [name, g] = shown[Number(row.dataset.group)];
  const stacks = [...g.stacks.entries()].sort((a, b) => b[1] - a[1]);
  const tr = document.createElement("tr");
  tr.className = "stack-row";
  tr.innerHTML = '<td colspan="3">' + stacks.slice(0, 3).map(([s, b]) =>
    '<div class="stack"><b>' + bytes(b) + "</b> allocated from:" + stackHtml(s, name) + "</div>").join("") +
    (stacks.length > 3 ? '<div class="note">' + (stacks.length - 3) + " more stacks</div>" : "") + "</td>";
  row.after(tr);
}

function select(x) {
  selected = x;
  const live = liveAt(x);
  shown = live.groups.slice(0, 50);
  document.getElementById("live-title").textContent =
    "Live at " + xName(x) + ": " + bytes(live.total) + " in " + live.count + " allocations" +
    (DATA.left_out ? " (" + DATA.left_out + " smaller allocations not embedded)" : "");
  document.querySelector("#live tbody").innerHTML = shown.map(([name, g], i) =>
    '<tr class="live-row" data-group="' + i + '"><td>' + escapeHtml(name) + '</td><td class="num">' + bytes(g.bytes) + '</td><td class="num">' + g.count + "</td></tr>").join("");
  drawChart();
}

document.querySelector("#live tbody").addEventListener("click", e => {
  const row = e.target.closest("tr.live-row");
  if (row) toggleStacks(row);
});

let dragFrom = null;
chart.addEventListener("mousedown", e => { dragFrom = e.offsetX; });
chart.addEventListener("mouseup", e => {
  const s = scale(chart, 1);
  if (dragFrom !== null && Math.abs(e.offsetX - dragFrom) > 5) {
    const a = s.inv(Math.min(dragFrom, e.offsetX)), b = s.inv(Math.max(dragFrom, e.offsetX));
    view = [Math.max(view[0], a), Math.min(view[1], b)];
    redraw();
  } else {
    select(s.inv(e.offsetX));
  }
  dragFrom = null;
});
chart.addEventListener("dblclick", () => { view = fullRange(); redraw(); });

// The x axis: op numbers, and times (from the start of the trace) where
// the trace has them; the clock maps one to the other.
function clockAt(value, from, to) {
  const c = DATA.clock || [];
  if (!c.length) return null;
  let lo = 0, hi = c.length - 1;
  while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (c[mid][from] <= value) lo = mid; else hi = mid - 1; }
  return c[lo][to];
}
function duration(us) {
  if (us < 1000) return Math.round(us) + " µs";
  if (us < 1e6) return (us / 1000).toFixed(1) + " ms";
  return (us / 1e6).toFixed(2) + " s";
}
function opOf(x) { return DATA.x === "time" ? clockAt(x, 1, 0) : Math.round(x); }
function timeOf(x) {
  const c = DATA.clock || [];
  const t = DATA.x === "time" ? x : clockAt(x, 0, 1);
  return t === null || !c.length ? null : t - c[0][1];
}
function xName(x) {
  const op = opOf(x), t = timeOf(x);
  return (op === null ? "" : "op " + op) + (t === null ? "" : " (" + duration(t) + ")");
}
function drawAxis(svg, s) {
  const [lo, hi] = view, n = 6;
  for (let i = 0; i <= n; i++) {
    const x = lo + (hi - lo) * i / n, px = s.x(x);
    const anchor = i === 0 ? "start" : i === n ? "end" : "middle";
    el("line", { x1: px, x2: px, y1: s.h - 32, y2: s.h - 28, stroke: "#777" }, svg);
    const op = opOf(x), t = timeOf(x);
    el("text", { x: px, y: s.h - 17, "text-anchor": anchor, "font-size": 10, fill: "#555", class: "tick-op" }, svg)
      .textContent = op === null ? "" : "op " + op;
    if (t !== null) {
      el("text", { x: px, y: s.h - 5, "text-anchor": anchor, "font-size": 10, fill: "#888", class: "tick-time" }, svg)
        .textContent = duration(t);
    }
  }
}
