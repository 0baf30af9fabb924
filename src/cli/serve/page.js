// scry serve's page script (cli/serve/api.rs serves it): asks the server
// for its views and wires them. The flame graph is inferno's SVG as `scry
// flamegraph` writes it, put into the page without its own script and
// style (the page's policy runs neither): this script does its zoom
// (click a frame; Reset zoom), its search (a regular expression, matches
// in magenta, the share they cover), and, on a diff, marks the frames that
// grew. The heat map is `scry heatmap`'s grid: press on a cell, release on
// another, and the flame graph of the samples between them is asked for.
// The state lives in the URL's fragment (`#file=0&select=2.3-2.8&pid=..`,
// `sort=total` for the table's order, `zoom=NAME` for the widest frame of
// that function zoomed into), so a view can be shared as a link and is
// restored on load.
"use strict";
(function () {
  const ROWS = 50;
  const $ = function (id) { return document.getElementById(id); };
  const state = { file: 0, base: "", pid: "", tid: "", inverted: false, select: null, search: "", zoom: "" };
  const SORTS = { self: "self_period", total: "children_period" };
  let files = [];
  let sortKey = SORTS.self;
  let table = [];
  let flame = null;

  function readHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    const file = Number(h.get("file") || "0");
    state.file = Number.isInteger(file) && file >= 0 && file < files.length ? file : 0;
    state.base = h.get("base") || "";
    state.pid = h.get("pid") || "";
    state.tid = h.get("tid") || "";
    state.inverted = h.get("inverted") === "1";
    state.search = h.get("search") || "";
    state.zoom = h.get("zoom") || "";
    sortKey = SORTS[h.get("sort")] || SORTS.self;
    state.select = null;
    const m = /^([0-9]+)\.([0-9]+)-([0-9]+)\.([0-9]+)$/.exec(h.get("select") || "");
    if (m) {
      const a = Number(m[1]) * ROWS + Number(m[2]);
      const b = Number(m[3]) * ROWS + Number(m[4]);
      state.select = [Math.min(a, b), Math.max(a, b)];
    }
  }
  function writeHash() {
    const h = new URLSearchParams();
    h.set("file", String(state.file));
    for (const key of ["base", "pid", "tid", "search", "zoom"]) {
      if (state[key] !== "") {
        h.set(key, state[key]);
      }
    }
    if (state.inverted) {
      h.set("inverted", "1");
    }
    if (sortKey !== SORTS.self) {
      h.set("sort", "total");
    }
    if (state.select) {
      h.set("select", place(state.select[0]) + "-" + place(state.select[1]));
    }
    history.replaceState(null, "", "#" + h.toString());
  }
  function place(i) {
    return Math.floor(i / ROWS) + "." + (i % ROWS);
  }
  function query(extra) {
    const q = new URLSearchParams();
    q.set("file", String(state.file));
    if (state.pid !== "") {
      q.set("pid", state.pid);
    }
    if (state.tid !== "") {
      q.set("tid", state.tid);
    }
    for (const key in extra) {
      q.set(key, String(extra[key]));
    }
    return q.toString();
  }
  async function ask(path) {
    const response = await fetch(path);
    const text = await response.text();
    if (!response.ok) {
      throw new Error(text.trim());
    }
    return {
      type: response.headers.get("content-type") || "",
      samples: response.headers.get("x-scry-samples") || "?",
      text: text,
    };
  }
  // An SVG answer (the server sends it without scripts, styles or
  // handlers; any left would be dropped here).
  function svgOf(text) {
    const doc = new DOMParser().parseFromString(text, "image/svg+xml");
    const root = doc.documentElement;
    if (root.nodeName !== "svg" || root.querySelector("parsererror")) {
      throw new Error("the server's answer is not an SVG");
    }
    for (const el of Array.from(root.querySelectorAll("script, style"))) {
      el.remove();
    }
    for (const el of [root].concat(Array.from(root.querySelectorAll("*")))) {
      for (const attr of Array.from(el.attributes)) {
        if (attr.name.toLowerCase().startsWith("on")) {
          el.removeAttribute(attr.name);
        }
      }
    }
    return document.importNode(root, true);
  }

  // --- The heat map ---
  function markSelection() {
    for (const rect of document.querySelectorAll("#heatmap-box rect.cell")) {
      const i = Number(rect.dataset.c) * ROWS + Number(rect.dataset.r);
      rect.classList.toggle("sel", state.select !== null && i >= state.select[0] && i <= state.select[1]);
    }
  }
  function wireHeatmap(svg) {
    let anchor = null;
    const index = function (el) {
      return Number(el.dataset.c) * ROWS + Number(el.dataset.r);
    };
    const isCell = function (el) {
      return el.classList && el.classList.contains("cell");
    };
    svg.addEventListener("mouseover", function (e) {
      if (isCell(e.target)) {
        const title = e.target.querySelector("title");
        $("status").textContent = title ? title.textContent : "";
      }
    });
    svg.addEventListener("mousedown", function (e) {
      if (isCell(e.target)) {
        anchor = index(e.target);
        state.select = [anchor, anchor];
        markSelection();
        e.preventDefault();
      }
    });
    svg.addEventListener("mousemove", function (e) {
      if (anchor !== null && isCell(e.target)) {
        const i = index(e.target);
        state.select = [Math.min(anchor, i), Math.max(anchor, i)];
        markSelection();
      }
    });
    document.addEventListener("mouseup", function () {
      if (anchor !== null) {
        anchor = null;
        writeHash();
        loadFlame();
      }
    });
  }
  async function loadHeatmap() {
    const box = $("heatmap-box");
    box.textContent = "";
    try {
      const answer = await ask("/api/heatmap?" + query({ rows: ROWS }));
      const svg = svgOf(answer.text);
      box.appendChild(svg);
      wireHeatmap(svg);
      markSelection();
    } catch (e) {
      box.textContent = e.message;
    }
  }

  // --- The flame graph ---
  function frameName(title) {
    const cut = title.lastIndexOf(" (");
    return cut > 0 ? title.slice(0, cut) : title;
  }
  function pct(x) {
    return (100 * x).toFixed(4) + "%";
  }
  function fitTexts() {
    const width = Number(flame.frames.getAttribute("width")) || 1180;
    for (const f of flame.list) {
      if (!f.text || f.g.classList.contains("hidden")) {
        continue;
      }
      const px = parseFloat(f.rect.getAttribute("width")) / 100 * width;
      const fit = Math.floor((px - 4) / 7.1);
      f.text.textContent = f.name.length <= fit ? f.name : fit >= 3 ? f.name.slice(0, fit - 2) + ".." : "";
    }
  }
  function zoom(target) {
    const x0 = target ? target.fx : 0;
    const w0 = target ? target.fw : flame.total;
    for (const f of flame.list) {
      const inside = f.fx >= x0 && f.fx + f.fw <= x0 + w0;
      const around = f.fx <= x0 && f.fx + f.fw >= x0 + w0;
      const show = inside || around;
      f.g.classList.toggle("hidden", !show);
      if (!show) {
        continue;
      }
      const lo = Math.max(f.fx, x0);
      const hi = Math.min(f.fx + f.fw, x0 + w0);
      f.rect.setAttribute("x", pct((lo - x0) / w0));
      f.rect.setAttribute("width", pct((hi - lo) / w0));
      if (f.text) {
        f.text.setAttribute("x", (100 * (lo - x0) / w0 + 0.25).toFixed(4) + "%");
      }
    }
    flame.zoomed = target;
    state.zoom = target ? target.name : "";
    writeHash();
    fitTexts();
  }
  function applySearch() {
    if (!flame) {
      return;
    }
    let re = null;
    if (state.search !== "") {
      try {
        re = new RegExp(state.search);
      } catch (e) {
        re = new RegExp(state.search.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
      }
    }
    const spans = [];
    for (const f of flame.list) {
      const hit = re !== null && re.test(f.name);
      f.rect.setAttribute("fill", hit ? "rgb(230,0,230)" : f.fill);
      f.g.classList.toggle("match", hit);
      if (hit) {
        spans.push([f.fx, f.fx + f.fw]);
      }
    }
    // The share the matches cover, each sample once.
    spans.sort(function (a, b) { return a[0] - b[0]; });
    let covered = 0;
    let end = -1;
    for (const [a, b] of spans) {
      if (b > end) {
        covered += b - Math.max(a, end);
        end = b;
      }
    }
    $("matched").textContent = re === null ? "" :
      "Matched /" + state.search + "/: " + (flame.total ? (100 * covered / flame.total).toFixed(2) : "0") + "% of the samples";
  }
  function markGrowth() {
    const grew = [];
    for (const f of flame.list) {
      const m = /; ([+-][0-9.]+)%\)$/.exec(f.title);
      if (m && Number(m[1]) > 0) {
        f.g.classList.add("grew");
        grew.push([Number(m[1]), f.name]);
      }
    }
    const list = $("grew");
    list.textContent = "";
    if (state.base === "") {
      return;
    }
    grew.sort(function (a, b) { return b[0] - a[0]; });
    const seen = new Set();
    for (const [delta, name] of grew) {
      if (seen.has(name) || seen.size >= 10) {
        continue;
      }
      seen.add(name);
      const li = document.createElement("li");
      li.className = "grew";
      li.textContent = name + " +" + delta.toFixed(2) + "%";
      list.appendChild(li);
    }
    if (seen.size === 0) {
      const li = document.createElement("li");
      li.textContent = "nothing grew";
      list.appendChild(li);
    }
  }
  function rangeText() {
    if (!state.select) {
      return state.base === "" ? "Flame graph of the whole file" : "Diff against file " + state.base + " (red grew, blue shrank)";
    }
    const ms = function (i) { return (i % ROWS) * (1000 / ROWS); };
    const [lo, hi] = state.select;
    return "Flame graph of " + Math.floor(lo / ROWS) + " s + " + ms(lo).toFixed(0) + " ms to " +
      Math.floor(hi / ROWS) + " s + " + (ms(hi) + 1000 / ROWS).toFixed(0) + " ms";
  }
  async function loadFlame() {
    const box = $("flame");
    const extra = {};
    if (state.select) {
      extra.rows = ROWS;
      extra.from = place(state.select[0]);
      extra.to = place(state.select[1]);
    }
    if (state.base !== "") {
      extra.base = state.base;
    }
    if (state.inverted) {
      extra.inverted = 1;
    }
    box.textContent = "";
    flame = null;
    $("grew").textContent = "";
    try {
      const answer = await ask("/api/flamegraph?" + query(extra));
      if (!answer.type.startsWith("image/svg+xml")) {
        $("range").textContent = rangeText() + ": 0 samples";
        $("matched").textContent = "";
        return;
      }
      const svg = svgOf(answer.text);
      box.appendChild(svg);
      const frames = svg.querySelector("#frames");
      flame = { frames: frames, total: Number(frames.getAttribute("total_samples")) || 0, list: [], zoomed: null };
      for (const g of frames.querySelectorAll("g")) {
        const rect = g.querySelector("rect");
        const title = g.querySelector("title");
        if (!rect || !title) {
          continue;
        }
        const f = {
          g: g, rect: rect, text: g.querySelector("text"), title: title.textContent,
          name: frameName(title.textContent), fill: rect.getAttribute("fill"),
          fx: Number(rect.getAttribute("fg:x")) || 0, fw: Number(rect.getAttribute("fg:w")) || 0,
        };
        flame.list.push(f);
        g.addEventListener("click", function () {
          zoom(flame.zoomed === f ? null : f);
        });
        g.addEventListener("mouseover", function () {
          $("status").textContent = f.title;
        });
      }
      $("range").textContent = rangeText() + ": " + answer.samples + " samples";
      // A zoom named in the link: the widest frame of that function.
      let widest = null;
      for (const f of flame.list) {
        if (f.name === state.zoom && (!widest || f.fw > widest.fw)) {
          widest = f;
        }
      }
      if (widest) {
        zoom(widest);
      }
      fitTexts();
      applySearch();
      markGrowth();
    } catch (e) {
      $("range").textContent = rangeText() + ": " + e.message;
    }
  }

  // --- The function table ---
  function drawTable() {
    const body = document.querySelector("#calltree tbody");
    body.textContent = "";
    const rows = table.slice().sort(function (a, b) { return b[sortKey] - a[sortKey]; });
    for (const e of rows.slice(0, 500)) {
      const tr = document.createElement("tr");
      tr.dataset.self = String(e.self_percent);
      tr.dataset.total = String(e.children_percent);
      const cells = [
        [e.children_percent.toFixed(2) + "%", "num"],
        [e.self_percent.toFixed(2) + "%", "num"],
        [e.sym === null || e.sym === undefined ? "[" + (e.dso_short || "unknown") + "]" : e.sym, "sym"],
        [e.dso_short || "", "dso"],
      ];
      for (const [text, cls] of cells) {
        const td = document.createElement("td");
        td.className = cls;
        td.textContent = text;
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    for (const th of document.querySelectorAll("#calltree th.sortable")) {
      th.classList.toggle("sorted", th.dataset.key === sortKey);
    }
  }
  async function loadTable() {
    try {
      const answer = await ask("/api/calltree?" + query({}));
      const report = JSON.parse(answer.text);
      const wanted = files[state.file].event;
      const ev = report.events.find(function (e) { return e.event === wanted; }) || report.events[0];
      table = ev ? ev.entries : [];
    } catch (e) {
      table = [];
      $("status").textContent = e.message;
    }
    drawTable();
  }

  // --- Controls ---
  function option(select, value, text) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
  }
  function fillControls() {
    const file = $("file");
    const base = $("base");
    file.textContent = "";
    base.textContent = "";
    option(base, "", "(none)");
    files.forEach(function (f, i) {
      option(file, String(i), i + ": " + f.name + " (" + f.samples + " samples)");
      if (i !== state.file) {
        option(base, String(i), i + ": " + f.name);
      }
    });
    file.value = String(state.file);
    base.value = state.base;
    const threads = files[state.file].threads;
    const pid = $("pid");
    const tid = $("tid");
    pid.textContent = "";
    tid.textContent = "";
    option(pid, "", "all");
    option(tid, "", "all");
    const pids = new Map();
    for (const t of threads) {
      if (!pids.has(t.pid)) {
        pids.set(t.pid, t.comm);
      }
      if (state.pid === "" || String(t.pid) === state.pid) {
        option(tid, String(t.tid), t.comm + " " + t.pid + "/" + t.tid + " (" + t.samples + ")");
      }
    }
    for (const [p, comm] of pids) {
      option(pid, String(p), comm + " " + p);
    }
    pid.value = state.pid;
    tid.value = state.tid;
    $("inverted").checked = state.inverted;
    $("search").value = state.search;
  }
  function reload() {
    writeHash();
    fillControls();
    return Promise.all([loadHeatmap(), loadFlame(), loadTable()]);
  }
  function wireControls() {
    $("file").addEventListener("change", function (e) {
      state.file = Number(e.target.value);
      state.base = "";
      state.pid = "";
      state.tid = "";
      state.select = null;
      reload();
    });
    $("base").addEventListener("change", function (e) {
      state.base = e.target.value;
      writeHash();
      loadFlame();
    });
    for (const key of ["pid", "tid"]) {
      $(key).addEventListener("change", function (e) {
        state[key] = e.target.value;
        if (key === "pid") {
          state.tid = "";
        }
        state.select = null;
        reload();
      });
    }
    $("inverted").addEventListener("change", function (e) {
      state.inverted = e.target.checked;
      writeHash();
      loadFlame();
    });
    $("search").addEventListener("input", function (e) {
      state.search = e.target.value;
      writeHash();
      applySearch();
    });
    $("reset").addEventListener("click", function () {
      if (flame) {
        zoom(null);
      }
    });
    for (const th of document.querySelectorAll("#calltree th.sortable")) {
      th.addEventListener("click", function () {
        sortKey = th.dataset.key;
        writeHash();
        drawTable();
      });
    }
  }

  async function start() {
    try {
      files = JSON.parse((await ask("/api/files")).text);
    } catch (e) {
      $("status").textContent = e.message;
      return;
    }
    readHash();
    wireControls();
    await reload();
    $("status").dataset.state = "ready";
  }
  start();
})();
