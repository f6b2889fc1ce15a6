// kgroup console: one EventSource to /api/stream, everything drawn from what it pushes.
// No polling and no library: the broker pushes the group list, the selected group in full
// (#group=NAME in the address) when it changes, and lag samples every few seconds.
// Every value from the broker is written with textContent (group and client ids are the
// clients' own strings, never HTML).
"use strict";

const PALETTE = ["#2f6fdb", "#e4572e", "#17a398", "#f3a712", "#8e44ad", "#29335c", "#db2b39",
  "#4caf50", "#ff7f50", "#0097a7", "#795548", "#c2185b", "#607d8b", "#9c27b0", "#3f51b5", "#827717"];
const SVG = "http://www.w3.org/2000/svg";
const MAX_GRID_PARTITIONS = 400, MAX_GRID_MEMBERS = 60, MAX_LAG_SERIES = 16;

// Kept on window for whoever wants to look (the browser test reads it).
const state = window.kgroupConsole = {
  groups: [], detail: null, selected: null, source: null,
  lag: {},            // "topic:partition" -> [[time_ms, lag], ...]
  messages: 0,        // messages received on the stream
  firstShown: {},     // member id -> Date.now() when its row was first drawn
  loadedAt: Date.now(),
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("data-")) node.setAttribute(k, v);
    else if (k === "title") node.title = v;
    else node[k] = v;
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(c ?? ""));
  return node;
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

const fmt = new Intl.NumberFormat();
const num = (n) => (n === null || n === undefined ? "–" : fmt.format(n));
const clock = (ms) => (ms ? new Date(ms).toLocaleTimeString() : "–");
function duration(ms) {
  if (ms === null || ms === undefined) return "–";
  return ms < 1000 ? `${ms} ms` : ms < 60000 ? `${(ms / 1000).toFixed(1)} s` : `${(ms / 60000).toFixed(1)} min`;
}
function ago(ms) {
  if (!ms) return "–";
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  return s < 60 ? `${s} s ago` : s < 3600 ? `${Math.round(s / 60)} min ago` : `${Math.round(s / 3600)} h ago`;
}
function stateBadge(s) { return el("span", {class: "state", "data-state": s}, s); }

// ---- the stream ------------------------------------------------------------------------

function selectedFromHash() {
  const m = location.hash.match(/^#group=(.*)$/);
  return m ? decodeURIComponent(m[1]) : null;
}

function connect() {
  if (state.source) state.source.close();
  state.selected = selectedFromHash();
  state.detail = null;
  state.lag = {};
  renderDetail();
  const url = "/api/stream" + (state.selected !== null ? "?group=" + encodeURIComponent(state.selected) : "");
  const source = state.source = new EventSource(url);
  const conn = $("conn");
  source.onopen = () => { conn.dataset.state = "live"; conn.textContent = "live"; };
  source.onerror = () => { conn.dataset.state = "reconnecting"; conn.textContent = "reconnecting…"; };
  source.addEventListener("groups", (e) => {
    state.messages++;
    state.groups = JSON.parse(e.data).groups;
    renderGroups();
  });
  source.addEventListener("group", (e) => {
    state.messages++;
    const d = JSON.parse(e.data);
    if (d.group !== state.selected) return;
    state.detail = d;
    state.lag = d.lag_history || {};
    renderDetail();
  });
  source.addEventListener("lag", (e) => {
    state.messages++;
    const s = JSON.parse(e.data);
    for (const [key, lag] of Object.entries(s.partitions)) {
      const points = state.lag[key] || (state.lag[key] = []);
      points.push([s.time_ms, lag]);
      if (points.length > 300) points.shift();
    }
    if (state.detail) {
      for (const p of state.detail.partitions) {
        const key = `${p.topic}:${p.partition}`;
        if (key in s.partitions) p.lag = s.partitions[key];
      }
      renderGrid(state.detail);
      renderOffsets(state.detail);
      renderLag();
      refreshDetail();     // committed offsets and log ends move without a group change
    }
  });
}

// The selected group in full, fetched once (after an action, and with each lag sample).
async function refreshDetail() {
  const group = state.selected;
  if (group === null) return;
  const r = await fetch("/api/groups/" + encodeURIComponent(group));
  if (group !== state.selected) return;
  if (r.status === 404) { state.detail = {group, gone: true}; renderDetail(); return; }
  if (!r.ok) return;
  const d = await r.json();
  d.lag_history = undefined;     // the samples kept on the page are as recent
  state.detail = d;
  renderDetail();
}

window.addEventListener("hashchange", connect);
$("lag-by").addEventListener("change", renderLag);

// ---- the group list --------------------------------------------------------------------

function renderGroups() {
  const body = $("groups").tBodies[0];
  const rows = state.groups.map((g) => {
    const last = g.last_rebalance;
    const tr = el("tr", {"data-group": g.group, class: g.group === state.selected ? "selected" : ""},
      el("td", {class: "clip", title: g.group}, g.group),
      el("td", {}, g.kind === "consumer" ? "consumer" : `classic${g.protocol_type ? " (" + g.protocol_type + ")" : ""}`),
      el("td", {}, stateBadge(g.state)),
      el("td", {class: "num"}, num(g.generation)),
      el("td", {class: "num", "data-members": String(g.members)}, num(g.members)),
      el("td", {class: "num"}, num(g.lag)),
      el("td", {class: "num"}, num(g.rebalances)),
      el("td", {}, g.rebalancing ? "in progress" : last ? `${ago(last.completed_ms)} (${duration(last.duration_ms)})` : "–"));
    tr.addEventListener("click", () => { location.hash = "group=" + encodeURIComponent(g.group); });
    return tr;
  });
  body.replaceChildren(...rows);
  $("no-groups").hidden = rows.length > 0;
}

// ---- one group -------------------------------------------------------------------------

function memberColors(d) {
  const colors = {};
  d.members.forEach((m, i) => { colors[m.member_id] = PALETTE[i % PALETTE.length]; });
  return colors;
}

function renderDetail() {
  const d = state.detail;
  const section = $("detail");
  section.hidden = state.selected === null;
  if (state.selected === null) return;
  $("detail-title").textContent = state.selected;
  $("detail-gone").hidden = !(d && d.gone);
  if (!d || d.gone) {
    $("detail-meta").textContent = d ? "" : "loading…";
    for (const id of ["members", "grid", "offsets", "rebalances"]) $(id).tBodies[0].replaceChildren();
    return;
  }
  const unit = d.kind === "consumer" ? "epoch" : "generation";
  $("detail-meta").replaceChildren(
    `${d.kind === "consumer" ? "consumer protocol" : "classic"}${d.protocol ? " · " + d.protocol : ""} · `,
    stateBadge(d.state), ` · ${unit} ${d.generation} · ${d.members.length} member${d.members.length === 1 ? "" : "s"}`
    + ` · lag ${num(d.lag)}` + (d.dead_letter_topic ? ` · dead letters to ${d.dead_letter_topic}` : ""));
  const colors = memberColors(d);
  const now = Date.now();
  $("members").tBodies[0].replaceChildren(...d.members.map((m) => {
    const shown = state.firstShown[m.member_id] || (state.firstShown[m.member_id] = now);
    return el("tr", {"data-member": m.member_id, "data-shown-at": String(shown), class: m.away ? "away" : ""},
      el("td", {}, el("span", {class: "swatch", style: `background:${colors[m.member_id]}`})),
      el("td", {class: "clip", title: m.client_id}, m.client_id || "–"),
      el("td", {class: "clip", title: m.client_host}, m.client_host || "–"),
      el("td", {class: "clip", title: m.instance_id}, m.instance_id || "–"),
      el("td", {class: "clip", title: m.member_id}, m.member_id),
      el("td", {class: "num"}, m.member_epoch === null ? "–" : String(m.member_epoch)),
      el("td", {class: "num"}, m.partitions === null ? "?" : String(m.partitions.length)),
      el("td", {}, m.away ? "away (static, epoch -2)" : clock(m.joined_ms)),
      el("td", {class: "clip", title: m.telemetry ? m.telemetry.client_instance_id : ""}, pushedMetrics(m.telemetry)),
      el("td", {}, m.instance_id ? removeButton(m.instance_id) : ""));
  }));
  renderGrid(d);
  renderOffsets(d);
  renderLag();
  renderRebalances(d);
}

// KIP-714: a member's key metrics as its client pushed them ("poll idle 0.51 · commit 79 ms").
function pushedMetrics(t) {
  if (!t) return "–";
  const k = t.key_metrics || {};
  const parts = [];
  if (k["poll-idle-ratio-avg"] !== undefined) parts.push(`poll idle ${k["poll-idle-ratio-avg"].toFixed(2)}`);
  if (k["commit-latency-avg"] !== undefined) parts.push(`commit ${Math.round(k["commit-latency-avg"])} ms`);
  if (k["rebalance-total"] !== undefined) parts.push(`rebalances ${k["rebalance-total"]}`);
  if (k["records-lag-max"] !== undefined) parts.push(`lag max ${Math.round(k["records-lag-max"])}`);
  return parts.length ? parts.join(" · ") : "pushing";
}

function renderOffsets(d) {
  const names = {};
  for (const m of d.members) names[m.member_id] = m.client_id || m.member_id;
  $("offsets").tBodies[0].replaceChildren(...d.partitions.map((p) =>
    el("tr", {"data-partition": `${p.topic}:${p.partition}`},
      el("td", {class: "clip", title: p.topic}, p.topic),
      el("td", {class: "num"}, String(p.partition)),
      el("td", {class: "clip", title: p.owner || ""}, p.owner ? names[p.owner] || p.owner : "–"),
      el("td", {class: "num", "data-committed": p.committed ?? ""}, num(p.committed)),
      el("td", {class: "num"}, num(p.end)),
      el("td", {class: "num"}, num(p.lag)))));
  $("no-offsets").hidden = d.partitions.length > 0;
}

function renderGrid(d) {
  const colors = memberColors(d);
  const members = d.members.slice(0, MAX_GRID_MEMBERS);
  const partitions = d.partitions.slice(0, MAX_GRID_PARTITIONS);
  const head = el("tr", {}, el("th", {}, "partition"),
    ...members.map((m) => el("th", {class: "member", title: m.member_id}, m.client_id || m.member_id)),
    el("th", {class: "num"}, "lag"));
  $("grid").tHead.replaceChildren(head);
  $("grid").tBodies[0].replaceChildren(...partitions.map((p) => {
    const cells = members.map((m) => {
      const owned = p.owner === m.member_id;
      const td = el("td", {class: owned ? "cell owned" : "cell", "data-member": m.member_id}, owned ? "●" : "");
      if (owned) td.style.background = colors[m.member_id];
      return td;
    });
    return el("tr", {"data-partition": `${p.topic}:${p.partition}`, "data-owner": p.owner || ""},
      el("td", {class: "pl"}, `${p.topic}-${p.partition}`), ...cells, el("td", {class: "num"}, num(p.lag)));
  }));
  const cut = [];
  if (d.partitions.length > partitions.length) cut.push(`first ${partitions.length} of ${d.partitions.length} partitions`);
  if (d.members.length > members.length) cut.push(`first ${members.length} of ${d.members.length} members`);
  $("grid-note").hidden = cut.length === 0;
  $("grid-note").textContent = cut.length ? "Showing the " + cut.join(" and ") + "." : "";
}

// Lag summed per member (the partition's current owner; "unassigned" if none) or per topic:
// a line per member or topic, never one per partition. The broker samples every partition
// at the same instant, so the sum at a time is over the partitions sampled then.
function lagSeries() {
  const by = $("lag-by").value;
  const d = state.detail;
  const owner = {}, names = {};
  if (d) {
    for (const m of d.members) names[m.member_id] = m.client_id ? `${m.client_id} (${m.member_id.slice(-6)})` : m.member_id;
    for (const p of d.partitions) owner[`${p.topic}:${p.partition}`] = p.owner;
  }
  const sums = {};   // series name -> time -> lag
  for (const [key, points] of Object.entries(state.lag)) {
    const name = by === "topic" ? key.replace(/:\d+$/, "")
      : owner[key] ? (names[owner[key]] || owner[key]) : "unassigned";
    const series = sums[name] || (sums[name] = new Map());
    for (const [t, lag] of points) series.set(t, (series.get(t) || 0) + lag);
  }
  const out = {};
  for (const [name, series] of Object.entries(sums)) out[name] = [...series.entries()].sort((a, b) => a[0] - b[0]);
  return out;
}

function renderLag() {
  const chart = $("lag-chart");
  const W = 900, H = 220, L = 50, R = 10, T = 10, B = 22;
  const lag = lagSeries();
  const keys = Object.keys(lag).sort();
  const series = keys.slice(0, MAX_LAG_SERIES);
  const points = series.flatMap((k) => lag[k]);
  chart.replaceChildren();
  $("lag-legend").replaceChildren();
  chart.dataset.series = String(series.length);
  if (!points.length) {
    chart.append(svg("text", {x: L, y: H / 2}, "no lag sample yet (one every few seconds)"));
    return;
  }
  const t0 = Math.min(...points.map((p) => p[0])), t1 = Math.max(...points.map((p) => p[0]), t0 + 1000);
  const top = Math.max(1, ...points.map((p) => p[1]));
  const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const y = (v) => T + (1 - v / top) * (H - T - B);
  chart.append(svg("line", {x1: L, y1: y(0), x2: W - R, y2: y(0), stroke: "#ccd"}),
    svg("text", {x: 4, y: y(top) + 4}, fmt.format(top)), svg("text", {x: 4, y: y(0)}, "0"),
    svg("text", {x: L, y: H - 6}, clock(t0)), svg("text", {x: W - R - 60, y: H - 6}, clock(t1)));
  series.forEach((key, i) => {
    const color = PALETTE[i % PALETTE.length];
    const d = lag[key].map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
    chart.append(svg("polyline", {points: d, fill: "none", stroke: color, "stroke-width": 2, "data-key": key}));
    const last = lag[key][lag[key].length - 1];
    // The latest value as a dot: a series of one sample (a page just opened) still shows.
    chart.append(svg("circle", {cx: x(last[0]).toFixed(1), cy: y(last[1]).toFixed(1), r: 3, fill: color}));
    $("lag-legend").append(el("span", {"data-key": key}, el("span", {class: "swatch", style: `background:${color}`}),
      ` ${key}: ${num(last[1])}`));
  });
  if (keys.length > series.length) $("lag-legend").append(el("span", {}, `(+${keys.length - series.length} more)`));
}

function renderRebalances(d) {
  const list = d.rebalances.slice().reverse();
  const unit = d.kind === "consumer" ? "epoch" : "generation";
  $("no-rebalances").hidden = list.length > 0 || !!d.rebalance_in_progress;
  const rows = list.map((r) => el("tr", {"data-generation": String(r.generation)},
    el("td", {}, clock(r.started_ms)),
    el("td", {class: "num"}, `${unit} ${r.generation}`),
    el("td", {}, (r.cause || "–").replace(/_/g, " ")),
    el("td", {class: "num"}, duration(r.duration_ms)),
    el("td", {class: "num"}, num(r.members)),
    el("td", {class: "moved", title: r.moved.map((m) => `${m[0]}-${m[1]}: ${m[2]} → ${m[3]}`).join("\n")},
      r.moved.length ? `${r.moved.length}: ` + r.moved.slice(0, 6).map((m) => `${m[0]}-${m[1]}`).join(", ")
        + (r.moved.length > 6 ? ", …" : "") : "none")));
  if (d.rebalance_in_progress) {
    const r = d.rebalance_in_progress;
    rows.unshift(el("tr", {"data-generation": "in-progress"}, el("td", {}, clock(r.started_ms)),
      el("td", {class: "num"}, "…"), el("td", {}, (r.cause || "–").replace(/_/g, " ")),
      el("td", {class: "num"}, "in progress"), el("td", {}), el("td", {})));
  }
  $("rebalances").tBodies[0].replaceChildren(...rows);
  drawTimeline(d);
}

function drawTimeline(d) {
  const chart = $("timeline");
  const W = 900, H = 70, L = 10, R = 10;
  chart.replaceChildren();
  const spans = d.rebalances.map((r) => [r.started_ms, r.completed_ms, r]);
  if (d.rebalance_in_progress) spans.push([d.rebalance_in_progress.started_ms, d.time_ms, null]);
  chart.dataset.bars = String(spans.length);
  if (!spans.length) return;
  const t0 = Math.min(...spans.map((s) => s[0])), t1 = Math.max(d.time_ms, t0 + 1000);
  const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  chart.append(svg("line", {x1: L, y1: 50, x2: W - R, y2: 50, stroke: "#ccd"}),
    svg("text", {x: L, y: H - 4}, clock(t0)), svg("text", {x: W - R - 60, y: H - 4}, clock(t1)));
  spans.forEach(([start, end, r]) => {
    const width = Math.max(3, x(end) - x(start));
    const rect = svg("rect", {x: x(start), y: 20, width, height: 28, rx: 2,
      fill: r ? (r.moved.length ? "#e4572e" : "#2f6fdb") : "#f3a712", "data-generation": r ? r.generation : "in-progress"});
    rect.append(svg("title", {}, r ? `${clock(r.started_ms)} · ${(r.cause || "").replace(/_/g, " ")} · `
      + `${duration(r.duration_ms)} · ${r.members} members · ${r.moved.length} partitions moved` : "in progress"));
    chart.append(rect);
    if (r) chart.append(svg("text", {x: x(start), y: 16}, String(r.generation)));
  });
}

// ---- actions ---------------------------------------------------------------------------
// Each is a POST of JSON to /api/groups/{group}/{action}, confirmed in a dialog first. On a
// broker with SASL the console answers 401 until the page sends a user's credentials (asked
// for once, kept in this page only); the broker's ACLs for that user then decide.

async function act(group, action, body) {
  const headers = {"Content-Type": "application/json", "X-Kgroup-Console": "1"};
  if (state.auth) headers.Authorization = "Basic " + state.auth;
  const r = await fetch(`/api/groups/${encodeURIComponent(group)}/${action}`,
    {method: "POST", headers, body: JSON.stringify(body)});
  if (r.status === 401) {
    state.auth = null;
    if (await signIn()) return act(group, action, body);
    return {ok: false, status: 401, data: {error: "not signed in"}};
  }
  const data = await r.json().catch(() => ({error: `HTTP ${r.status}`}));
  return {ok: r.ok, status: r.status, data};
}

function signIn() {
  const dialog = $("signin-dialog");
  return new Promise((resolve) => {
    $("signin-ok").onclick = () => {
      state.auth = btoa(unescape(encodeURIComponent(`${$("signin-user").value}:${$("signin-password").value}`)));
      dialog.close();
      resolve(true);
    };
    dialog.onclose = () => resolve(!!state.auth);
    dialog.showModal();
  });
}

function problem(data) { return data.error + (data.hint ? ` (${data.hint})` : ""); }

function report(ok, message) {
  const status = $("action-status");
  status.dataset.outcome = ok ? "ok" : "error";
  status.textContent = message;
}

// A confirmation dialog; `run` does the action and returns {ok, data}.
function confirmThen(text, run, done) {
  const dialog = $("confirm-dialog");
  $("confirm-text").textContent = text;
  $("confirm-error").textContent = "";
  $("confirm-ok").onclick = async () => {
    const r = await run();
    if (!r.ok) { $("confirm-error").textContent = problem(r.data); return; }
    dialog.close();
    done(r.data);
    refreshDetail();
  };
  dialog.showModal();
}

function removeButton(instance) {
  const b = el("button", {type: "button", class: "small danger", title: `remove static member ${instance}`,
    "data-remove": instance}, "remove");
  b.addEventListener("click", () => {
    const group = state.selected;
    confirmThen(`Remove static member ${instance} from ${group}? Its partitions go to the others at once.`,
      () => act(group, "remove-member", {instance_id: instance}),
      () => report(true, `removed ${instance}`));
  });
  return b;
}

$("delete-open").addEventListener("click", () => {
  const group = state.selected;
  confirmThen(`Delete group ${group} and its committed offsets? Only an empty group can be deleted.`,
    () => act(group, "delete", {}), () => report(true, `deleted ${group}`));
});

function resetRequest(execute) {
  const to = $("reset-to").value;
  const body = {to, execute};
  if (to === "offset" || to === "shift") body.value = Number($("reset-value").value);
  if (to === "datetime") body.value = new Date($("reset-datetime").value).getTime();
  if ($("reset-topic").value.trim()) body.topic = $("reset-topic").value.trim();
  return body;
}

function showPlan(plan) {
  $("reset-plan").tBodies[0].replaceChildren(...plan.map((p) => el("tr", {"data-partition": `${p.topic}:${p.partition}`},
    el("td", {}, p.topic), el("td", {class: "num"}, String(p.partition)),
    el("td", {class: "num"}, num(p.current)), el("td", {class: "num"}, num(p.new)))));
}

function resetChanged() {
  const to = $("reset-to").value;
  $("reset-value").hidden = !(to === "offset" || to === "shift");
  $("reset-datetime").hidden = to !== "datetime";
  $("reset-execute").disabled = true;
  $("reset-plan").tBodies[0].replaceChildren();
}
for (const id of ["reset-to", "reset-value", "reset-datetime", "reset-topic"]) $(id).addEventListener("input", resetChanged);

$("reset-open").addEventListener("click", () => {
  $("reset-group").textContent = state.selected;
  $("reset-error").textContent = "";
  resetChanged();
  $("reset-dialog").showModal();
});

$("reset-preview").addEventListener("click", async () => {
  const r = await act(state.selected, "reset-offsets", resetRequest(false));
  $("reset-error").textContent = r.ok ? "" : problem(r.data);
  showPlan(r.ok ? r.data.plan : []);
  $("reset-execute").disabled = !r.ok || !r.data.plan.length;
});

$("reset-execute").addEventListener("click", async () => {
  const group = state.selected;
  const r = await act(group, "reset-offsets", resetRequest(true));
  if (!r.ok) { $("reset-error").textContent = problem(r.data); $("reset-execute").disabled = true; return; }
  $("reset-dialog").close();
  report(true, `reset ${r.data.plan.length} partition(s) of ${group}`);
  refreshDetail();
});

// ---- the topic view ------------------------------------------------------------------------
// Records through POST /api/topics/{topic}/records (a Fetch as the signed-in user). Keys,
// values and headers are shown as text when UTF-8, else marked as bytes (base64 in the tooltip).

function cellOf(v) {
  if (v === null || v === undefined) return el("td", {class: "bin"}, "null");
  if (typeof v === "object") return el("td", {class: "bin", title: v.base64}, `${atob(v.base64).length} bytes`);
  return el("td", {title: v}, v);
}

async function loadTopics() {
  const r = await fetch("/api/topics");
  if (!r.ok) { $("topics-section").hidden = true; return; }
  const topics = (await r.json()).topics;
  if (JSON.stringify(topics) === JSON.stringify(state.topics)) return;   // an open list stays as it is
  state.topics = topics;
  const chosen = $("browse-topic").value;
  $("browse-topic").replaceChildren(...state.topics.map((t) => el("option", {value: t.topic}, t.topic)));
  if (chosen && state.topics.some((t) => t.topic === chosen)) $("browse-topic").value = chosen;
  topicChanged();
}

function topicChanged() {
  const t = (state.topics || []).find((x) => x.topic === $("browse-topic").value);
  const keep = $("browse-partition").value;
  $("browse-partition").replaceChildren(...Array.from({length: t ? t.partitions : 0},
    (_, p) => el("option", {value: String(p)}, String(p))));
  if (keep && t && Number(keep) < t.partitions) $("browse-partition").value = keep;
}

async function browse(fromOffset) {
  const topic = $("browse-topic").value;
  if (!topic) return;
  const body = {partition: Number($("browse-partition").value), limit: Number($("browse-limit").value)};
  if (fromOffset !== undefined) body.offset = fromOffset;
  else if ($("browse-from").value === "time") body.timestamp_ms = new Date($("browse-time").value).getTime();
  else body.offset = Number($("browse-offset").value);
  const headers = {"Content-Type": "application/json", "X-Kgroup-Console": "1"};
  if (state.auth) headers.Authorization = "Basic " + state.auth;
  const r = await fetch(`/api/topics/${encodeURIComponent(topic)}/records`, {method: "POST", headers, body: JSON.stringify(body)});
  if (r.status === 401) { state.auth = null; if (await signIn()) return browse(fromOffset); return; }
  const d = await r.json().catch(() => ({error: `HTTP ${r.status}`}));
  const status = $("browse-status");
  if (!r.ok) { status.dataset.outcome = "error"; status.textContent = problem(d); return; }
  status.dataset.outcome = "ok";
  status.textContent = `offsets ${d.start_offset}–${d.next_offset - 1} of ${d.log_start}–${d.log_end - 1}`
    + (d.records.length ? "" : " (no records there)");
  state.browseNext = d.next_offset;
  $("browse-next").disabled = d.next_offset >= d.log_end;
  $("records").tBodies[0].replaceChildren(...d.records.map((rec) => el("tr", {"data-offset": String(rec.offset)},
    el("td", {class: "num"}, String(rec.partition)), el("td", {class: "num"}, String(rec.offset)),
    el("td", {title: String(rec.timestamp)}, new Date(rec.timestamp).toISOString().replace("T", " ").replace("Z", " UTC")),
    cellOf(rec.key), cellOf(rec.value),
    el("td", {title: rec.headers.map(([k, v]) => `${k}=${typeof v === "object" && v ? "(bytes)" : v}`).join("\n")},
      rec.headers.map(([k, v]) => `${k}=${typeof v === "object" && v ? "(bytes)" : v}`).join(", ")))));
}

$("browse-topic").addEventListener("change", topicChanged);
$("browse-topic").addEventListener("focus", loadTopics);
$("browse-from").addEventListener("change", () => {
  const time = $("browse-from").value === "time";
  $("browse-offset").hidden = time;
  $("browse-time").hidden = !time;
});
$("browse-form").addEventListener("submit", (e) => { e.preventDefault(); browse(); });
$("browse-next").addEventListener("click", () => browse(state.browseNext));

loadTopics();
connect();
