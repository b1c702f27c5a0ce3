// payload.js's inflate against zlib, which we did not write: Node's own zlib here, and, when the Python test that
// runs this file passes INFLATE_CASES, the payloads Python's zlib made (what the app sends).
import assert from "node:assert";
import test from "node:test";
import zlib from "node:zlib";

import {inflate} from "../../transformer/explorer/static/inflate.js";
import {needs, pythonCases} from "./cases.js";

function seeded(seed) {  // a small deterministic generator: the same bytes on every run
  let x = seed >>> 0;
  return () => { x = (x * 1664525 + 1013904223) >>> 0; return x; };
}

function sparseBytes(n, seed) {  // mostly small values with rare large ones, like attention maps
  const next = seeded(seed), out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(((next() / 2 ** 32) ** 9) * 255);
  return out;
}

function noiseBytes(n, seed) {  // incompressible: zlib stores it
  const next = seeded(seed), out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = next() >>> 24;
  return out;
}

const CASES = {
  "dynamic Huffman codes (level 9)": [sparseBytes(7 * 300 * 41, 3), {level: 9}],
  "dynamic Huffman codes (level 1)": [sparseBytes(7 * 300 * 41, 3), {level: 1}],
  "stored blocks (level 0)": [sparseBytes(5000, 4), {level: 0}],
  "fixed Huffman codes": [sparseBytes(5000, 5), {level: 9, strategy: zlib.constants.Z_FIXED}],
  "a long run of zeros": [new Uint8Array(10000), {level: 9}],
  "a single byte": [Uint8Array.of(7), {level: 9}],
  "incompressible, over one stored block": [noiseBytes(3 * 70000 * 2, 6), {level: 9}],
  "repeats far back": [(() => { const a = noiseBytes(30000, 7); return Uint8Array.from([...a, ...a]); })(), {level: 6}],
};

for (const [name, [bytes, options]] of Object.entries(CASES)) {
  test(`inflates ${name} as zlib deflated it`, () => {
    const packed = zlib.deflateRawSync(bytes, options);
    assert.deepStrictEqual(inflate(new Uint8Array(packed), bytes.length), bytes);
  });
}

test("a wrong size or a corrupt stream is an error, not a wrong array", () => {
  const bytes = sparseBytes(2000, 8), packed = new Uint8Array(zlib.deflateRawSync(bytes, {level: 9}));
  assert.throws(() => inflate(packed, bytes.length + 1), /inflate/);
  assert.throws(() => inflate(Uint8Array.of(0xff, 0xff, 0xff, 0xff), 10), /inflate/);
});

const cases = pythonCases("INFLATE_CASES");
test("inflates what Python's zlib packed, as the app sends it", needs(cases), () => {
  for (const c of cases) {
    const packed = new Uint8Array(Buffer.from(c.packed, "base64")), raw = new Uint8Array(Buffer.from(c.raw, "base64"));
    assert.deepStrictEqual(inflate(packed, raw.length), raw, c.name);
  }
});
