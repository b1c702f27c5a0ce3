// Every ES module of the page links (its imports name exports that exist) and touches no page while it loads, and
// each function the page's scripts take from a module is there: browser.py's js_on_load and js= functions, read by
// tests/test_js.py into START_CASES.
import assert from "node:assert";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";
import {fileURLToPath, pathToFileURL} from "node:url";

import {needs, pythonCases} from "./cases.js";

const STATIC = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "transformer", "explorer", "static");
const starts = pythonCases("START_CASES");

for (const name of fs.readdirSync(STATIC).filter((f) => f.endsWith(".js"))) {
  test(`${name} loads without a page`, async () => {
    await import(pathToFileURL(path.join(STATIC, name)).href);
  });
}

test("each function the page's scripts take from static/ is exported there", needs(starts), async () => {
  assert.ok(starts.length >= 10);
  for (const {module, dir, name} of starts) {
    assert.strictEqual(path.resolve(dir), path.resolve(STATIC), `${module} is served from static/`);
    const m = await import(pathToFileURL(path.join(STATIC, module)).href);
    assert.strictEqual(typeof m[name], "function", `${module} exports ${name}`);
  }
});
