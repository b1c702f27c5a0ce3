// One translation's payload (transformer/explorer/maps/payload.py builds it) decoded into arrays: each entry is
// base64 of raw DEFLATE (`inflate`) over uint8 or uint16 quantised values (or plain float32). A pure ES module,
// unit-tested under Node against payload.py's own payloads and its `decode_array` (tests/js/payload.test.js).

import {inflate} from "./inflate.js";

export const KINDS = ["encoder", "decoder", "cross"];

// an entry as {shape, values: Float32Array}, row-major; the values are exactly payload.decode_array's
export function decodeArray(entry) {
  const bin = atob(entry.data);
  let bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const width = entry.dtype === "uint8" ? 1 : entry.dtype === "uint16" ? 2 : 4;
  if (entry.codec === "deflate") bytes = inflate(bytes, entry.shape.reduce((a, b) => a * b, 1) * width);
  if (entry.dtype === "float32") return {shape: entry.shape, values: new Float32Array(bytes.buffer)};
  const ints = entry.dtype === "uint16" ? new Uint16Array(bytes.buffer) : bytes;
  const values = new Float32Array(ints.length);
  for (let i = 0; i < ints.length; i++) values[i] = ints[i] / entry.scale;
  if (entry.kept_mass) {  // payload.encode_rows: kept keys were sent relative to their row's kept mass
    const mass = decodeArray(entry.kept_mass).values, kept = entry.kept, K = kept.length;
    for (let r = 0; r < mass.length; r++) {
      for (let j = 0; j < K; j++) if (kept[j]) values[r * K + j] = Math.fround(values[r * K + j] * mass[r]);
    }
  }
  return {shape: entry.shape, values};
}

// the payload with each kind's weights (and norms, when sent) and the rollout decoded; the rest as sent
export function decodePayload(payload) {
  const kinds = {};
  for (const kind of KINDS) {
    const k = payload.kinds[kind];
    kinds[kind] = {weights: decodeArray(k.weights), entropy: k.entropy, norm: k.norm ? decodeArray(k.norm) : null};
  }
  return Object.assign({}, payload, {kinds, rolloutArray: payload.rollout ? decodeArray(payload.rollout) : null});
}
