// kubelab console: one small script for every page (no build step, no dependencies).
"use strict";

const $ = (sel) => document.querySelector(sel);
const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
const page = document.body.dataset.page;

function table(headers, rows, rowClass) {
  const head = "<tr>" + headers.map((h) => `<th>${esc(h)}</th>`).join("") + "</tr>";
  const body = rows.map((r, i) => `<tr class="${rowClass ? rowClass(i) : ""}">` +
    r.map((c) => (typeof c === "number" ? `<td class="num">${c}</td>` : `<td>${c ?? ""}</td>`)).join("") + "</tr>");
  return `<table>${head}${body.join("")}</table>`;
}

async function getJSON(url, options) {
  const resp = await fetch(url, options);
  const body = await resp.json().catch(() => ({message: resp.statusText}));
  if (!resp.ok) throw new Error(body.message || resp.statusText);
  return body;
}

function live(onCluster) {
  let source = null;
  const follow = () => {
    source = new EventSource("/api/stream");
    source.addEventListener("open", () => { $("#live").className = "on"; $("#live").textContent = "● live"; });
    source.addEventListener("error", () => { $("#live").className = "off"; $("#live").textContent = "○ reconnecting"; });
    source.addEventListener("cluster", (e) => onCluster(JSON.parse(e.data)));
  };
  follow();
  // A page left for another must let go of its stream, also when the browser keeps it in its back/forward cache:
  // a browser opens at most six connections to one server, and each open stream holds one (the seventh page hung).
  window.addEventListener("pagehide", () => source.close());
  window.addEventListener("pageshow", (e) => { if (e.persisted) follow(); });
}

const taintText = (t) => `${t.key}${t.value ? "=" + t.value : ""}:${t.effect}`;
const condText = (c) => Object.entries(c).map(([k, v]) => `${k}=${v}`).join(" ");

// --- nodes × pods ---------------------------------------------------------------------------------------------
function renderCluster(view) {
  const columns = view.nodes.map((n) => ({node: n, pods: []}));
  const byName = Object.fromEntries(columns.map((c) => [c.node.name, c]));
  const pending = {node: {name: "(not scheduled)", ready: "", taints: [], unschedulable: false}, pods: []};
  for (const p of view.pods) (byName[p.node] || pending).pods.push(p);
  const all = pending.pods.length ? [...columns, pending] : columns;
  $("#grid").innerHTML = all.map(({node, pods}) => `
    <div class="node${node.unschedulable ? " cordoned" : ""}" data-node="${esc(node.name)}">
      <h3>${esc(node.name)}</h3>
      <div class="meta">${node.ready ? "Ready=" + esc(node.ready) : ""}${node.unschedulable ? " · cordoned" : ""}
        ${node.taints.map((t) => `<span class="taint">${esc(taintText(t))}</span>`).join("")}</div>
      ${pods.map((p) => `<a class="pod ${esc(p.phase)}${p.terminating ? " terminating" : ""}"
          data-pod="${esc(p.namespace + "/" + p.name)}" data-phase="${esc(p.phase)}"
          href="/pod/${encodeURIComponent(p.namespace)}/${encodeURIComponent(p.name)}"
          title="${esc(condText(p.conditions))}">${esc(p.namespace)}/<b>${esc(p.name)}</b>
          · <span class="phase">${esc(p.phase)}</span>${p.reason ? " (" + esc(p.reason) + ")" : ""}
          ${p.terminating ? " · terminating" : ""}</a>`).join("")}
    </div>`).join("");
}

// --- one pod --------------------------------------------------------------------------------------------------
function podKey() {
  const [, , ns, name] = location.pathname.split("/");
  return [decodeURIComponent(ns), decodeURIComponent(name)];
}

function latency(step) {
  // no record of its own (a delivery the apiserver no longer holds): its time is within a later step's latency ("(in N)")
  if (step.latency === null || step.latency === undefined) return step.included_in ? `(in ${step.included_in})` : "";
  if (!step.latency_precise) return "~+" + step.latency.toFixed(0) + " s";  // whole-second timestamps: ±1 s
  const ms = step.latency * 1000;
  const sign = ms < 0 ? "-" : "+";
  return sign + (Math.abs(ms) >= 1000 ? (Math.abs(ms) / 1000).toFixed(3) + " s" : Math.abs(ms).toFixed(1) + " ms");
}

async function renderTrace(ns, name) {
  try {
    const doc = await getJSON(`/api/pods/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/trace`);
    const rows = doc.steps.map((s) => [esc(s.number), esc(s.actor), esc(s.what),
      esc(s.time ? s.time.replace("T", " ").replace("Z", "") : (!s.applicable ? "n/a" : s.observed ? "" : "not observed")),
      `<span class="latency">${esc(latency(s))}</span>`, esc(s.revision ?? ""), esc(s.evidence)]);
    $("#trace").innerHTML = table(["#", "who", "what", "when (UTC)", "latency", "revision", "evidence"], rows,
      (i) => (doc.steps[i].observed ? "step" : "step unobserved"));
  } catch (err) {
    $("#trace").innerHTML = `<p class="error">${esc(err.message)}</p>`;
  }
}

function verdict(entry) {
  const failed = (entry.filters || []).find((f) => f.code && f.code !== "Success");
  return failed ? `${failed.plugin}: ${(failed.reasons || [failed.code])[0]}` : "feasible";
}

async function renderExplain(ns, name) {
  try {
    const doc = await getJSON(`/api/pods/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/explain`);
    const d = doc.diagnosis;
    const columns = [];
    for (const e of Object.values(d.nodes || {})) for (const s of e.scores || []) if (!columns.includes(s.plugin)) columns.push(s.plugin);
    const names = Object.keys(d.nodes || {}).sort((a, b) => (d.nodes[b].total || 0) - (d.nodes[a].total || 0));
    const rows = names.map((n) => {
      const e = d.nodes[n];
      const scores = Object.fromEntries((e.scores || []).map((s) => [s.plugin, s]));
      return [n === d.node ? "★" : "", esc(n), esc(verdict(e)),
        ...columns.map((c) => (scores[c] ? scores[c].normalized * scores[c].weight : "-")),
        verdict(e) === "feasible" && (e.scores || []).length ? e.total : "-"];
    });
    let html = `<p>${esc(d.result)}${d.node ? " on <b>" + esc(d.node) + "</b>" : ""} (attempt ${esc(d.attempt)}, ${esc(d.time)})</p>`;
    if (d.message) html += `<p>${esc(d.message)}</p>`;
    html += `<div id="nodes-table">${table(["", "node", "verdict", ...columns, "total"], rows,
      (i) => (names[i] === d.node ? "chosen" : ""))}</div>`;
    if (doc.nearest) {
      const changes = doc.nearest.changes || [];
      html += `<h3>Nearest node: ${esc(doc.nearest.node)} (${changes.length} change${changes.length === 1 ? "" : "s"} away)</h3>`;
      html += changes.map((c) => `<div class="change">${esc(c.summary)}${c.snippet ? `<pre>${esc(c.snippet)}</pre>` : ""}</div>`).join("");
    }
    $("#explain").innerHTML = html;
  } catch (err) {
    $("#explain").innerHTML = `<p class="error">${esc(err.message)}</p>`;
  }
}

function renderPod() {
  const [ns, name] = podKey();
  $("#title").textContent = `Pod ${ns}/${name}`;
  document.title = `kubelab · ${ns}/${name}`;
  let phase = null;
  live((view) => {
    const p = view.pods.find((x) => x.namespace === ns && x.name === name);
    $("#status").textContent = p ? `${p.phase} on ${p.node || "(no node)"} · ${condText(p.conditions)}` : "gone";
    if (p && p.phase !== phase) { phase = p.phase; renderTrace(ns, name); renderExplain(ns, name); }
  });
  renderTrace(ns, name);
  renderExplain(ns, name);
}

// --- events ---------------------------------------------------------------------------------------------------
function renderEvents(view) {
  const rows = view.events.slice().reverse().map((e) => [esc((e.time || "").replace("T", " ")), esc(e.type),
    esc(e.reason), esc(e.namespace + " " + e.object), esc(e.source), esc(e.message), e.count]);
  $("#events").innerHTML = table(["time", "type", "reason", "object", "from", "message", "count"], rows);
}

// --- watch streams ------------------------------------------------------------------------------------------------
async function renderWatches() {
  try {
    const doc = await getJSON("/api/watches");
    const api = doc.apiserver;
    $("#etcd").textContent = api.etcdRevision ? `(etcd revision ${api.etcdRevision})` : "";
    $("#watches").innerHTML = api.error ? `<p class="error">${esc(api.error)}</p>` : table(
      ["user", "user agent", "resource", "namespace", "selectors", "resourceVersion", "lag (revisions)", "lag (s)",
       "events sent", "events/s"],
      api.items.map((w) => [esc(w.user), esc(w.userAgent), esc(w.resource), esc(w.namespace),
        esc([w.labelSelector, w.fieldSelector].filter(Boolean).join(" ")), esc(w.resourceVersion), w.lag.revisions,
        w.lag.seconds, w.eventsSent, w.eventsPerSecond]));
    const rows = [];
    for (const c of doc.informers) {
      if (c.error) rows.push([esc(c.component), `<span class="error">${esc(c.error)}</span>`, "", "", "", "", "", ""]);
      for (const i of c.items) rows.push([esc(c.component), esc(i.resource), esc(i.namespace),
        esc([i.labelSelector, i.fieldSelector].filter(Boolean).join(" ")), esc(i.resourceVersion), i.relists, i.gone,
        i.events, i.eventsPerSecond]);
    }
    $("#informers").innerHTML = table(["component", "resource", "namespace", "selectors", "resourceVersion",
      "relists", "410 Gone", "events", "events/s"], rows);
  } catch (err) {
    $("#watches").innerHTML = `<p class="error">${esc(err.message)}</p>`;
  }
}

// --- what-if --------------------------------------------------------------------------------------------------
function renderAnswer(doc) {
  const rows = (doc.pods || []).map((p) => [esc(p.pod), esc(p.fromNode || "-"), esc(p.eviction || "new"),
    esc(p.eviction === "blocked" ? "stays" : p.result === "Scheduled" ? p.node + ((p.equalNodes || []).length ? " (or " + p.equalNodes.join(", ") + ": same score)" : "") : p.result || "-"),
    esc(p.eviction === "blocked" || p.eviction === "evicted-after" ? p.reason : p.message || "")]);
  $("#answer").innerHTML = rows.length ? table(["pod", "from", "eviction", "would run on", "why"], rows) : "<p>No pod would move.</p>";
}

function setupWhatif() {
  $("#whatif").addEventListener("submit", async (e) => {
    e.preventDefault();
    const form = Object.fromEntries(new FormData(e.target).entries());
    $("#answer").textContent = "asking the scheduler…";
    try {
      renderAnswer(await getJSON("/api/whatif", {method: "POST", headers: {"Content-Type": "application/json"},
                                                  body: JSON.stringify(form)}));
    } catch (err) {
      $("#answer").innerHTML = `<p class="error">${esc(err.message)}</p>`;
    }
  });
}

if (page === "cluster") live(renderCluster);
else if (page === "pod") renderPod();
else if (page === "events") live(renderEvents);
else if (page === "watches") { renderWatches(); setInterval(renderWatches, 2000); live(() => {}); }
else if (page === "whatif") { setupWhatif(); live(() => {}); }
