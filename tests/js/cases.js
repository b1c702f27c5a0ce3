// What the Node tests share: the cases tests/test_js.py wrote from Python (a JSON file named by an environment
// variable), and comparisons of maps within float32 rounding.
import assert from "node:assert";
import fs from "node:fs";

// the cases in the file that `variable` names, or null when the test runs without tests/test_js.py
export function pythonCases(variable) {
  const file = process.env[variable];
  return file ? JSON.parse(fs.readFileSync(file, "utf8")) : null;
}

// a test's options that skip it, saying why, when tests/test_js.py did not write its cases
export const needs = (cases) => ({skip: !cases && "run through tests/test_js.py"});

// two maps (arrays of rows) equal within `tol` per cell
export function close(got, want, what, tol = 1e-6) {
  assert.strictEqual(got.length, want.length, `${what}: rows`);
  got.forEach((row, i) => {
    assert.strictEqual(row.length, want[i].length, `${what}: columns of row ${i}`);
    row.forEach((v, j) => assert.ok(Math.abs(v - want[i][j]) < tol, `${what}[${i}][${j}]: ${v} != ${want[i][j]}`));
  });
}
