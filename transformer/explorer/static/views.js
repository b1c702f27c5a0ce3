// What each attention view shows, as arrays and texts, from a decoded payload (payload.js) and the view state
// (share.js): the focus map, every layer and head, the rollout, a decoding step, the hidden mass, the cross
// view's opening read-out and its agreement note. The Python copy the tests hold (tests/reference_views.py:
// focus_view, transform, step_view, hidden_text) computes the same; this pure ES module is unit-tested under
// Node against it (tests/js/views.test.js). A map is an array of rows (plain arrays of numbers).
//
// `state` fields read here: tab, layer, head (MEAN: the mean over heads), rows, hide, merge, measure, off, step.

import {KINDS} from "./payload.js";
import {axis, transform} from "./transforms.js";

export {KINDS};
export const TITLES = {encoder: "Encoder self-attention", decoder: "Decoder self-attention", cross: "Cross-attention"};
export const MEAN = -1;
export const ROWS_PREDICTED = "predicted token";
const KIND_CODE = {encoder: "e", decoder: "d", cross: "c"};
const NORM_TITLE = " · norm \u2016\u03b1 f(x)\u2016";
const NOTHING_LEFT = "Nothing left to show after hiding special tokens.";

// one layer and head of an (L, H, Q, K) array
export function slice2d(arr, layer, head) {
  const [, H, Q, K] = arr.shape;
  const base = (layer * H + head) * Q * K;
  const rows = [];
  for (let i = 0; i < Q; i++) rows.push(Array.from(arr.values.subarray(base + i * K, base + (i + 1) * K)));
  return rows;
}

// one head's map, or (head < 0) the mean over the layer's heads
export function headMap(arr, layer, head) {
  if (head >= 0) return slice2d(arr, layer, head);
  const H = arr.shape[1];
  const maps = [];
  for (let h = 0; h < H; h++) maps.push(slice2d(arr, layer, h));
  return maps[0].map((row, i) => row.map((_, j) => maps.reduce((s, m) => s + m[i][j], 0) / H));
}

// heads switched off as the link writes them ("c2.3,e1.1"): sorted, so equal sets give equal keys
export const offKey = (off) => (off || []).map((h) => `${KIND_CODE[h[0]]}${h[1] + 1}.${h[2] + 1}`).sort().join(",");
export const isOff = (state, kind, l, h) => state.off.some((x) => x[0] === kind && x[1] === l && x[2] === h);

// what the maps show: the weights α, or (when asked for and arrived) the row-normalised norms ‖α f(x)‖
export const showNorm = (data, state) => state.measure === "norm" && Boolean(data.kinds.encoder.norm);
export const mapsOf = (data, state, kind) => (showNorm(data, state) ? data.kinds[kind].norm : data.kinds[kind].weights);

export const clampLayer = (state, n) => Math.min(Math.max(state.layer, 0), n - 1);
export const headOf = (state, n) => (state.head < n ? state.head : MEAN);
export const headLabel = (h) => (h < 0 ? "mean over heads" : `head ${h + 1}`);
// numbered as in the n-best table (`rank`: the distinct translations' order; older payloads have none)
export const suffix = (data) => (data.candidate ? ` · candidate ${(Number.isInteger(data.rank) ? data.rank : data.candidate) + 1}` : "");

// the query and key axes of a kind: decoder rows by the token they read or the one they predict
export function kindAxes(data, state, kind) {
  const t = data.tokens;
  const queries = state.rows === ROWS_PREDICTED ? t.tgt_out : t.tgt_in;
  if (kind === "encoder") return [axis(t.src), axis(t.src)];
  if (kind === "decoder") return [axis(queries), axis(t.tgt_in)];
  return [axis(queries), axis(t.src)];
}

// reference_views.focus_view: one layer and head (or the mean) of one kind, transformed, with its title; or a
// message (no layers, nothing left after hiding). `hidden`: the mass hidden on specials (null when not hiding)
export function focusView(data, state, kind) {
  const arr = mapsOf(data, state, kind);
  const [L, H] = arr.shape;
  if (L === 0) return {message: `This model has no ${kind} layers.`, hidden: null};
  const layer = clampLayer(state, L), head = headOf(state, H);
  const [q, k] = kindAxes(data, state, kind);
  const view = transform(headMap(arr, layer, head), q, k, state.hide, state.merge);
  let title = `${TITLES[kind]} · layer ${layer + 1} · ${headLabel(head)}${suffix(data)}`;
  if (layer !== state.layer) title += ` (this stack has ${L} layers)`;
  if (showNorm(data, state)) title += NORM_TITLE;
  if (head >= 0 && isOff(state, kind, layer, head)) title += " · switched off";
  if (!view.z.length || !view.z[0].length) return {message: NOTHING_LEFT, hidden: view.hidden};
  return Object.assign(view, {title});
}

// every layer and head of a kind (reference_views.transform over kind_maps), transformed, layer-major; or a message
export function modelMaps(data, state, kind) {
  const arr = mapsOf(data, state, kind);
  const [L, H] = arr.shape;
  if (L === 0) return {message: `This model has no ${kind} layers.`};
  const [q0, k0] = kindAxes(data, state, kind);
  const maps = [];
  for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) maps.push(transform(slice2d(arr, l, h), q0, k0, state.hide, state.merge));
  const Q = maps[0].z.length, K = Q ? maps[0].z[0].length : 0;
  if (!Q || !K) return {message: NOTHING_LEFT};
  return {maps, L, H};
}

// the encoder's rollout over the source, transformed; its colour scale ends at its largest value (`zmax`)
export function rolloutView(data, state) {
  if (!data.rolloutArray) return {message: "This model has no encoder layers."};
  const r = slice2d({shape: [1, 1, ...data.rolloutArray.shape], values: data.rolloutArray.values}, 0, 0);
  const src = axis(data.tokens.src);
  const view = transform(r, src, src, state.hide, state.merge);
  if (!view.z.length || !view.z[0].length) return {message: NOTHING_LEFT};
  const zmax = Math.max(...view.z.map((row) => Math.max(...row)));
  view.title = "Encoder attention rollout (all layers, heads averaged)";
  return Object.assign(view, {zmax: zmax > 0 ? zmax : 1});
}

// reference_views.step_view: decoding step state.step (1-based, clamped) with the chosen layer and head's
// cross-attention row over the source, transformed; `text` says what the decoder read and chose
export function stepView(data, state) {
  const n = data.steps.length;
  const step = Math.min(Math.max(state.step, 1), Math.max(n, 1));
  const arr = mapsOf(data, state, "cross");
  if (!n) return {n, step, message: "No decoding steps."};
  if (!arr.shape[0]) return {n, step, message: "This model has no decoder layers."};
  const t = step - 1, rec = data.steps[t];
  const layer = clampLayer(state, arr.shape[0]), head = headOf(state, arr.shape[1]);
  const row = headMap(arr, layer, head)[t];
  const query = {label: ["·"], raw: ["·"], shown: ["·"], special: [false], info: {groups: [0], words: ["·"], words_raw: ["·"],
    groups_hidden: [0], words_hidden: ["·"], words_hidden_raw: ["·"]}, hidden: false};
  const view = transform([row], query, axis(data.tokens.src), state.hide, state.merge);
  const text = `Step ${t + 1} of ${n}: the decoder read \u2018${data.tokens.tgt_in.shown[t]}\u2019 and ` +
    `chose \u2018${rec.shown}\u2019 (probability ${(rec.p * 100).toFixed(1)}%).`;
  const title = `Step ${t + 1}: chose ${rec.label} · cross-attention layer ${layer + 1}, ${headLabel(head)}` +
    (showNorm(data, state) ? NORM_TITLE : "");
  return {n, step, rec, view, text, title};
}

// reference_views.hidden_text: the mass each kind's focus view hid (null: specials shown)
export function hiddenText(masses) {
  const shown = KINDS.filter((k) => masses[k] !== null && masses[k] !== undefined);
  if (!shown.length) return "Special tokens are shown (tick \"Hide <bos>/<eos>\" to hide them and renormalise rows).";
  const parts = shown.map((k) => `${TITLES[k].toLowerCase()} ${(masses[k] * 100).toFixed(1)}%`).join(", ");
  return `Attention mass hidden on <bos>/<eos>/<pad> in the focus views (rows renormalised): ${parts}.`;
}

// what a view opens on while no layer or head is chosen (checkpoint_heads.opening_read_outs), null where it has none
export function opensOn(data, view) {
  const open = data && data.heads && data.heads.opens_on;
  return open && open[view] ? open[view] : null;
}

// Until a layer or head is chosen (state.auto), each kind opens on its own default: cross-attention on the
// read-out that agrees best with people's word alignments (layer, head and rows: checkpoint_heads.opening_read_outs;
// the rows it sets are given back on leaving it), the steps on the best one of the rows being chosen, every
// other kind on its last layer, mean. Sets state.layer, head and rows; `autoRows` is the rows before the cross
// default set its own (null when none are held), and the value to hold next is returned.
export function autoPick(data, state, autoRows) {
  if (!state.auto || !data) return null;
  const view = KINDS.includes(state.tab) ? state.tab : "steps";
  const open = view === "cross" || view === "steps" ? opensOn(data, view) : null;
  if (view === "cross" && open && state.rows !== open.rows) {
    if (autoRows === null) autoRows = state.rows;
    state.rows = open.rows;
  } else if ((view !== "cross" || !open) && autoRows !== null) {
    state.rows = autoRows;
    autoRows = null;
  }
  if (open) { state.layer = open.layer; state.head = open.head; return autoRows; }
  state.layer = Math.max(mapsOf(data, state, view === "steps" ? "cross" : view).shape[0], 1) - 1;
  state.head = MEAN;
  return autoRows;
}

// how far the cross read-out on screen agrees with a person (alignment.json: the opening one's sentence with
// eflomal's figures, any other head or layer mean from checkpoint_heads.read_out_agreements); weights only, the heads
// on; "" if none
export function agreementText(data, state) {
  if (!data || state.tab !== "cross" || showNorm(data, state)) return "";
  const [L, H] = mapsOf(data, state, "cross").shape;
  const layer = clampLayer(state, L), head = headOf(state, H), open = opensOn(data, "cross");
  // the numbers are the intact model's: none for a head switched off, or a layer mean over one
  const heads = head === MEAN ? Array.from({length: H}, (_, h) => h) : [head];
  if (heads.some((h) => isOff(state, "cross", layer, h))) return "";
  const said = data.heads && data.heads.agreements;
  const numbers = said && said.read_outs[`${layer}|${head}|${state.rows}`];
  if (open && open.agreement && layer === open.layer && head === open.head && state.rows === open.rows) {
    return open.agreement;
  }
  return numbers ? said.template.replace("{precision}", numbers[0]).replace("{recall}", numbers[1]) : "";
}

// what the checkpoint's head analysis says about one head: role letters, and a line for the tooltip
export function headRoles(data, kind, l, h) {
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

// the note on heads switched off (`ablation`: the payload's), or the wait for the model's answer
export function ablationText(ablation, waiting) {
  if (waiting) return "Asking the model\u2026";
  const n = ablation.off.length;
  return `${n} head${n === 1 ? "" : "s"} switched off (${offKey(ablation.off)}): the maps, the translation and the ` +
    `n-best list are the model's without them. With every head: \u201c${ablation.unmasked}\u201d`;
}
