// The explorer's views put on the page: Plotly figures (figures.js, alignment_lines.js) drawn into their
// containers, the head summary table, the model view's canvas, the decoding step, a map saved for slides and
// the keyboard's cell on a focus map. Each function draws into the explorer's element `root` (browser.html_template's
// skeleton) from arrays views.js computed. Figures wait for plotly.js when it is not loaded yet (withPlotly).

import {alignmentFigure, describeAlignment} from "./alignment_lines.js";
import {PLOT_FONT, contrastText, fontSizeOf, heatmapFigure, modelGrid, stepFigure} from "./figures.js";
import {fitToWindow, withPlotly} from "./share.js";
import {MEAN, headRoles, isOff} from "./views.js";

// not responsive: Plotly's own resize collapsed a fixed-height map's container to 0 px, so the views below were
// drawn over it; explorer.js redraws every view at its new size instead
export const PLOT_CONFIG = {displaylogo: false, responsive: false, displayModeBar: false};

export const present = () => document.body.classList.contains("present");
const phone = () => window.innerWidth <= 760;  // explorer.css's phone layout
// a label's text as shown: Plotly labels come escaped by Python (token_labels.escape_label)
const plain = (s) => new DOMParser().parseFromString(s, "text/html").documentElement.textContent;

// a view's message instead of its plot (no message: the plot shows); returns the plot's element
export function setMessage(root, id, message) {
  const div = root.querySelector(`#${id}`);
  const note = div.querySelector(".message"), plot = div.querySelector(".plot");
  note.textContent = message || "";
  note.hidden = !message;
  if (plot) {
    plot.hidden = Boolean(message);
    if (message && window.Plotly) window.Plotly.purge(plot);
  }
  return plot;
}

// the stage (a screen wider than a phone): the map fills the window below its own top, so the sentence, the
// translation and the whole map (axis labels included) are on one screen; at least 360 px (a 720p projector)
function mapHeight(plot, n) {
  if (!phone()) {
    const top = plot.getBoundingClientRect().top + window.scrollY;
    return Math.round(Math.max(360, Math.min(1400, window.innerHeight - top - 8)));
  }
  return Math.min(720, Math.max(360, 200 + 14 * n));
}

// the map's text alternative: what it is and its strongest link
function describe(view) {
  let best = [0, 0, -1];
  view.z.forEach((row, i) => row.forEach((v, j) => { if (v > best[2]) best = [i, j, v]; }));
  return `${plain(view.title)}. Rows: ${view.q.label.length}, columns: ${view.k.label.length}. Strongest link: ` +
    `${plain(view.q.label[best[0]])} looks at ${plain(view.k.label[best[1]])} (${(best[2] * 100).toFixed(0)}%).`;
}

// the draw's number goes into data-drawn once Plotly has drawn it (empty while it draws: tests wait on it)
function nextDraw(plot) {
  const draw = (plot.__draw || 0) + 1;
  plot.__draw = draw;
  plot.dataset.drawn = "";
  return draw;
}

// a label's width in px, in the font Plotly writes it with: measured on a canvas, which needs no layout
let ruler = null;
function labelWidth(text, size) {
  ruler = ruler || document.createElement("canvas").getContext("2d");
  ruler.font = `${size}px ${PLOT_FONT}`;
  return ruler.measureText(text).width;
}

// A map as a heatmap into view `id`, in one Plotly draw (its margins and labels are computed before it:
// figures.heatmapFigure); `onDrawn(plot)` once Plotly has drawn it.
export function drawHeatmap(root, id, view, zmax, colorscale, onDrawn) {
  const plot = setMessage(root, id, null);
  const n = Math.max(view.q.label.length, view.k.label.length);
  const {trace, layout} = heatmapFigure(view, zmax, {colorscale, big: present(), height: mapHeight(plot, n),
    width: plot.clientWidth, phone: phone(), measure: labelWidth});
  const draw = nextDraw(plot);
  withPlotly((plotly) => plotly.react(plot, [trace], layout, PLOT_CONFIG).then(() => {
    if (plot.__draw !== draw) return;  // a newer draw of this map is on its way
    if (onDrawn) onDrawn(plot);
    plot.dataset.drawn = String(draw);
  }));
  plot.setAttribute("role", "img");
  plot.setAttribute("aria-label", describe(view));
  if (plot.closest(".focus-row")) {  // a focus map takes the keyboard: its cells are chosen with the arrow keys
    plot.setAttribute("role", "application");
    plot.setAttribute("aria-roledescription", "attention map");
    plot.setAttribute("aria-label", `${describe(view)} Arrow keys choose a cell; Enter shows how its weight is computed.`);
  }
  plot.__view = view;  // for tests: what is drawn, before Plotly touches it
  plot.__alignment = null;
}

// the cross view as aligners draw an alignment (alignment_lines.js): `al` is its wordAlignment
export function drawAlignment(root, al, title) {
  const plot = setMessage(root, "focus-cross", null);
  const big = present();
  // as tall as the window below its top allows (its words and lines on one screen), as the maps are
  const figure = alignmentFigure(al, {title, fontSize: fontSizeOf(big), width: plot.clientWidth || 600,
    height: fitToWindow(plot, big ? 640 : 560, 320)});
  const draw = nextDraw(plot);
  withPlotly((plotly) => plotly.react(plot, figure.data, figure.layout, PLOT_CONFIG).then(() => {
    if (plot.__draw !== draw) return;
    if (plot.removeAllListeners) plot.removeAllListeners("plotly_click");  // no cell to explain here
    plot.dataset.drawn = String(draw);
  }));
  plot.setAttribute("role", "img");
  plot.setAttribute("aria-label", describeAlignment(al, title));
  plot.__view = null;
  plot.__alignment = al;  // for tests: the links drawn
}

// The keyboard's cell on the focus map of `kind` (cursors[kind]: [row, column], clamped to the map here): a red
// frame, and a sentence for the live region
export function drawCursor(root, kind, cursors) {
  const plot = root.querySelector(`#focus-${kind} .plot`), view = plot.__view;
  if (!view || !view.z.length || !window.Plotly || !plot.dataset.drawn) return;
  const Q = view.z.length, K = view.z[0].length;
  let [i, j] = cursors[kind] || [0, 0];
  [i, j] = [Math.min(Math.max(i, 0), Q - 1), Math.min(Math.max(j, 0), K - 1)];
  cursors[kind] = [i, j];
  window.Plotly.relayout(plot, {shapes: [{type: "rect", xref: "x", yref: "y", x0: j - 0.5, x1: j + 0.5,
    y0: i - 0.5, y1: i + 0.5, line: {color: "#d62728", width: 3}}]});
  root.querySelector(`#focus-${kind} .cell-now`).textContent = `Row ${i + 1}, ${plain(view.q.label[i])}, looks at ` +
    `column ${j + 1}, ${plain(view.k.label[j])}: ${(view.z[i][j] * 100).toFixed(1)}%.`;
  plot.dataset.cursor = `${i}.${j}`;  // tests read where the cursor is
}

// The head summary of `kind`: a table of buttons, a layer's mean and its heads' spread (entropy) coloured, with
// their role letters; the layer and head shown (`selLayer`, `selHead`) marked, heads switched off struck out
export function drawSummary(root, data, state, kind, selLayer, selHead) {
  const div = root.querySelector(`#grid-${kind}`);
  const ent = data.kinds[kind].entropy;
  const L = ent.values.length, H = L ? ent.values[0].length : 0;
  const table = document.createElement("table");
  table.className = "summary";
  const head = table.createTHead().insertRow();
  head.appendChild(document.createElement("th")).textContent = "layer";
  for (let h = 0; h < H; h++) head.appendChild(document.createElement("th")).textContent = `H${h + 1}`;
  const body = table.createTBody();
  for (let l = 0; l < L; l++) {
    const row = body.insertRow();
    for (let c = 0; c <= H; c++) {
      const cell = row.insertCell();
      const button = cell.appendChild(document.createElement("button"));
      button.type = "button";
      button.dataset.testid = `cell-${l}-${c}`;
      button.dataset.layer = l;
      button.dataset.head = c === 0 ? MEAN : c - 1;
      if (c === 0) {
        button.textContent = `L${l + 1}`;
        button.title = `layer ${l + 1}, mean over heads`;
      } else {
        const value = ent.values[l][c - 1];
        const roles = headRoles(data, kind, l, c - 1);
        const off = isOff(state, kind, l, c - 1);
        // named by its own text (the number and the role letters a class sees) with the words around them for a
        // screen reader: an aria-label must contain the visible text, and "0.40A" read as one word does not
        const words = (text) => Object.assign(document.createElement("span"), {className: "sr-only", textContent: text});
        button.append(words(`layer ${l + 1}, head ${c}${off ? ", switched off" : ""}, spread `), value.toFixed(2));
        if (roles.letters) {
          button.append(words(", roles "));
          const tag = button.appendChild(document.createElement("span"));
          tag.className = "roles";
          tag.textContent = roles.letters;
        }
        button.title = `layer ${l + 1}, head ${c}${off ? " (switched off)" : ""}: spread ${value.toFixed(2)} ` +
          `(low: looks at few words)${roles.text}`;
        button.dataset.kind = kind;
        button.style.background = ent.colors[l][c - 1];
        const [r, g, b] = ent.colors[l][c - 1].match(/[\d.]+/g).map(Number);
        button.style.color = contrastText(r, g, b);
        if (off) button.classList.add("off");
      }
      if (l === selLayer && c - 1 === selHead) button.classList.add("selected");
    }
  }
  div.replaceChildren(table);
}

// Every layer and head of `kind` on one canvas (`grid`: views.modelMaps's {maps, L, H}), coloured through `lut`
// (figures.colorLut); the layer and head shown framed in red (every head of the layer for the mean)
export function drawModel(root, kind, grid, lut, selLayer, selHead) {
  const {maps, L, H} = grid;
  const div = root.querySelector(`#model-${kind}`);
  setMessage(root, `model-${kind}`, null);
  const canvas = div.querySelector("canvas");
  const width = Math.max(div.clientWidth, 300);
  const big = present();
  const g = modelGrid(width, L, H, maps[0].z.length, maps[0].z[0].length, big);
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(g.height * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${g.height}px`;
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, g.height);
  ctx.font = `${fontSizeOf(big)}px sans-serif`;
  ctx.fillStyle = "#333";
  ctx.textAlign = "center";
  for (let h = 0; h < H; h++) ctx.fillText(`H${h + 1}`, g.label + h * (g.mapW + g.gap) + g.used / 2, g.top - 6);
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (let l = 0; l < L; l++) ctx.fillText(`L${l + 1}`, g.label - 6, g.top + l * (g.mapH + g.gap) + g.mapH / 2);
  const boxes = [];
  maps.forEach((m, idx) => {
    const l = Math.floor(idx / H), h = idx % H;
    const x0 = g.label + h * (g.mapW + g.gap), y0 = g.top + l * (g.mapH + g.gap);
    m.z.forEach((row, i) => row.forEach((v, j) => {
      ctx.fillStyle = lut[Math.max(0, Math.min(255, Math.round(v * 255)))];
      ctx.fillRect(x0 + j * g.cellW, y0 + i * g.cellH, Math.ceil(g.cellW), Math.ceil(g.cellH));
    }));
    if (l === selLayer && (selHead === h || selHead === MEAN)) {
      ctx.strokeStyle = "#d62728";
      ctx.lineWidth = 2;
      ctx.strokeRect(x0 - 1, y0 - 1, g.used + 2, g.mapH + 2);
    }
    boxes.push({l, h, x0, y0, w: g.used, hgt: g.mapH, m});
  });
  canvas.__maps = maps;  // for tests: the arrays drawn, layer-major
  canvas.__boxes = boxes;
}

// the model view's map and cell under a mouse event on its canvas, or null
export function modelHit(event) {
  const canvas = event.currentTarget;
  const rect = canvas.getBoundingClientRect();
  const x = event.clientX - rect.left, y = event.clientY - rect.top;
  const box = (canvas.__boxes || []).find((b) => x >= b.x0 && x < b.x0 + b.w && y >= b.y0 && y < b.y0 + b.hgt);
  if (!box) return null;
  const i = Math.floor((y - box.y0) / box.hgt * box.m.z.length), j = Math.floor((x - box.x0) / box.w * box.m.z[0].length);
  return {box, i, j};
}

// the decoding step (`step`: views.stepView's value, without a message) into the step view
export function drawStep(root, step) {
  const plot = setMessage(root, "step-plot", null);
  const big = present();
  // down to 250 px, so that on a 720 px screen the chart ends above its bottom edge in the normal page too
  // at the width of its place now (a narrow one stacks its two charts: figures.STACK_BELOW)
  const figure = stepFigure(step, {big, height: fitToWindow(plot, big ? 480 : 380, 250), width: plot.clientWidth,
    measure: labelWidth});
  const draw = nextDraw(plot);
  withPlotly((plotly) => plotly.react(plot, figure.data, figure.layout, PLOT_CONFIG).then(() => {
    if (plot.__draw === draw) plot.dataset.drawn = String(draw);
  }));
  plot.__view = step.view;
}

// a map for slides: the figure on screen at 1920x1080, titled with the sentence, as PNG or SVG
export function saveMap(button, data, state) {
  const plot = button.closest(".view").querySelector(".plot");
  if (!data || !plot || !plot.data || !window.Plotly) return;
  const esc = (t) => String(t).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const title = `${esc(data.source)} \u2192 ${esc(data.translation)}<br>${plot.layout.title.text}`;
  // an alignment drawing keeps room for its slanted words above and below its rows
  const margin = plot.__alignment ? {l: 140, r: 140, t: 300, b: 180} : {l: 90, r: 40, t: 220, b: 40};
  const layout = Object.assign({}, plot.layout, {width: 1920, height: 1080,
    title: Object.assign({}, plot.layout.title, {text: title}), margin});
  const what = plot.__alignment ? "alignment" : "attention";
  const name = `${what}-${state.tab}-layer${state.layer + 1}-${state.head < 0 ? "mean" : `head${state.head + 1}`}`;
  window.Plotly.downloadImage({data: plot.data, layout, config: PLOT_CONFIG},
    {format: button.dataset.format, width: 1920, height: 1080, filename: name});
}
