// The cross view drawn the way aligners draw an alignment: the source words in a row above, the translation's
// below, a line from each translation word to the source word its row weighs most. The links are read as
// transformer/training/alignment.py reads them to score AER (word_maps, then links_from), so a line on screen
// is a link that alignment.json's precision and recall count. A pure ES module (draw.js imports it), unit-tested
// under Node against alignment.py's own answers (tests/js/alignment_lines.test.js).

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

// The Plotly figure of an alignment: one line (a layout shape) per link, darker and wider as its weight grows,
// the words as text at y = 1 (source) and y = 0 (translation), each word's links in its hover text.
// `opts`: {title, fontSize, height (slanted words add their room), width (of the plot, in px), sourceName,
// targetName}.
export function alignmentFigure(al, opts) {
  const o = Object.assign({title: "", fontSize: 14, height: 360, width: 900, sourceName: "source",
    targetName: "translation"}, opts || {});
  const xs = rowPositions(al.source.label.length, al.target.label.length);
  const xt = rowPositions(al.target.label.length, al.source.label.length);
  const n = Math.max(al.source.label.length, al.target.label.length);
  const size = Math.max(9, Math.min(o.fontSize + 2, Math.floor(900 / Math.max(n, 1))));
  // words slanted where the longest would not fit its share of the row (a character is about 0.6 em wide)
  const longest = Math.max(0, ...al.source.label.concat(al.target.label).map((w) => String(w).length));
  const tilt = n > 10 || longest * size * 0.6 > (o.width - 80) / Math.max(n, 1) * 0.92;
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
  if (tilt) {  // scatter text cannot rotate: long rows' words go in slanted annotations instead
    data.forEach((d) => { d.mode = "markers"; });
  }
  const annotations = tilt ? [
    ...al.source.label.map((text, i) => ({text, x: xs[i], y: 1, xref: "x", yref: "y", showarrow: false,
      textangle: -45, xanchor: "left", yanchor: "bottom", yshift: 6, font: {size}})),
    ...al.target.label.map((text, i) => ({text, x: xt[i], y: 0, xref: "x", yref: "y", showarrow: false,
      textangle: -45, xanchor: "right", yanchor: "top", yshift: -6, font: {size}})),
  ] : [];
  const margin = tilt ? {l: 90, r: 90, t: 150, b: 110} : {l: 40, r: 40, t: 110, b: 50};
  const layout = {title: {text: o.title, x: 0.5, xanchor: "center", yref: "container", y: 1, yanchor: "top",
    pad: {t: 12}, font: {size: o.fontSize + 2}}, font: {size: o.fontSize}, paper_bgcolor: "white",
  plot_bgcolor: "white", showlegend: false, hovermode: "closest", height: o.height + (tilt ? 140 : 0), margin,
  shapes, annotations, xaxis: {range: [0, 1], visible: false, fixedrange: true}, yaxis: {range: [-0.08, 1.08], visible: false,
    fixedrange: true}};
  return {data, layout};
}

// A sentence for screen readers: which words the lines join.
export function describeAlignment(al, title) {
  const pairs = al.links.map((l) => `${al.target.raw[l.target]} \u2013 ${al.source.raw[l.source]}`);
  return `${title}. ${al.links.length} line${al.links.length === 1 ? "" : "s"}: ${pairs.join(", ")}.`;
}
