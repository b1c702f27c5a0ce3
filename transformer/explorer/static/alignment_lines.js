// The cross view drawn the way aligners draw an alignment: the source words in a row above, the translation's
// below, a line from each translation word to the source word its row weighs most. The links are read as
// transformer/training/alignment.py reads them to score AER (word_maps, then links_from), so a line on screen
// is a link that alignment.json's precision and recall count. A pure ES module (draw.js imports it), unit-tested
// under Node against alignment.py's own answers (tests/js/alignment_lines.test.js).

import {LABEL_MIN} from "./figures.js";

// An axis's words as alignment.py counts them: the payload's word groups (token_labels.word_groups) that hold a piece
// other than <bos>/<eos>/<pad>, in order; `pieces[w]` lists the positions of word w's non-special pieces.
export function alignmentWords(info) {
  const byGroup = new Map();
  info.groups.forEach((g, i) => {
    if (info.special[i]) return;
    if (!byGroup.has(g)) byGroup.set(g, []);
    byGroup.get(g).push(i);
  });
  const groups = Array.from(byGroup.keys()).sort((a, b) => a - b);
  return {pieces: groups.map((g) => byGroup.get(g)), label: groups.map((g) => info.words[g]),
    raw: groups.map((g) => info.words_raw[g])};
}

// alignment.word_maps for one map: a translation word's row is the mean of its pieces' rows, a source word's
// column the sum of its pieces' columns, specials left out (rows not renormalised). `w` is the cross map (rows:
// the query axis `q`, the decoder's predicting rows or its input rows; columns: the source axis `k`), q and k
// the payload's token_info of those axes. Then alignment.links_from: each translation word whose row has any
// weight is linked to its heaviest source word (the first of equals).
export function wordAlignment(w, q, k) {
  const tgt = alignmentWords(q), src = alignmentWords(k);
  const map = tgt.pieces.map((rows) => src.pieces.map((cols) => {
    let sum = 0;
    for (const i of rows) for (const j of cols) sum += w[i][j];
    return sum / rows.length;
  }));
  const links = [];
  map.forEach((row, t) => {
    let best = -1;
    row.forEach((v, s) => { if (v !== 0 && (best < 0 || v > row[best])) best = s; });
    if (best >= 0) links.push({source: best, target: t, weight: row[best]});
  });
  return {source: src, target: tgt, map, links};
}

// Each row's words spread evenly over [0, 1]; the row with fewer words is centred under the other.
export function rowPositions(n, m) {
  const step = 1 / Math.max(n, m, 1);
  const start = (1 - step * n) / 2;
  return Array.from({length: n}, (_, i) => start + step * (i + 0.5));
}

// How a row of `n` words is written in `width` px (legibleLabels' rule for a map's labels): upright where the
// longest fits its share, else slanted at -45 degrees where the space across the slant holds a line of text, else
// standing (-90); the font follows the room down to LABEL_MIN px, and past that only every `step`-th word is
// written (hover names every word). `extent`: the height (px) the written words take above or below their row.
export function wordLabels(words, n, width, fontSize) {
  const longest = Math.max(1, ...words.map((w) => String(w).length));
  const pitch = Math.max(width - 80, 1) / Math.max(n, 1);  // px between two words of the longer row
  let size = Math.max(LABEL_MIN, Math.min(fontSize + 2, Math.floor(900 / Math.max(n, 1))));
  if (n <= 10 && longest * size * 0.6 <= pitch * 0.92) return {angle: 0, size, step: 1, extent: size * 1.4};
  const across = pitch * Math.SQRT1_2;  // the room between two slanted words, across their slant
  const angle = across >= 1.25 * LABEL_MIN ? -45 : -90;
  size = Math.max(LABEL_MIN, Math.min(fontSize + 2, Math.floor((angle === -45 ? across : pitch) / 1.25)));
  const step = Math.ceil(1.25 * size / (angle === -45 ? across : pitch));
  const extent = longest * size * 0.6 * (angle === -45 ? Math.SQRT1_2 : 1) + size;
  return {angle, size, step, extent};
}

// The Plotly figure of an alignment: one line (a layout shape) per link, darker and wider as its weight grows,
// the words as text at y = 1 (source) and y = 0 (translation), each word's links in its hover text.
// `opts`: {title, fontSize, height (the whole figure's, its words' room included), width (of the plot, in px),
// sourceName, targetName}. Words that cannot all be written at a readable size are thinned, and the title says so.
export function alignmentFigure(al, opts) {
  const o = Object.assign({title: "", fontSize: 14, height: 380, width: 900, sourceName: "source",
    targetName: "translation"}, opts || {});
  const xs = rowPositions(al.source.label.length, al.target.label.length);
  const xt = rowPositions(al.target.label.length, al.source.label.length);
  const n = Math.max(al.source.label.length, al.target.label.length);
  const fit = wordLabels(al.source.label.concat(al.target.label), n, o.width, o.fontSize);
  const {size, angle, step} = fit;
  const shown = (labels) => labels.map((w, i) => (i % step ? "" : w));
  const pct = (v) => `${(v * 100).toFixed(0)}%`;
  const shapes = al.links.map((l) => ({type: "line", xref: "x", yref: "y", x0: xs[l.source], y0: 1,
    x1: xt[l.target], y1: 0, layer: "below",
    line: {color: `rgba(31,119,180,${(0.35 + 0.65 * Math.min(1, l.weight)).toFixed(3)})`,
      width: +(1 + 4 * Math.min(1, l.weight)).toFixed(2)}}));
  const linksOf = (side) => (i) => al.links.filter((l) => l[side] === i);
  const srcHover = al.source.label.map((word, i) => `${word}` + linksOf("source")(i)
    .map((l) => `<br>\u2192 ${al.target.label[l.target]} (${pct(l.weight)})`).join(""));
  const tgtHover = al.target.label.map((word, i) => `${word}` + linksOf("target")(i)
    .map((l) => `<br>\u2190 ${al.source.label[l.source]} (${pct(l.weight)})`).join(""));
  const row = (x, y, labels, hover, position, name) => ({type: "scatter", mode: "markers+text", x, y: x.map(() => y),
    text: labels, customdata: hover, textposition: position, cliponaxis: false, name, showlegend: false,
    textfont: {size}, marker: {size: 7, color: "#1f77b4"}, hovertemplate: "%{customdata}<extra></extra>"});
  const data = [row(xs, 1, al.source.label, srcHover, "top center", o.sourceName),
    row(xt, 0, al.target.label, tgtHover, "bottom center", o.targetName)];
  if (angle) {  // scatter text cannot rotate: long rows' words go in slanted annotations instead
    data.forEach((d) => { d.mode = "markers"; });
  }
  const slanted = (labels, x, y, above) => labels.map((text, i) => ({text, x: x[i], y, xref: "x", yref: "y",
    showarrow: false, textangle: angle, xanchor: angle === -90 ? "center" : (above ? "left" : "right"),
    yanchor: above ? "bottom" : "top", yshift: above ? 6 : -6, font: {size}})).filter((a) => a.text !== "");
  const annotations = angle ? [...slanted(shown(al.source.label), xs, 1, true),
    ...slanted(shown(al.target.label), xt, 0, false)] : [];
  // the title in lines that fit the width (broken at its last " · "), then what thinning left out
  const fits = (t) => t.length * (o.fontSize + 2) * 0.55 <= o.width - 20;
  const lines = [fits(o.title) ? o.title : o.title.replace(/ \u00b7 (?=[^\u00b7]*$)/, "<br>")];
  if (step > 1) lines.push(`every ${step === 2 ? "second" : `${step}th`} word written; hover for all`);
  const title = lines.join("<br>");
  const top = title.split("<br>").length * (o.fontSize + 2) * 1.3 + 16;  // the title's lines
  // a slanted row leans out sideways by as much as it rises: the source's last word to the right, the
  // translation's first to the left
  const side = angle === -45 ? Math.round(Math.min(fit.extent, 140)) : angle ? 30 : 40;
  const margin = {l: side, r: side, t: Math.round(top + fit.extent), b: Math.round(fit.extent + 10)};
  const layout = {title: {text: title, x: 0.5, xanchor: "center", yref: "container", y: 1, yanchor: "top",
    pad: {t: 12}, font: {size: o.fontSize + 2}}, font: {size: o.fontSize}, paper_bgcolor: "white",
  plot_bgcolor: "white", showlegend: false, hovermode: "closest", height: o.height, margin,
  shapes, annotations, xaxis: {range: [0, 1], visible: false, fixedrange: true}, yaxis: {range: [-0.08, 1.08], visible: false,
    fixedrange: true}};
  return {data, layout};
}

// A sentence for screen readers: which words the lines join.
export function describeAlignment(al, title) {
  const pairs = al.links.map((l) => `${al.target.raw[l.target]} \u2013 ${al.source.raw[l.source]}`);
  return `${title}. ${al.links.length} line${al.links.length === 1 ? "" : "s"}: ${pairs.join(", ")}.`;
}
