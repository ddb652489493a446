// The page of `unherd serve`. The form's state lives in the URL query,
// with the policy file's own key names; every run happens in a Web Worker
// running the simulator compiled to WebAssembly, so the main thread never
// blocks. An edit during a run terminates that run's worker and starts the
// new run.
"use strict";

const POLICY_KEYS = ["name", "attempts", "base", "cap", "jitter", "budget", "budget.ratio", "timeouts.attempt"];

// Okabe–Ito colours, told apart by colour-blind readers, and a dash
// pattern per series so that lines differ without colour too.
const COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"];
const DASHES = [[], [8, 4], [2, 3], [12, 3, 2, 3], [4, 4], [1, 2], [16, 4], [6, 2, 2, 2]];
const DASH_NAMES = ["solid", "dashed", "dotted", "dash-dot", "short-dashed", "fine-dotted", "long-dashed", "dash-dot-dot"];

const $ = (sel) => document.querySelector(sel);

// ---- the simulator: one compiled module, a worker per runner ----

const moduleReady = (async () => {
  const resp = await fetch("unherd.wasm");
  if (!resp.ok) throw new Error(`fetching unherd.wasm: ${resp.status} ${resp.statusText}`);
  const module = await (WebAssembly.compileStreaming ? WebAssembly.compileStreaming(resp) : WebAssembly.compile(await resp.arrayBuffer()));
  performance.mark("unherd:module");
  return module;
})();

let nextID = 0;

// A Runner runs one request at a time in a worker of its own, which it
// keeps between runs: a worker that has run the simulator once runs it
// again at once, on code the browser has already optimised. run()
// cancels the run in progress, if any, by terminating its worker; a
// spare worker whose simulator has started then takes its place, so that
// the next run does not wait for one to start.
class Runner {
  constructor() { this.worker = null; this.busy = false; this.pending = null; this.spare = null; this.cancelled = 0; }
  cancel() {
    if (this.worker && this.busy) { this.worker.terminate(); this.worker = null; this.busy = false; this.cancelled++; this.warm(); }
    if (this.pending) { this.pending.reject(new DOMException("cancelled", "AbortError")); this.pending = null; }
  }
  // warm starts a spare worker, if there is none: the worker loads its
  // scripts at once and starts the simulator as soon as the module is
  // compiled.
  warm() {
    if (this.spare) return;
    const worker = new Worker("worker.js");
    worker.addEventListener("message", (e) => { if (e.data.id === 0 && e.data.type === "ready") performance.mark("unherd:worker-ready"); });
    moduleReady.then((module) => worker.postMessage({ id: 0, module, request: "init" }), () => {});
    this.spare = worker;
  }
  async run(request, onProgress) {
    this.cancel();
    const module = await moduleReady;
    const id = ++nextID;
    if (!this.worker) {
      this.worker = this.spare || new Worker("worker.js");
      this.spare = null;
    }
    const worker = this.worker;
    this.busy = true;
    return new Promise((resolve, reject) => {
      this.pending = { reject };
      const done = () => {
        if (this.worker === worker) { this.busy = false; this.pending = null; }
      };
      worker.onmessage = (e) => {
        const m = e.data;
        if (m.id !== id) return;
        if (m.type === "progress") { onProgress && onProgress(m.done, m.total); return; }
        done();
        if (m.type === "error") reject(new Error(m.message));
        else resolve(m);
      };
      worker.onerror = (e) => {
        // A worker that failed is not used again.
        if (this.worker === worker) { worker.terminate(); this.worker = null; this.busy = false; this.pending = null; }
        reject(new Error(e.message || "the worker failed"));
      };
      worker.postMessage({ id, module, request });
    });
  }
}

// ---- URL state ----

function readQuery() {
  return new URLSearchParams(location.search);
}

function writeQuery(q) {
  const s = q.toString().replace(/%2C/g, ",");
  const url = location.pathname + (s ? "?" + s : "");
  if (url !== location.pathname + location.search) history.replaceState(null, "", url);
}

function policyFromForm() {
  const p = {};
  for (const k of POLICY_KEYS) {
    const el = document.querySelector(`#policy [name="${k}"]`);
    const v = el.value.trim();
    if (v !== "") p[k] = v;
  }
  return p;
}

function syncQuery() {
  const q = new URLSearchParams();
  const p = policyFromForm();
  for (const k of POLICY_KEYS) if (p[k] !== undefined) q.set(k, p[k]);
  const seed = $("#f-seed").value.trim();
  if (seed) q.set("seed", seed);
  const sc = $("#f-scenario").value;
  if (sc) {
    q.set("scenario", sc);
    for (const el of document.querySelectorAll("#scenario-grid input")) {
      if (el.value.trim() !== "" && el.value.trim() !== el.dataset.default) q.set(`${sc}.${el.name}`, el.value.trim());
    }
  }
  writeQuery(q);
}

// ---- rendering helpers ----

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function table(caption, columns, rows, fmt = (v) => v) {
  const t = el("table");
  if (caption) t.append(el("caption", {}, caption));
  const head = el("tr");
  for (const c of columns) head.append(el("th", { scope: "col" }, c));
  t.append(el("thead", {}, head));
  const body = el("tbody");
  for (const r of rows) {
    const tr = el("tr");
    columns.forEach((c, i) => {
      const v = r[c];
      const cell = el(i === 0 ? "th" : "td", i === 0 ? { scope: "row" } : {}, v === undefined ? "" : fmt(v, c));
      if (typeof v === "string" && i > 0) cell.className = "text";
      tr.append(cell);
    });
    body.append(tr);
  }
  t.append(body);
  return el("div", { class: "table-wrap" }, t);
}

// ---- charts (uPlot) ----

const charts = new Map(); // container id → uPlot instances

function nines(p) { return -Math.log10(1 - Math.min(p, 99.9999) / 100); }

// drawChart draws one sim.Chart into a figure appended to parent.
// extraLines adds horizontal reference lines ({Y, Label}).
function drawChart(parent, c, extraLines = []) {
  const fig = el("figure", { "data-chart": c.Name });
  const cap = el("figcaption", { id: `cap-${parent.id}-${c.Name}` }, c.Title);
  const box = el("div", { class: "chart", role: "img", "aria-labelledby": cap.id });
  fig.append(cap, box);
  parent.append(fig);

  const logY = c.YScale === "log", logX = c.XScale === "log", ninesX = c.XScale === "nines";
  const tx = (x) => (ninesX ? nines(x) : x);
  const ty = (y) => (logY && !(y > 0) ? null : y);
  const series = c.Series || [];
  const tables = series.map((s) => [s.X.map(tx), s.Y.map(ty)]);
  const data = tables.length ? uPlot.join(tables) : [[]];
  const lines = [...(c.Lines || []), ...extraLines];
  const shade = c.Shade || [];
  box.setAttribute("aria-label", `${c.Title}: ${series.map((s, i) => `${s.Name} (${DASH_NAMES[i % DASH_NAMES.length]} line)`).join(", ")}; ${c.XLabel} against ${c.YLabel}; the tables below give the figures`);

  const opts = {
    width: Math.max(280, box.clientWidth || parent.clientWidth || 600),
    height: 280,
    scales: {
      x: { time: false, distr: logX ? 3 : 1 },
      y: { distr: logY ? 3 : 1, range: (u, min, max) => {
        const ys = lines.map((l) => l.Y);
        // On a log axis the data's extremes get room too: a line on a
        // decade (an open stream's steady 10000/s) would lie on the edge.
        const lo = logY ? Math.min((min ?? 1) / 2, ...ys.map((y) => y / 2)) : Math.min(0, min ?? 0);
        const hi = Math.max(logY ? (max ?? 1) * 1.5 : max ?? 1, ...ys.map((y) => y * 1.2));
        return logY ? uPlot.rangeLog(Math.max(lo, 0.1), hi, 10, true) : [lo, hi * 1.05];
      } },
    },
    axes: [
      { label: c.XLabel, values: ninesX ? (u, vals) => vals.map((v) => (100 * (1 - Math.pow(10, -v))).toPrecision(4).replace(/\.?0+$/, "")) : undefined },
      { label: c.YLabel, size: 60 },
    ],
    series: [{ label: c.XLabel }, ...series.map((s, i) => ({
      label: s.Name, stroke: COLOURS[i % COLOURS.length], dash: DASHES[i % DASHES.length], width: 2, spanGaps: true, points: { show: false },
    }))],
    // The legend's markers are drawn in each line's colour and style.
    legend: { live: false, markers: { width: 3, dash: (u, i) => {
      const d = u.series[i].dash || [];
      return d.length === 0 ? "solid" : d[0] <= 2 ? "dotted" : "dashed";
    } } },
    cursor: { drag: { x: false, y: false } },
    hooks: {
      drawClear: [(u) => {
        const ctx = u.ctx;
        ctx.save();
        ctx.fillStyle = "rgba(0,0,0,0.08)";
        for (const s of shade) {
          const x0 = u.valToPos(tx(s.From), "x", true), x1 = u.valToPos(tx(s.To), "x", true);
          ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
          ctx.fillStyle = "#444";
          ctx.font = `${12 * devicePixelRatio}px system-ui, sans-serif`;
          ctx.fillText(s.Label, x0 + 4 * devicePixelRatio, u.bbox.top + 14 * devicePixelRatio);
          ctx.fillStyle = "rgba(0,0,0,0.08)";
        }
        ctx.restore();
      }],
      draw: [(u) => {
        const ctx = u.ctx;
        ctx.save();
        ctx.strokeStyle = "#000"; ctx.fillStyle = "#000";
        ctx.setLineDash([3 * devicePixelRatio, 3 * devicePixelRatio]);
        ctx.lineWidth = devicePixelRatio;
        ctx.font = `${12 * devicePixelRatio}px system-ui, sans-serif`;
        for (const l of lines) {
          const y = u.valToPos(l.Y, "y", true);
          ctx.beginPath(); ctx.moveTo(u.bbox.left, y); ctx.lineTo(u.bbox.left + u.bbox.width, y); ctx.stroke();
          ctx.textAlign = "right";
          ctx.fillText(l.Label, u.bbox.left + u.bbox.width - 4, y - 4);
        }
        // Notes: a point of the data circled, its text beside it, on the
        // side towards the middle (as the report's charts draw them).
        ctx.setLineDash([]);
        for (const n of c.Notes || []) {
          const x = u.valToPos(tx(n.X), "x", true), y = u.valToPos(n.Y, "y", true);
          ctx.beginPath(); ctx.arc(x, y, 4 * devicePixelRatio, 0, 2 * Math.PI); ctx.stroke();
          const right = x > u.bbox.left + u.bbox.width / 2;
          ctx.textAlign = right ? "right" : "left";
          ctx.fillText(n.Text, x + (right ? -8 : 8) * devicePixelRatio, y + 14 * devicePixelRatio);
        }
        ctx.restore();
      }],
    },
  };
  const u = new uPlot(opts, data, box);
  const list = charts.get(parent.id) || [];
  list.push(u);
  charts.set(parent.id, list);
  return u;
}

function clearCharts(parent) {
  for (const u of charts.get(parent.id) || []) u.destroy();
  charts.delete(parent.id);
  parent.replaceChildren();
}

new ResizeObserver(() => {
  for (const list of charts.values()) for (const u of list) {
    const w = u.root.parentElement.clientWidth;
    if (w && Math.abs(w - u.width) > 2) u.setSize({ width: w, height: u.height });
  }
}).observe(document.body);

// ---- the what-if ----

// A what-if is four independent parts: your policy and the default, each
// against the closed population and the open stream (the simulator's
// WhatIfRun). Four workers make them, one part each, and the system
// shares the cores between them: parts of unequal length then end
// together, where two workers taking two parts each would leave one core
// idle while the other finished. The default's parts depend only on the
// seed, so they are kept and an edit makes only yours. Then one worker
// merges the four into the answer `unherd whatif --json` gives
// (MergeWhatIf).
const whatifRunners = [new Runner(), new Runner(), new Runner(), new Runner()];
// At first, one worker per core makes a part; the others start theirs
// LATER_PARTS_MS later (or a worker already running, once free, takes
// them first). On a page just opened the simulator runs unoptimised code
// at first, while the browser compiles its hot functions again,
// optimised, on threads of its own: with one worker per core running,
// rather than four on two cores, that compiler gets a fair share of them,
// and the later parts start on optimised code. The first workers keep
// every core busy meanwhile, so a run on optimised code loses nothing.
const FIRST_PARTS = Math.max(1, Math.min(whatifRunners.length, navigator.hardwareConcurrency || 2));
const LATER_PARTS_MS = 500;
for (const r of whatifRunners) r.warm();
const POPULATIONS = ["closed", "open"];
const defaultParts = new Map(); // seed -> {closed, open}: the default policy's parts
// firstWhatIf settles when the page's first what-if has ended, however it
// ended: the scenarios' worker starts then, not beside it.
let firstWhatIfEnded;
const firstWhatIf = new Promise((resolve) => { firstWhatIfEnded = resolve; });
let whatifSeq = 0;
let whatifBusy = false; // a what-if is under way
let whatifCancelled = 0; // what-ifs cut short by an edit

function fmtNum(v) {
  return typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(2).replace(/\.?0+$/, "")) : v;
}

function renderWhatIf(answer, ms) {
  const rep = answer.result;
  const verdict = $("#verdict");
  verdict.replaceChildren(
    el("p", {}, el("strong", { class: `verdict-${rep.overall}` }, `Verdict: ${rep.overall === "similar" ? "similar to" : rep.overall + " than"} the default.`),
      ` The dependency serves ${rep.capacity_rps} requests/s and is down for ${rep.outage}.`),
    ...(rep.warnings || []).map((w) => el("p", { class: "error" }, "Warning: " + w)),
    el("ul", {}, ...rep.verdicts.map((v) => el("li", {}, el("strong", {}, v.population + ": "), v.summary))),
    ...(rep.margins && rep.margins.length ? [
      el("p", { id: "margins-note" }, "Margin against a metastable failure (the metastable scenario's server: callers time out after 3 s and retry through the policy; a cut to its CPU, then the smallest such trigger that leaves it down for good):"),
      el("ul", { id: "margins" }, ...rep.margins.map((m, i) => el("li", {}, el("strong", {}, (i === 0 ? "yours" : "default") + ": "), m.summary))),
    ] : []),
  );
  const parent = $("#whatif-charts");
  clearCharts(parent);
  const cap = [{ Y: rep.capacity_rps, Label: `capacity ${rep.capacity_rps}/s` }];
  for (const c of answer.charts || []) {
    const named = { ...c, Series: (c.Series || []).map((s, i) => ({ ...s, Name: i === 0 ? `yours (${s.Name})` : `default (${s.Name})` })) };
    drawChart(parent, named, cap);
  }
  const measures = [
    ["mean load during the outage / capacity", "mean_x_capacity"],
    ["peak load / capacity", "peak_x_capacity"],
    ["attempts in the outage per call begun in it", "amplification"],
    ["recovery after the return, s (-1: none)", "recover_s"],
    ["goodput from the outage on, % of fault-free", "goodput_pct"],
    ["work wasted on callers gone, %", "wasted_pct"],
  ];
  const cols = ["measure"];
  for (const v of rep.verdicts) cols.push(`${v.population} yours`, `${v.population} default`);
  const rows = measures.map(([name, key]) => {
    const r = { measure: name };
    for (const v of rep.verdicts) { r[`${v.population} yours`] = v.yours[key]; r[`${v.population} default`] = v.default[key]; }
    return r;
  });
  const tables = $("#whatif-tables");
  tables.replaceChildren(table("Goodput, recovery and load: yours beside the default", cols, rows, fmtNum));
  (rep.results || []).forEach((r, i) => {
    tables.append(table(`${r.scenario} (${r.population})`, (answer.columns && answer.columns[i]) || Object.keys(r.rows[0] || {}), r.rows, fmtNum));
  });
  const res = $("#result");
  res.textContent = JSON.stringify(rep, null, 2);
  res.dataset.ms = String(Math.round(ms));
}

let whatifKey = "";

async function runWhatIf() {
  const request = { kind: "whatif", policy: policyFromForm(), seed: $("#f-seed").value.trim() };
  // A change event after the input events of the same edit asks again for
  // the run already made or under way.
  const key = JSON.stringify(request);
  if (key === whatifKey) return;
  whatifKey = key;
  const seq = ++whatifSeq;
  const status = $("#whatif-status"), bar = $("#whatif-progress"), res = $("#result");
  res.dataset.state = "running";
  res.dataset.seq = String(seq);
  if (whatifBusy) whatifCancelled++;
  whatifBusy = true;
  res.dataset.cancelled = String(whatifCancelled);
  bar.value = 0;
  status.textContent = "Running the outage and the storm…";
  for (const e of document.querySelectorAll("#policy [aria-invalid]")) e.removeAttribute("aria-invalid");
  performance.mark("unherd:whatif");
  const t0 = performance.now();
  try {
    const seedKey = request.seed || "1";
    const kept = defaultParts.get(seedKey) || {};
    // The parts to make, one per worker (see LATER_PARTS_MS).
    const tasks = [];
    for (const population of POPULATIONS) {
      tasks.push({ population });
      if (!kept[population]) tasks.push({ population, default: true });
    }
    const made = [], progress = tasks.map(() => 0), busyMs = whatifRunners.map(() => 0);
    let next = 0, failed = null;
    // The later workers start when LATER_PARTS_MS have passed or no part
    // is left for them, whichever comes first.
    let laterStart;
    const later = new Promise((resolve) => { laterStart = resolve; setTimeout(resolve, LATER_PARTS_MS); });
    if (tasks.length <= FIRST_PARTS) laterStart();
    const drain = async (k) => {
      if (k >= FIRST_PARTS) await later;
      // The check and the run it allows are one step: an edit between
      // two parts finds this loop stopped.
      while (next < tasks.length && !failed && seq === whatifSeq) {
        const i = next++;
        if (next === tasks.length) laterStart();
        const m = await whatifRunners[k].run({ ...request, kind: "parts", runs: [tasks[i]] }, (done, total) => {
          progress[i] = done / total;
          const d = progress.reduce((n, p) => n + p, 0) / tasks.length;
          bar.max = 1000; bar.value = Math.round(1000 * d);
          status.textContent = `Running the outage and the storm… ${Math.round(100 * d)}%`;
        });
        const answer = JSON.parse(m.answer);
        busyMs[k] += m.ms;
        if (answer.error) failed = failed || answer;
        else made[i] = answer.parts[0];
      }
    };
    await Promise.all(whatifRunners.map((_, k) => drain(k)));
    if (seq !== whatifSeq) return;
    performance.mark("unherd:parts");
    let m;
    if (failed) {
      m = { answer: JSON.stringify(failed), ms: 0 };
    } else {
      for (const p of made) if (p.default) kept[p.population] = p;
      if (defaultParts.size > 32) defaultParts.clear();
      defaultParts.set(seedKey, kept);
      const parts = [...made];
      for (const pop of POPULATIONS) if (!made.some((p) => p.default && p.population === pop)) parts.push(kept[pop]);
      m = await whatifRunners[0].run({ ...request, kind: "merge", parts });
    }
    if (seq !== whatifSeq) return;
    performance.mark("unherd:merged");
    res.dataset.partsMs = busyMs.map(Math.round).join(" ");
    res.dataset.mergeMs = String(Math.round(m.ms));
    m.ms += Math.max(...busyMs);
    whatifBusy = false;
    const ms = performance.now() - t0;
    const answer = JSON.parse(m.answer);
    if (answer.error) {
      showError("#policy-error", answer.error, answer.field ? `#policy [name="${answer.field}"]` : null);
      status.textContent = "The policy cannot run: see the message above.";
      res.textContent = "";
      res.dataset.state = "error";
      return;
    }
    $("#policy-error").hidden = true;
    renderWhatIf(answer, ms);
    performance.mark("unherd:drawn");
    res.dataset.runMs = String(Math.round(m.ms));
    res.dataset.cancelled = String(whatifCancelled);
    bar.value = bar.max;
    status.textContent = `Done in ${(ms / 1000).toFixed(2)} s in this browser (the run itself ${(m.ms / 1000).toFixed(2)} s).`;
    res.dataset.state = "done";
  } catch (err) {
    if (err.name === "AbortError" || seq !== whatifSeq) return;
    whatifBusy = false;
    status.textContent = "";
    showError("#policy-error", `The simulator failed: ${err.message}`);
    res.dataset.state = "error";
  } finally {
    if (seq === whatifSeq) firstWhatIfEnded();
  }
}

function showError(sel, msg, fieldSel) {
  const p = $(sel);
  p.textContent = msg;
  p.hidden = false;
  const f = fieldSel && document.querySelector(fieldSel);
  if (f) { f.setAttribute("aria-invalid", "true"); f.setAttribute("aria-describedby", p.id); }
}

// ---- the other scenarios ----

const scenarioRunner = new Runner();
let scenarioList = [];
let scenarioSeq = 0;
let scenarioKey = "";

async function loadScenarios() {
  await firstWhatIf;
  const m = await scenarioRunner.run("scenarios");
  scenarioList = JSON.parse(m.data);
  const sel = $("#f-scenario");
  for (const s of scenarioList) sel.append(el("option", { value: s.name }, `${s.name}: ${s.population}`));
}

// scenarioTakesPolicy reports whether the chosen scenario runs the
// page's policy beside its rows (job.Scenario.Policy).
function scenarioTakesPolicy() {
  const s = scenarioList.find((x) => x.name === $("#f-scenario").value);
  return Boolean(s && s.policy);
}

function showScenarioFields(name, q) {
  const s = scenarioList.find((x) => x.name === name);
  const grid = $("#scenario-grid");
  grid.replaceChildren();
  $("#scenario-describe").textContent = s ? s.describe : "";
  $("#scenario-fields").hidden = !s;
  if (!s) return;
  for (const f of s.fields) {
    const id = `p-${name}-${f.name}`;
    const input = el("input", { id, name: f.name, "data-default": f.default, placeholder: f.default });
    input.value = (q && q.get(`${name}.${f.name}`)) || f.default;
    grid.append(el("label", { for: id, title: f.usage }, `${f.name} (${f.usage})`, input));
  }
}

function renderScenario(answer) {
  const r = answer.result;
  const claims = $("#scenario-claims");
  claims.replaceChildren();
  if (r.claims && r.claims.length) {
    const t = el("table", { class: "claim" }, el("caption", {}, "Published claims beside what this run measured"));
    t.append(el("thead", {}, el("tr", {}, ...["holds", "claim", "measured", "source"].map((c) => el("th", { scope: "col" }, c)))));
    const body = el("tbody");
    for (const c of r.claims) {
      body.append(el("tr", {}, el("td", { class: c.holds ? "holds" : "fails" }, c.holds ? "✓ holds" : "✗ does not hold"),
        el("td", {}, c.claim), el("td", {}, c.measured), el("td", {}, c.source)));
    }
    t.append(body);
    claims.append(el("div", { class: "table-wrap" }, t));
  }
  const parent = $("#scenario-charts");
  clearCharts(parent);
  for (const c of answer.charts || []) drawChart(parent, c);
  $("#scenario-table").replaceChildren(table(`${r.scenario} (${r.population})`, (answer.columns && answer.columns[0]) || Object.keys(r.rows[0] || {}), r.rows, fmtNum));
  $("#scenario-result").textContent = JSON.stringify(r, null, 2);
}

async function runScenario() {
  const name = $("#f-scenario").value;
  const bar = $("#scenario-progress"), status = $("#scenario-status"), out = $("#scenario-result");
  const params = {};
  for (const e of document.querySelectorAll("#scenario-grid input")) params[e.name] = e.value;
  const request = { kind: "scenario", name, params, quick: true, seed: $("#f-seed").value.trim() };
  // A scenario that runs a user's policy as a row of its own runs the
  // form's, as `unherd sim NAME --policy FILE` does.
  if (scenarioTakesPolicy()) request.policy = policyFromForm();
  const key = JSON.stringify(request);
  if (key === scenarioKey) return;
  scenarioKey = key;
  const seq = ++scenarioSeq;
  if (!name) { scenarioRunner.cancel(); bar.hidden = true; status.textContent = ""; return; }
  for (const e of document.querySelectorAll("#scenario-grid input")) e.removeAttribute("aria-invalid");
  out.dataset.state = "running";
  bar.hidden = false; bar.value = 0;
  status.textContent = `Running ${name}…`;
  const t0 = performance.now();
  try {
    const m = await scenarioRunner.run(request, (done, total) => {
      bar.max = total; bar.value = done;
      status.textContent = `Running ${name}… ${Math.round((100 * done) / total)}%`;
    });
    if (seq !== scenarioSeq) return;
    const answer = JSON.parse(m.answer);
    if (answer.error) {
      // A policy's field is the policy form's; any other, a parameter's.
      const form = request.policy && POLICY_KEYS.includes(answer.field) ? "#policy" : "#scenario-grid";
      showError("#scenario-error", answer.error, answer.field ? `${form} [name="${answer.field}"]` : null);
      status.textContent = "";
      out.dataset.state = "error";
      return;
    }
    $("#scenario-error").hidden = true;
    renderScenario(answer);
    status.textContent = `Done in ${((performance.now() - t0) / 1000).toFixed(2)} s in this browser.`;
    out.dataset.state = "done";
  } catch (err) {
    if (err.name === "AbortError" || seq !== scenarioSeq) return;
    showError("#scenario-error", `The simulator failed: ${err.message}`);
    out.dataset.state = "error";
  }
}

// ---- wiring ----

function debounce(fn, ms) {
  let t;
  return () => { clearTimeout(t); t = setTimeout(fn, ms); };
}

async function main() {
  const q = readQuery();
  for (const k of [...POLICY_KEYS, "seed"]) {
    const e = document.querySelector(`#policy [name="${k}"]`);
    if (!q.has(k)) continue;
    const v = q.get(k);
    // A value the list does not offer (jitter=bogus in a link) is kept
    // and sent as it is, for the simulator to refuse by its field as the
    // command line does, never dropped for the default.
    if (e.tagName === "SELECT" && v !== "" && ![...e.options].some((o) => o.value === v)) e.append(el("option", { value: v }, v));
    e.value = v;
  }
  const policyChanged = () => {
    syncQuery(); runWhatIf();
    if (scenarioTakesPolicy()) runScenario();
  };
  const form = $("#policy");
  form.addEventListener("submit", (e) => { e.preventDefault(); policyChanged(); });
  form.addEventListener("change", policyChanged);
  form.addEventListener("input", debounce(policyChanged, 400));

  // The what-if starts at once; the scenarios' list comes from a worker
  // of its own, in parallel.
  runWhatIf();
  try {
    await loadScenarios();
  } catch (err) {
    showError("#scenario-error", `The simulator failed to load: ${err.message}`);
    return;
  }
  const sc = q.get("scenario");
  if (sc && scenarioList.some((s) => s.name === sc)) {
    $("#f-scenario").value = sc;
    showScenarioFields(sc, q);
    runScenario();
  }
  const sform = $("#scenario-form");
  sform.addEventListener("submit", (e) => { e.preventDefault(); syncQuery(); runScenario(); });
  $("#f-scenario").addEventListener("change", () => { showScenarioFields($("#f-scenario").value, null); syncQuery(); runScenario(); });
  const scenarioChanged = () => { syncQuery(); runScenario(); };
  $("#scenario-grid").addEventListener("change", scenarioChanged);
  $("#scenario-grid").addEventListener("input", debounce(scenarioChanged, 600));
  $("#f-seed").addEventListener("change", () => { if ($("#f-scenario").value) runScenario(); });
}

main();
