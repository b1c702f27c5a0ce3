// views.js against tests/reference_views.py, the Python copy of the page's views: for one payload from
// payload.py (pieces to merge, specials to hide, markup in tokens), every kind, row labelling and toggle and a few
// layers and heads, the focus map (values, labels, title), the hidden-mass note, every layer and head, the rollout,
// each decoding step and the norms. tests/test_js.py writes the payload and Python's answers to VIEW_CASES (the
// cases test_browser.py checks in Chromium).
import assert from "node:assert";
import test from "node:test";

import {decodePayload} from "../../transformer/explorer/static/payload.js";
import {
  KINDS, MEAN, agreementText, autoPick, focusView, hiddenText, modelMaps, offKey, rolloutView, stepView,
} from "../../transformer/explorer/static/views.js";
import {close, needs, pythonCases} from "./cases.js";

const cases = pythonCases("VIEW_CASES");
const data = cases && decodePayload(cases.payload);
// the page's state (share.js) with a case's choices
const stateOf = (choices) => Object.assign({tab: "encoder", layer: null, head: MEAN, auto: false, rows: "predicted token",
  hide: false, merge: false, step: 1, off: [], measure: "weight", align: false}, choices);
// Plotly shows labels with escape_label's entities decoded; Python's titles hold the tokens as they are
const unescape = (s) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&#36;/g, "$").replace(/&amp;/g, "&");
const TOL = 1e-5;  // float64 sums here against float32 numpy there

test("the views get Python's cases", needs(cases), () => {
  assert.strictEqual(cases.focus.length, 72);
  assert.ok(cases.steps.length >= 7 && cases.norms.length === 3);
});

for (const c of cases ? cases.focus : []) {
  const s = c.state;
  test(`${s.tab}, ${s.rows} rows, hide ${s.hide}, merge ${s.merge}, layer ${s.layer} head ${s.head}`, () => {
    const state = stateOf(s);
    const view = focusView(data, state, s.tab);
    assert.strictEqual(view.message, undefined);
    close(view.z, c.focus.z, "focus", TOL);
    assert.deepStrictEqual(view.q.label, c.focus.q);
    assert.deepStrictEqual(view.k.label, c.focus.k);
    assert.strictEqual(view.title, c.focus.title);
    const masses = Object.fromEntries(KINDS.map((k) => [k, focusView(data, state, k).hidden]));
    assert.strictEqual(hiddenText(masses), c.hidden);
    const grid = modelMaps(data, state, s.tab);
    const [L, H, Q, K] = c.maps.shape;
    assert.deepStrictEqual([grid.L, grid.H, grid.maps.length], [L, H, L * H]);
    grid.maps.forEach((m, i) => close(m.z, Array.from({length: Q}, (_, r) =>
      c.maps.values.slice((i * Q + r) * K, (i * Q + r + 1) * K)), `map ${i}`, TOL));
    if (c.rollout) {
      const r = rolloutView(data, state);
      close(r.z, c.rollout.z, "rollout", TOL);
      assert.ok(Math.abs(r.zmax - c.rollout.zmax) < TOL);
    }
  });
}

for (const c of cases ? cases.steps : []) {
  const s = c.state;
  test(`step ${s.step}, head ${s.head}, hide ${s.hide}, merge ${s.merge}`, () => {
    const step = stepView(data, stateOf(s));
    close(step.view.z, [c.row], "row", TOL);
    assert.deepStrictEqual(step.view.k.label, c.keys);
    assert.strictEqual(unescape(step.title), c.title);
    assert.strictEqual(step.text, c.text);
  });
}

for (const c of cases ? cases.norms : []) {
  test(`the norms of ${c.state.tab}, when they came and are asked for`, () => {
    const view = focusView(data, stateOf(c.state), c.state.tab);
    close(view.z, c.z, "norm", TOL);
    assert.ok(view.title.endsWith(" · norm \u2016\u03b1 f(x)\u2016"));
    const weights = focusView(data, stateOf({...c.state, measure: "weight"}), c.state.tab);
    assert.ok(weights.z.some((row, i) => row.some((v, j) => Math.abs(v - view.z[i][j]) > 1e-3)), "weights differ");
  });
}

// The rules below are the page's own (no Python counterpart): views.js's comments state them.

test("a step out of range is clamped; a model without steps or decoder layers says so", needs(cases), () => {
  const n = data.steps.length;
  assert.strictEqual(stepView(data, stateOf({step: 0})).step, 1);
  assert.strictEqual(stepView(data, stateOf({step: n + 5})).step, n);
  assert.strictEqual(stepView({...data, steps: []}, stateOf({})).message, "No decoding steps.");
  const none = {...data, kinds: {...data.kinds, cross: {...data.kinds.cross, weights: {shape: [0, 4, 7, 7], values: new Float32Array()}}}};
  assert.strictEqual(stepView(none, stateOf({})).message, "This model has no decoder layers.");
  assert.strictEqual(focusView(none, stateOf({tab: "cross"}), "cross").message, "This model has no cross layers.");
});

test("a head switched off is said in the focus title; the link's key of heads off is sorted", needs(cases), () => {
  const state = stateOf({tab: "cross", layer: 1, head: 2, off: [["encoder", 0, 0], ["cross", 1, 2]]});
  assert.ok(focusView(data, state, "cross").title.endsWith(" · switched off"));
  assert.strictEqual(offKey(state.off), "c2.3,e1.1");
});

test("a view left on its defaults opens on the read-out the payload names, or on the last layer's mean", needs(cases), () => {
  const open = {cross: {layer: 0, head: 3, rows: "decoder input token"}, steps: {layer: 1, head: 0, rows: "predicted token"}};
  const withOpen = {...data, heads: {opens_on: open}};
  const state = stateOf({tab: "encoder", auto: true, rows: "predicted token"});
  let held = autoPick(withOpen, state, null);
  assert.deepStrictEqual([state.layer, state.head, held], [2, MEAN, null]);  // the encoder's last layer, mean
  state.tab = "cross";
  held = autoPick(withOpen, state, held);
  assert.deepStrictEqual([state.layer, state.head, state.rows, held], [0, 3, "decoder input token", "predicted token"]);
  state.tab = "decoder";  // leaving the cross view gives its rows back
  held = autoPick(withOpen, state, held);
  assert.deepStrictEqual([state.layer, state.head, state.rows, held], [1, MEAN, "predicted token", null]);
  state.tab = "steps";
  autoPick(withOpen, state, held);
  assert.deepStrictEqual([state.layer, state.head], [1, 0]);
  const chosen = stateOf({tab: "cross", layer: 1, head: 2, auto: false});  // chosen by hand: left alone
  assert.strictEqual(autoPick(withOpen, chosen, null), null);
  assert.deepStrictEqual([chosen.layer, chosen.head], [1, 2]);
});

test("the agreement note: the opening read-out's sentence, another read-out's numbers, none for norms", needs(cases), () => {
  const heads = {opens_on: {cross: {layer: 0, head: 3, rows: "decoder input token", agreement: "Agrees."}},
    agreements: {template: "P {precision}, R {recall}", read_outs: {"1|-1|predicted token": ["0.5", "0.4"]}}};
  const withHeads = {...data, heads};
  assert.strictEqual(agreementText(withHeads, stateOf({tab: "cross", layer: 0, head: 3, rows: "decoder input token"})),
    "Agrees.");
  assert.strictEqual(agreementText(withHeads, stateOf({tab: "cross", layer: 1, head: MEAN})), "P 0.5, R 0.4");
  assert.strictEqual(agreementText(withHeads, stateOf({tab: "cross", layer: 1, head: 0})), "");
  assert.strictEqual(agreementText(withHeads, stateOf({tab: "encoder", layer: 1, head: MEAN})), "");
  assert.strictEqual(agreementText(withHeads, stateOf({tab: "cross", layer: 1, head: MEAN, measure: "norm"})), "");
  // switched off: the note's numbers were the intact head's (the layer's mean too)
  assert.strictEqual(agreementText(withHeads, stateOf({tab: "cross", layer: 0, head: 3, rows: "decoder input token",
    off: [["cross", 0, 3]]})), "");
  assert.strictEqual(agreementText(withHeads, stateOf({tab: "cross", layer: 1, head: MEAN, off: [["cross", 1, 1]]})), "");
});
