"""The table health page: one HTML document with its CSS and JS inline.

Inline, because the page must work where the api-server has no internet access and its
content-security story must not depend on a CDN; and a Python constant ships in the wheel
with no package-data rule. The page holds no data: it polls the authenticated JSON API
(same origin, so the browser sends Airflow's token cookie) and draws the charts as SVG.
"""

from __future__ import annotations

#: seconds between polls when the URL gives no ``?refresh=``
DEFAULT_REFRESH_S = 15

_CSS = """
:root { --fg:#1f2933; --muted:#61707e; --line:#d9e0e6; --bg:#ffffff; --panel:#f6f8fa;
        --write:#2f6fdf; --compaction:#7a3fd1; --clustering:#0f8a6b; --clean:#c27c0e; --other:#61707e;
        --bad:#c0262d; --ok:#1d7a3a; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
       background: var(--bg); margin: 0; padding: 16px 20px; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 18px 0 6px; }
.muted { color: var(--muted); } a { color: var(--write); }
table.grid { border-collapse: collapse; width: 100%; margin: 4px 0; }
table.grid th, table.grid td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); }
.cards { display: flex; flex-wrap: wrap; gap: 8px; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; min-width: 120px; }
.card b { display: block; font-size: 18px; }
ul.flags { list-style: none; padding: 0; margin: 4px 0; }
ul.flags li { padding: 6px 10px; border-radius: 6px; margin: 4px 0; border: 1px solid var(--line); }
ul.flags li.due { background: #fff6e5; border-color: #f0c36d; }
ul.flags li.stuck { background: #fdecec; border-color: #e8a3a6; color: var(--bad); font-weight: 600; }
ul.flags li.fine { background: #ecf8f0; border-color: #9fd3b0; color: var(--ok); }
svg { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; max-width: 100%; }
svg text { font: 11px system-ui, sans-serif; fill: var(--fg); }
.error { color: var(--bad); font-weight: 600; }
"""

_JS = r"""
(function () {
  "use strict";
  var params = new URLSearchParams(window.location.search);
  var path = params.get("path");
  var dagId = params.get("dag_id");
  var refresh = Math.max(2, parseInt(params.get("refresh") || "%(refresh)d", 10) || %(refresh)d);
  var api = window.location.pathname.replace(/\/ui\/?$/, "") + "/api";
  var LANES = ["write", "compaction", "clustering", "clean", "other"];
  var SVGNS = 'xmlns="http://www.w3.org/2000/svg"';

  function esc(v) {
    return String(v === null || v === undefined ? "" : v).replace(/[&<>"']/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c];
    });
  }
  function bytes(n) {
    if (n === null || n === undefined) return "?";
    var u = ["B", "KB", "MB", "GB", "TB"], i = 0; n = Number(n);
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : String(n)) + " " + u[i];
  }
  function age(s) {
    if (s === null || s === undefined) return "?";
    s = Math.round(Number(s));
    if (s < 120) return s + " s";
    if (s < 7200) return Math.round(s / 60) + " min";
    if (s < 172800) return (s / 3600).toFixed(1) + " h";
    return (s / 86400).toFixed(1) + " days";
  }
  function instantMs(t) {
    t = String(t || "");
    if (t.length < 14) return null;
    return Date.UTC(+t.slice(0, 4), +t.slice(4, 6) - 1, +t.slice(6, 8), +t.slice(8, 10),
                    +t.slice(10, 12), +t.slice(12, 14), t.length >= 17 ? +t.slice(14, 17) : 0);
  }
  function lane(e) {
    var k = String(e.kind || "").toLowerCase(), a = String(e.action || "").toLowerCase();
    var s = k + " " + a;
    if (s.indexOf("compact") >= 0) return "compaction";
    if (s.indexOf("cluster") >= 0 || a === "replacecommit") return "clustering";
    if (s.indexOf("clean") >= 0) return "clean";
    if (/write|insert|upsert|delete|bulk|commit/.test(k) || a === "commit" || a === "deltacommit") return "write";
    return "other";
  }
  function instantOf(e) { return e.instant || e.timestamp; }
  function pending(e) { return String(e.state || "").toUpperCase() !== "COMPLETED"; }

  function timelineSvg(events) {
    var W = 900, left = 90, right = 20, laneH = 28, top = 10, H = top + laneH * LANES.length + 30;
    var xs = events.map(function (e) { return instantMs(instantOf(e)); }).filter(function (x) { return x !== null; });
    var lo = Math.min.apply(null, xs.length ? xs : [0]), hi = Math.max.apply(null, xs.length ? xs : [1]);
    if (hi === lo) { lo -= 1000; hi += 1000; }
    function x(e) { var v = instantMs(instantOf(e)); return left + (W - left - right) * ((v === null ? lo : v) - lo) / (hi - lo); }
    var out = ['<svg id="timeline-chart" ' + SVGNS + ' width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + " " + H + '" role="img" aria-label="timeline">'];
    LANES.forEach(function (l, i) {
      var y = top + laneH * i + laneH / 2;
      out.push('<text x="8" y="' + (y + 4) + '">' + l + "</text>");
      out.push('<line x1="' + left + '" x2="' + (W - right) + '" y1="' + y + '" y2="' + y + '" stroke="#d9e0e6"/>');
    });
    events.forEach(function (e) {
      var l = lane(e), y = top + laneH * LANES.indexOf(l) + laneH / 2, cx = x(e).toFixed(1);
      var tip = "<title>" + esc(instantOf(e) + " " + e.action + " " + e.state + (e.completion_time ? " (completed " + e.completion_time + ")" : "")) + "</title>";
      if (pending(e)) {
        out.push('<rect class="mark pending" data-instant="' + esc(instantOf(e)) + '" x="' + (cx - 6) + '" y="' + (y - 6) + '" width="12" height="12" fill="#ffffff" stroke="var(--bad)" stroke-width="2.5">' + tip + "</rect>");
      } else {
        out.push('<circle class="mark completed" data-instant="' + esc(instantOf(e)) + '" cx="' + cx + '" cy="' + y + '" r="5" fill="var(--' + l + ')">' + tip + "</circle>");
      }
    });
    var d0 = new Date(lo).toISOString().replace("T", " ").slice(0, 19), d1 = new Date(hi).toISOString().replace("T", " ").slice(0, 19);
    out.push('<text x="' + left + '" y="' + (H - 8) + '">' + esc(d0) + '</text><text x="' + (W - right) + '" y="' + (H - 8) + '" text-anchor="end">' + esc(d1) + "</text>");
    out.push("</svg>");
    return out.join("");
  }

  function barsSvg(id, rows, label, value, fmt) {
    var W = 900, left = 200, barH = 18, H = 10 + barH * Math.max(rows.length, 1) + 10;
    var max = Math.max.apply(null, rows.map(value).concat([1]));
    var out = ['<svg id="' + id + '" ' + SVGNS + ' width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + " " + H + '">'];
    rows.forEach(function (r, i) {
      var y = 10 + i * barH, w = Math.max(1, (W - left - 260) * value(r) / max);
      out.push('<text x="' + (left - 8) + '" y="' + (y + 13) + '" text-anchor="end">' + esc(label(r)) + "</text>");
      out.push('<rect class="bar" x="' + left + '" y="' + (y + 2) + '" width="' + w.toFixed(1) + '" height="' + (barH - 5) + '" fill="var(--write)"/>');
      out.push('<text x="' + (left + w + 6) + '" y="' + (y + 13) + '">' + esc(fmt(r)) + "</text>");
    });
    out.push("</svg>");
    return out.join("");
  }

  function flags(h) {
    var items = [];
    (h.pending || []).forEach(function (p) {
      if (p.heartbeat_live === false) {
        items.push(["stuck", "Stuck: " + p.action + " " + p.instant + " has been " + String(p.state).toLowerCase() +
          " for " + age(p.age_seconds) + " and nobody is working on it (no live heartbeat). Run it again or roll it back."]);
      } else if (p.heartbeat_live === null || p.heartbeat_live === undefined) {
        items.push(["due", "Waiting: the " + p.action + " plan " + p.instant + " was made " + age(p.age_seconds) +
          " ago and nobody has executed it yet."]);
      }
    });
    (h.maintenance_due || []).forEach(function (m) {
      if (m.due) items.push(["due", m.service.charAt(0).toUpperCase() + m.service.slice(1) + " is due: " + m.reason]);
    });
    var mt = h.metadata_table || {};
    if (mt.enabled && mt.lag_instants) items.push(["due", "The metadata table lags the data table by " + mt.lag_instants + " instant(s)."]);
    if (!items.length) items.push(["fine", "Nothing due, nothing stuck."]);
    return '<ul class="flags" id="flags">' + items.map(function (i) { return '<li class="' + i[0] + '">' + esc(i[1]) + "</li>"; }).join("") + "</ul>";
  }

  function card(label, value) { return '<div class="card"><span class="muted">' + esc(label) + "</span><b>" + esc(value) + "</b></div>"; }

  function renderTable(h) {
    var lc = h.latest_commit || {}, ci = h.completed_instants || {}, parts = h.partitions || {}, mt = h.metadata_table || {}, lock = h.lock || {};
    var html = [];
    html.push('<h1 id="table-title">' + esc(h.base_path) + "</h1>");
    html.push('<div class="muted"><span id="table-type">' + esc(h.table_type) + "</span> · table version " + esc(h.table_version) +
      " · latest commit " + esc(lc.instant || "none") + " (" + esc(lc.action || "") + ")</div>");
    html.push('<p id="summary">' + esc(h.summary) + "</p>");
    html.push("<h2>Due and stuck</h2>" + flags(h));
    html.push('<h2>Pending instants</h2><table class="grid" id="pending"><tr><th>instant</th><th>action</th><th>state</th><th>age</th><th>heartbeat</th></tr>' +
      (h.pending || []).map(function (p) {
        return "<tr><td>" + esc(p.instant) + "</td><td>" + esc(p.action) + "</td><td>" + esc(p.state) + "</td><td>" + esc(age(p.age_seconds)) +
          "</td><td>" + (p.heartbeat_live === true ? "live" : p.heartbeat_live === false ? '<span class="error">dead</span>' : "waiting plan") + "</td></tr>";
      }).join("") + "</table>");
    html.push('<h2>Timeline</h2><div class="muted">dots: completed; red squares: pending</div>' + timelineSvg(h.timeline || []));
    html.push('<h2>Files</h2><div class="cards">' + card("file groups", h.file_groups) + card("log files", h.log_files) +
      card("max logs per slice", h.max_log_files_per_slice) + card("small file groups", h.small_file_groups) + card("total size", bytes(h.total_bytes)) +
      card("delta commits since compaction", h.delta_commits_since_compaction === null || h.delta_commits_since_compaction === undefined ? "n/a" : h.delta_commits_since_compaction) +
      card("commits since clustering", h.commits_since_clustering) + card("commits since clean", h.commits_since_clean) +
      card("completed instants", ci.count + " (keep " + ci.keep_min_commits + "–" + ci.keep_max_commits + ")") +
      card("last compaction", h.last_compaction || "never") + card("last clustering", h.last_clustering || "never") +
      card("last clean", h.last_clean || "never") + "</div>");
    html.push("<h2>File sizes</h2>" + barsSvg("size-histogram", h.file_size_histogram || [],
      function (b) { return b.le_bytes === null || b.le_bytes === undefined ? "larger" : "≤ " + bytes(b.le_bytes); },
      function (b) { return Number(b.count) || 0; }, function (b) { return b.count + " files"; }));
    html.push('<h2>Partitions</h2><div class="muted" id="skew">' + esc(parts.count) + " partitions · skew ratio (largest / mean) " +
      esc(parts.skew_ratio === null || parts.skew_ratio === undefined ? "n/a" : Number(parts.skew_ratio).toFixed(2)) + "</div>" +
      barsSvg("partition-chart", parts.top || [], function (p) { return p.partition || "(unpartitioned)"; },
        function (p) { return Number(p.bytes) || 0; }, function (p) { return bytes(p.bytes) + " · " + p.files + " files · " + p.rows + " rows"; }));
    html.push('<h2>Metadata table and lock</h2><div class="cards">' +
      card("metadata table", mt.enabled ? "enabled" : "disabled") + card("partitions", (mt.partitions || []).join(", ") || "none") +
      card("lag (instants)", mt.lag_instants) + card("delta commits since its compaction", mt.delta_commits_since_compaction) +
      card("lock provider", lock.provider || "none") + card("lock holder", lock.holder || "free") + "</div>");
    return html.join("");
  }

  function renderList(rows) {
    if (!rows.length) return '<p class="muted">No Hudi table is known: add hudi+ Assets to DAGs or set [hoodie] table_roots.</p>';
    return '<table class="grid" id="tables"><tr><th>table</th><th>from</th><th>health</th></tr>' + rows.map(function (r) {
      return '<tr><td><a href="?path=' + encodeURIComponent(r.path) + (dagId ? "&dag_id=" + encodeURIComponent(dagId) : "") + '">' + esc(r.path) + "</a></td><td>" + esc(r.source) +
        '</td><td class="' + (r.error ? "error" : "") + '">' + esc(r.summary) + "</td></tr>";
    }).join("") + "</table>";
  }

  function get(url) {
    return fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}}).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (body) {
        if (!r.ok) throw new Error(r.status + ": " + (body.detail || r.statusText) + (r.status === 401 || r.status === 403 ? " (sign in to Airflow first)" : ""));
        return body;
      });
    });
  }

  function poll() {
    var listing = get(api + "/tables" + (dagId ? "?dag_id=" + encodeURIComponent(dagId) : "")).then(function (b) {
      var rows = b.tables || [];
      document.getElementById("list").innerHTML = "<h2>" + (dagId ? "Hudi tables of " + esc(dagId) : "Known tables") + "</h2>" + renderList(rows);
      if (!path && dagId && rows.length === 1) path = rows[0].path;  // a DAG of one table: show it
    });
    var jobs = [listing];
    if (!path && dagId) jobs = [listing.then(function () { return path ? detail() : null; })];
    else if (path) jobs.push(detail());
    Promise.all(jobs).then(function () {
      document.getElementById("status").textContent = "Updated " + new Date().toLocaleTimeString() + "; refreshes every " + refresh + " s.";
    }).catch(function (e) {
      document.getElementById("status").innerHTML = '<span class="error">' + esc(e.message) + "</span>";
    }).then(function () { window.setTimeout(poll, refresh * 1000); });
  }

  function detail() {
    return get(api + "/table?path=" + encodeURIComponent(path)).then(function (h) {
      document.getElementById("detail").innerHTML = renderTable(h);
      // the newest completed instant (any action) of each poll, oldest first: what
      // completed while the page was open
      var seen = document.getElementById("seen"), latest = (h.timeline || []).filter(function (e) {
        return !pending(e);
      }).map(instantOf).sort().pop() || "none";
      var list = seen.getAttribute("data-latest") ? seen.getAttribute("data-latest").split(" ") : [];
      if (list[list.length - 1] !== latest) list.push(latest);
      seen.setAttribute("data-latest", list.join(" "));
    });
  }
  poll();
})();
"""

PAGE_HTML = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Hudi table health</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_CSS}</style></head>
<body>
<div id="detail"></div>
<div id="list"></div>
<p class="muted" id="status">Loading…</p>
<div id="seen" hidden></div>
<script>{_JS % {"refresh": DEFAULT_REFRESH_S}}</script>
</body></html>
"""
