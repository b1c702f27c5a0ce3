// The view transforms (hide specials, merge subwords) against Python's transforms.hide_special / transforms.merge_subwords on the
// same cases: tests/test_js.py writes the cases and Python's answers to TRANSFORM_CASES and runs this file.
import assert from "node:assert";
import test from "node:test";

import {axis, hideSpecial, mergeSubwords, transform} from "../../transformer/explorer/static/transforms.js";
import {close, needs, pythonCases} from "./cases.js";

const cases = pythonCases("TRANSFORM_CASES");

test("the transforms get Python's cases", needs(cases), () => {
  assert.ok(cases.length >= 3);
});

for (const c of cases || []) {
  test(`hide specials: ${c.name}`, () => {
    const [w, q, k, hidden] = hideSpecial(c.weights, axis(c.q), axis(c.k));
    close(w, c.hidden.weights, "weights");
    assert.deepStrictEqual([q.raw, k.raw], [c.hidden.q, c.hidden.k]);
    assert.ok(Math.abs(hidden - c.hidden.mass) < 1e-6, `hidden mass ${hidden} != ${c.hidden.mass}`);
  });
  test(`merge subwords: ${c.name}`, () => {
    const [w, q, k] = mergeSubwords(c.weights, axis(c.q), axis(c.k));
    close(w, c.merged.weights, "weights");
    assert.deepStrictEqual([q.raw, k.raw], [c.merged.q, c.merged.k]);
  });
  test(`hide specials, then merge subwords: ${c.name}`, () => {
    const {z, q, k, hidden} = transform(c.weights, axis(c.q), axis(c.k), true, true);
    close(z, c.both.weights, "weights");
    assert.deepStrictEqual([q.raw, k.raw], [c.both.q, c.both.k]);
    assert.ok(Math.abs(hidden - c.hidden.mass) < 1e-6);
  });
  test(`neither toggle leaves the map and its axes as they are, no mass hidden: ${c.name}`, () => {
    const q = axis(c.q), k = axis(c.k);
    const view = transform(c.weights, q, k, false, false);
    assert.deepStrictEqual([view.z, view.q, view.k, view.hidden], [c.weights, q, k, null]);
  });
}
