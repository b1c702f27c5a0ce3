// payload.js against transformer/explorer/maps/payload.py: payloads attention_payload built (uint16, uint8, with the
// norms) decode to exactly the float32 values payload.decode_array gives; tests/test_js.py writes them to
// PAYLOAD_CASES.
import assert from "node:assert";
import test from "node:test";

import {decodeArray, decodePayload} from "../../transformer/explorer/static/payload.js";
import {needs, pythonCases} from "./cases.js";

const cases = pythonCases("PAYLOAD_CASES");

function same(got, want, what) {  // bit for bit: every float32 of Python's is a double exactly
  assert.deepStrictEqual(got.shape, want.shape, `${what}: shape`);
  assert.ok(got.values instanceof Float32Array, `${what}: Float32Array`);
  assert.strictEqual(got.values.length, want.values.length, `${what}: size`);
  const wrong = want.values.findIndex((v, i) => got.values[i] !== v);
  assert.strictEqual(wrong, -1, `${what}[${wrong}]: ${got.values[wrong]} != ${want.values[wrong]}`);
}

test("the payload decoder gets Python's payloads", needs(cases), () => {
  assert.deepStrictEqual(cases.map((c) => c.name), ["uint16", "uint8", "with norms", "float32"]);
});

for (const c of (cases || []).filter((x) => x.payload)) {
  test(`decodes every array of a ${c.name} payload as payload.decode_array does`, () => {
    const dtype = c.payload.kinds.cross.weights.dtype;
    assert.strictEqual(dtype, c.name === "uint8" ? "uint8" : "uint16");
    const data = decodePayload(c.payload);
    for (const [key, want] of Object.entries(c.decoded)) {
      const [kind, array] = key.split(".");
      same(kind === "rollout" ? data.rolloutArray : data.kinds[kind][array], want, key);
    }
    for (const kind of ["encoder", "decoder", "cross"]) {
      assert.strictEqual(data.kinds[kind].norm === null, !(`${kind}.norm` in c.decoded), `${kind}: norms sent`);
      assert.strictEqual(data.kinds[kind].entropy, c.payload.kinds[kind].entropy);  // passed on as sent
    }
    for (const field of ["tokens", "steps", "n_layers", "n_heads", "colorscale", "rev"]) {
      assert.strictEqual(data[field], c.payload[field], field);
    }
  });
}

test("decodes a deflated float32 entry as payload.decode_array does", needs(cases), () => {
  const c = cases.find((x) => x.name === "float32");
  same(decodeArray(c.entry), {shape: c.entry.shape, values: c.values}, "float32");
});
