// figures.js: the heatmap and the decoding step's figure against tests/reference_views.py's figures (same cases as
// views.test.js, from VIEW_CASES), the model view's colours against plotly's own sample_colorscale (COLOUR_CASES),
// and the rules of fitted labels and of the model view's grid, over many sizes.
import assert from "node:assert";
import test from "node:test";

import {
  colorLut, contrastText, heatmapFigure, legibleLabels, modelGrid, stepFigure,
} from "../../transformer/explorer/static/figures.js";
import {decodePayload} from "../../transformer/explorer/static/payload.js";
import {MEAN, focusView, stepView} from "../../transformer/explorer/static/views.js";
import {needs, pythonCases} from "./cases.js";

const views = pythonCases("VIEW_CASES"), colours = pythonCases("COLOUR_CASES");
const data = views && decodePayload(views.payload);
const stateOf = (choices) => Object.assign({layer: null, head: MEAN, rows: "predicted token", hide: false, merge: false,
  step: 1, off: [], measure: "weight"}, choices);
const wide = {big: false, height: 900, width: 4000, phone: false};  // cells so large that no label is left out

test("the figures get Python's cases", needs(views && colours), () => {
  assert.ok(views.focus.length && views.steps.length && colours.samples.length === 256);
});

for (const c of views ? views.focus : []) {
  const s = c.state;
  test(`heatmap as reference_views.attention_heatmap: ${s.tab}, ${s.rows}, hide ${s.hide}, merge ${s.merge}, ` +
       `layer ${s.layer} head ${s.head}`, () => {
    const view = focusView(data, stateOf(s), s.tab);
    const {trace, layout} = heatmapFigure(view, 1, {...wide, colorscale: data.colorscale});
    assert.deepStrictEqual(trace.customdata, c.focus.customdata);
    assert.strictEqual(trace.hovertemplate, c.focus.hovertemplate);
    assert.strictEqual(trace.z, view.z);
    assert.deepStrictEqual([layout.xaxis.ticktext, layout.yaxis.ticktext], [c.focus.k, c.focus.q]);
    assert.deepStrictEqual(layout.xaxis.tickvals, c.focus.k.map((_, i) => i));
    assert.deepStrictEqual([layout.xaxis.side, layout.yaxis.autorange, layout.yaxis.scaleanchor], ["top", "reversed", "x"]);
    assert.deepStrictEqual([layout.coloraxis.cmin, layout.coloraxis.cmax, layout.coloraxis.colorscale], [0, 1, data.colorscale]);
    assert.strictEqual(layout.title.text, c.focus.title);
  });
}

for (const c of views ? views.steps : []) {
  const s = c.state;
  test(`step figure as reference_views.step_figure: step ${s.step}, head ${s.head}, hide ${s.hide}, merge ${s.merge}`, () => {
    const step = stepView(data, stateOf(s));
    const {data: [bars, row], layout} = stepFigure(step, {big: false, height: 380});
    assert.deepStrictEqual([bars.x, bars.y, bars.marker.color, bars.customdata],
      [c.bars.x, c.bars.y, c.bars.color, c.bars.customdata]);
    assert.deepStrictEqual([bars.hovertemplate, bars.texttemplate], [c.bars.hovertemplate, c.bars.texttemplate]);
    assert.deepStrictEqual([row.customdata, row.hovertemplate], [c.attention.customdata, c.attention.hovertemplate]);
    assert.strictEqual(row.y, step.view.z[0]);
    assert.deepStrictEqual(layout.xaxis2.ticktext, c.keys);
    assert.deepStrictEqual(layout.annotations.map((a) => a.text), c.annotations);
    assert.deepStrictEqual([layout.xaxis.domain, layout.xaxis2.domain], [[0, 0.34], [0.44, 1]]);
    // its margins hold the token labels, so Plotly draws it once (no automargin)
    const measure = (text, size) => 0.6 * size * text.replace(/&[a-z#0-9]+;/g, "x").length;
    const wide = stepFigure(step, {big: false, height: 380, measure}).layout;
    assert.ok(wide.margin.autoexpand === false && !wide.yaxis.automargin && !wide.xaxis2.automargin);
    assert.ok(wide.margin.l >= Math.max(...wide.yaxis.ticktext.map((t) => measure(t, wide.yaxis.tickfont.size))));
    assert.ok(wide.margin.b >= Math.max(...wide.xaxis2.ticktext.map((t) => measure(t, wide.xaxis2.tickfont.size))) *
      Math.SQRT1_2);
  });
}

test("the model view's colours are plotly's sample_colorscale of the payload's scale, rounded", needs(colours), () => {
  const lut = colorLut(colours.colorscale);
  assert.strictEqual(lut.length, 256);
  const rgb = (c) => c.match(/[\d.]+/g).map(Number);
  lut.forEach((c, i) => rgb(c).forEach((v, j) => assert.ok(Math.abs(v - rgb(colours.samples[i])[j]) <= 0.5 + 1e-9,
    `level ${i}: ${c} against ${colours.samples[i]}`)));
});

test("text on a summary cell is black on light colours and white on dark ones", () => {
  assert.deepStrictEqual([contrastText(255, 255, 255), contrastText(0, 0, 0)], ["#000", "#fff"]);
  assert.deepStrictEqual([contrastText(247, 251, 255), contrastText(8, 48, 107)], ["#000", "#fff"]);  // Blues' ends
});

test("fitted labels never overlap, shrink the font before leaving any out, and leave out no more than needed", () => {
  for (const big of [false, true]) {
    for (const angle of [-45, -60]) {
      for (let cell = 1; cell <= 60; cell += 0.5) {
        const labels = Array.from({length: 40}, (_, i) => `w${i}`);
        const layout = {xaxis: {}, yaxis: {}};
        const key = legibleLabels(layout, {q: {label: labels}, k: {label: labels}}, cell, angle, big);
        const size = layout.xaxis.tickfont.size, step = Number(key.split("|")[2]);
        assert.ok(size >= 12 && size <= (big ? 20 : 14), `size ${size}`);
        assert.ok(step * cell >= 1.25 * size, "a label and its air fit between two written labels");
        assert.ok(step === 1 || (step - 1) * cell < 1.25 * size, "no more labels left out than needed");
        if (cell >= 15) assert.strictEqual(step, 1, "at 12 px every label fits: none is left out");
        const kept = layout.xaxis.ticktext.filter((t) => t !== "");
        assert.deepStrictEqual(kept, labels.filter((_, i) => i % step === 0));
        assert.deepStrictEqual(layout.yaxis.ticktext, layout.xaxis.ticktext);
        const slanted = cell * Math.abs(Math.sin(angle * Math.PI / 180)) >= 1.25 * size;
        assert.strictEqual(layout.xaxis.tickangle, slanted ? angle : -90);
      }
    }
  }
});

test("a phone's heatmap: its title wraps, no axis titles, a thin colour bar; presenting, no key title", () => {
  const view = {z: [[1, 0], [0, 1]], q: {label: ["a", "b"]}, k: {label: ["c", "d"]}, title: "Encoder · layer 1 · head 2"};
  const phone = heatmapFigure(view, 1, {big: false, height: 400, width: 360, phone: true, colorscale: []}).layout;
  assert.strictEqual(phone.title.text, "Encoder<br>layer 1<br>head 2");
  assert.deepStrictEqual([phone.xaxis.title.text, phone.yaxis.title.text, phone.coloraxis.colorbar.thickness], ["", "", 10]);
  const big = heatmapFigure(view, 1, {big: true, height: 400, width: 900, phone: false, colorscale: []}).layout;
  assert.deepStrictEqual([big.xaxis.title.text, big.font.size], ["", 20]);
});

test("a map's margins hold its widest labels, its titles and its colour bar, so its cells are known before it is drawn",
  () => {
    const measure = (text, size) => 0.5 * size * text.length;  // a font of the test's own
    for (const [big, phone, width, height] of [[false, false, 900, 700], [true, false, 900, 560], [false, true, 360, 600]]) {
      for (const n of [3, 12, 40]) {
        const labels = Array.from({length: n}, (_, i) => (i === 1 ? "&lt;eos&gt;" : `w${"x".repeat(i % 9)}`));
        const view = {z: labels.map(() => labels.map(() => 0)), q: {label: labels}, k: {label: labels}, title: "A · b"};
        const {layout, cell, labelled} = heatmapFigure(view, 1, {big, phone, width, height, measure, colorscale: []});
        const m = layout.margin, x = layout.xaxis, y = layout.yaxis;
        const widest = (axis) => Math.max(...axis.ticktext.filter((t) => t).map((t) =>
          measure(t.replace("&lt;", "<").replace("&gt;", ">"), axis.tickfont.size)));
        const where = JSON.stringify({big, phone, n, m});
        assert.strictEqual(m.autoexpand, false, where);  // Plotly's automargin would draw twice
        assert.ok(!x.automargin && !y.automargin, where);
        assert.ok(m.l >= widest(y), where);
        const slant = Math.abs(Math.sin(x.tickangle * Math.PI / 180));
        assert.ok(m.t >= widest(x) * slant + layout.title.font.size, where);
        assert.ok(m.r >= layout.coloraxis.colorbar.thickness + measure("100%", layout.font.size), where);
        assert.strictEqual(cell, Math.min((width - m.l - m.r) / n, (height - m.t - m.b) / n), where);
        // the labels fit that cell: a written label and its air between two written ones, slanted ones across
        // their slant, and no smaller than a cell twice as large would allow
        const [fontSize, angle, step] = labelled.split("|").map(Number);
        assert.deepStrictEqual([x.tickfont.size, y.tickfont.size, x.tickangle], [fontSize, fontSize, angle], where);
        assert.ok(step * cell >= 1.25 * fontSize - 1e-9, where);
        if (angle !== -90) assert.ok(step * cell * slant >= 1.25 * fontSize - 1e-9, where);
        const larger = legibleLabels(structuredClone(layout), view, 2 * cell, big ? -45 : -60, big).split("|").map(Number);
        assert.ok(fontSize <= larger[0], where);
      }
    }
  });

test("the model view's grid fits its width, each map within its largest size, cells at most twice as wide as tall", () => {
  for (const big of [false, true]) {
    for (const width of [300, 640, 1200]) {
      for (const [L, H, Q, K] of [[6, 8, 13, 12], [2, 4, 5, 40], [3, 2, 40, 5], [1, 1, 1, 1]]) {
        const g = modelGrid(width, L, H, Q, K, big);
        assert.ok(g.label + H * g.mapW + (H - 1) * g.gap <= width + 1e-9);
        assert.ok(g.mapW <= (big ? 200 : 150) && g.mapH <= (big ? 220 : 160));
        assert.ok(g.cellW <= 2 * g.cellH + 1e-9 && g.used <= g.mapW + 1e-9);
        assert.ok(Math.abs(g.cellH * Q - g.mapH) < 1e-9 && Math.abs(g.used - g.cellW * K) < 1e-9);
        assert.strictEqual(g.height, g.top + L * (g.mapH + g.gap));
      }
    }
  }
});
