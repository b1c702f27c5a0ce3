// The word alignment drawn on the cross view against transformer/training/alignment.py's link extraction (word_maps,
// then links_from) on the same cases: tests/test_js.py writes the cases and Python's answers to ALIGNMENT_CASES.
import assert from "node:assert";
import test from "node:test";

import {alignmentFigure, describeAlignment, rowPositions, wordAlignment, wordLabels} from
  "../../transformer/explorer/static/alignment_lines.js";
import {needs, pythonCases} from "./cases.js";

const cases = pythonCases("ALIGNMENT_CASES");
const pairs = (al) => al.links.map((l) => [l.source, l.target]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);

test("the word alignment gets Python's cases", needs(cases), () => {
  assert.ok(cases.length >= 3);
});

for (const c of cases || []) {
  // the predicting rows are labelled by the output tokens; the shifted rows are the decoder's input rows
  for (const [rows, q] of [["predicting", c.out], ["shifted", c.in]]) {
    test(`${rows} rows: ${c.name}`, () => {
      const al = wordAlignment(c.weights, q, c.src);
      const want = c[rows];
      assert.strictEqual(al.map.length, want.map.length, "translation words");
      al.map.forEach((row, i) => row.forEach((v, j) => assert.ok(Math.abs(v - want.map[i][j]) < 1e-6,
        `map[${i}][${j}]: ${v} != ${want.map[i][j]}`)));
      assert.deepStrictEqual(pairs(al), want.links.map(([e, d]) => [e, d]));
    });
  }
}

// a hand case, without Python: "A dog runs ." -> "Ein Hund rennt ." with the last output piece's row on <eos>
const info = (tokens) => {
  const groups = [], words = [];
  tokens.forEach((t) => {
    const starts = t.startsWith("\u2581") || t.startsWith("<") || !words.length || t === ".";
    if (starts) words.push(t.replace("\u2581", "")); else words[words.length - 1] += t;
    groups.push(words.length - 1);
  });
  return {groups, words, words_raw: words, special: tokens.map((t) => t.startsWith("<"))};
};
const src = info(["\u2581A", "\u2581dog", "\u2581runs", ".", "<eos>"]);
const out = info(["\u2581Ein", "\u2581Hu", "nd", "\u2581rennt", "<eos>"]);
const weights = [[0.7, 0.1, 0.1, 0, 0.1], [0.1, 0.8, 0, 0, 0.1], [0.2, 0.2, 0.2, 0, 0.4], [0, 0, 0.9, 0, 0.1],
  [0, 0, 0, 0.2, 0.8]];

test("a word of two pieces is one row, specials are no words, and each word gets one line", () => {
  const al = wordAlignment(weights, out, src);
  assert.deepStrictEqual(al.source.label, ["A", "dog", "runs", "."]);
  assert.deepStrictEqual(al.target.label, ["Ein", "Hund", "rennt"]);
  assert.deepStrictEqual(pairs(al), [[0, 0], [1, 1], [2, 2]]);
  assert.ok(Math.abs(al.links[1].weight - 0.5) < 1e-12);  // "Hund": the mean of its pieces' rows on "dog"
  const figure = alignmentFigure(al, {title: "t"});
  assert.strictEqual(figure.layout.shapes.length, 3);  // one line per link
  const line = figure.layout.shapes[0];
  assert.deepStrictEqual([line.y0, line.y1], [1, 0]);  // from the source row down to the translation's
  assert.deepStrictEqual(figure.data.map((d) => d.text), [al.source.label, al.target.label]);
  assert.strictEqual(describeAlignment(al, "t"), "t. 3 lines: Ein \u2013 A, Hund \u2013 dog, rennt \u2013 runs.");
});

test("a row on specials only draws no line", () => {
  const silent = weights.map((row, i) => (i === 3 ? [0, 0, 0, 0, 1] : row));
  assert.deepStrictEqual(pairs(wordAlignment(silent, out, src)), [[0, 0], [1, 1]]);
});

test("long rows slant their words; both rows stay within the figure, the shorter centred", () => {
  const xs = rowPositions(3, 5);
  assert.ok(Math.abs(xs[1] - 0.5) < 1e-12 && xs[0] > 0 && xs[2] < 1);
  const many = info([...Array.from({length: 12}, (_, i) => `\u2581w${i}`), "<eos>"]);
  const w = Array.from({length: 13}, (_, i) => Array.from({length: 13}, (_, j) => (i === j ? 1 : 0)));
  const figure = alignmentFigure(wordAlignment(w, many, many), {});
  assert.strictEqual(figure.layout.shapes.length, 12);
  assert.strictEqual(figure.layout.annotations.length, 24);
  assert.ok(figure.layout.annotations.every((a) => a.textangle === -45));
});

test("a long sentence's words stay readable and apart: smaller, standing, then thinned, and the title says so", () => {
  for (const n of [12, 20, 35, 60]) {
    for (const width of [480, 900]) {
      const words = Array.from({length: n}, (_, i) => `word${i}`);
      const fit = wordLabels(words, n, width, 20);
      const pitch = (width - 80) / n, across = fit.angle === -45 ? pitch * Math.SQRT1_2 : pitch;
      assert.ok(fit.size >= 12, `n ${n} width ${width}: ${fit.size} px`);
      assert.ok(fit.angle === 0 || fit.step * across >= 1.25 * fit.size, `n ${n} width ${width}: words run into each other`);
    }
  }
  const many = info([...Array.from({length: 40}, (_, i) => `\u2581w${i}`), "<eos>"]);
  const w = Array.from({length: 41}, (_, i) => Array.from({length: 41}, (_, j) => (i === j ? 1 : 0)));
  const figure = alignmentFigure(wordAlignment(w, many, many), {title: "t", width: 480, height: 560});
  assert.ok(figure.layout.title.text.includes("word written; hover for all"));
  assert.ok(figure.layout.annotations.length < 80 && figure.layout.annotations.every((a) => a.font.size >= 12));
  assert.strictEqual(figure.layout.height, 560);  // the height asked for, its words' room included
});
