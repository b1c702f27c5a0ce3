// The explorer's Plotly figures and their sizes, built from the arrays of views.js: the heatmap of a map, the
// decoding step's two bar charts, tick labels fitted to their cells, the colour table of the model view, the
// layout of its grid of maps. A pure ES module (no DOM: sizes come in as numbers), unit-tested under Node
// (tests/js/figures.test.js) against the Python figures of tests/reference_views.py and plotly's own colour
// sampling. draw.js puts these on the page.

// `big`: presentation mode (body.present), larger fonts everywhere
export const fontSizeOf = (big) => (big ? 20 : 14);
// the smallest a token label gets (px): still read from the back of a room; past it, labels are thinned out
export const LABEL_MIN = 12;

// `scale` ([[x, "rgb(r, g, b)"], ...], the payload's colorscale) sampled at 256 points, as CSS colours
export function colorLut(scale) {
  const rgb = (c) => c.match(/[\d.]+/g).slice(0, 3).map(Number);
  const stops = scale.map(([x, c]) => [x, rgb(c)]);
  const lut = [];
  for (let i = 0; i < 256; i++) {
    const x = i / 255;
    let s = 0;
    while (s < stops.length - 2 && x > stops[s + 1][0]) s++;
    const [x0, c0] = stops[s], [x1, c1] = stops[s + 1];
    const f = x1 > x0 ? (x - x0) / (x1 - x0) : 0;
    lut.push(`rgb(${c0.map((v, j) => Math.round(v + f * (c1[j] - v))).join(",")})`);
  }
  return lut;
}

// black or white text, whichever contrasts more with the cell (WCAG relative luminance)
export function contrastText(r, g, b) {
  const lin = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  const L = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  return (L + 0.05) / 0.05 >= 1.05 / (L + 0.05) ? "#000" : "#fff";
}

// an axis labelled with one token per position (labels escaped by Python: token_labels.escape_label)
export function tokenAxis(labels, extra, big) {
  const n = labels.length;
  return Object.assign({tickmode: "array", tickvals: labels.map((_, i) => i), ticktext: labels,
    tickfont: {size: Math.max(LABEL_MIN, Math.min(big ? 20 : 14, Math.floor(420 / Math.max(n, 1))))},
    // "allow": plotly.js would otherwise check every label against the figure's edge once per label drawn (a
    // map's margins already hold its labels)
    showgrid: false, zeroline: false, automargin: true, ticklabeloverflow: "allow"}, extra);
}

// Tick labels that never run into each other, however many columns (the best viewers thin their axes the
// same way): the font follows the cell's size down to LABEL_MIN px, slanted column labels stand upright when their
// slant leaves too little room between them, and past that only every k-th label is written; every cell still
// names its row and column on hover. `cell`: a cell's side in px; `angle`: the slant asked for. Sets `layout`'s
// axes and returns what it chose (a key).
export function legibleLabels(layout, view, cell, angle, big) {
  cell = Math.max(cell, 1);
  const x = layout.xaxis, y = layout.yaxis;
  // the font shrinks to fit a cell (a line of text and a little air: 1.25 x its size) before any label is left out
  const size = Math.max(LABEL_MIN, Math.min(big ? 20 : 14, Math.floor(cell / 1.25)));
  const room = 1.25 * size;
  const slant = Math.abs(Math.sin(angle * Math.PI / 180));
  x.tickangle = cell * slant >= room ? angle : -90;
  const step = Math.ceil(room / cell);
  const thin = (labels) => (step > 1 ? labels.map((t, i) => (i % step ? "" : t)) : labels);
  x.tickfont = {size};
  y.tickfont = {size};
  x.ticktext = thin(view.k.label);
  y.ticktext = thin(view.q.label);
  return `${size}|${x.tickangle}|${step}`;
}

export function baseLayout(title, extra, fontSize) {
  return Object.assign({title: {text: title, x: 0.5, xanchor: "center", yref: "container", y: 1, yanchor: "top",
    pad: {t: 12}, font: {size: fontSize + 2}}, font: {size: fontSize}, paper_bgcolor: "white",
  plot_bgcolor: "white", margin: {l: 60, r: 30, t: 110, b: 30}}, extra);
}

// The font Plotly writes with (its default family): draw.js measures labels in it on a canvas
export const PLOT_FONT = '"Open Sans", verdana, arial, sans-serif';
// a label's width in px without a canvas (Node's tests): wide enough for most fonts' average letter
const estimateWidth = (text, size) => 0.62 * size * text.length;
// a label as written (Python escapes Plotly's labels: token_labels.escape_label)
const unescape = (s) => String(s).replace(/<[^>]*>/g, "").replace(/&lt;/g, "<").replace(/&gt;/g, ">")
  .replace(/&quot;/g, '"').replace(/&#0*39;|&#x27;/g, "'").replace(/&amp;/g, "&");

// The margins a map's labels, titles and colour bar take, computed rather than left to Plotly's automargin, which
// draws the axes, measures them and draws the whole figure again: with its margins known, a map is one draw and
// its cell size is known before it (`cellOf`). `measure(text, size)`: a label's width in px.
function mapMargins(layout, measure) {
  const x = layout.xaxis, y = layout.yaxis, font = layout.font.size;
  const widest = (labels, size) => labels.reduce((w, t) => (t === "" ? w : Math.max(w, measure(unescape(t), size))), 0);
  const xw = widest(x.ticktext, x.tickfont.size), yw = widest(y.ticktext, y.tickfont.size);
  const slant = Math.abs(x.tickangle) * Math.PI / 180;
  const xLabels = xw * Math.sin(slant) + x.tickfont.size * Math.cos(slant) + 6;
  const lines = (layout.title.text.match(/<br>/g) || []).length + 1;
  const title = 12 + lines * 1.3 * (font + 2) + 6;
  const axisTitle = (axis) => (axis.title && axis.title.text ? font * 1.3 + 8 : 0);
  const bar = layout.coloraxis.colorbar;
  const barTitle = bar.title && bar.title.text ? 1.3 * font + 4 : 0;  // written upright beside the bar
  const r = 2 * bar.xpad + bar.thickness + 6 + measure("100%", font) + barTitle + 4;
  return {l: Math.ceil(axisTitle(y) + yw + 8), r: Math.ceil(r), t: Math.ceil(title + axisTitle(x) + xLabels),
    b: layout.margin.b, autoexpand: false};
}

// a cell's side in px once the margins are set: square cells (scaleanchor), the map as large as its place allows
function cellOf(layout, view, width) {
  const m = layout.margin;
  return Math.min((width - m.l - m.r) / Math.max(view.k.label.length, 1),
    (layout.height - m.t - m.b) / Math.max(view.q.label.length, 1));
}

// A map as a heatmap: rows are queries from the top, keys along the top, colours on [0, zmax]; hover names the
// query, the key and the value. `view`: {z, q, k, title, measure}. `o`: {colorscale, big, height, width (the
// plot's width in px, 0 before it has one), phone (a window 760 px wide or less), measure (a label's width in px;
// an estimate without it)}. Returns the trace and the layout, its labels fitted to the cell size its margins leave
// (`cell`, `labelled`: legibleLabels's choice).
export function heatmapFigure(view, zmax, o) {
  const customdata = view.z.map((row, i) => row.map((_, j) => [view.q.label[i], view.k.label[j]]));
  const big = o.big;
  const measure = view.measure || "weight";
  const trace = {type: "heatmap", z: view.z, customdata, coloraxis: "coloraxis",
    hovertemplate: `query: %{customdata[0]}<br>key: %{customdata[1]}<br>${measure === "weight" ? "weight" : "norm share"}: ` +
      "%{z:.1%}<extra></extra>"};
  const layout = baseLayout(view.title, {
    // presentation: no "key" title above the rotated labels, so the map itself gets the height
    xaxis: tokenAxis(view.k.label, {side: "top", tickangle: big ? -45 : -60, constrain: "domain",
      title: {text: big ? "" : "key"}, automargin: false}, big),
    yaxis: tokenAxis(view.q.label, {autorange: "reversed", scaleanchor: "x", scaleratio: 1, constrain: "domain",
      title: {text: "query"}, automargin: false}, big),
    coloraxis: {cmin: 0, cmax: zmax, colorscale: o.colorscale,
      // the colour bar's title beside it (side "right"): above it, it ran into "100%" and the column labels
      colorbar: {title: {text: measure === "weight" ? "weight" : "norm share", side: "right"}, tickformat: ".0%", thickness: 14,
        x: 1, xanchor: "left", xpad: 8}},
    height: o.height,
    width: o.width || undefined,  // the width of the place it has now (draw.js redraws on a change of width)
  }, fontSizeOf(big));
  layout.margin = {b: big ? 10 : 30};
  if (o.phone) {  // a phone (explorer.css): the title wraps, a thin colour bar, small margins
    layout.xaxis.title = {text: ""};
    layout.yaxis.title = {text: ""};
    layout.coloraxis.colorbar = Object.assign(layout.coloraxis.colorbar, {thickness: 10, title: {text: ""}});
    layout.title.text = layout.title.text.replace(/ \u00b7 /g, "<br>");
    layout.margin = {b: 20};
  }
  // the labels fitted to the cell the margins leave, and the margins to the labels: a few rounds settle it
  const width = o.width || 800, angle = layout.xaxis.tickangle, size = (t, s) => (o.measure || estimateWidth)(t, s);
  let labelled = "", fitted = 0, cell = 0;
  for (let round = 0; round < 8; round++) {
    layout.margin = mapMargins(layout, size);
    cell = cellOf(layout, view, width);
    // done when the labels were fitted to a cell no larger than the one their margins leave (two sizes can take
    // turns: the smaller one's margins leave room for the larger one, whose margins do not)
    if (labelled && fitted <= cell + 1e-9) break;
    labelled = legibleLabels(layout, view, cell, angle, big);
    fitted = cell;
  }
  return {trace, layout, cell, labelled};
}

// The decoding step's figure (reference_views.step_figure): the top next tokens as horizontal bars (the chosen
// one red) beside the step's cross-attention row over the source (above it, in a place narrower than STACK_BELOW).
// `step`: views.stepView's value; `o`: {big, height, width (the plot's width in px; none: side by side), measure (a
// label's width in px; an estimate without it)}. Its margins hold the widest token labels
// (as a map's do: one Plotly draw, no automargin).
export function stepFigure(step, o) {
  const {rec, view} = step;
  const top = rec.top;
  const bars = {type: "bar", orientation: "h", x: top.map((x) => x[2]), y: top.map((_, i) => i),
    marker: {color: top.map((x) => (x[0] === rec.token ? "#d62728" : "#1f77b4"))}, customdata: top.map((x) => x[1]),
    hovertemplate: "%{customdata}: %{x:.1%}<extra></extra>", texttemplate: "%{x:.0%}", textposition: "outside",
    constraintext: "none", showlegend: false};  // its labels at the figure's size (Plotly shrank them to thin bars)
  const src = view.k;
  const attention = {type: "bar", x: src.label.map((_, i) => i), y: view.z[0] || [], xaxis: "x2", yaxis: "y2",
    marker: {color: "#1f77b4"}, customdata: src.label, hovertemplate: "%{customdata}: %{y:.1%}<extra></extra>",
    showlegend: false};
  const fontSize = fontSizeOf(o.big);
  const panel = (text, x) => ({text, x, y: 1.02, xref: "paper", yref: "paper", xanchor: "center",
    yanchor: "bottom", showarrow: false, font: {size: fontSize}});
  const layout = baseLayout(step.title, {
    xaxis: {domain: [0, 0.34], anchor: "y", range: [0, 1.15], tickformat: ".0%", title: {text: "probability"}},
    yaxis: tokenAxis(top.map((x) => x[1]), {domain: [0, 1], anchor: "x", autorange: "reversed", automargin: false},
      o.big),
    xaxis2: tokenAxis(src.label, {domain: [0.44, 1], anchor: "y2", tickangle: -45, automargin: false}, o.big),
    yaxis2: {domain: [0, 1], anchor: "x2", range: [0, 1], tickformat: ".0%", title: {text: "cross-attention"}},
    annotations: [panel(`Top-${top.length} next tokens`, 0.17), panel("Cross-attention over the source", 0.72)],
    height: o.height,
  }, fontSize);
  const measure = o.measure || estimateWidth;
  if (o.width) layout.width = o.width;
  if (o.width && o.width < STACK_BELOW) {
    stackStep(layout, o.width, measure);
    return {data: [bars, attention], layout};
  }
  const below = widest(layout.xaxis2, measure) * Math.SQRT1_2 + layout.xaxis2.tickfont.size * Math.SQRT1_2 + 10;
  layout.margin = {l: Math.ceil(Math.max(70, widest(layout.yaxis, measure) + 14)), r: 30, t: 90,
    b: Math.ceil(Math.max(90, below)), autoexpand: false};
  return {data: [bars, attention], layout};
}

// the widest of an axis's tick labels in px
const widest = (axis, measure) => axis.ticktext.reduce((w, t) => Math.max(w, measure(unescape(t), axis.tickfont.size)), 0);
// narrower than this (px), the step's two charts stand one above the other (presentation mode at 1280x720: side by
// side, their titles ran into each other and their labels collided)
export const STACK_BELOW = 800;
// the smallest a step chart's token label gets (px)
const STEP_LABEL_MIN = 14;

// The step's figure in a narrow place: the title on two lines when it does not fit on one, the top next tokens
// above, the cross-attention row below across the whole width, each chart under its own title; every margin and
// label size computed from the width and height, so nothing runs into anything else.
function stackStep(layout, width, measure) {
  const font = layout.font.size;
  const title = layout.title;
  if (measure(unescape(title.text), title.font.size) > width - 20) title.text = title.text.replace(/ \u00b7 /g, "<br>");
  const lines = (title.text.match(/<br>/g) || []).length + 1;
  // Plotly sets a title's first line at its anchor: the lines after it need the room above them
  title.pad = {t: 12 + (lines - 1) * 1.3 * title.font.size};
  const panelTitle = 1.3 * font + 8;
  const top = 12 + lines * 1.3 * title.font.size + 6 + panelTitle;
  const x2 = layout.xaxis2, y = layout.yaxis, y2 = layout.yaxis2;
  const axisTitle = 1.3 * font + 8 + measure("100%", font);
  const left = Math.ceil(Math.max(widest(y, measure) + 14, axisTitle + 10));
  const plotW = width - left - 30;
  fitColumns(x2, plotW, font);
  const below = Math.ceil(widest(x2, measure) * Math.abs(Math.sin(x2.tickangle * Math.PI / 180)) + x2.tickfont.size + 10);
  layout.margin = {l: left, r: 30, t: Math.ceil(top), b: below, autoexpand: false};
  // the plot area split: the bars, the probability ticks and the second chart's title, the attention row
  const area = layout.height - layout.margin.t - below, gap = 2 * font + 6 + panelTitle;
  const each = Math.max(40, (area - gap) / 2);
  const rows = y.ticktext.length;
  y.tickfont = {size: Math.max(STEP_LABEL_MIN, Math.min(font, Math.floor(each / Math.max(rows, 1) / 1.25)))};
  Object.assign(layout.xaxis, {domain: [0, 1], title: {text: ""}});
  y.domain = [Math.min(1, 1 - each / area), 1];
  Object.assign(x2, {domain: [0, 1]});
  Object.assign(y2, {domain: [0, Math.max(0, each / area)], tickvals: [0, 0.5, 1]});
  layout.annotations[0] = Object.assign(layout.annotations[0], {x: 0.5, y: 1, yshift: 2,
    text: `${layout.annotations[0].text}: probability`});
  // above the row's "100%", which stands half a line over the chart's top
  layout.annotations[1] = Object.assign(layout.annotations[1], {x: 0.5, y: y2.domain[1], yshift: 0.7 * font});
}

// a bar chart's column labels fitted to `plotW` px: slanted, or upright when slanted ones would touch, the font
// down to STEP_LABEL_MIN, then every k-th label only
function fitColumns(axis, plotW, font) {
  const n = Math.max(axis.ticktext.length, 1), cell = plotW / n;
  let size = Math.max(STEP_LABEL_MIN, Math.min(font, Math.floor(cell * Math.SQRT1_2 / 1.25)));
  axis.tickangle = -45;
  if (cell * Math.SQRT1_2 < 1.25 * size) {
    axis.tickangle = -90;
    size = Math.max(STEP_LABEL_MIN, Math.min(font, Math.floor(cell / 1.25)));
  }
  const every = Math.ceil(1.25 * size / (axis.tickangle === -90 ? cell : cell * Math.SQRT1_2));
  axis.tickfont = {size};
  if (every > 1) axis.ticktext = axis.ticktext.map((t, i) => (i % every ? "" : t));
}

// The model view's grid (every layer a row, every head a column) in a canvas `width` px wide: L x H maps of
// Q x K cells, each map at most 150 x 160 px (200 x 220 presenting), cells at most twice as wide as tall.
// Returns the sizes in px: `label` (the layer labels' column), `top` (the head labels' row), `gap`, a map's
// `mapW` x `mapH`, a cell's `cellW` x `cellH`, `used` (the width a map's cells fill) and the canvas `height`.
export function modelGrid(width, L, H, Q, K, big) {
  const label = big ? 48 : 36, top = big ? 30 : 22, gap = 6;
  const mapW = Math.min((width - label - gap * (H - 1)) / H, big ? 200 : 150);
  const mapH = Math.min(mapW * Q / K, big ? 220 : 160);
  const cellW = Math.min(mapW / K, mapH / Q * 2), cellH = mapH / Q;
  return {label, top, gap, mapW, mapH, cellW, cellH, used: cellW * K, height: top + L * (mapH + gap)};
}
