// scry heatmap's page script (render/heatmap.rs inlines it): hovering a
// cell shows its count and range; on the offset map, pressing on a cell
// and releasing on another selects the cells between them in time order
// and draws the flame graph of their samples below (FlameScope's way),
// from the stacks the page carries. `#select=COL.ROW-COL.ROW` in the URL
// selects a range on load (and is set by each selection), so a range can
// be shared as a link. Nothing is fetched: the data is the JSON in
// #heatmap-data.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("heatmap-data").textContent);
  const NS = "http://www.w3.org/2000/svg";
  const status = document.getElementById("status");
  const map = document.getElementById("heatmap");
  const cells = Array.from(map.querySelectorAll("rect.cell"));

  function describe(rect) {
    const title = rect.querySelector("title");
    return title ? title.textContent : "";
  }
  map.addEventListener("mouseover", function (e) {
    if (e.target.classList && e.target.classList.contains("cell")) {
      status.textContent = describe(e.target);
    }
  });
  map.addEventListener("mouseleave", function () {
    status.textContent = data.hint || "";
  });
  status.textContent = data.hint || "";
  if (data.kind !== "offset") {
    return;
  }

  // Cells are numbered in time order: col * rows + row.
  const index = function (rect) {
    return Number(rect.dataset.c) * data.rows + Number(rect.dataset.r);
  };
  let anchor = null;
  function mark(a, b) {
    const lo = Math.min(a, b);
    const hi = Math.max(a, b);
    for (const rect of cells) {
      const i = index(rect);
      rect.classList.toggle("sel", i >= lo && i <= hi);
    }
  }
  map.addEventListener("mousedown", function (e) {
    if (e.target.classList && e.target.classList.contains("cell")) {
      anchor = index(e.target);
      mark(anchor, anchor);
      e.preventDefault();
    }
  });
  map.addEventListener("mousemove", function (e) {
    if (anchor !== null && e.target.classList && e.target.classList.contains("cell")) {
      mark(anchor, index(e.target));
    }
  });
  document.addEventListener("mouseup", function (e) {
    if (anchor === null) {
      return;
    }
    let end = anchor;
    if (e.target.classList && e.target.classList.contains("cell")) {
      end = index(e.target);
    }
    select(anchor, end, true);
    anchor = null;
  });

  function place(i) {
    return Math.floor(i / data.rows) + "." + (i % data.rows);
  }
  function at(text) {
    const parts = text.split(".");
    const col = Number(parts[0]);
    const row = Number(parts[1]);
    if (!Number.isInteger(col) || !Number.isInteger(row)) {
      return null;
    }
    if (col < 0 || col >= data.columns || row < 0 || row >= data.rows) {
      return null;
    }
    return col * data.rows + row;
  }
  function offsetMs(i) {
    return ((i % data.rows) * data.row_ms).toFixed(0);
  }
  function select(a, b, remember) {
    const lo = Math.min(a, b);
    const hi = Math.max(a, b);
    mark(lo, hi);
    if (remember) {
      history.replaceState(null, "", "#select=" + place(lo) + "-" + place(hi));
    }
    const counts = new Map();
    let samples = 0;
    for (let i = lo; i <= hi; i++) {
      const cell = data.cells[i] || [];
      for (let k = 0; k + 1 < cell.length; k += 2) {
        counts.set(cell[k], (counts.get(cell[k]) || 0) + cell[k + 1]);
        samples += cell[k + 1];
      }
    }
    const from = Math.floor(lo / data.rows) + " s + " + offsetMs(lo) + " ms";
    const upTo = Math.floor(hi / data.rows) + " s + " +
      (((hi % data.rows) + 1) * data.row_ms).toFixed(0) + " ms";
    document.getElementById("range").textContent =
      "Flame graph of " + from + " to " + upTo + ": " + samples + " " + data.unit;
    draw(tree(counts), samples);
  }

  function tree(counts) {
    const root = { name: "all", value: 0, children: new Map() };
    for (const [stack, n] of counts) {
      root.value += n;
      let node = root;
      for (const f of data.stacks[stack]) {
        let child = node.children.get(f);
        if (!child) {
          child = { name: data.names[f], value: 0, children: new Map() };
          node.children.set(f, child);
        }
        child.value += n;
        node = child;
      }
    }
    return root;
  }

  const flameSvg = document.getElementById("flame");
  const WIDTH = 1200;
  const FRAME = 16;
  let current = null;
  let total = 0;

  function depth(node) {
    let d = 0;
    for (const child of node.children.values()) {
      d = Math.max(d, depth(child));
    }
    return d + 1;
  }
  function colour(name) {
    let h = 0;
    for (let i = 0; i < name.length; i++) {
      h = (h * 31 + name.charCodeAt(i)) >>> 0;
    }
    const kernel = name.endsWith("_[k]");
    const r = kernel ? 220 : 205 + (h % 50);
    const g = kernel ? 140 + (h % 60) : 80 + ((h >>> 8) % 130);
    const b = kernel ? 40 : (h >>> 16) % 55;
    return "rgb(" + r + "," + g + "," + b + ")";
  }
  function draw(root, samples) {
    current = root;
    total = samples;
    while (flameSvg.firstChild) {
      flameSvg.removeChild(flameSvg.firstChild);
    }
    if (root.value === 0) {
      flameSvg.setAttribute("height", "0");
      return;
    }
    const rows = depth(root);
    const height = rows * FRAME;
    flameSvg.setAttribute("width", String(WIDTH));
    flameSvg.setAttribute("height", String(height));
    flameSvg.setAttribute("viewBox", "0 0 " + WIDTH + " " + height);
    const scale = WIDTH / root.value;
    (function walk(node, x, level) {
      const w = node.value * scale;
      if (w < 0.3) {
        return;
      }
      const g = document.createElementNS(NS, "g");
      g.setAttribute("class", "frame");
      const title = document.createElementNS(NS, "title");
      const pct = total ? (100 * node.value / total).toFixed(2) : "0";
      title.textContent = node.name + " (" + node.value + " " + data.unit + ", " + pct + "%)";
      g.appendChild(title);
      const rect = document.createElementNS(NS, "rect");
      const y = height - (level + 1) * FRAME;
      rect.setAttribute("x", x.toFixed(2));
      rect.setAttribute("y", String(y));
      rect.setAttribute("width", Math.max(w - 0.5, 0.1).toFixed(2));
      rect.setAttribute("height", String(FRAME - 1));
      rect.setAttribute("fill", level === 0 ? "rgb(240,200,160)" : colour(node.name));
      g.appendChild(rect);
      if (w > 30) {
        const text = document.createElementNS(NS, "text");
        text.setAttribute("x", (x + 3).toFixed(2));
        text.setAttribute("y", String(y + FRAME - 4));
        const fit = Math.floor((w - 6) / 7);
        text.textContent = node.name.length > fit ? node.name.slice(0, Math.max(fit - 2, 0)) + ".." : node.name;
        g.appendChild(text);
      }
      g.addEventListener("click", function () {
        draw(node === current && node.parentNode ? node.parentNode : node, total);
      });
      flameSvg.appendChild(g);
      let cx = x;
      const children = Array.from(node.children.values());
      children.sort(function (p, q) { return p.name < q.name ? -1 : p.name > q.name ? 1 : 0; });
      for (const child of children) {
        child.parentNode = node;
        walk(child, cx, level + 1);
        cx += child.value * scale;
      }
    })(root, 0, 0);
  }

  const m = /^#select=([0-9.]+)-([0-9.]+)$/.exec(location.hash);
  if (m) {
    const a = at(m[1]);
    const b = at(m[2]);
    if (a !== null && b !== null) {
      select(a, b, false);
    }
  }
})();
