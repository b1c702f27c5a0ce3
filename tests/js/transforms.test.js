// The view transforms (hide specials, merge subwords) against Python's transforms.hide_special / transforms.merge_subwords on the
// same cases: tests/test_js.py writes the cases and Python's answers to TRANSFORM_CASES and runs this file.
"use strict";
const test = require("node:test");
const assert = require("node:assert");
const fs = require("node:fs");
const path = require("node:path");
const {axis, hideSpecial, mergeSubwords} = require(
  path.join(__dirname, "..", "..", "transformer", "explorer", "static", "transforms.js"));

function close(got, want, what) {
  assert.strictEqual(got.length, want.length, `${what}: rows`);
  got.forEach((row, i) => {
    assert.strictEqual(row.length, want[i].length, `${what}: columns of row ${i}`);
    row.forEach((v, j) => assert.ok(Math.abs(v - want[i][j]) < 1e-6, `${what}[${i}][${j}]: ${v} != ${want[i][j]}`));
  });
}

const file = process.env.TRANSFORM_CASES;
const cases = file ? JSON.parse(fs.readFileSync(file, "utf8")) : [];

test("the transforms get Python's cases", {skip: !file && "run through tests/test_js.py"}, () => {
  assert.ok(cases.length >= 3);
});

for (const c of cases) {
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
    const [w1, q1, k1] = hideSpecial(c.weights, axis(c.q), axis(c.k));
    const [w, q, k] = mergeSubwords(w1, q1, k1);
    close(w, c.both.weights, "weights");
    assert.deepStrictEqual([q.raw, k.raw], [c.both.q, c.both.k]);
  });
}
