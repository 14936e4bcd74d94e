// The start: draw, then do what the address asks (#view, #at, #open,
// #hover, #band), as a user's clicks would, and say how long it took.
function redraw() { drawChart(); drawTimeline(); }

document.getElementById("title").textContent = DATA.title;
document.querySelector("#summary tbody").innerHTML = DATA.summary.map(([k, v]) =>
  "<tr><td>" + escapeHtml(k) + "</td><td>" + escapeHtml(v) + "</td></tr>").join("");
const hash = new URLSearchParams(location.hash.slice(1));
if (hash.has("zoom")) {
  const [a, b] = hash.get("zoom").split("-").map(Number);
  if (isFinite(a) && isFinite(b) && b > a) view = [a, b];
}
if (["origin", "pool", "size"].includes(hash.get("view"))) stackView = hash.get("view");
redraw();
const loaded = performance.now();
if (hash.has("at") && isFinite(Number(hash.get("at")))) select(Number(hash.get("at")));
// #open=N opens the stacks of the N-th group listed (from 0), as a click would.
const opened = document.querySelector('#live tr.live-row[data-group="' + Number(hash.get("open")) + '"]');
if (hash.has("open") && opened) toggleStacks(opened);
// #hover=N and #band=N move over or click the N-th band, as a mouse would.
for (const [key, type] of [["hover", "mousemove"], ["band", "click"]]) {
  const band = hash.has(key) && timeline.querySelector('polygon.band[data-band="' + Number(hash.get(key)) + '"]');
  if (!band) continue;
  const r = band.getBoundingClientRect();
  band.dispatchEvent(new MouseEvent(type, { bubbles: true, clientX: r.left + r.width / 2, clientY: r.top + r.height / 2 }));
}
document.body.dataset.loadMs = Math.round(loaded);
document.body.dataset.respondMs = Math.round(performance.now() - loaded);
document.body.dataset.errors = ERRORS.length;
document.body.setAttribute("data-ready", "1");
