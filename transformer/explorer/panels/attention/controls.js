// The explorer's controls: the selectors, toggles and tabs kept in step with the view state, and every input
// wired to a change of it (mouse and keyboard). `ex` is the explorer (explorer.js): its element `root`, the view
// `state`, the decoded payload `data`, `offMode` (clicks in the head summary switch heads off), the keyboard's
// cells `cursors`, and what a control calls: `update(changes)`, `render()`, `askCell(kind, query, key)`,
// `toggleHead(kind, layer, head)`.

import {drawCursor, modelHit, saveMap} from "../../static/draw.js";
import {KINDS, MEAN, mapsOf} from "../../static/views.js";

const $ = (ex, sel) => ex.root.querySelector(sel);
const $$ = (ex, sel) => Array.from(ex.root.querySelectorAll(sel));

// the layers of the kind on screen (cross-attention and decoder self-attention can have fewer than the encoder)
function layersOnScreen(ex) {
  const {state, data} = ex;
  const kind = KINDS.includes(state.tab) ? state.tab : state.tab === "steps" ? "cross" : null;
  const L = kind ? mapsOf(data, state, kind).shape[0] : data.n_layers;
  return L > 0 ? L : data.n_layers;
}

function fillLayers(ex) {
  const layer = $(ex, "#layer select"), L = layersOnScreen(ex);
  if (layer.options.length === L) return;
  layer.replaceChildren(...Array.from({length: L}, (_, i) => {
    const o = document.createElement("option");
    o.value = i;
    o.textContent = `Layer ${i + 1}`;
    return o;
  }));
}

// a new payload: the layer and head selectors for its model (a layer or head it lacks goes back to a default)
export function fillSelectors(ex) {
  const {state, data} = ex;
  const layer = $(ex, "#layer select"), head = $(ex, "#head select");
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
  fillLayers(ex);
  options(head, [["mean over heads", MEAN], ...Array.from({length: H}, (_, h) => [`Head ${h + 1}`, h])]);
  syncControls(ex);
}

// every control shows the state (the tab on screen, its panel alone shown)
export function syncControls(ex) {
  const {state, data} = ex;
  if (data) {
    fillLayers(ex);  // the picker shows the layer drawn: the chosen one, or the stack's last
    $(ex, "#layer select").value = String(Math.min(state.layer, layersOnScreen(ex) - 1));
    $(ex, "#head select").value = String(state.head);
  }
  $$(ex, "#rows input").forEach((r) => { r.checked = r.value === state.rows; });
  $(ex, "#hide input").checked = state.hide;
  $(ex, "#merge input").checked = state.merge;
  $(ex, "#align input").checked = Boolean(state.align);
  $$(ex, "#measure input").forEach((r) => { r.checked = r.value === state.measure; });
  $(ex, "#ablate input").checked = ex.offMode;
  $(ex, "#heads-on").disabled = !state.off.length;
  $$(ex, "[role=tab]").forEach((tab) => {
    const on = tab.dataset.tab === state.tab;
    tab.setAttribute("aria-selected", on ? "true" : "false");
    tab.tabIndex = on ? 0 : -1;
  });
  $$(ex, "[role=tabpanel]").forEach((panel) => { panel.hidden = panel.dataset.tab !== state.tab; });
}

// The focus map from the keyboard (a map cell was reachable only by mouse or by a link's cell): Tab (or the
// "Go to the map" button beside the source box) focuses it, the arrow keys move a cursor over its cells, said
// aloud through a live region, and Enter or Space explains the cell as a click does.
function wireFocusKeyboard(ex) {
  for (const kind of KINDS) {
    const view = $(ex, `#focus-${kind}`), plot = view.querySelector(".plot");
    const live = view.appendChild(document.createElement("p"));
    live.className = "cell-now sr-only";
    live.setAttribute("aria-live", "polite");
    plot.tabIndex = 0;
    plot.addEventListener("focus", () => drawCursor(ex.root, kind, ex.cursors));
    plot.addEventListener("blur", () => {
      if (window.Plotly && plot.dataset.drawn && (plot.layout || {}).shapes) window.Plotly.relayout(plot, {shapes: []});
    });
    plot.addEventListener("keydown", (e) => {
      const moves = {ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1]};
      const v = plot.__view;
      if (!v || !ex.data) return;
      if (moves[e.key]) {
        const [i, j] = ex.cursors[kind] || [0, 0];
        ex.cursors[kind] = [i + moves[e.key][0], j + moves[e.key][1]];
        drawCursor(ex.root, kind, ex.cursors);
      } else if (e.key === "Enter" || e.key === " ") {
        const [i, j] = ex.cursors[kind] || [0, 0];
        ex.askCell(kind, v.q.index ? v.q.index[i] : null, v.k.index ? v.k.index[j] : null);
      } else {
        return;
      }
      e.preventDefault();
    });
  }
}

// "Go to the map" beside the source box (panels/sidebar/panel.py, build_controls): focus the map on screen, in one Tab
// instead of a walk through the whole side column
function wireSkipToMap(ex) {
  document.addEventListener("click", (e) => {
    if (!e.target.closest || !e.target.closest("#skip-to-map button")) return;
    const app = Array.from(document.querySelectorAll("button[role=tab]")).find((b) => b.textContent.trim() === "Attention");
    if (!ex.root.offsetWidth && app) app.click();  // another tab of the app is on screen
    const kind = KINDS.includes(ex.state.tab) ? ex.state.tab : null;
    const target = kind ? $(ex, `#focus-${kind} .plot`) : $(ex, "#step input");
    requestAnimationFrame(() => { target.focus(); target.scrollIntoView({block: "nearest"}); });
  });
}

// gradio's dropdowns (the model, the candidate shown) open their list when focused, and a key pressed in one is
// handled a moment later, opening the list again: so Tab out of the field left the list open over what is below
// it. A list whose field no longer has focus is closed, as Escape closes it (its value stays; nothing is sent)
function closeListsOnBlur() {
  if (document.__closesLists) return;
  document.__closesLists = true;
  const combobox = (el) => el instanceof HTMLInputElement && el.getAttribute("role") === "combobox";
  const closeIfLeft = (input) => {
    if (input.getAttribute("aria-expanded") !== "true" || document.activeElement === input) return;
    input.dispatchEvent(new KeyboardEvent("keydown", {key: "Escape", bubbles: true}));
  };
  // after the key that moved focus away has been handled
  document.addEventListener("focusout", (e) => { if (combobox(e.target)) setTimeout(() => closeIfLeft(e.target)); });
  new MutationObserver((changes) => changes.forEach((c) => { if (combobox(c.target)) closeIfLeft(c.target); }))
    .observe(document.body, {subtree: true, attributes: true, attributeFilter: ["aria-expanded"]});
}

// every control of the explorer, wired once when it starts
export function wireControls(ex) {
  wireFocusKeyboard(ex);
  closeListsOnBlur();
  const {state, update} = ex;
  $(ex, "#layer select").addEventListener("change", (e) => update({layer: Number(e.target.value), auto: false}));
  $(ex, "#head select").addEventListener("change", (e) => update({head: Number(e.target.value), auto: false}));
  $$(ex, "#rows input").forEach((r) => r.addEventListener("change", (e) => update({rows: e.target.value})));
  $(ex, "#hide input").addEventListener("change", (e) => update({hide: e.target.checked}));
  $(ex, "#merge input").addEventListener("change", (e) => update({merge: e.target.checked}));
  $(ex, "#align input").addEventListener("change", (e) => update({align: e.target.checked}));
  $(ex, "#step input").addEventListener("input", (e) => update({step: Number(e.target.value)}));
  $$(ex, "[role=tab]").forEach((tab) => tab.addEventListener("click", () => update({tab: tab.dataset.tab})));
  $$(ex, ".tablist").forEach((list) => list.addEventListener("keydown", (e) => {
    if (e.key !== "ArrowRight" && e.key !== "ArrowLeft") return;
    const tabs = $$(ex, "[role=tab]");
    const i = tabs.findIndex((t) => t.dataset.tab === state.tab);
    const next = tabs[(i + (e.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
    update({tab: next.dataset.tab});
    next.focus();
  }));
  $$(ex, "#measure input").forEach((r) => r.addEventListener("change", (e) => update({measure: e.target.value})));
  $(ex, "#ablate input").addEventListener("change", (e) => { ex.offMode = e.target.checked; ex.render(); });
  $(ex, "#heads-on").addEventListener("click", () => update({off: []}));
  $$(ex, ".save button").forEach((b) => b.addEventListener("click", () => saveMap(b, ex.data, state)));
  for (const kind of KINDS) {
    $(ex, `#grid-${kind}`).addEventListener("click", (e) => {
      const button = e.target.closest("button[data-layer]");
      if (!button) return;
      const l = Number(button.dataset.layer), h = Number(button.dataset.head);
      if (ex.offMode && h >= 0) ex.toggleHead(kind, l, h);
      else update({layer: l, head: h, auto: false});
    });
    const canvas = $(ex, `#model-${kind} canvas`), tip = $(ex, `#model-${kind} .tip`);
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
  wireSkipToMap(ex);
}
