// The console's one script (served from /console/static/console.js; the CSP allows no
// other and no inline script). It only fills the live page from the server-sent event
// stream. Every value is set with textContent or as an SVG attribute of numbers: nothing
// that came from a tool, a client or a model is ever parsed as markup.
"use strict";

function cell(row, text) {
  const td = document.createElement("td");
  td.textContent = String(text);
  row.appendChild(td);
  return td;
}

function fill(body, rows, columns) {
  const fresh = document.createElement("tbody");
  for (const r of rows) {
    const tr = document.createElement("tr");
    for (const c of columns) cell(tr, c(r));
    fresh.appendChild(tr);
  }
  body.replaceWith(fresh);
}

function points(perSecond) {
  const max = Math.max(1, ...perSecond);
  const step = 600 / Math.max(1, perSecond.length - 1);
  return perSecond
    .map((n, i) => `${(i * step).toFixed(1)},${(118 - (Number(n) / max) * 116).toFixed(1)}`)
    .join(" ");
}

function live() {
  const line = document.getElementById("chart-line");
  if (!line) return;
  const source = new EventSource("/console/live/events");
  source.addEventListener("snapshot", (e) => {
    const s = JSON.parse(e.data);
    line.setAttribute("points", points(s.per_second.map(Number)));
    document.getElementById("total").textContent = String(s.total);
    fill(document.querySelector("#tools tbody"), s.tools, [
      (t) => t.tool, (t) => t.calls, (t) => t.errors, (t) => t.denials,
      (t) => t.p50_ms.toFixed(1), (t) => t.p95_ms.toFixed(1), (t) => t.p99_ms.toFixed(1),
    ]);
    fill(document.querySelector("#recent tbody"), s.recent.slice().reverse(), [
      (c) => c.seq, (c) => c.tool, (c) => c.client, (c) => c.outcome, (c) => c.ms.toFixed(1),
    ]);
  });
}

document.addEventListener("DOMContentLoaded", live);
