// kernelet live dashboard: no libraries, nothing from the network but this
// page's own origin (api/snapshot, api/events).
"use strict";

const HISTORY = 120; // samples (one a second)
const history = [];   // {t, avail, alloc}
let lastSnapshot = null;

const $ = (id) => document.getElementById(id);

function mib(b) {
  if (b === undefined || b === null || b < 0) return "–";
  if (b >= 1 << 30) return (b / (1 << 30)).toFixed(2) + " GiB";
  return (b / (1 << 20)).toFixed(1) + " MiB";
}
function pct(v) { return v === undefined || v === null ? "–" : v.toFixed(2) + "%"; }
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  return e;
}

function render(s) {
  lastSnapshot = s;
  $("node").textContent = s.nodeName || "";
  $("mem-available").textContent = mib(s.node.availableBytes);
  $("mem-available").dataset.bytes = s.node.availableBytes;
  $("mem-workingset").textContent = mib(s.node.workingSetBytes);
  $("mem-capacity").textContent = mib(s.node.capacityBytes);
  $("alloc-available").textContent = s.allocatable ? mib(s.allocatable.availableBytes) + " of " + mib(s.allocatable.capacityBytes) : "–";

  const conds = $("conditions");
  conds.replaceChildren();
  if (!s.conditions || s.conditions.length === 0) conds.append(el("span", "none", "no pressure"));
  else for (const c of s.conditions) conds.append(el("span", "true", c));

  const th = $("thresholds");
  th.replaceChildren();
  for (const t of s.thresholds || []) {
    th.append(el("span", t.met ? "met" : "", t.signal + " < " + t.value + " (" + mib(t.quantityBytes) + ")" + (t.soft ? " soft" : "") + (t.met ? " MET" : "") + (t.pageCache ? " · page cache (refaults mode): " + t.pageCache : "")));
  }

  const tr = $("throttle");
  tr.replaceChildren();
  if (s.throttle) {
    const held = Object.keys(s.throttle.holding || {});
    tr.append(el("span", held.length ? "met" : "", "memory throttle on (deadline " + (s.throttle.deadline / 1e9) + " s, max stall " + pct(s.throttle.maxStall * 100) + (s.throttle.proactive ? ", proactive reclaim " + mib(s.throttle.reclaimed || 0) : "") + ")" + (held.length ? " · holding eviction for " + held.join(", ") : "")));
    for (const p of s.throttle.pods || []) {
      tr.append(el("span", "", "throttled " + p.pod.Namespace + "/" + p.pod.Name + ": memory.high " + mib(p.high) + ", usage " + mib(p.usage) + ", stalled " + pct(p.stall * 100)));
    }
  }

  $("psi-node-some").textContent = s.nodePSI ? pct(s.nodePSI.someAvg10) : "n/a";
  $("psi-node-full").textContent = s.nodePSI ? pct(s.nodePSI.fullAvg10) : "n/a";
  $("psi-kubepods-some").textContent = s.kubepodsPSI ? pct(s.kubepodsPSI.someAvg10) : "n/a";
  $("psi-kubepods-full").textContent = s.kubepodsPSI ? pct(s.kubepodsPSI.fullAvg10) : "n/a";

  history.push({ t: Date.parse(s.time), avail: s.node.availableBytes, alloc: s.allocatable ? s.allocatable.availableBytes : null });
  while (history.length > HISTORY) history.shift();
  drawChart(s);
  renderPods(s.pods || []);
}

function drawChart(s) {
  const chart = $("mem-chart");
  const W = 720, H = 180, PAD = 4;
  chart.replaceChildren();
  const cap = s.node.capacityBytes || 1;
  let top = 0;
  for (const h of history) top = Math.max(top, h.avail, h.alloc || 0);
  for (const t of s.thresholds || []) top = Math.max(top, t.quantityBytes * 2);
  top = Math.min(Math.max(top * 1.1, 1), cap);
  const y = (v) => H - PAD - (Math.min(v, top) / top) * (H - 2 * PAD);
  const x = (i) => (i / (HISTORY - 1)) * W;
  const off = HISTORY - history.length;
  const line = (key, cls) => {
    const pts = [];
    history.forEach((h, i) => { if (h[key] !== null) pts.push(x(off + i).toFixed(1) + "," + y(h[key]).toFixed(1)); });
    if (pts.length > 0) chart.append(svg("polyline", { class: cls, points: pts.join(" ") }));
  };
  (s.thresholds || []).forEach((t, i) => {
    const ty = y(t.quantityBytes);
    chart.append(svg("line", { class: "th", x1: 0, x2: W, y1: ty, y2: ty }));
    const label = svg("text", { x: 4 + i * 240, y: ty - 3 }); // side by side when equal
    label.textContent = t.signal + " < " + t.value;
    chart.append(label);
  });
  line("alloc", "alloc");
  line("avail", "avail");
  const scale = svg("text", { x: W - 4, y: 12, "text-anchor": "end" });
  scale.textContent = mib(top) + " — last " + HISTORY + " s";
  chart.append(scale);
}

function renderPods(pods) {
  const body = document.querySelector("#pods tbody");
  body.replaceChildren();
  for (const p of pods) {
    const tr = el("tr");
    tr.dataset.pod = p.namespace + "/" + p.name;
    tr.append(el("td", "name", p.namespace + "/" + p.name));
    tr.append(el("td", "", p.qos));
    const scaleTo = Math.max(p.limitBytes, p.requestBytes, p.workingSetBytes, 1) * 1.05;
    const bar = el("div", "bar");
    const ws = el("div", "ws");
    ws.style.width = (Math.max(p.workingSetBytes, 0) / scaleTo * 100).toFixed(1) + "%";
    bar.append(ws);
    if (p.requestBytes > 0) {
      const r = el("div", "req"); r.style.left = (p.requestBytes / scaleTo * 100).toFixed(1) + "%"; r.title = "request " + mib(p.requestBytes); bar.append(r);
      if (p.workingSetBytes > p.requestBytes) bar.classList.add("over");
    }
    if (p.limitBytes > 0) {
      const l = el("div", "lim"); l.style.left = (p.limitBytes / scaleTo * 100).toFixed(1) + "%"; l.title = "limit " + mib(p.limitBytes); bar.append(l);
    }
    const bcell = el("td"); bcell.append(bar); tr.append(bcell);
    const wsCell = el("td", "ws", mib(p.workingSetBytes) + (p.limitBytes > 0 ? " / " + mib(p.limitBytes) : ""));
    wsCell.dataset.bytes = p.workingSetBytes;
    tr.append(wsCell);
    tr.append(el("td", "", p.psi ? pct(p.psi.someAvg10) : "n/a"));
    tr.append(el("td", "oom", String(p.oomKills)));
    body.append(tr);
  }
}

function describe(e) {
  switch (e.kind) {
    case "Eviction": return e.eviction.pod.namespace + "/" + e.eviction.pod.name + " (" + e.eviction.signal + "): " + e.eviction.message;
    case "OOMKill": {
      const k = e.oomKill;
      let s = k.pod ? k.pod.namespace + "/" + k.pod.name : "a process outside pods";
      if (k.container) s += " container " + k.container;
      if (k.pid) s += " pid " + k.pid;
      if (k.comm) s += " (" + k.comm + ")";
      if (k.scope) s += ", " + k.scope + " limit";
      return s;
    }
    case "ConditionChange": return e.condition.type + "=" + e.condition.status + " " + e.condition.reason;
  }
  return JSON.stringify(e);
}

const seen = new Set();
function addEvent(e) {
  if (seen.has(e.seq)) return;
  seen.add(e.seq);
  const li = el("li", e.kind);
  li.dataset.kind = e.kind;
  li.dataset.seq = e.seq;
  li.append(el("span", "t", new Date(e.time).toLocaleTimeString()), " ");
  li.append(el("span", "k", e.kind), " ");
  li.append(el("span", "d", describe(e)));
  const tl = $("timeline");
  tl.prepend(li);
  while (tl.children.length > 200) tl.lastChild.remove();
}

function connect() {
  const es = new EventSource("api/events");
  es.addEventListener("open", () => { $("conn").textContent = "live"; $("conn").className = "conn live"; });
  es.addEventListener("error", () => { $("conn").textContent = "reconnecting…"; $("conn").className = "conn"; });
  es.addEventListener("snapshot", (m) => render(JSON.parse(m.data)));
  es.addEventListener("event", (m) => addEvent(JSON.parse(m.data)));
}

fetch("api/snapshot").then((r) => r.ok ? r.json() : null).then((s) => { if (s && !lastSnapshot) render(s); }).catch(() => {});
connect();
