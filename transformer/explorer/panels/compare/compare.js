// The compare panel (a gr.HTML component; panel.py builds its skeleton): two translations' maps and their
// difference in one row, fitted to the window and their labels, sent by compare_view.py as Plotly figures;
// the user's choices go back with trigger("pick", {...}). Kind, layer and head are the explorer's shared state.

import {LABEL_MIN} from "../../static/figures.js";
import {PANEL_CONFIG, panelTools} from "../../static/panel_tools.js";
import {attentionView, fitToWindow, withPlotly} from "../../static/share.js";

// Column labels of the compare maps are written at -60 degrees: two of them stand a column's width times this apart
const SLANT = Math.sin(Math.PI / 3);

// What a compare figure needs once Plotly has drawn it (`div._fullLayout`), as relayout's changes, or null: each
// map's tick labels no larger than its rows and columns leave room for (down to LABEL_MIN px, then thinned out),
// and between two maps
// room for the right one's row labels (Plotly puts them in the gap, over the left map when it is narrow)
function fitLabels(div) {
  const full = div._fullLayout, changes = {};
  if (!full) return null;
  const maps = ["", "2"].filter((n) => full[`xaxis${n}`] && full[`yaxis${n}`]);
  for (const n of maps) {
    const x = full[`xaxis${n}`], y = full[`yaxis${n}`];
    const room = {[`yaxis${n}`]: y._length / Math.max((y.tickvals || []).length, 1),
      [`xaxis${n}`]: SLANT * x._length / Math.max((x.tickvals || []).length, 1)};
    for (const [axis, px] of Object.entries(room)) {
      if (px >= full[axis].tickfont.size) continue;
      changes[`${axis}.tickfont.size`] = Math.max(LABEL_MIN, Math.floor(px));
      // rows or columns narrower than the smallest label: every step-th label is written (hover names them all)
      const step = Math.ceil(LABEL_MIN / Math.max(px, 0.5));
      if (step > 1) changes[`${axis}.ticktext`] = (full[axis].ticktext || []).map((l, i) => (i % step ? "" : l));
    }
  }
  if (maps.length === 2) {
    const size = full.yaxis2.tickfont.size, scale = (changes["yaxis2.tickfont.size"] || size) / size;
    const widths = [...div.querySelectorAll(".y2tick text")].map((t) => t.getBoundingClientRect().width * scale);
    const gap = (Math.max(0, ...widths) + 14) / full._size.w;
    if (full.xaxis2.domain[0] - full.xaxis.domain[1] < gap) {
      const half = Math.max(0.3, (1 - gap) / 2);
      Object.assign(changes, {"xaxis.domain": [0, half], "xaxis2.domain": [1 - half, 1],
        "annotations[0].x": half / 2, "annotations[1].x": 1 - half / 2});  // each map's name under its middle
    }
  }
  return Object.keys(changes).length ? changes : null;
}

// A compare figure (one JSON text) into `div`, `height` px tall, then fitted (fitLabels); data-drawn says the
// value `rev` is on screen once it is (tests wait on it)
function drawFitted(div, figure, height, rev) {
  const fig = JSON.parse(figure);
  const layout = Object.assign({}, fig.layout, {height});
  // presentation mode: the figure's own text (titles, colour-bar numbers) at the room's 16 px
  if (document.body.classList.contains("present")) layout.font = Object.assign({}, layout.font, {size: 16});
  const draw = (div.__draw || 0) + 1;
  div.__draw = draw;
  div.dataset.drawn = "";
  withPlotly((plotly) => plotly.react(div, fig.data, layout, PANEL_CONFIG).then(() => {
    const changes = div.__draw === draw ? fitLabels(div) : null;
    return changes ? plotly.relayout(div, changes) : null;
  }).then(() => { if (div.__draw === draw) div.dataset.drawn = String(rev); }));
}

// the height a compare figure needs: its margins and 6 px a row (every second row label written at LABEL_MIN,
// fitLabels), so that a long sentence's maps stay whole on a 720 px screen
function leastHeight(figure) {
  const fig = JSON.parse(figure), margin = fig.layout.margin || {};
  const rows = Math.max(1, ...fig.data.map((t) => (t.z || []).length));
  return (margin.t || 0) + (margin.b || 0) + 6 * rows;
}

export function initComparePanel(root, props, watch, trigger) {
  const t = panelTools(root);
  const panel = t.$(".panel"), pair = t.$("#compare-pair"), diff = t.$("#compare-diff");
  const kindSel = t.$("#compare-kind select"), layerSel = t.$("#compare-layer select"), headSel = t.$("#compare-head select");
  const KIND_NAMES = [["Encoder self-attention", "encoder"], ["Decoder self-attention", "decoder"], ["Cross-attention", "cross"]];
  let value = null;

  function pick() {
    if (!value) return;
    panel.dataset.ready = "busy";
    const st = t.shared();
    trigger("pick", {kind: kindSel.value, layer: Number(layerSel.value), head: Number(headSel.value), rows: st.rows});
  }

  function render() {
    value = props.value && props.value.pair ? props.value : null;
    if (!value) {
      t.message("Type a second sentence and press Compare, or press Greedy vs beam.");
      panel.dataset.ready = "empty";
      return;
    }
    t.message(null);
    for (const [i, side] of [[0, "left"], [1, "right"]]) {
      t.$(`#compare-${side} .label`).textContent = value.mode === "methods" ? value.labels[i] : `Sentence ${i + 1}`;
      t.$(`#compare-${side} .source`).textContent = value.sources[i];
      t.$(`#compare-${side} .output`).textContent = value.translations[i];
    }
    // greedy against beam reads one source: its encoder maps are the same on both sides (the server opens cross)
    t.fill(kindSel, value.mode === "methods" ? KIND_NAMES.filter(([, k]) => k !== "encoder") : KIND_NAMES, value.kind);
    t.layerHead(layerSel, headSel, value.n_layers, value.n_heads, value.layer, value.head);
    panel.dataset.mode = value.mode;  // greedy against beam: one source, not shown twice (explorer.css)
    const note = t.$("#compare-note");
    note.textContent = value.note || "";
    note.hidden = !value.note;
    diff.hidden = Boolean(value.note);  // no difference map: the note says why, and the pair takes the row
    drawFigures();
    pair.__value = value;  // for tests: what is drawn
    const share = attentionView()[0].share;  // the link follows: two sentences, or greedy vs beam
    share.compareMode = value.mode;
    share.sync();
    panel.dataset.ready = `compare-${value.rev}`;
  }

  // both maps and their difference side by side (explorer.css), as tall as the screen below their top allows,
  // never less than their rows need (figures come as one JSON text each: figures.figure_json)
  function drawFigures() {
    if (!value || !pair.offsetWidth) return;  // drawn when the panel shows (the observer below)
    width = Math.round(row.getBoundingClientRect().width);
    const figures = value.note ? [value.pair] : [value.pair, value.difference];
    const most = JSON.parse(value.pair).layout.height || 460;
    const need = Math.min(most, Math.max(...figures.map(leastHeight)));
    const height = fitToWindow(pair, most, need);
    // a sentence too long for the screen below the translations: the maps stay whole, and the page says so
    const fits = !(window.innerWidth > 760 && height > fitToWindow(pair, most, 0));
    const over = t.$("#compare-fit");
    over.hidden = fits;
    over.textContent = fits ? "" : "This sentence is too long for the maps to fit this screen at a readable size: " +
      "scroll down for the rest of them.";
    drawFitted(pair, value.pair, height, value.rev);
    if (!value.note) drawFitted(diff, value.difference, height, value.rev);
  }
  // a figure keeps the size of its draw: a new window size, a new width (the tab shown, the side column
  // rewrapping) or presentation mode draws both again once the resizing settles
  const row = t.$(".compare-figures");
  let resizing = null, width = 0;
  function resized() {
    if (!value) return;
    pair.dataset.drawn = diff.dataset.drawn = "";
    clearTimeout(resizing);
    resizing = setTimeout(drawFigures, 100);
  }
  window.addEventListener("resize", resized);
  new MutationObserver(resized).observe(document.body, {attributes: true, attributeFilter: ["class"]});
  new ResizeObserver(([entry]) => {
    const now = Math.round(entry.contentRect.width);
    if (now !== width) { width = now; resized(); }
  }).observe(row);

  kindSel.addEventListener("change", () => {
    const st = t.shared();
    // the attention tab shows the same kind (its step view stays if it was on)
    if (st.tab !== "steps") t.setShared({tab: kindSel.value});
    pick();
  });
  layerSel.addEventListener("change", () => { t.setShared({layer: Number(layerSel.value)}); pick(); });
  headSel.addEventListener("change", () => { t.setShared({head: Number(headSel.value)}); pick(); });
  watch("value", render);
  render();
}
