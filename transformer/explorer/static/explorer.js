// The attention explorer's views, drawn in the browser from one payload per translation
// (transformer/explorer/payload.py builds it). Every view change (tab, layer, head, mean over heads, row labels,
// hide specials, merge subwords, decoding step, head-summary click) redraws here, without the server,
// and only the views of the tab on screen are drawn.
//
// Loaded by gr.HTML(js_on_load=...): `element` is the component, `props.value` the payload (null before
// a translation), `props.view` the initial view state, `watch` calls back when the payload changes.
// User text reaches the page only as `textContent` or as Plotly labels escaped by Python (viz.escape_label).
// The transforms mirror transformer/explorer/viz.py (hide_special, merge_subwords: static/transforms.js) and views.py
// (focus_view, model_view, step_view); tests/test_browser.py compares the arrays drawn here
// with those Python functions, and with the same views of the model's float32 maps (within 0.005 per cell).
// Two things need the model, so they go back to the server with gr.HTML's `trigger("rerun", {off, measure})`:
// heads switched off (the translation, n-best list and maps without them) and the norm maps ‖α f(x)‖
// (computed only when asked). The answer is a new payload; everything else stays in the browser. Each payload
// carries the generation of the request it answers (one older than a payload drawn is ignored) and, for a
// rerun, the ticket the page sent (`setPayload`).

function initExplorer(root, props, watch) {
  "use strict";
  const KINDS = ["encoder", "decoder", "cross"];
  const TITLES = {encoder: "Encoder self-attention", decoder: "Decoder self-attention", cross: "Cross-attention"};
  const MEAN = -1;
  const ROWS_PREDICTED = "predicted token";
  const EMPTY = "Translate a sentence to see its attention.";
  const MEASURE_LABEL = {weight: "weight", norm: "norm (row share)"};
  const KIND_CODE = {encoder: "e", decoder: "d", cross: "c"};
  // the model pass of gr.HTML's custom event (undefined where the explorer runs without gradio)
  const rerun = typeof trigger === "function" ? (request) => trigger("rerun", request) : null;
  // not responsive: Plotly's own resize collapsed a fixed-height map's container to 0 px, so the views below were
  // drawn over it; the resize handler below redraws every view at its new size instead
  const PLOT_CONFIG = {displaylogo: false, responsive: false, displayModeBar: false};

  // ---- the view state: the one place that says what is shown (payload aside)
  // (shared with the other panels and the URL; a restored link may have set it before this view loads)
  const [shared, created] = attentionView();
  const state = shared.state;
  if (created) Object.assign(state, props.view || {});
  state.off = Array.isArray(state.off) ? state.off : [];
  state.measure = state.measure === "norm" ? "norm" : "weight";
  let offMode = false;  // clicks in the head summary switch heads off (not part of the shared view)
  const share = shared.share;
  let data = null;  // the decoded payload
  const drawn = {};  // view id -> key of what it shows now (redraw only on change)

  const $ = (sel) => root.querySelector(sel);
  const $$ = (sel) => Array.from(root.querySelectorAll(sel));
  const present = () => document.body.classList.contains("present");
  const fontSize = () => (present() ? 20 : 14);

  // ---- payload decoding
  // the arrays are raw DEFLATE: `inflate` is static/inflate.js, loaded before this file (page.explorer_js)

  function decodeArray(entry) {
    const bin = atob(entry.data);
    let bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const width = entry.dtype === "uint8" ? 1 : entry.dtype === "uint16" ? 2 : 4;
    if (entry.codec === "deflate") bytes = inflate(bytes, entry.shape.reduce((a, b) => a * b, 1) * width);
    if (entry.dtype === "float32") return {shape: entry.shape, values: new Float32Array(bytes.buffer)};
    const ints = entry.dtype === "uint16" ? new Uint16Array(bytes.buffer) : bytes;
    const values = new Float32Array(ints.length);
    for (let i = 0; i < ints.length; i++) values[i] = ints[i] / entry.scale;
    if (entry.kept_mass) {  // payload.encode_rows: kept keys were sent relative to their row's kept mass
      const mass = decodeArray(entry.kept_mass).values, kept = entry.kept, K = kept.length;
      for (let r = 0; r < mass.length; r++) {
        for (let j = 0; j < K; j++) if (kept[j]) values[r * K + j] = Math.fround(values[r * K + j] * mass[r]);
      }
    }
    return {shape: entry.shape, values};
  }

  function decode(payload) {
    const kinds = {};
    for (const kind of KINDS) {
      const k = payload.kinds[kind];
      kinds[kind] = {weights: decodeArray(k.weights), entropy: k.entropy, norm: k.norm ? decodeArray(k.norm) : null};
    }
    return Object.assign({}, payload, {kinds, rolloutArray: payload.rollout ? decodeArray(payload.rollout) : null,
      lut: colorLut(payload.colorscale)});
  }

  // ---- arrays: a map is an array of rows (plain arrays of numbers)
  function slice2d(arr, layer, head) {
    const [, H, Q, K] = arr.shape;
    const base = (layer * H + head) * Q * K;
    const rows = [];
    for (let i = 0; i < Q; i++) rows.push(Array.from(arr.values.subarray(base + i * K, base + (i + 1) * K)));
    return rows;
  }

  function headMap(arr, layer, head) {
    if (head >= 0) return slice2d(arr, layer, head);
    const H = arr.shape[1];
    const maps = [];
    for (let h = 0; h < H; h++) maps.push(slice2d(arr, layer, h));
    return maps[0].map((row, i) => row.map((_, j) => maps.reduce((s, m) => s + m[i][j], 0) / H));
  }

  // what the maps show: the weights α, or (when asked for and arrived) the row-normalised norms ‖α f(x)‖
  const showNorm = () => state.measure === "norm" && Boolean(data.kinds.encoder.norm);
  const mapsOf = (kind) => (showNorm() ? data.kinds[kind].norm : data.kinds[kind].weights);
  const offKey = (off) => (off || []).map((h) => `${KIND_CODE[h[0]]}${h[1] + 1}.${h[2] + 1}`).sort().join(",");
  const isOff = (kind, l, h) => state.off.some((x) => x[0] === kind && x[1] === l && x[2] === h);

  // the transforms' pure parts (axis, hideSpecial, mergeSubwords) are static/transforms.js, loaded before this file

  function kindAxes(kind) {
    const t = data.tokens;
    const queries = state.rows === ROWS_PREDICTED ? t.tgt_out : t.tgt_in;
    if (kind === "encoder") return [axis(t.src), axis(t.src)];
    if (kind === "decoder") return [axis(queries), axis(t.tgt_in)];
    return [axis(queries), axis(t.src)];
  }

  // explorer.transform: hide specials (if asked) then merge subwords (if asked)
  function transform(w, q, k) {
    let hidden = null;
    if (state.hide) [w, q, k, hidden] = hideSpecial(w, q, k);
    if (state.merge && q.label.length && k.label.length) [w, q, k] = mergeSubwords(w, q, k);
    return {z: w, q, k, hidden};
  }

  // Until a layer or head is chosen (state.auto), each kind opens on its own default: cross-attention on the
  // read-out that agrees best with people's word alignments (layer, head and rows: head_views.opening_read_outs;
  // the rows it sets are given back on leaving it), the steps on the best one of the rows being chosen, every
  // other kind on its last layer, mean. A layer or head set by anyone (a control, a panel, a test) ends the
  // defaults; so do rows chosen on the cross view, where the rows are part of its default.
  let autoRows = null;  // the rows before the cross default set its own, while they are in force
  function chosen(changes) {
    if ("rows" in changes) autoRows = null;  // rows chosen by hand are kept
    const ends = "layer" in changes || "head" in changes || ("rows" in changes && state.tab === "cross");
    return ends && !("auto" in changes) ? {...changes, auto: false} : changes;
  }

  function opensOn(view) {
    const open = data && data.heads && data.heads.opens_on;
    return open && open[view] ? open[view] : null;
  }

  function autoPick() {
    if (!state.auto || !data) { autoRows = null; return; }
    const view = KINDS.includes(state.tab) ? state.tab : "steps";
    const open = view === "cross" || view === "steps" ? opensOn(view) : null;
    if (view === "cross" && open && state.rows !== open.rows) {
      if (autoRows === null) autoRows = state.rows;
      state.rows = open.rows;
    } else if ((view !== "cross" || !open) && autoRows !== null) {
      state.rows = autoRows;
      autoRows = null;
    }
    if (open) { state.layer = open.layer; state.head = open.head; return; }
    state.layer = Math.max(mapsOf(view === "steps" ? "cross" : view).shape[0], 1) - 1;
    state.head = MEAN;
  }

  // how far the cross read-out on screen agrees with a person (alignment.json: the opening one's sentence with
  // eflomal's figures, any other head or layer mean from head_views.read_out_agreements); weights only
  function showAgreement() {
    const note = $("#agreement");
    if (!note) return;
    let text = "";
    if (data && state.tab === "cross" && !showNorm()) {
      const [L, H] = mapsOf("cross").shape;
      const layer = clampLayer(L), head = headOf(H), open = opensOn("cross");
      const said = data.heads && data.heads.agreements;
      const numbers = said && said.read_outs[`${layer}|${head}|${state.rows}`];
      if (open && open.agreement && layer === open.layer && head === open.head && state.rows === open.rows) {
        text = open.agreement;
      } else if (numbers) text = said.template.replace("{precision}", numbers[0]).replace("{recall}", numbers[1]);
    }
    note.textContent = text;
    note.hidden = !text;
  }
  const clampLayer = (n) => Math.min(Math.max(state.layer, 0), n - 1);
  const headOf = (n) => (state.head < n ? state.head : MEAN);
  const headLabel = (h) => (h < 0 ? "mean over heads" : `head ${h + 1}`);
  // numbered as in the n-best table (`rank`: the distinct translations' order; older payloads have none)
  const suffix = () => (data.candidate ? ` · candidate ${(Number.isInteger(data.rank) ? data.rank : data.candidate) + 1}` : "");

  // explorer.focus_view's arrays: one layer and head (or the mean) of one kind, transformed
  function focusData(kind) {
    const arr = mapsOf(kind);
    const [L, H] = arr.shape;
    if (L === 0) return {message: `This model has no ${kind} layers.`, hidden: null};
    const layer = clampLayer(L), head = headOf(H);
    const [q, k] = kindAxes(kind);
    const view = transform(headMap(arr, layer, head), q, k);
    let title = `${TITLES[kind]} · layer ${layer + 1} · ${headLabel(head)}${suffix()}`;
    if (layer !== state.layer) title += ` (this stack has ${L} layers)`;
    if (showNorm()) title += " · norm \u2016\u03b1 f(x)\u2016";
    if (head >= 0 && isOff(kind, layer, head)) title += " · switched off";
    if (!view.z.length || !view.z[0].length) {
      return {message: "Nothing left to show after hiding special tokens.", hidden: view.hidden};
    }
    return Object.assign(view, {title});
  }

  // ---- drawing helpers
  function colorLut(scale) {
    const rgb = (c) => c.match(/[\d.]+/g).slice(0, 3).map(Number);
    const stops = scale.map(([x, c]) => [x, rgb(c)]);
    const lut = [];
    for (let i = 0; i < 256; i++) {
      const x = i / 255;
      let s = 0;
      while (s < stops.length - 2 && x > stops[s + 1][0]) s++;
      const [x0, c0] = stops[s], [x1, c1] = stops[s + 1];
      const f = x1 > x0 ? (x - x0) / (x1 - x0) : 0;
      lut.push(`rgb(${c0.map((v, j) => Math.round(v + f * (c1[j] - v))).join(",")})`);
    }
    return lut;
  }

  function tokenAxis(labels, extra) {
    const n = labels.length;
    return Object.assign({tickmode: "array", tickvals: labels.map((_, i) => i), ticktext: labels,
      tickfont: {size: Math.max(8, Math.min(present() ? 20 : 14, Math.floor(420 / Math.max(n, 1))))},
      showgrid: false, zeroline: false, automargin: true}, extra);
  }

  // Tick labels that never run into each other, however many columns (the best viewers thin their axes the
  // same way): the font follows the cell's size down to 10 px, slanted column labels stand upright when their
  // slant leaves too little room between them, and past that only every k-th label is written; every cell still
  // names its row and column on hover. `cell`: a cell's side in px; `angle`: the slant asked for. Returns what
  // it chose (a key).
  function legibleLabels(layout, view, cell, angle) {
    cell = Math.max(cell, 1);
    const x = layout.xaxis, y = layout.yaxis;
    // the font shrinks to fit a cell (a line of text and a little air: 1.25 x its size) before any label is left out
    const size = Math.max(10, Math.min(present() ? 20 : 14, Math.floor(cell / 1.25)));
    const room = 1.25 * size;
    const slant = Math.abs(Math.sin(angle * Math.PI / 180));
    x.tickangle = cell * slant >= room ? angle : -90;
    const step = Math.ceil(room / cell);
    const thin = (labels) => (step > 1 ? labels.map((t, i) => (i % step ? "" : t)) : labels);
    x.tickfont = {size};
    y.tickfont = {size};
    x.ticktext = thin(view.k.label);
    y.ticktext = thin(view.q.label);
    return `${size}|${x.tickangle}|${step}`;
  }

  function baseLayout(title, extra) {
    return Object.assign({title: {text: title, x: 0.5, xanchor: "center", yref: "container", y: 1, yanchor: "top",
      pad: {t: 12}, font: {size: fontSize() + 2}}, font: {size: fontSize()}, paper_bgcolor: "white",
      plot_bgcolor: "white", margin: {l: 60, r: 30, t: 110, b: 30}}, extra);
  }

  function setMessage(id, message) {
    const div = $(`#${id}`);
    const note = div.querySelector(".message"), plot = div.querySelector(".plot");
    note.textContent = message || "";
    note.hidden = !message;
    if (plot) {
      plot.hidden = Boolean(message);
      if (message && window.Plotly) window.Plotly.purge(plot);
    }
    return plot;
  }

  // the stage (a screen wider than a phone): the map fills the window below its own top, so the sentence, the
  // translation and the whole map (axis labels included) are on one screen; at least 360 px (a 720p projector)
  function mapHeight(plot, n) {
    if (window.innerWidth > 760) {
      const top = plot.getBoundingClientRect().top + window.scrollY;
      return Math.round(Math.max(360, Math.min(1400, window.innerHeight - top - 8)));
    }
    return Math.min(720, Math.max(360, 200 + 14 * n));
  }

  function describe(view) {
    let best = [0, 0, -1];
    view.z.forEach((row, i) => row.forEach((v, j) => { if (v > best[2]) best = [i, j, v]; }));
    const plain = (s) => new DOMParser().parseFromString(s, "text/html").documentElement.textContent;
    return `${plain(view.title)}. Rows: ${view.q.label.length}, columns: ${view.k.label.length}. Strongest link: ` +
      `${plain(view.q.label[best[0]])} looks at ${plain(view.k.label[best[1]])} (${(best[2] * 100).toFixed(0)}%).`;
  }

  // a map for slides: the figure on screen at 1920x1080, titled with the sentence, as PNG or SVG
  function saveMap(button) {
    const plot = button.closest(".view").querySelector(".plot");
    if (!data || !plot || !plot.data || !window.Plotly) return;
    const esc = (t) => String(t).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    const title = `${esc(data.source)} \u2192 ${esc(data.translation)}<br>${plot.layout.title.text}`;
    // an alignment drawing keeps room for its slanted words above and below its rows
    const margin = plot.__alignment ? {l: 140, r: 140, t: 300, b: 180} : {l: 90, r: 40, t: 220, b: 40};
    const layout = Object.assign({}, plot.layout, {width: 1920, height: 1080,
      title: Object.assign({}, plot.layout.title, {text: title}), margin});
    const what = plot.__alignment ? "alignment" : "attention";
    const name = `${what}-${state.tab}-layer${state.layer + 1}-${state.head < 0 ? "mean" : `head${state.head + 1}`}`;
    window.Plotly.downloadImage({data: plot.data, layout, config: PLOT_CONFIG},
      {format: button.dataset.format, width: 1920, height: 1080, filename: name});
  }

  function heatmap(id, view, zmax, onDrawn) {
    const plot = setMessage(id, null);
    const customdata = view.z.map((row, i) => row.map((_, j) => [view.q.label[i], view.k.label[j]]));
    const n = Math.max(view.q.label.length, view.k.label.length);
    const big = present();
    const measure = view.measure || "weight";
    const trace = {type: "heatmap", z: view.z, customdata, coloraxis: "coloraxis",
      hovertemplate: `query: %{customdata[0]}<br>key: %{customdata[1]}<br>${measure === "weight" ? "weight" : "norm share"}: ` +
        "%{z:.1%}<extra></extra>"};
    const layout = baseLayout(view.title, {
      // presentation: no "key" title above the rotated labels, so the map itself gets the height
      xaxis: tokenAxis(view.k.label, {side: "top", tickangle: big ? -45 : -60, constrain: "domain",
        title: {text: big ? "" : "key"}}),
      yaxis: tokenAxis(view.q.label, {autorange: "reversed", scaleanchor: "x", scaleratio: 1, constrain: "domain",
        title: {text: "query"}}),
      coloraxis: {cmin: 0, cmax: zmax, colorscale: data.colorscale,
        colorbar: {title: {text: measure === "weight" ? "weight" : "norm share"}, tickformat: ".0%", thickness: 14}},
      height: mapHeight(plot, n),
      width: plot.clientWidth || undefined,  // the width of the place it has now (see resized, below)
    });
    layout.margin = big ? {l: 50, r: 10, t: 125, b: 10} : {l: 60, r: 30, t: 150, b: 30};
    if (window.innerWidth <= 760) {  // a phone (explorer.css): the title wraps, a thin colour bar, small margins
      layout.xaxis.title = {text: ""};
      layout.yaxis.title = {text: ""};
      layout.coloraxis.colorbar = Object.assign(layout.coloraxis.colorbar, {thickness: 10, title: {text: ""}});
      layout.title.text = layout.title.text.replace(/ \u00b7 /g, "<br>");
      layout.margin = {l: 10, r: 10, t: 150, b: 20};
    }
    // a first guess of a cell's size (square cells: the map's width or its height, less the margins and the
    // colour bar, decides); once drawn, Plotly's own size of a cell corrects it
    const guess = Math.min(((plot.clientWidth || 800) - 260) / Math.max(view.k.label.length, 1),
      (layout.height - 200) / Math.max(view.q.label.length, 1));
    const angle = layout.xaxis.tickangle, labelled = legibleLabels(layout, view, guess, angle);
    // data-drawn: empty while Plotly draws, then the draw's number (tests wait on it before they click a cell)
    const draw = (plot.__draw || 0) + 1;
    plot.__draw = draw;
    plot.dataset.drawn = "";
    withPlotly((plotly) => plotly.react(plot, [trace], layout, PLOT_CONFIG).then(() => {
      const full = plot._fullLayout;
      const cell = full && full.xaxis && full.yaxis ? Math.min(full.xaxis._length / Math.max(view.k.label.length, 1),
        full.yaxis._length / Math.max(view.q.label.length, 1)) : guess;
      if (plot.__draw === draw && legibleLabels(layout, view, cell, angle) !== labelled) {
        return plotly.react(plot, [trace], layout, PLOT_CONFIG);
      }
      return null;
    }).then(() => {
      if (plot.__draw !== draw) return;  // a newer draw of this map is on its way
      if (onDrawn) onDrawn(plot);
      plot.dataset.drawn = String(draw);
    }));
    plot.setAttribute("role", "img");  // the map's text alternative: what it is and its strongest link
    plot.setAttribute("aria-label", describe(view));
    if (plot.closest(".focus-row")) {  // a focus map takes the keyboard: its cells are chosen with the arrow keys
      plot.setAttribute("role", "application");
      plot.setAttribute("aria-roledescription", "attention map");
      plot.setAttribute("aria-label", `${describe(view)} Arrow keys choose a cell; Enter shows how its weight is computed.`);
    }
    plot.__view = view;  // for tests: what is drawn, before Plotly touches it
    plot.__alignment = null;
  }

  // ---- the views
  function drawFocus(kind, view) {
    if (view.message) { setMessage(`focus-${kind}`, view.message); return; }
    if (kind === "cross" && state.align) { drawAlignment(); return; }
    view.measure = showNorm() ? "norm" : "weight";
    heatmap(`focus-${kind}`, view, 1, (plot) => {  // once drawn: Plotly adds `on` to the map it drew
      if (plot.removeAllListeners) plot.removeAllListeners("plotly_click");
      plot.on("plotly_click", (e) => cellClicked(kind, e));
    });
  }

  // the cross view as aligners draw an alignment (static/alignment_lines.js): the read-out on screen, its words
  // whatever the hide and merge switches say (links are between words, specials are never words)
  function drawAlignment() {
    const plot = setMessage("focus-cross", null);
    const arr = mapsOf("cross"), [L, H] = arr.shape, layer = clampLayer(L), head = headOf(H);
    const [q, k] = kindAxes("cross");
    const al = wordAlignment(headMap(arr, layer, head), q.info, k.info);
    const title = `${TITLES.cross} · layer ${layer + 1} · ${headLabel(head)} · word alignment${suffix()}` +
      (showNorm() ? " · norm \u2016\u03b1 f(x)\u2016" : "");
    const figure = alignmentFigure(al, {title, fontSize: fontSize(), width: plot.clientWidth || 600,
      height: present() ? 440 : 380});
    const draw = (plot.__draw || 0) + 1;  // as heatmap(): data-drawn says this drawing is on screen
    plot.__draw = draw;
    plot.dataset.drawn = "";
    withPlotly((plotly) => plotly.react(plot, figure.data, figure.layout, PLOT_CONFIG).then(() => {
      if (plot.__draw !== draw) return;
      if (plot.removeAllListeners) plot.removeAllListeners("plotly_click");  // no cell to explain here
      plot.dataset.drawn = String(draw);
    }));
    plot.setAttribute("role", "img");
    plot.setAttribute("aria-label", describeAlignment(al, title));
    plot.__view = null;
    plot.__alignment = al;  // for tests: the links drawn
  }

  // The focus map from the keyboard (a map cell was reachable only by mouse or by a link's cell): Tab (or the
  // "Go to the map" button beside the source box) focuses it, the arrow keys move a cursor over its cells, said
  // aloud through a live region, and Enter or Space explains the cell as a click does.
  const cursors = {};  // kind -> [row, column] of the keyboard's cell on the map drawn now
  function showCursor(kind) {
    const plot = $(`#focus-${kind} .plot`), view = plot.__view;
    if (!view || !view.z.length || !window.Plotly || !plot.dataset.drawn) return;
    const Q = view.z.length, K = view.z[0].length;
    let [i, j] = cursors[kind] || [0, 0];
    [i, j] = [Math.min(Math.max(i, 0), Q - 1), Math.min(Math.max(j, 0), K - 1)];
    cursors[kind] = [i, j];
    window.Plotly.relayout(plot, {shapes: [{type: "rect", xref: "x", yref: "y", x0: j - 0.5, x1: j + 0.5,
      y0: i - 0.5, y1: i + 0.5, line: {color: "#d62728", width: 3}}]});
    const plain = (t) => new DOMParser().parseFromString(t, "text/html").documentElement.textContent;
    $(`#focus-${kind} .cell-now`).textContent = `Row ${i + 1}, ${plain(view.q.label[i])}, looks at column ${j + 1}, ` +
      `${plain(view.k.label[j])}: ${(view.z[i][j] * 100).toFixed(1)}%.`;
    plot.dataset.cursor = `${i}.${j}`;  // tests read where the cursor is
  }
  for (const kind of KINDS) {
    const view = $(`#focus-${kind}`), plot = view.querySelector(".plot");
    const live = view.appendChild(document.createElement("p"));
    live.className = "cell-now sr-only";
    live.setAttribute("aria-live", "polite");
    plot.tabIndex = 0;
    plot.addEventListener("focus", () => showCursor(kind));
    plot.addEventListener("blur", () => {
      if (window.Plotly && plot.dataset.drawn && (plot.layout || {}).shapes) window.Plotly.relayout(plot, {shapes: []});
    });
    plot.addEventListener("keydown", (e) => {
      const moves = {ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1]};
      const v = plot.__view;
      if (!v || !data) return;
      if (moves[e.key]) {
        const [i, j] = cursors[kind] || [0, 0];
        cursors[kind] = [i + moves[e.key][0], j + moves[e.key][1]];
        showCursor(kind);
      } else if (e.key === "Enter" || e.key === " ") {
        const [i, j] = cursors[kind] || [0, 0];
        askCell(kind, v.q.index ? v.q.index[i] : null, v.k.index ? v.k.index[j] : null);
      } else {
        return;
      }
      e.preventDefault();
    });
  }

  // a click on a cell of the focus map: the inside panel (static/inside.js) shows how that weight is computed
  function cellClicked(kind, e) {
    const point = e && e.points && e.points[0], view = $(`#focus-${kind} .plot`).__view;
    if (!point || !view) return;
    const i = point.y, j = point.x;
    askCell(kind, view.q.index ? view.q.index[i] : null, view.k.index ? view.k.index[j] : null);
  }

  // the inside panel asked for cell (query, key) of the map on screen (token positions, specials counted); a
  // cell of one head's map of single tokens goes into the link (`cell`), with its layer and head
  function askCell(kind, query, key) {
    const [L, H] = mapsOf(kind).shape;
    const detail = {kind, layer: clampLayer(L), head: headOf(H), rows: state.rows, merged: Boolean(state.merge),
      measure: showNorm() ? "norm" : "weight", rev: data.rev, query, key};
    if (detail.head >= 0 && !detail.merged && Number.isInteger(query) && Number.isInteger(key)) {
      Object.assign(state, {layer: detail.layer, head: detail.head, auto: false, cell: [query, key]});
      share.sync();
    }
    document.dispatchEvent(new CustomEvent("attention-cell", {detail}));
    cellsAsked += 1;
    $(".explorer").dataset.cells = String(cellsAsked);  // each click handled counts (tests wait on it)
  }
  let cellsAsked = 0;

  // what the checkpoint's head analysis says about one head: role letters, and a line for the tooltip
  function headRoles(kind, l, h) {
    const heads = data.heads && data.heads.kinds[kind];
    if (!heads || !heads.tags[l]) return {letters: "", text: ""};
    const tags = heads.tags[l][h] || [];
    const letters = tags.map((t) => data.heads.codes[t] || "?").join("");
    const shares = Object.entries(heads.shares).map(([role, grid]) =>
      `${data.heads.names[role] || role} ${(grid[l][h] * 100).toFixed(0)}%` +
      `${tags.includes(role) ? " \u2713" : ""} (tag at ${(data.heads.thresholds[role] * 100).toFixed(0)}%)`);
    const importance = heads.importance[l] ? ` · importance ${heads.importance[l][h].toFixed(2)}` : "";
    return {letters, text: `${importance}\nroles: ${tags.length ? tags.map((t) => data.heads.names[t]).join(", ") : "none"}` +
      `\n${shares.join("\n")}`};
  }

  // black or white text, whichever contrasts more with the cell (WCAG relative luminance)
  function contrastText(r, g, b) {
    const lin = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    const L = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    return (L + 0.05) / 0.05 >= 1.05 / (L + 0.05) ? "#000" : "#fff";
  }

  function drawSummary(kind) {
    const div = $(`#grid-${kind}`);
    const ent = data.kinds[kind].entropy;
    const L = ent.values.length, H = L ? ent.values[0].length : 0;
    const table = document.createElement("table");
    table.className = "summary";
    const head = table.createTHead().insertRow();
    head.appendChild(document.createElement("th")).textContent = "layer";
    for (let h = 0; h < H; h++) head.appendChild(document.createElement("th")).textContent = `H${h + 1}`;
    const body = table.createTBody();
    const selLayer = clampLayer(L || 1), selHead = headOf(H);
    for (let l = 0; l < L; l++) {
      const row = body.insertRow();
      for (let c = 0; c <= H; c++) {
        const cell = row.insertCell();
        const button = cell.appendChild(document.createElement("button"));
        button.type = "button";
        button.dataset.testid = `cell-${l}-${c}`;
        button.dataset.layer = l;
        button.dataset.head = c === 0 ? MEAN : c - 1;
        if (c === 0) {
          button.textContent = `L${l + 1}`;
          button.title = `layer ${l + 1}, mean over heads`;
        } else {
          const value = ent.values[l][c - 1];
          const roles = headRoles(kind, l, c - 1);
          button.textContent = value.toFixed(2);
          if (roles.letters) {
            const tag = button.appendChild(document.createElement("span"));
            tag.className = "roles";
            tag.textContent = roles.letters;
          }
          const off = isOff(kind, l, c - 1);
          button.title = `layer ${l + 1}, head ${c}${off ? " (switched off)" : ""}: spread ${value.toFixed(2)} ` +
            `(low: looks at few words)${roles.text}`;
          button.setAttribute("aria-label", `layer ${l + 1}, head ${c}${off ? ", switched off" : ""}, spread ` +
            `${value.toFixed(2)}${roles.letters ? `, roles ${roles.letters}` : ""}`);
          button.dataset.kind = kind;
          button.style.background = ent.colors[l][c - 1];
          const [r, g, b] = ent.colors[l][c - 1].match(/[\d.]+/g).map(Number);
          button.style.color = contrastText(r, g, b);
          if (off) button.classList.add("off");
        }
        if (l === selLayer && c - 1 === selHead) button.classList.add("selected");
      }
    }
    div.replaceChildren(table);
  }

  function drawModel(kind) {
    const div = $(`#model-${kind}`);
    const arr = mapsOf(kind);
    const [L, H] = arr.shape;
    if (L === 0) { setMessage(`model-${kind}`, `This model has no ${kind} layers.`); return; }
    const [q0, k0] = kindAxes(kind);
    const maps = [];
    for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) maps.push(transform(slice2d(arr, l, h), q0, k0));
    const Q = maps[0].z.length, K = Q ? maps[0].z[0].length : 0;
    if (!Q || !K) { setMessage(`model-${kind}`, "Nothing left to show after hiding special tokens."); return; }
    setMessage(`model-${kind}`, null);
    const canvas = div.querySelector("canvas");
    const width = Math.max(div.clientWidth, 300);
    const label = present() ? 48 : 36, top = present() ? 30 : 22, gap = 6;
    const mapW = Math.min((width - label - gap * (H - 1)) / H, present() ? 200 : 150);
    const mapH = Math.min(mapW * Q / K, present() ? 220 : 160);
    const cellW = Math.min(mapW / K, mapH / Q * 2), cellH = mapH / Q;
    const used = cellW * K;
    const height = top + L * (mapH + gap);
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = `${fontSize()}px sans-serif`;
    ctx.fillStyle = "#333";
    ctx.textAlign = "center";
    for (let h = 0; h < H; h++) ctx.fillText(`H${h + 1}`, label + h * (mapW + gap) + used / 2, top - 6);
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (let l = 0; l < L; l++) ctx.fillText(`L${l + 1}`, label - 6, top + l * (mapH + gap) + mapH / 2);
    const boxes = [];
    const selLayer = clampLayer(L), selHead = headOf(H);
    maps.forEach((m, idx) => {
      const l = Math.floor(idx / H), h = idx % H;
      const x0 = label + h * (mapW + gap), y0 = top + l * (mapH + gap);
      m.z.forEach((row, i) => row.forEach((v, j) => {
        ctx.fillStyle = data.lut[Math.max(0, Math.min(255, Math.round(v * 255)))];
        ctx.fillRect(x0 + j * cellW, y0 + i * cellH, Math.ceil(cellW), Math.ceil(cellH));
      }));
      if (l === selLayer && (selHead === h || selHead === MEAN)) {
        ctx.strokeStyle = "#d62728";
        ctx.lineWidth = 2;
        ctx.strokeRect(x0 - 1, y0 - 1, used + 2, mapH + 2);
      }
      boxes.push({l, h, x0, y0, w: used, hgt: mapH, m});
    });
    canvas.__maps = maps;  // for tests: the arrays drawn, layer-major
    canvas.__boxes = boxes;
  }

  function modelHit(event) {
    const canvas = event.currentTarget;
    const rect = canvas.getBoundingClientRect();
    const x = event.clientX - rect.left, y = event.clientY - rect.top;
    const box = (canvas.__boxes || []).find((b) => x >= b.x0 && x < b.x0 + b.w && y >= b.y0 && y < b.y0 + b.hgt);
    if (!box) return null;
    const i = Math.floor((y - box.y0) / box.hgt * box.m.z.length), j = Math.floor((x - box.x0) / box.w * box.m.z[0].length);
    return {box, i, j};
  }

  function drawRollout() {
    if (!data.rolloutArray) { setMessage("rollout", "This model has no encoder layers."); return; }
    const r = slice2d({shape: [1, 1, ...data.rolloutArray.shape], values: data.rolloutArray.values}, 0, 0);
    const src = axis(data.tokens.src);
    const view = transform(r, src, src);
    if (!view.z.length || !view.z[0].length) {
      setMessage("rollout", "Nothing left to show after hiding special tokens."); return;
    }
    const zmax = Math.max(...view.z.map((row) => Math.max(...row)));
    view.title = "Encoder attention rollout (all layers, heads averaged)";
    heatmap("rollout", view, zmax > 0 ? zmax : 1);
  }

  function drawStep() {
    const n = data.steps.length;
    const slider = $("#step input");
    slider.max = Math.max(n, 2);
    slider.disabled = n < 2;
    state.step = Math.min(Math.max(state.step, 1), Math.max(n, 1));
    slider.value = state.step;
    const text = $("#step-text");
    const arr = mapsOf("cross");
    if (!n) { text.textContent = ""; setMessage("step-plot", "No decoding steps."); return; }
    if (!arr.shape[0]) { text.textContent = ""; setMessage("step-plot", "This model has no decoder layers."); return; }
    const t = state.step - 1, rec = data.steps[t];
    const layer = clampLayer(arr.shape[0]), head = headOf(arr.shape[1]);
    const row = headMap(arr, layer, head)[t];
    const query = {label: ["·"], raw: ["·"], shown: ["·"], special: [false], info: {groups: [0], words: ["·"], words_raw: ["·"],
      groups_hidden: [0], words_hidden: ["·"], words_hidden_raw: ["·"]}, hidden: false};
    const view = transform([row], query, axis(data.tokens.src));
    text.textContent = `Step ${t + 1} of ${n}: the decoder read \u2018${data.tokens.tgt_in.shown[t]}\u2019 and ` +
      `chose \u2018${rec.shown}\u2019 (probability ${(rec.p * 100).toFixed(1)}%).`;
    const plot = setMessage("step-plot", null);
    const top = rec.top;
    const bars = {type: "bar", orientation: "h", x: top.map((x) => x[2]), y: top.map((_, i) => i),
      marker: {color: top.map((x) => (x[0] === rec.token ? "#d62728" : "#1f77b4"))}, customdata: top.map((x) => x[1]),
      hovertemplate: "%{customdata}: %{x:.1%}<extra></extra>", texttemplate: "%{x:.0%}", textposition: "outside",
      showlegend: false};
    const src = view.k;
    const attention = {type: "bar", x: src.label.map((_, i) => i), y: view.z[0] || [], xaxis: "x2", yaxis: "y2",
      marker: {color: "#1f77b4"}, customdata: src.label, hovertemplate: "%{customdata}: %{y:.1%}<extra></extra>",
      showlegend: false};
    const title = `Step ${t + 1}: chose ${rec.label} · cross-attention layer ${layer + 1}, ${headLabel(head)}` +
      (showNorm() ? " · norm \u2016\u03b1 f(x)\u2016" : "");
    const panel = (text, x) => ({text, x, y: 1.02, xref: "paper", yref: "paper", xanchor: "center",
      yanchor: "bottom", showarrow: false, font: {size: fontSize()}});
    const layout = baseLayout(title, {
      xaxis: {domain: [0, 0.34], anchor: "y", range: [0, 1.15], tickformat: ".0%", title: {text: "probability"}},
      yaxis: tokenAxis(top.map((x) => x[1]), {domain: [0, 1], anchor: "x", autorange: "reversed"}),
      xaxis2: tokenAxis(src.label, {domain: [0.44, 1], anchor: "y2", tickangle: -45}),
      yaxis2: {domain: [0, 1], anchor: "x2", range: [0, 1], tickformat: ".0%", title: {text: "cross-attention"}},
      annotations: [panel(`Top-${top.length} next tokens`, 0.17), panel("Cross-attention over the source", 0.72)],
      height: fitToWindow(plot, present() ? 480 : 380),
    });
    layout.margin = {l: 70, r: 30, t: 90, b: 90};
    withPlotly((plotly) => plotly.react(plot, [bars, attention], layout, PLOT_CONFIG));
    plot.__view = view;
  }

  function hiddenText(masses) {
    const shown = KINDS.filter((k) => masses[k] !== null && masses[k] !== undefined);
    if (!shown.length) return "Special tokens are shown (tick \"Hide <bos>/<eos>\" to hide them and renormalise rows).";
    const parts = shown.map((k) => `${TITLES[k].toLowerCase()} ${(masses[k] * 100).toFixed(1)}%`).join(", ");
    return `Attention mass hidden on <bos>/<eos>/<pad> in the focus views (rows renormalised): ${parts}.`;
  }

  // ---- controls
  // the layers of the kind on screen (cross-attention and decoder self-attention can have fewer than the encoder)
  function layersOnScreen() {
    const kind = KINDS.includes(state.tab) ? state.tab : state.tab === "steps" ? "cross" : null;
    const L = kind ? mapsOf(kind).shape[0] : data.n_layers;
    return L > 0 ? L : data.n_layers;
  }

  function fillLayers() {
    const layer = $("#layer select"), L = layersOnScreen();
    if (layer.options.length === L) return;
    layer.replaceChildren(...Array.from({length: L}, (_, i) => {
      const o = document.createElement("option");
      o.value = i;
      o.textContent = `Layer ${i + 1}`;
      return o;
    }));
  }

  function fillSelectors() {
    const layer = $("#layer select"), head = $("#head select");
    const L = data.n_layers, H = data.n_heads;
    if (state.layer === null || state.layer >= L) state.layer = L - 1;
    if (state.head >= H) state.head = MEAN;
    const options = (sel, items) => {
      sel.replaceChildren(...items.map(([text, value]) => {
        const o = document.createElement("option");
        o.value = value;
        o.textContent = text;
        return o;
      }));
    };
    layer.replaceChildren();
    fillLayers();
    options(head, [["mean over heads", MEAN], ...Array.from({length: H}, (_, h) => [`Head ${h + 1}`, h])]);
    syncControls();
  }

  function syncControls() {
    if (data) {
      fillLayers();  // the picker shows the layer drawn: the chosen one, or the stack's last
      $("#layer select").value = String(Math.min(state.layer, layersOnScreen() - 1));
      $("#head select").value = String(state.head);
    }
    $$("#rows input").forEach((r) => { r.checked = r.value === state.rows; });
    $("#hide input").checked = state.hide;
    $("#merge input").checked = state.merge;
    $("#align input").checked = Boolean(state.align);
    $$("#measure input").forEach((r) => { r.checked = r.value === state.measure; });
    $("#ablate input").checked = offMode;
    $("#heads-on").disabled = !state.off.length;
    $$("[role=tab]").forEach((tab) => {
      const on = tab.dataset.tab === state.tab;
      tab.setAttribute("aria-selected", on ? "true" : "false");
      tab.tabIndex = on ? 0 : -1;
    });
    $$("[role=tabpanel]").forEach((panel) => { panel.hidden = panel.dataset.tab !== state.tab; });
  }

  // ---- render: what the active tab shows, redrawn only where its inputs changed
  // The focus view is drawn at once; the rest of the tab waits for the next frame, so the view a
  // person is looking at changes in one Plotly redraw instead of three (a newer render replaces a
  // pending one).
  let secondary = 0;
  function afterPaint(fn) {
    const ticket = ++secondary;
    requestAnimationFrame(() => setTimeout(() => { if (ticket === secondary && data) fn(); }, 0));
  }
  let pending = false;  // a render skipped while the explorer was hidden (another tab of the app on screen)
  function render() {
    autoPick();
    syncControls();
    showAgreement();
    $(".explorer").dataset.ready = data ? `payload-${data.rev}` : "empty";
    $(".explorer").dataset.views = "drawing";  // `views-<rev>` once the tab's views are drawn (tests wait on it)
    if (data && !root.offsetWidth) { pending = true; return; }  // drawn when it shows (ResizeObserver below)
    pending = false;
    if (!data) {
      for (const kind of KINDS) {
        setMessage(`focus-${kind}`, EMPTY);
        setMessage(`model-${kind}`, EMPTY);
        $(`#grid-${kind}`).replaceChildren();
      }
      setMessage("rollout", EMPTY);
      setMessage("step-plot", EMPTY);
      $("#step-text").textContent = "";
      $("#hidden-mass").textContent = hiddenText({});
      $("#caption").replaceChildren();
      $("#ablation").hidden = true;
      for (const id in drawn) delete drawn[id];
      viewsDrawn();
      return;
    }
    const focus = {}, masses = {};
    for (const kind of KINDS) {  // every kind's mass goes in the text; only the visible one is drawn
      focus[kind] = focusData(kind);
      masses[kind] = focus[kind].hidden;
    }
    $("#hidden-mass").textContent = hiddenText(masses);
    const caption = $("#caption");
    caption.replaceChildren();
    if (data.source !== undefined) {
      const arrow = document.createElement("span");
      arrow.className = "arrow";
      arrow.textContent = "\u2192";
      caption.append(data.source, arrow, data.translation + suffix());
    }
    showAblation();
    const common = [data.rev, state.rows, state.hide, state.merge, present(), showNorm()].join("|");
    const pick = [state.layer, state.head].join("|");
    const draw = (id, key, fn) => { if (drawn[id] !== key) { fn(); drawn[id] = key; } };
    if (KINDS.includes(state.tab)) {
      const kind = state.tab;
      draw(`focus-${kind}`, `${common}|${pick}|${kind === "cross" && Boolean(state.align)}`,
        () => drawFocus(kind, focus[kind]));
      afterPaint(() => {  // the views below the focus view follow once it is on screen
        draw(`grid-${kind}`, `${data.rev}|${pick}|${offKey(state.off)}|${offMode}`, () => drawSummary(kind));
        draw(`model-${kind}`, `${common}|${pick}|${$(`#model-${kind}`).clientWidth}`, () => drawModel(kind));
        if (kind === "encoder") draw("rollout", common, drawRollout);
        viewsDrawn();
      });
    } else if (state.tab === "steps") {
      draw("step-plot", `${common}|${pick}|${state.step}`, drawStep);
      viewsDrawn();
    }
  }

  function viewsDrawn() {
    $(".explorer").dataset.views = data ? `views-${data.rev}` : "views-empty";
  }

  function update(changes) {
    // another map (or heads off): the cell the inside panel explains is no longer on screen, nor in the link
    if (["tab", "layer", "head", "merge", "off", "align"].some((key) => key in changes)) state.cell = null;
    Object.assign(state, chosen(changes));
    render();
    share.sync();
    askModel();
  }

  // ---- heads switched off, norms: what only the model can answer
  function showAblation() {
    const note = $("#ablation");
    const ab = data && data.ablation;
    const waiting = asked !== null;
    note.hidden = !ab && !waiting;
    if (note.hidden) { note.textContent = ""; return; }
    const n = ab ? ab.off.length : 0;
    note.textContent = waiting ? "Asking the model\u2026" :
      `${n} head${n === 1 ? "" : "s"} switched off (${offKey(ab.off)}): the maps, the translation and the n-best ` +
      `list are the model's without them. With every head: \u201c${ab.unmasked}\u201d`;
  }

  // send a request when the payload differs from the view (other heads off, norms wanted but not sent);
  // each payload is asked about once, so an answer the server changed does not ask again. Each request has a
  // ticket the server sends back with its answer (`answers`): any other payload is not its answer
  let asked = null, ticket = 0;
  function askModel() {
    if (!data || !rerun) return;
    const have = offKey(data.ablation ? data.ablation.off : []), want = offKey(state.off);
    const needNorm = state.measure === "norm" && !data.kinds.encoder.norm;
    if (have === want && !needNorm) return;
    const key = `${data.rev}|${want}|${state.measure}`;
    if (asked === key) return;
    asked = key;
    ticket += 1;
    showAblation();
    rerun({off: state.off, measure: state.measure, ticket});
  }

  function toggleHead(kind, l, h) {
    const off = isOff(kind, l, h) ? state.off.filter((x) => !(x[0] === kind && x[1] === l && x[2] === h))
      : [...state.off, [kind, l, h]];
    update({off});
  }

  $("#layer select").addEventListener("change", (e) => update({layer: Number(e.target.value), auto: false}));
  $("#head select").addEventListener("change", (e) => update({head: Number(e.target.value), auto: false}));
  $$("#rows input").forEach((r) => r.addEventListener("change", (e) => update({rows: e.target.value})));
  $("#hide input").addEventListener("change", (e) => update({hide: e.target.checked}));
  $("#merge input").addEventListener("change", (e) => update({merge: e.target.checked}));
  $("#align input").addEventListener("change", (e) => update({align: e.target.checked}));
  $("#step input").addEventListener("input", (e) => update({step: Number(e.target.value)}));
  $$("[role=tab]").forEach((tab) => tab.addEventListener("click", () => update({tab: tab.dataset.tab})));
  $$(".tablist").forEach((list) => list.addEventListener("keydown", (e) => {
    if (e.key !== "ArrowRight" && e.key !== "ArrowLeft") return;
    const tabs = $$("[role=tab]");
    const i = tabs.findIndex((t) => t.dataset.tab === state.tab);
    const next = tabs[(i + (e.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
    update({tab: next.dataset.tab});
    next.focus();
  }));
  $$("#measure input").forEach((r) => r.addEventListener("change", (e) => update({measure: e.target.value})));
  $("#ablate input").addEventListener("change", (e) => { offMode = e.target.checked; render(); });
  $("#heads-on").addEventListener("click", () => update({off: []}));
  $$(".save button").forEach((b) => b.addEventListener("click", () => saveMap(b)));
  for (const kind of KINDS) {
    $(`#grid-${kind}`).addEventListener("click", (e) => {
      const button = e.target.closest("button[data-layer]");
      if (!button) return;
      const l = Number(button.dataset.layer), h = Number(button.dataset.head);
      if (offMode && h >= 0) toggleHead(kind, l, h);
      else update({layer: l, head: h, auto: false});
    });
    const canvas = $(`#model-${kind} canvas`), tip = $(`#model-${kind} .tip`);
    canvas.addEventListener("mousemove", (e) => {
      const hit = modelHit(e);
      tip.hidden = !hit;
      if (!hit) return;
      const {box, i, j} = hit;
      tip.textContent = `L${box.l + 1} H${box.h + 1} · query ${i}: ${box.m.q.shown[i]} · key ${j}: ${box.m.k.shown[j]} · ` +
        `${(box.m.z[i][j] * 100).toFixed(1)}%`;
    });
    canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
    canvas.addEventListener("click", (e) => {
      const hit = modelHit(e);
      if (hit) update({layer: hit.box.l, head: hit.box.h, auto: false});
    });
  }

  let payload = null;  // as received, for tests
  let lastModel = null;  // the model of the last payload: another model resets layer and head
  let newest = 0;  // the generation of the newest answer drawn (the server numbers a session's requests)
  function setPayload(value) {
    if (value && Number.isInteger(value.gen)) {
      if (value.gen < newest) return;  // the answer to an older request than one already drawn: ignored
      newest = value.gen;
    }
    // Any payload ends the wait: the answer to the last request (the view takes what the server did), an answer
    // to an earlier one, or a new result (a translation, a candidate: the server drops the pending request's
    // answer). In the last two the view keeps the heads the user has off, and asks again if the payload differs.
    const answers = value && Number.isInteger(value.answers) ? value.answers : null;
    const answered = asked !== null && answers === ticket;
    asked = null;
    payload = value;
    data = value && value.kinds ? decode(value) : null;
    state.cell = null;  // the inside panel's numbers belong to the translation before (inside.js marks them stale)
    if (data) {
      if (lastModel !== null && lastModel !== data.model) { state.auto = true; state.off = []; }
      lastModel = data.model;
      if (state.linkedStep) state.linkedStep = false;
      else if (answers === null) state.step = 1;
      if (answered) {
        state.off = data.ablation ? data.ablation.off : [];
        if (state.measure === "norm" && !data.kinds.encoder.norm) state.measure = "weight";
      }
      fillSelectors();
    }
    render();
    share.sync();
    askModel();
    if (data && state.linkedCell && KINDS.includes(state.tab)) {  // a link's cell (share.js): explained now
      const [query, key] = state.linkedCell;
      state.linkedCell = null;
      askCell(state.tab, query, key);
    }
  }

  // "Go to the map" beside the source box (side_panels.build_controls): focus the map on screen, in one Tab
  // instead of a walk through the whole side column
  document.addEventListener("click", (e) => {
    if (!e.target.closest || !e.target.closest("#skip-to-map button")) return;
    const app = Array.from(document.querySelectorAll("button[role=tab]")).find((b) => b.textContent.trim() === "Attention");
    if (!root.offsetWidth && app) app.click();  // another tab of the app is on screen
    const kind = KINDS.includes(state.tab) ? state.tab : null;
    const target = kind ? $(`#focus-${kind} .plot`) : $("#step input");
    requestAnimationFrame(() => { target.focus(); target.scrollIntoView({block: "nearest"}); });
  });

  // presentation mode (body.present) changes sizes: redraw what is visible
  new MutationObserver(() => { for (const id in drawn) delete drawn[id]; render(); })
    .observe(document.body, {attributes: true, attributeFilter: ["class"]});
  // A figure keeps the width of its last draw (Plotly's own resizing is off, above), so when a view's width
  // changes (the window, a projector plugged in, the side column rewrapping, a phone's layout settling after
  // load) every view is drawn again at its new size once the resizing settles; until then the views count as
  // drawing (data-views), so no one reads a half-resized page
  let resizing = null;
  function resized() {
    if (!data) return;
    $(".explorer").dataset.views = "drawing";
    clearTimeout(resizing);
    resizing = setTimeout(() => { for (const id in drawn) delete drawn[id]; render(); }, 100);
  }
  window.addEventListener("resize", resized);
  const widths = new Map();  // the width each view was last seen at: only a change of width redraws
  const viewWidths = new ResizeObserver((entries) => {
    let changed = false;
    for (const e of entries) {
      const was = widths.get(e.target), now = Math.round(e.contentRect.width);
      widths.set(e.target, now);
      if (was > 0 && now > 0 && was !== now) changed = true;  // a tab coming on screen is the observer below
    }
    if (changed) resized();
  });
  $$(".view").forEach((view) => viewWidths.observe(view));
  // back from another tab of the app: draw what was skipped, at the size the views have now
  new ResizeObserver(() => {
    if (pending && root.offsetWidth) { for (const id in drawn) delete drawn[id]; render(); }
  }).observe(root);
  watch("value", () => setPayload(props.value));
  // ---- the shared view (static/share.js): the tree and compare panels and the page URL use this state too
  const refresh = () => render();
  const handle = {state, update, setPayload, refresh, decodeArray, get payload() { return payload; },
    get asked() { return asked; }};
  $(".explorer").__explorer = handle;  // a handle for tests and benchmarks
  shared.explorer = handle;
  setPayload(props.value);
}
