// The attention explorer's views, drawn in the browser from one payload per translation
// (transformer/explorer/maps/payload.py builds it). Every view change (tab, layer, head, mean over heads, row labels,
// hide specials, merge subwords, decoding step, head-summary click) redraws here, without the server,
// and only the views of the tab on screen are drawn.
//
// Started by gr.HTML(js_on_load=browser.js_on_load()), which imports this ES module: `root` is the component,
// `props.value` the payload (null before a translation), `props.view` the initial view state, `watch` calls back
// when the payload changes, `trigger` sends gr.HTML's custom events. The parts: payload.js decodes the payload,
// views.js computes what each view shows (transforms.js: transforms.py's hide_special and merge_subwords), figures.js
// and draw.js draw it, controls.js wires the controls, share.js holds the view state shared with the other panels
// and the page URL. User text reaches the page only as `textContent` or as Plotly labels escaped by Python
// (token_labels.escape_label). tests/test_browser.py compares the arrays drawn here with tests/reference_views.py, and
// with the same views of the model's float32 maps (within 0.005 per cell).
// Two things need the model, so they go back to the server with gr.HTML's `trigger("rerun", {off, measure})`:
// heads switched off (the translation, n-best list and maps without them) and the norm maps ‖α f(x)‖
// (computed only when asked). The answer is a new payload; everything else stays in the browser. Each payload
// carries the generation of the request it answers (one older than a payload drawn is ignored) and, for a
// rerun, the ticket the page sent (`setPayload`).

import {wordAlignment} from "../../static/alignment_lines.js";
import {fillSelectors, syncControls, wireControls} from "./controls.js";
import {drawAlignment, drawHeatmap, drawModel, drawStep, drawSummary, present, setMessage} from "../../static/draw.js";
import {colorLut} from "../../static/figures.js";
import {decodeArray, decodePayload} from "../../static/payload.js";
import {attentionView} from "../../static/share.js";
import {
  KINDS, TITLES, ablationText, agreementText, autoPick, clampLayer, focusView, headLabel, headMap, headOf, isOff,
  kindAxes, mapsOf, modelMaps, offKey, rolloutView, showNorm, stepView, suffix, hiddenText,
} from "../../static/views.js";

const EMPTY = "Translate a sentence to see its attention.";

export function initExplorer(root, props, watch, trigger) {
  // the model pass of gr.HTML's custom event (none where the explorer runs without gradio)
  const rerun = typeof trigger === "function" ? (request) => trigger("rerun", request) : null;

  // ---- the view state: the one place that says what is shown (payload aside)
  // (shared with the other panels and the URL; a restored link may have set it before this view loads)
  const [shared, created] = attentionView();
  const state = shared.state;
  if (created) Object.assign(state, props.view || {});
  state.off = Array.isArray(state.off) ? state.off : [];
  state.measure = state.measure === "norm" ? "norm" : "weight";
  const share = shared.share;
  const drawn = {};  // view id -> key of what it shows now (redraw only on change)
  const $ = (sel) => root.querySelector(sel);
  // what the controls (controls.js) read and call; `data` is the decoded payload
  const ex = {root, state, data: null, offMode: false, cursors: {}, update, render, askCell, toggleHead};

  // Until a layer or head is chosen (state.auto), each kind opens on its own default (views.autoPick). A layer or
  // head set by anyone (a control, a panel, a test) ends the defaults; so do rows chosen on the cross view, where
  // the rows are part of its default.
  let autoRows = null;  // the rows before the cross default set its own, while they are in force
  function chosen(changes) {
    if ("rows" in changes) autoRows = null;  // rows chosen by hand are kept
    const ends = "layer" in changes || "head" in changes || ("rows" in changes && state.tab === "cross");
    return ends && !("auto" in changes) ? {...changes, auto: false} : changes;
  }

  function showAgreement() {
    const note = $("#agreement");
    if (!note) return;
    const text = agreementText(ex.data, state);
    note.textContent = text;
    note.hidden = !text;
  }

  // ---- the views
  function drawFocus(kind, view) {
    if (view.message) { setMessage(root, `focus-${kind}`, view.message); return; }
    if (kind === "cross" && state.align) { alignment(); return; }
    view.measure = showNorm(ex.data, state) ? "norm" : "weight";
    drawHeatmap(root, `focus-${kind}`, view, 1, ex.data.colorscale, (plot) => {  // Plotly adds `on` to the map it drew
      if (plot.removeAllListeners) plot.removeAllListeners("plotly_click");
      plot.on("plotly_click", (e) => cellClicked(kind, e));
    });
  }

  // the cross view as aligners draw an alignment: the read-out on screen, its words whatever the hide and merge
  // switches say (links are between words, specials are never words)
  function alignment() {
    const data = ex.data;
    const arr = mapsOf(data, state, "cross"), [L, H] = arr.shape, layer = clampLayer(state, L), head = headOf(state, H);
    const [q, k] = kindAxes(data, state, "cross");
    const al = wordAlignment(headMap(arr, layer, head), q.info, k.info);
    const title = `${TITLES.cross} · layer ${layer + 1} · ${headLabel(head)} · word alignment${suffix(data)}` +
      (showNorm(data, state) ? " · norm \u2016\u03b1 f(x)\u2016" : "");
    drawAlignment(root, al, title);
  }

  function summary(kind) {
    const L = ex.data.kinds[kind].entropy.values.length;
    const H = L ? ex.data.kinds[kind].entropy.values[0].length : 0;
    drawSummary(root, ex.data, state, kind, clampLayer(state, L || 1), headOf(state, H));
  }

  function model(kind) {
    const grid = modelMaps(ex.data, state, kind);
    if (grid.message) { setMessage(root, `model-${kind}`, grid.message); return; }
    drawModel(root, kind, grid, ex.data.lut, clampLayer(state, grid.L), headOf(state, grid.H));
  }

  function rollout() {
    const view = rolloutView(ex.data, state);
    if (view.message) { setMessage(root, "rollout", view.message); return; }
    drawHeatmap(root, "rollout", view, view.zmax, ex.data.colorscale);
  }

  function step() {
    const data = ex.data;
    const slider = $("#step input");
    const sv = stepView(data, state);
    slider.max = Math.max(sv.n, 2);
    slider.disabled = sv.n < 2;
    state.step = sv.step;
    slider.value = state.step;
    const text = $("#step-text");
    if (sv.message) { text.textContent = ""; setMessage(root, "step-plot", sv.message); return; }
    text.textContent = sv.text;
    drawStep(root, sv);
  }

  // a click on a cell of the focus map: the inside panel (panels/inside/inside.js) shows how that weight is computed
  function cellClicked(kind, e) {
    const point = e && e.points && e.points[0], view = $(`#focus-${kind} .plot`).__view;
    if (!point || !view) return;
    const i = point.y, j = point.x;
    askCell(kind, view.q.index ? view.q.index[i] : null, view.k.index ? view.k.index[j] : null);
  }

  // the inside panel asked for cell (query, key) of the map on screen (token positions, specials counted); a
  // cell of one head's map of single tokens goes into the link (`cell`), with its layer and head
  let cellsAsked = 0;
  function askCell(kind, query, key) {
    const [L, H] = mapsOf(ex.data, state, kind).shape;
    const detail = {kind, layer: clampLayer(state, L), head: headOf(state, H), rows: state.rows,
      merged: Boolean(state.merge), measure: showNorm(ex.data, state) ? "norm" : "weight", rev: ex.data.rev, query, key};
    if (detail.head >= 0 && !detail.merged && Number.isInteger(query) && Number.isInteger(key)) {
      Object.assign(state, {layer: detail.layer, head: detail.head, auto: false, cell: [query, key]});
      share.sync();
    }
    document.dispatchEvent(new CustomEvent("attention-cell", {detail}));
    cellsAsked += 1;
    $(".explorer").dataset.cells = String(cellsAsked);  // each click handled counts (tests wait on it)
  }

  // ---- render: what the active tab shows, redrawn only where its inputs changed
  // The focus view is drawn at once; the rest of the tab waits for the next frame, so the view a
  // person is looking at changes in one Plotly redraw instead of three (a newer render replaces a
  // pending one).
  let secondary = 0;
  function afterPaint(fn) {
    const ticket = ++secondary;
    requestAnimationFrame(() => setTimeout(() => { if (ticket === secondary && ex.data) fn(); }, 0));
  }
  let pending = false;  // a render skipped while the explorer was hidden (another tab of the app on screen)
  function render() {
    const data = ex.data;
    autoRows = autoPick(data, state, autoRows);
    syncControls(ex);
    showAgreement();
    $(".explorer").dataset.ready = data ? `payload-${data.rev}` : "empty";
    $(".explorer").dataset.views = "drawing";  // `views-<rev>` once the tab's views are drawn (tests wait on it)
    if (data && !root.offsetWidth) { pending = true; return; }  // drawn when it shows (ResizeObserver below)
    pending = false;
    if (!data) {
      for (const kind of KINDS) {
        setMessage(root, `focus-${kind}`, EMPTY);
        setMessage(root, `model-${kind}`, EMPTY);
        $(`#grid-${kind}`).replaceChildren();
      }
      setMessage(root, "rollout", EMPTY);
      setMessage(root, "step-plot", EMPTY);
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
      focus[kind] = focusView(data, state, kind);
      masses[kind] = focus[kind].hidden;
    }
    $("#hidden-mass").textContent = hiddenText(masses);
    const caption = $("#caption");
    caption.replaceChildren();
    if (data.source !== undefined) {
      const arrow = document.createElement("span");
      arrow.className = "arrow";
      arrow.textContent = "\u2192";
      caption.append(data.source, arrow, data.translation + suffix(data));
    }
    showAblation();
    // what a kind's maps depend on (the rows' labels: the decoder's and cross-attention's only)
    const common = [data.rev, state.hide, state.merge, present(), showNorm(data, state)].join("|");
    const rows = (kind) => (kind === "encoder" ? common : `${common}|${state.rows}`);
    const pick = [state.layer, state.head].join("|");
    const draw = (id, key, fn) => { if (drawn[id] !== key) { fn(); drawn[id] = key; } };
    if (KINDS.includes(state.tab)) {
      const kind = state.tab;
      draw(`focus-${kind}`, `${rows(kind)}|${pick}|${kind === "cross" && Boolean(state.align)}`,
        () => drawFocus(kind, focus[kind]));
      afterPaint(() => {  // the views below the focus view follow once it is on screen
        draw(`grid-${kind}`, `${ex.data.rev}|${pick}|${offKey(state.off)}|${ex.offMode}`, () => summary(kind));
        draw(`model-${kind}`, `${rows(kind)}|${pick}`, () => model(kind));  // a new width: viewWidths below
        if (kind === "encoder") draw("rollout", common, rollout);
        viewsDrawn();
      });
    } else if (state.tab === "steps") {
      draw("step-plot", `${rows("steps")}|${pick}|${state.step}`, step);
      viewsDrawn();
    }
  }

  function viewsDrawn() {
    $(".explorer").dataset.views = ex.data ? `views-${ex.data.rev}` : "views-empty";
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
    const ab = ex.data && ex.data.ablation;
    const waiting = asked !== null;
    note.hidden = !ab && !waiting;
    note.textContent = note.hidden ? "" : ablationText(ab, waiting);
    note.classList.toggle("waiting", waiting);  // presentation mode shows only the wait (explorer.css)
  }

  // send a request when the payload differs from the view (other heads off, norms wanted but not sent);
  // each payload is asked about once, so an answer the server changed does not ask again. Each request has a
  // ticket the server sends back with its answer (`answers`): any other payload is not its answer
  let asked = null, ticket = 0;
  function askModel() {
    const data = ex.data;
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
    const off = isOff(state, kind, l, h) ? state.off.filter((x) => !(x[0] === kind && x[1] === l && x[2] === h))
      : [...state.off, [kind, l, h]];
    update({off});
  }

  wireControls(ex);

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
    const data = value && value.kinds ? decodePayload(value) : null;
    if (data) data.lut = colorLut(data.colorscale);  // the model view's colours (draw.drawModel)
    ex.data = data;
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
      fillSelectors(ex);
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

  // presentation mode (body.present) changes sizes: redraw what is visible
  new MutationObserver(() => { for (const id in drawn) delete drawn[id]; render(); })
    .observe(document.body, {attributes: true, attributeFilter: ["class"]});
  // A figure keeps the width of its last draw (Plotly's own resizing is off: draw.PLOT_CONFIG), so when a view's
  // width changes (a projector plugged in, the side column rewrapping, a phone's layout settling after load) that
  // view is drawn again at its new size once the resizing settles, and only that view; a new window size
  // redraws every view (each map's height follows the window). Until then the views count as drawing
  // (data-views), so no one reads a half-resized page.
  let resizing = null;
  const stale = new Set();  // the views to draw again at their new size (view ids: the keys of `drawn`)
  function resized(ids) {
    if (!ex.data) return;
    ids.forEach((id) => stale.add(id));
    $(".explorer").dataset.views = "drawing";
    clearTimeout(resizing);
    resizing = setTimeout(() => {
      for (const id of stale) delete drawn[id];
      stale.clear();
      render();
    }, 100);
  }
  window.addEventListener("resize", () => resized(Object.keys(drawn)));
  const widths = new Map();  // the width each view was last seen at on screen: only a change of width redraws
  const viewWidths = new ResizeObserver((entries) => {
    const changed = [];
    for (const e of entries) {
      const was = widths.get(e.target), now = Math.round(e.contentRect.width);
      if (now === 0) continue;  // hidden (another kind's tab): compared with its width when it shows again
      widths.set(e.target, now);
      if (was > 0 && was !== now) changed.push(e.target.id);
    }
    if (changed.length) resized(changed);
  });
  root.querySelectorAll(".view").forEach((view) => viewWidths.observe(view));
  // back from another tab of the app: draw what was skipped, at the size the views have now
  new ResizeObserver(() => {
    if (pending && root.offsetWidth) { for (const id in drawn) delete drawn[id]; render(); }
  }).observe(root);
  watch("value", () => setPayload(props.value));
  // ---- the shared view (share.js): the tree and compare panels and the page URL use this state too
  const refresh = () => render();
  const handle = {state, update, setPayload, refresh, decodeArray, get payload() { return payload; },
    get asked() { return asked; }};
  $(".explorer").__explorer = handle;  // a handle for tests and benchmarks
  shared.explorer = handle;
  setPayload(props.value);
}
