// Every ES module of the page (the shared ones in static/, each panel's in its folder) links (its imports name
// exports that exist) and touches no page while it loads, and each function the page's scripts take from a module
// is there: each panel's js_on_load and web/page.py's js= functions, read by tests/test_js.py into START_CASES.
import assert from "node:assert";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";
import {fileURLToPath, pathToFileURL} from "node:url";

import {needs, pythonCases} from "./cases.js";

const EXPLORER = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "transformer", "explorer");
const starts = pythonCases("START_CASES");
const MODULE_DIRS = [path.join(EXPLORER, "static"),
  ...fs.readdirSync(path.join(EXPLORER, "panels"), {withFileTypes: true}).filter((d) => d.isDirectory())
    .map((d) => path.join(EXPLORER, "panels", d.name))];

for (const dir of MODULE_DIRS) {
  for (const name of fs.readdirSync(dir).filter((f) => f.endsWith(".js"))) {
    test(`${path.relative(EXPLORER, path.join(dir, name))} loads without a page`, async () => {
      await import(pathToFileURL(path.join(dir, name)).href);
    });
  }
}

test("each function the page's scripts take from a module is exported there", needs(starts), async () => {
  assert.ok(starts.length >= 10);
  for (const {module, dir, name} of starts) {
    assert.ok(MODULE_DIRS.some((d) => path.resolve(d) === path.resolve(dir)), `${module} is served from the explorer`);
    const m = await import(pathToFileURL(path.join(dir, module)).href);
    assert.strictEqual(typeof m[name], "function", `${module} exports ${name}`);
  }
});
