// Raw DEFLATE (RFC 1951), what payload._pack sends (Python's zlib, wbits=-15): synchronous, so a payload is
// drawn in the call that receives it (DecompressionStream would make every payload change asynchronous).
// A pure ES module (payload.js imports it), unit-tested under Node against zlib (tests/js/inflate.test.js).
// `size` is the number of bytes it inflates to (the array's shape says).
const LEN_BASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
  163, 195, 227, 258];
const LEN_EXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DIST_BASE = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
  2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577];
const DIST_EXTRA = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
const CL_ORDER = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

export function inflate(src, size) {
  const out = new Uint8Array(size);
  let n = 0, pos = 0, buf = 0, cnt = 0;
  const need = (k) => {  // past the end reads zeros: a table lookup may peek beyond the last code
    while (cnt < k) { buf |= (pos < src.length ? src[pos] : 0) << cnt; pos++; cnt += 8; }
  };
  const bits = (k) => { need(k); const v = buf & ((1 << k) - 1); buf >>>= k; cnt -= k; return v; };
  // a canonical Huffman code as one lookup table indexed by the next `max` bits (LSB first):
  // entry = symbol << 4 | code length
  function table(lengths) {
    let max = 0;
    for (const l of lengths) max = Math.max(max, l);
    const count = new Array(16).fill(0), next = new Array(16).fill(0);
    for (const l of lengths) if (l) count[l]++;
    for (let l = 1, code = 0; l < 16; l++) { code = (code + count[l - 1]) << 1; next[l] = code; }
    const t = new Int32Array(1 << max).fill(-1);
    lengths.forEach((l, sym) => {
      if (!l) return;
      let code = next[l]++, rev = 0;
      for (let i = 0; i < l; i++) { rev = (rev << 1) | (code & 1); code >>= 1; }
      for (let i = rev; i < t.length; i += 1 << l) t[i] = (sym << 4) | l;
    });
    return {t, max};
  }
  const symbol = (h) => {
    need(h.max);
    const e = h.t[buf & ((1 << h.max) - 1)];
    if (e < 0) throw new Error("inflate: bad code");
    buf >>>= e & 15; cnt -= e & 15;
    return e >> 4;
  };
  let fixed = null;
  for (let last = 0; !last;) {
    last = bits(1);
    const type = bits(2);
    if (type === 0) {  // stored: from the next byte boundary, its length, the length's complement, the bytes
      pos -= cnt >> 3;  // whole bytes the lookahead took back to the stream, the rest of a byte dropped
      buf = 0; cnt = 0;
      const len = src[pos] | (src[pos + 1] << 8);
      pos += 4;
      out.set(src.subarray(pos, pos + len), n);
      pos += len; n += len;
      continue;
    }
    let lit, dist;
    if (type === 1) {
      if (!fixed) {
        const l = new Array(288).fill(8, 0, 144).fill(9, 144, 256).fill(7, 256, 280).fill(8, 280, 288);
        fixed = [table(l), table(new Array(30).fill(5))];
      }
      [lit, dist] = fixed;
    } else if (type === 2) {
      const nlit = bits(5) + 257, ndist = bits(5) + 1, ncl = bits(4) + 4;
      const cl = new Array(19).fill(0);
      for (let i = 0; i < ncl; i++) cl[CL_ORDER[i]] = bits(3);
      const clt = table(cl), lengths = [];
      while (lengths.length < nlit + ndist) {
        const sym = symbol(clt);
        if (sym < 16) lengths.push(sym);
        else if (sym === 16) { const prev = lengths[lengths.length - 1]; for (let r = 3 + bits(2); r > 0; r--) lengths.push(prev); }
        else for (let r = sym === 17 ? 3 + bits(3) : 11 + bits(7); r > 0; r--) lengths.push(0);
      }
      lit = table(lengths.slice(0, nlit));
      dist = table(lengths.slice(nlit));
    } else {
      throw new Error("inflate: bad block type");
    }
    // the hot loop, with the bit buffer in locals (the closures above are for the headers)
    const lt = lit.t, lmask = (1 << lit.max) - 1, lmax = lit.max, dt = dist.t, dmask = (1 << dist.max) - 1;
    let b = buf, c = cnt, p = pos, o = n;
    for (;;) {
      while (c < lmax) { b |= (p < src.length ? src[p] : 0) << c; p++; c += 8; }
      let e = lt[b & lmask];
      if (e < 0) throw new Error("inflate: bad code");
      b >>>= e & 15; c -= e & 15;
      const sym = e >> 4;
      if (sym < 256) { out[o++] = sym; continue; }
      if (sym === 256) break;
      while (c < 24) { b |= (p < src.length ? src[p] : 0) << c; p++; c += 8; }  // 5 extra + 15 + 13 fit in 32
      let x = LEN_EXTRA[sym - 257];
      const len = LEN_BASE[sym - 257] + (b & ((1 << x) - 1));
      b >>>= x; c -= x;
      e = dt[b & dmask];
      if (e < 0) throw new Error("inflate: bad code");
      b >>>= e & 15; c -= e & 15;
      const d = e >> 4;
      x = DIST_EXTRA[d];
      while (c < x) { b |= (p < src.length ? src[p] : 0) << c; p++; c += 8; }
      const back = DIST_BASE[d] + (b & ((1 << x) - 1));
      b >>>= x; c -= x;
      if (back > o) throw new Error("inflate: distance too far back");
      for (let i = 0; i < len; i++, o++) out[o] = out[o - back];
    }
    buf = b; cnt = c; pos = p; n = o;
  }
  if (n !== size) throw new Error(`inflate: ${n} bytes, expected ${size}`);
  return out;
}
