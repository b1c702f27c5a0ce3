// Three ways into the model (gr.HTML components; panel.py beside this file builds their skeletons,
// service.py computes their values):
//   initInsidePanel: how one weight of one head is computed. explorer.js sends a click on a cell of a single
//     head's map as a document event "attention-cell"; this panel asks the server (trigger("cell", ...)) for the
//     numbers of one float32 pass and draws them. Nothing here is recomputed from the rounded payload.
//   initYours: a translation of one's own, scored by the model: tokens coloured by probability, the model's
//     top alternatives on hover.
//   initLearn: the model at each training snapshot; a step seen once is kept here and redrawn without the server.
// Text from users and tokens reach the page only as textContent or as Plotly labels escaped here (`esc`).
// An ES module: the `js_on_load` of panel.py's components imports it (web/page.py's start_module).

import {attentionView, withPlotly} from "../../static/share.js";

const INSIDE_CONFIG = {displaylogo: false, responsive: true, displayModeBar: false};
const SIGNED = [[0, "#2166ac"], [0.5, "#f7f7f7"], [1, "#b2182b"]];  // blue negative, white 0, red positive
const AGREE = [[0, "#762a83"], [0.5, "#f7f7f7"], [1, "#1b7837"]];  // purple: signs differ, green: they agree

function insideTools(root) {
  const $ = (sel) => root.querySelector(sel);
  // Plotly parses a subset of HTML in labels: tokens go in escaped
  const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const big = () => document.body.classList.contains("present");
  const layout = (extra) => Object.assign({font: {size: big() ? 18 : 13}, paper_bgcolor: "white",
    plot_bgcolor: "white", margin: {l: 150, r: 20, t: 30, b: 40}}, extra);
  const fmt = (x, d = 3) => (x === null || x === undefined ? "\u2013" : Number(x).toFixed(d));
  const pct = (p) => `${(100 * p).toFixed(p < 0.001 ? 3 : 1)}%`;
  function react(div, traces, lay) {
    withPlotly((plotly) => plotly.react(div, traces, lay, INSIDE_CONFIG));
  }
  function message(text) {
    const note = $(".message");
    note.textContent = text || "";
    note.hidden = !text;
    const body = $(".inside-body");
    if (body) body.hidden = Boolean(text);
  }
  return {$, esc, layout, fmt, pct, react, message, big};
}

// ------------------------------------------------------------------------------ how this weight is computed

export function initInsidePanel(root, props, watch, trigger) {
  const t = insideTools(root);
  const panel = t.$(".inside");
  const EMPTY = "Choose a single head (Head 1, Head 2, \u2026), then click a cell of its map: this panel shows how " +
    "that weight is computed.";
  let asked = null;  // the click we wait for
  // presentation mode puts the panel in the side column's place, beside the map (explorer.css): nothing to scroll
  // the page to there; "back to the map" closes it there, and the side column comes back
  const beside = () => getComputedStyle(panel).position === "fixed";
  const side = document.querySelector("#sidebar");
  const place = () => panel.style.setProperty("--side-width", `${Math.round(side.getBoundingClientRect().right)}px`);
  if (side) {
    new ResizeObserver(place).observe(side);
    window.addEventListener("resize", place);
    place();
  }
  t.$(".back").addEventListener("click", () => {
    // the map of the tab on screen (the other tabs' maps are hidden), and the keyboard on it
    const view = document.querySelector("#explorer [role=tabpanel]:not([hidden]) .focus-row > .view");
    const wasBeside = beside();
    if (wasBeside) panel.classList.add("closed");
    if (!view) return;
    if (!wasBeside) view.scrollIntoView({behavior: "smooth", block: "start"});
    const plot = view.querySelector(".plot");
    if (plot) plot.focus({preventScroll: true});
  });

  document.addEventListener("attention-cell", (e) => {
    const cell = e.detail || {};
    asked = cell;
    panel.classList.remove("closed");
    if (cell.head < 0) {
      t.message("This map is the mean over heads. Choose a single head, then click a cell.");
      return;
    }
    panel.dataset.ready = "busy";
    t.$(".busy").hidden = false;
    trigger("cell", cell);
  });
  // a new translation on screen: the panel's numbers belong to the old one
  const explorerRoot = document.querySelector("#explorer .explorer");
  if (explorerRoot) {
    new MutationObserver(() => {
      const v = props.value;
      if (v && v.rev !== undefined && explorerRoot.dataset.ready !== `payload-${v.rev}`) {
        t.message(EMPTY); panel.dataset.ready = "stale";
      }
    }).observe(explorerRoot, {attributes: true, attributeFilter: ["data-ready"]});
  }

  function strips(v) {
    const dims = v.q.map((_, d) => d);
    const hover = "dimension %{x}: %{z:.4f}<extra>%{y}</extra>";
    const limit = (a) => Math.max(1e-6, ...a.map(Math.abs));
    const qk = Math.max(limit(v.q), limit(v.k));
    const rows = [`q  query ${t.esc(v.query_token)}`, `k  key ${t.esc(v.key_token)}`];
    const top = {type: "heatmap", z: [v.q, v.k], x: dims, y: rows, zmid: 0, zmin: -qk, zmax: qk, colorscale: SIGNED, xgap: 1, ygap: 3, hovertemplate: hover, colorbar: {y: 0.78, len: 0.44, thickness: 12}};
    const p = limit(v.products);
    const prod = {type: "heatmap", z: [v.products], x: dims, y: ["q \u00d7 k"], zmid: 0, zmin: -p, zmax: p,
      colorscale: AGREE, xgap: 1, xaxis: "x2", yaxis: "y2", hovertemplate: hover,
      colorbar: {y: 0.2, len: 0.4, thickness: 12}};
    // each strip's colour bar as tall as its strip, so that its three numbers stay apart
    t.react(t.$("#inside-qk"), [top, prod], t.layout({height: t.big() ? 320 : 240,
      xaxis: {domain: [0, 1], anchor: "y", showticklabels: false},
      yaxis: {domain: [0.56, 1], automargin: true, autorange: "reversed"},
      xaxis2: {domain: [0, 1], anchor: "y2", title: {text: `dimension (0 to ${v.d_k - 1})`, standoff: 8},
        automargin: true},
      yaxis2: {domain: [0, 0.4], automargin: true}}));
  }

  function bars(div, v, y, what) {
    const color = v.keys.map((_, j) => (!v.allowed[j] ? "#d1d5db" : j === v.key ? "#d62728" : "#1f77b4"));
    // presentation mode labels the clicked key's bar only, in type a room reads (Plotly shrank every label of the
    // narrow bars to 10 px); hover gives the others
    const label = (j) => (!v.allowed[j] ? "masked" : what === "weight" ? t.pct(y[j]) : t.fmt(y[j], 2));
    const text = v.keys.map((_, j) => (t.big() && j !== v.key ? "" : label(j)));
    const trace = {type: "bar", x: v.keys.map((_, j) => j), y, marker: {color,
      pattern: {shape: v.allowed.map((a) => (a ? "" : "/"))}}, text, textposition: "outside", cliponaxis: false,
      constraintext: t.big() ? "none" : "both",
      customdata: v.keys.map((k, j) => [t.esc(k), v.allowed[j] ? "" : " (masked: the model may not look here)"]),
      hovertemplate: `key %{x}: %{customdata[0]}<br>${what}: %{y:.4f}%{customdata[1]}<extra></extra>`};
    const lay = t.layout({height: t.big() ? 320 : 260, margin: {l: 60, r: 20, t: 20, b: 80}, bargap: 0.25,
      xaxis: {tickmode: "array", tickvals: v.keys.map((_, j) => j), ticktext: v.keys.map(t.esc), tickangle: -45,
        automargin: true},
      yaxis: {title: {text: what, standoff: 8}, range: what === "weight" ? [0, 1.15] : undefined, zeroline: true,
        automargin: true}});
    t.react(div, [trace], lay);
    div.__values = y;
  }

  function values(v) {
    const n = v.keys.length;
    const rows = v.keys.map((k, j) => `${t.esc(k)} \u00d7 ${t.pct(v.weights[j])}`).concat(["= output (the sum)"]);
    const z = v.weighted.concat([v.output]);
    const m = Math.max(1e-6, ...z.flat().map(Math.abs));
    const trace = {type: "heatmap", z, y: rows.map((_, i) => i), zmid: 0, zmin: -m, zmax: m, colorscale: SIGNED, xgap: 1, ygap: 1, customdata: rows.map((r) => v.output.map(() => r)),
      hovertemplate: "%{customdata}<br>dimension %{x}: %{z:.4f}<extra></extra>", colorbar: {thickness: 12}};
    t.react(t.$("#inside-values"), [trace], t.layout({height: Math.min(620, 120 + 22 * (n + 1)),
      xaxis: {title: {text: "dimension", standoff: 8}, automargin: true}, shapes: [{type: "line", xref: "paper", x0: 0, x1: 1, y0: n - 0.5,
        y1: n - 0.5, line: {color: "#111", width: 2}}],
      yaxis: {tickmode: "array", tickvals: rows.map((_, i) => i), ticktext: rows, autorange: "reversed",
        automargin: true}}));
  }

  function text(id, s) { t.$(id).textContent = s; }

  function draw(v) {
    const head = `layer ${v.layer + 1}, head ${v.head + 1}, ${v.kind_name}`;
    const predicts = v.query_predicts !== null ? ` (it reads \u201c${v.query_input}\u201d and predicts ` +
      `\u201c${v.query_predicts}\u201d)` : "";
    text("#inside-title", `How much does \u201c${v.query_token}\u201d (row ${v.query + 1})${predicts} look at ` +
      `\u201c${v.key_token}\u201d (column ${v.key + 1})? ${head[0].toUpperCase()}${head.slice(1)}: ` +
      `weight ${t.pct(v.weight)}.`);
    const off = t.$("#inside-off");
    off.hidden = v.head_on;
    off.textContent = v.head_on ? "" : "This head is switched off: the model used none of what it computes (its map " +
      "is all zero). The numbers below are what it would compute if it were on.";
    t.$("#inside-norm-note").hidden = !v.measure_note;
    strips(v);
    text("#inside-score", `Add up the ${v.d_k} products: ${t.fmt(v.dot, 4)}. Divide by \u221a${v.d_k} = ` +
      `${t.fmt(v.sqrt_d_k, 3)} (so that longer vectors do not give bigger scores): score = ${t.fmt(v.score, 4)}.`);
    bars(t.$("#inside-scores"), v, v.scores, "score");
    const masked = v.allowed.filter((a) => !a).length;
    text("#inside-mask", masked ? `${masked} key${masked === 1 ? " is" : "s are"} masked (grey): in decoder ` +
      "self-attention a position may not look at the words after it, which it has not written yet." :
      "No key is masked in this row: every token may be looked at.");
    bars(t.$("#inside-weights"), v, v.weights, "weight");
    const total = v.weights.reduce((s, x) => s + x, 0);
    text("#inside-softmax", `softmax: weight_j = e^(score_j) \u00f7 (sum of e^(score) over the keys that are not ` +
      `masked). The weights add up to ${t.fmt(total, 4)}; the clicked one (red) is ${t.fmt(v.weight, 6)}, the same ` +
      "number as in the map.");
    values(v);
    const order = v.weights.map((w, j) => [w * v.value_norms[j], j]).sort((a, b) => b[0] - a[0]).slice(0, 3);
    text("#inside-output", `What this head passes on from \u201c${v.query_token}\u201d: the value vectors v of the ` +
      `keys, each times its weight, added up. Length of the sum (norm): ${t.fmt(v.output_norm, 4)}. Biggest ` +
      `shares: ${order.map(([s, j]) => `\u201c${v.keys[j]}\u201d (${t.fmt(s, 3)})`).join(", ")}.`);
  }

  function render() {
    const v = props.value;
    t.$(".busy").hidden = true;
    if (!v) { t.message(EMPTY); panel.dataset.ready = "empty"; return; }
    if (v.message) { t.message(v.message); panel.dataset.ready = "message"; return; }
    t.message(null);
    draw(v);
    if (asked && asked.query === v.query && asked.key === v.key) {  // the answer to a click: bring it on screen
      asked = null;
      if (beside()) panel.scrollTop = 0;
      else panel.scrollIntoView({behavior: "smooth", block: "start"});
    }
    panel.__value = v;
    panel.dataset.ready = `cell-${v.kind}-${v.layer}-${v.head}-${v.query}-${v.key}`;
  }
  watch("value", render);
  render();
}

// ------------------------------------------------------------------------------ your translation

export function initYours(root, props, watch) {
  const t = insideTools(root);
  const panel = t.$(".inside");
  const tip = t.$(".yours-tip");
  // probability -> colour: red (the model found it unlikely) through yellow to green (what it expected)
  const colour = (p) => `hsl(${Math.round(120 * Math.max(0, 1 + Math.log10(Math.max(p, 1e-4)) / 4))}, 75%, 82%)`;

  function chip(tok, i) {
    const span = document.createElement("span");
    span.className = "yours-token";
    span.dataset.index = i;
    span.textContent = tok.text;
    span.style.background = colour(tok.p);
    span.title = `${t.pct(tok.p)} (log-probability ${t.fmt(tok.log_p, 2)})`;
    span.addEventListener("mouseenter", () => showTip(span, tok));
    span.addEventListener("mouseleave", () => { tip.hidden = true; });
    return span;
  }

  function showTip(span, tok) {
    const lines = [`\u201c${tok.text}\u201d: ${t.pct(tok.p)} \u00b7 log-probability ${t.fmt(tok.log_p, 2)}`,
      "The model's top choices here:"].concat(tok.top.map(([w, p]) => `  ${w}  ${t.pct(p)}`));
    tip.textContent = lines.join("\n");
    tip.hidden = false;
    tip.style.left = `${span.offsetLeft}px`;
    tip.style.top = `${span.offsetTop + span.offsetHeight + 4}px`;
  }

  function render() {
    const v = props.value;
    tip.hidden = true;
    if (!v) {
      t.message("Type a German translation above (or start from the model's) and press Score: the model says " +
        "how likely it finds each word, and every map shows the attention for your translation.");
      panel.dataset.ready = "empty";
      return;
    }
    t.message(null);
    t.$(".yours-tokens").replaceChildren(...v.tokens.map(chip));
    const own = v.own ? ` The model's own translation \u201c${v.own.text}\u201d scores ${t.fmt(v.own.log_prob, 2)} ` +
      `the same way (${v.own.log_prob >= v.log_prob ? "the model prefers its own" : "the model prefers yours"}).` : "";
    t.$(".yours-total").textContent = `How likely the model finds your translation: log-probability ` +
      `${t.fmt(v.log_prob, 2)} in total (the sum over its ${v.n_tokens} tokens; 0 would be certain), ` +
      `${t.fmt(v.mean_log_prob, 2)} per token; ${v.n_top1} of ${v.n_tokens} tokens are the model's first choice.` + own;
    t.$(".yours-off").hidden = !v.heads_off;
    attentionView()[0].share.sync();  // the link carries the translation scored (a restored link's too)
    panel.__value = v;
    panel.dataset.ready = `scored-${v.tokens.length}-${t.fmt(v.log_prob, 4)}`;
  }
  // Score (button or Enter): the encoder's maps do not depend on the German, so its view would show no change;
  // the maps go to cross-attention, where one's own translation is read against the source
  const toCross = () => {
    const explorer = attentionView()[0].explorer;
    if (explorer && explorer.state.tab === "encoder") explorer.update({tab: "cross"});
  };
  document.addEventListener("click", (e) => { if (e.target.closest && e.target.closest("#yours-score")) toCross(); },
    true);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && e.target.closest && e.target.closest("#yours")) toCross();
  }, true);
  watch("value", render);
  render();
}

// ------------------------------------------------------------------------------ watch it learn

export function initLearn(root, props, watch, trigger) {
  const t = insideTools(root);
  const panel = t.$(".inside");
  const slider = t.$("#learn-step input"), kindSel = t.$("#learn-kind select");
  const layerSel = t.$("#learn-layer select"), headSel = t.$("#learn-head select");
  const cache = new Map();  // model|text|step -> the server's value: a step seen once is drawn from here
  const requested = new Set();
  let index = null, shown = null, requests = 0;
  const KIND_NAMES = {cross: "Cross-attention", encoder: "Encoder self-attention", decoder: "Decoder self-attention"};
  const sourceText = () => {
    const el = document.querySelector("#source textarea, #source input");
    return el && el.value.trim() ? el.value : "";
  };
  const keyOf = (step, text) => `${index.model}|${text}|${step}`;

  function fill(sel, items, value) {
    const keep = sel.value !== "" ? sel.value : String(value);
    sel.replaceChildren(...items.map(([label, v]) => {
      const o = document.createElement("option");
      o.value = String(v);
      o.textContent = label;
      return o;
    }));
    sel.value = items.some(([, v]) => String(v) === keep) ? keep : String(value);
  }

  function show(step) {
    if (!index) return;
    const text = sourceText();
    const value = cache.get(keyOf(step, text)) || (text ? null : cache.get(keyOf(step, "")));
    t.$("#learn-step-text").textContent = `step ${step.toLocaleString("en")} ` +
      `(${index.steps.indexOf(step) + 1} of ${index.steps.length})`;
    const key = keyOf(step, text);
    if (value) { draw(value, key); return; }
    panel.dataset.ready = "busy";
    t.$(".busy").hidden = false;
    if (!requested.has(key)) { requested.add(key); requests += 1; trigger("learn", {step, text}); }
  }

  function curve(v) {
    const h = v.history.filter((r) => r.score !== null && r.score !== undefined);
    const line = {type: "scatter", mode: "lines+markers", x: h.map((r) => r.step), y: h.map((r) => r.score),
      line: {color: "#1f77b4"}, hovertemplate: `step %{x}: ${v.metric_name} %{y:.2f}<extra></extra>`};
    const now = {type: "scatter", mode: "markers", x: [v.step], y: [v.score], marker: {size: 14, color: "#d62728"},
      hoverinfo: "skip"};
    t.react(t.$("#learn-curve"), [line, now], t.layout({height: 220, showlegend: false,
      margin: {l: 60, r: 20, t: 20, b: 45}, xaxis: {type: "log", title: {text: "training step", standoff: 8},
        automargin: true}, yaxis: {title: {text: v.metric_name || "", standoff: 8}, automargin: true}}));
  }

  function map(v) {
    const kind = kindSel.value || "cross";
    const maps = v.maps[kind];
    const L = maps.length, H = L ? maps[0].length : 0;
    fill(layerSel, Array.from({length: L}, (_, i) => [`Layer ${i + 1}`, i]), L - 1);
    fill(headSel, [["mean over heads", -1], ...Array.from({length: H}, (_, h) => [`Head ${h + 1}`, h])], -1);
    const layer = Number(layerSel.value), head = Number(headSel.value);
    const grid = head >= 0 ? maps[layer][head] : maps[layer][0].map((row, i) => row.map((_, j) =>
      maps[layer].reduce((s, m) => s + m[i][j], 0) / H));
    const q = kind === "encoder" ? v.src : v.tgt_out, k = kind === "cross" || kind === "encoder" ? v.src : v.tgt_in;
    const trace = {type: "heatmap", z: grid, x: k.map((_, j) => j), y: q.map((_, i) => i), zmin: 0, zmax: 1,
      colorscale: v.colorscale, customdata: grid.map((row, i) => row.map((_, j) => [t.esc(q[i]), t.esc(k[j])])),
      hovertemplate: "query %{customdata[0]}<br>key %{customdata[1]}<br>weight %{z:.1%}<extra></extra>"};
    const axis = (labels, extra) => Object.assign({tickmode: "array", tickvals: labels.map((_, i) => i),
      ticktext: labels.map(t.esc), automargin: true}, extra);
    const plot = t.$("#learn-map");
    t.react(plot, [trace], t.layout({height: Math.min(700, Math.max(360, 200 + 18 * q.length)),
      // the title at the top and the slanted column labels under it: the top margin holds both, one above the
      // other (their own automargins do not add up), so the labels never run over the title
      title: {text: `${KIND_NAMES[kind]} \u00b7 layer ${layer + 1} \u00b7 ${head < 0 ? "mean over heads" :
        `head ${head + 1}`} \u00b7 step ${v.step}`, yref: "container", y: 1, yanchor: "top", pad: {t: 8}},
      margin: {l: 110, r: 20, b: 20, t: 60 + Math.ceil(0.87 * 0.65 * (t.big() ? 18 : 13) *
        Math.max(3, ...k.map((x) => String(x).length)))},
      xaxis: axis(k, {side: "top", tickangle: -60, showgrid: false, zeroline: false}),
      yaxis: axis(q, {autorange: "reversed", scaleanchor: "x", showgrid: false, zeroline: false})}));
    plot.__grid = grid;
  }

  function draw(v, key) {
    shown = v;
    t.$(".busy").hidden = true;
    t.$("#learn-source").textContent = v.text;
    t.$("#learn-translation").textContent = v.translation || "(an empty translation)";
    const score = v.score === null ? "" : `${v.metric_name} at this step: ${t.fmt(v.score, 2)}`;
    t.$("#learn-score").textContent = `${score}${score ? " \u00b7 " : ""}epoch ${t.fmt(v.epoch, 2)} \u00b7 ` +
      `log-probability of this translation ${t.fmt(v.log_prob, 2)}`;
    map(v);
    curve(v);
    panel.dataset.ready = `step-${v.step}`;
    panel.dataset.shown = key;
  }

  function setIndex(value) {
    if (!value || !value.steps || !value.steps.length) {
      index = null;
      t.message("This model ships no training snapshots.");
      panel.dataset.ready = "none";
      return;
    }
    if (!index || index.model !== value.model) {
      cache.clear(); requested.clear();
      slider.max = String(value.steps.length - 1);
      slider.value = String(value.steps.length - 1);
    }
    index = value;
    t.message(null);
  }

  function receive() {
    const v = props.value;
    setIndex(v);
    if (!index) return;
    if (v.message) { t.$(".busy").hidden = true; t.$("#learn-error").textContent = v.message; return; }
    t.$("#learn-error").textContent = "";
    if (v.step !== undefined) {
      const key = keyOf(v.step, sourceText());
      cache.set(keyOf(v.step, v.text), v);
      if (v.text === sourceText() || !sourceText()) cache.set(key, v);
      if (index.steps[Number(slider.value)] === v.step && cache.get(key) === v) draw(v, key);
    } else if (root.offsetWidth) {
      show(index.steps[Number(slider.value)]);
    }
  }

  slider.addEventListener("input", () => show(index.steps[Number(slider.value)]));
  kindSel.addEventListener("change", () => { layerSel.value = ""; if (shown) map(shown); });
  layerSel.addEventListener("change", () => { if (shown) map(shown); });
  headSel.addEventListener("change", () => { if (shown) map(shown); });
  // the tab comes on screen (or the sentence changed meanwhile): show the step under the slider
  new ResizeObserver(() => {
    if (!index || !root.offsetWidth) return;
    const step = index.steps[Number(slider.value)];
    if (!shown || panel.dataset.shown !== keyOf(step, sourceText())) show(step);
  }).observe(root);
  panel.__learn = {cache, show, get index() { return index; }, get requests() { return requests; }};
  watch("value", receive);
  receive();
}
