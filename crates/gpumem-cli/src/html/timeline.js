// The stacked timeline: live bytes as bands over the x axis, by origin
// (the top origins by peak bytes, the rest as one band, the memory live
// before recording as its own), by pool (each pool's reserved bytes) or
// by size class. Hover a band to name it, click it to list its
// allocations. Each view is swept once from the intervals; drawing
// samples at most MAX_SAMPLES columns, keeping each column's highest.
const TOP_ORIGINS = 8, MAX_SAMPLES = 1200, LISTED = 100;
const timeline = document.getElementById("timeline");
const tip = document.getElementById("tip");
const BAND_COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"];
let stackView = "origin";
const views = {};

// Live bytes per band after every distinct x: `assign[i]` is interval
// i's band (-1: none).
function sweep(assign, count) {
  // Memory from before recording is live from the start, though the
  // trace's first ops re-create it one block at a time.
  const ints = DATA.intervals, ev = [], pre = DATA.pre_existing || 0;
  for (let i = 0; i < ints.length; i++) {
    if (assign[i] < 0) continue;
    ev.push([i < pre ? ints[0][0] : ints[i][0], ints[i][2], assign[i]]);
    if (ints[i][1] !== null) ev.push([ints[i][1], -ints[i][2], assign[i]]);
  }
  ev.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const cur = new Float64Array(count), xs = [], rows = [];
  for (let k = 0; k < ev.length;) {
    const x = ev[k][0];
    for (; k < ev.length && ev[k][0] === x; k++) cur[ev[k][2]] += ev[k][1];
    xs.push(x); rows.push(Float64Array.from(cur));
  }
  return { xs, rows };
}

function finish(v) {
  v.totals = v.rows.map(r => r.reduce((a, b) => a + b, 0));
  v.peaks = v.names.map((_, i) => v.rows.reduce((m, r) => Math.max(m, r[i]), 0));
  return v;
}

function originView() {
  const ints = DATA.intervals, pre = DATA.pre_existing || 0, n = DATA.origins.length;
  const slot = i => (ints[i][3] >= 0 ? ints[i][3] : n);
  const all = ints.map((_, i) => (i < pre ? -1 : slot(i)));
  const { rows } = sweep(all, n + 1);
  const peak = new Float64Array(n + 1);
  for (const r of rows) for (let o = 0; o <= n; o++) if (r[o] > peak[o]) peak[o] = r[o];
  const order = [...peak.keys()].filter(o => peak[o] > 0).sort((a, b) => peak[b] - peak[a]);
  const top = order.slice(0, TOP_ORIGINS), rank = new Map(top.map((o, k) => [o, k]));
  const names = [], base = pre > 0 ? 1 : 0;
  if (pre > 0) names.push("live before recording began");
  top.forEach(o => names.push(o < n ? DATA.origins[o] : "untagged"));
  const rest = order.length - top.length;
  if (rest > 0) names.push(rest + " more origins");
  const assign = ints.map((_, i) => i < pre ? 0 : rank.has(slot(i)) ? base + rank.get(slot(i)) : names.length - 1);
  return finish({ names, assign, ...sweep(assign, names.length) });
}

const SIZES = [[1 << 20, "< 1 MiB"], [16 << 20, "1–16 MiB"], [128 << 20, "16–128 MiB"], [1 << 30, "128 MiB–1 GiB"], [Infinity, "≥ 1 GiB"]];
function sizeView() {
  const cls = DATA.intervals.map(([, , b]) => SIZES.findIndex(([max]) => b < max));
  const used = SIZES.map((_, k) => cls.includes(k));
  const index = []; let next = 0;
  used.forEach((u, k) => { index[k] = u ? next++ : -1; });
  const names = SIZES.filter((_, k) => used[k]).map(s => s[1]);
  const assign = cls.map(k => index[k]);
  return finish({ names, assign, ...sweep(assign, names.length) });
}

function poolView() {
  const xs = [...new Set(DATA.bands.flatMap(b => b.points.map(p => p[0])))].sort((a, b) => a - b);
  const at = DATA.bands.map(() => 0), cur = new Float64Array(DATA.bands.length), rows = [];
  for (const x of xs) {
    DATA.bands.forEach((b, i) => {
      while (at[i] < b.points.length && b.points[at[i]][0] <= x) cur[i] = b.points[at[i]++][1];
    });
    rows.push(Float64Array.from(cur));
  }
  return finish({ names: DATA.bands.map(b => b.name), assign: null, xs, rows, reserved: true });
}

function currentView() {
  if (!views[stackView]) views[stackView] = { origin: originView, size: sizeView, pool: poolView }[stackView]();
  return views[stackView];
}

function firstAtLeast(xs, x) { let lo = 0, hi = xs.length; while (lo < hi) { const m = (lo + hi) >> 1; if (xs[m] < x) lo = m + 1; else hi = m; } return lo; }

// The rows to draw within the view: all of them, or each column's highest.
function sampled(v) {
  const [lo, hi] = view;
  const a = Math.max(0, firstAtLeast(v.xs, lo) - 1), b = firstAtLeast(v.xs, hi + 1e-9);
  if (b - a <= MAX_SAMPLES) return [...Array(b - a).keys()].map(k => a + k);
  const best = new Map();
  for (let i = a; i < b; i++) {
    const col = Math.floor((Math.max(v.xs[i], lo) - lo) / (hi - lo) * MAX_SAMPLES);
    const k = best.get(col);
    if (k === undefined || v.totals[i] > v.totals[k]) best.set(col, i);
  }
  return [...best.values()].sort((p, q) => p - q);
}

function bandColor(v, i) { return v.names[i] === "live before recording began" ? "#9a9a9a" : BAND_COLORS[i % BAND_COLORS.length]; }

let timelineScale = null;
function drawTimeline() {
  timeline.innerHTML = "";
  const v = currentView(), idx = sampled(v);
  const maxY = Math.max(1, ...idx.map(i => v.totals[i]));
  const s = scale(timeline, maxY);
  timelineScale = s;
  for (let i = 0; i <= 4; i++) {
    const y = maxY * i / 4;
    el("line", { x1: s.pad, x2: s.w - 10, y1: s.y(y), y2: s.y(y), stroke: "#eee" }, timeline);
    el("text", { x: 2, y: s.y(y) + 4, "font-size": 10, fill: "#777" }, timeline).textContent = bytes(Math.round(y));
  }
  const clamp = x => s.x(Math.min(Math.max(x, view[0]), view[1]));
  const cum = idx.map(k => { let sum = 0; return Array.from(v.rows[k], b => (sum += b)); });
  v.names.forEach((name, i) => {
    const top = [], bottom = [];
    idx.forEach((k, j) => {
      const x0 = clamp(v.xs[k]), x1 = j + 1 < idx.length ? clamp(v.xs[idx[j + 1]]) : s.x(view[1]);
      const t = s.y(cum[j][i]), b = s.y(i ? cum[j][i - 1] : 0);
      top.push(x0.toFixed(1) + "," + t.toFixed(1), x1.toFixed(1) + "," + t.toFixed(1));
      bottom.push(x0.toFixed(1) + "," + b.toFixed(1), x1.toFixed(1) + "," + b.toFixed(1));
    });
    if (!top.length) return;
    const p = el("polygon", { points: top.concat(bottom.reverse()).join(" "), fill: bandColor(v, i), class: "band", "data-band": i }, timeline);
    el("title", {}, p).textContent = name;
  });
  drawAxis(timeline, s);
  document.getElementById("timeline-legend").innerHTML = (v.reserved ? "reserved per pool: " : "") + v.names.map((n, i) =>
    '<span><i style="background:' + bandColor(v, i) + '"></i>' + escapeHtml(n) + ' <span class="note">(peak ' + bytes(v.peaks[i]) + ")</span></span>").join("");
  for (const b of document.querySelectorAll("#views button")) b.classList.toggle("on", b.dataset.view === stackView);
}

function valueAt(v, band, x) {
  const k = firstAtLeast(v.xs, x + 1e-9) - 1;
  return k < 0 ? 0 : v.rows[k][band];
}

function hoverBand(band, e) {
  const v = currentView(), x = timelineScale.inv(e.clientX - timeline.getBoundingClientRect().left);
  tip.textContent = v.names[band] + ": " + bytes(valueAt(v, band, x)) + " at " + xName(x);
  tip.style.left = e.clientX + 12 + "px";
  tip.style.top = e.clientY + 12 + "px";
  tip.hidden = false;
  for (const p of timeline.querySelectorAll("polygon.hover")) p.classList.remove("hover");
  timeline.querySelector('polygon[data-band="' + band + '"]').classList.add("hover");
}

let listed = [];
function listBand(band) {
  const v = currentView(), title = document.getElementById("band-title"), body = document.querySelector("#band-list tbody");
  if (!v.assign) {
    title.textContent = v.names[band] + ": peak " + bytes(v.peaks[band]) + " reserved. A pool holds allocations of every origin: view by origin or by size to list them.";
    body.innerHTML = "";
    return;
  }
  const mine = [];
  v.assign.forEach((b, i) => { if (b === band) mine.push(i); });
  mine.sort((a, b) => DATA.intervals[b][2] - DATA.intervals[a][2]);
  listed = mine.slice(0, LISTED);
  title.textContent = v.names[band] + ": " + mine.length + " allocations, peak " + bytes(v.peaks[band]) + " live" +
    (mine.length > LISTED ? " (the largest " + LISTED + " listed)" : "");
  body.innerHTML = "<tr><th class=\"num\">bytes</th><th>allocated</th><th>freed</th><th>origin</th></tr>" + listed.map((i, r) => {
    const [start, end, size, origin] = DATA.intervals[i];
    return '<tr class="alloc-row" data-row="' + r + '"><td class="num">' + bytes(size) + "</td><td>" + xName(start) + "</td><td>" +
      (end === null ? "live at the end" : xName(end)) + "</td><td>" + escapeHtml(origin >= 0 ? DATA.origins[origin] : "untagged") + "</td></tr>";
  }).join("");
}

document.querySelector("#band-list tbody").addEventListener("click", e => {
  const row = e.target.closest("tr.alloc-row");
  if (!row) return;
  const next = row.nextElementSibling;
  if (next && next.classList.contains("stack-row")) { next.remove(); return; }
  const [, , , origin, stack] = DATA.intervals[listed[Number(row.dataset.row)]];
  const tr = document.createElement("tr");
  tr.className = "stack-row";
  tr.innerHTML = '<td colspan="4"><div class="stack">' + stackHtml(stack, origin >= 0 ? DATA.origins[origin] : "") + "</div></td>";
  row.after(tr);
});
timeline.addEventListener("mousemove", e => {
  const p = e.target.closest && e.target.closest("polygon.band");
  if (p) hoverBand(Number(p.dataset.band), e); else tip.hidden = true;
});
timeline.addEventListener("mouseleave", () => { tip.hidden = true; });
timeline.addEventListener("click", e => {
  const p = e.target.closest && e.target.closest("polygon.band");
  if (p) listBand(Number(p.dataset.band));
});
timeline.addEventListener("dblclick", () => { view = fullRange(); redraw(); });
document.getElementById("views").addEventListener("click", e => {
  const b = e.target.closest("button");
  if (!b) return;
  stackView = b.dataset.view;
  document.getElementById("band-title").textContent = "Hover a band to name it, click it to list its allocations.";
  document.querySelector("#band-list tbody").innerHTML = "";
  drawTimeline();
});
