// The view the page shows, shared by the attention explorer, the tree and compare panels and the page URL:
// {state, share, explorer, viewJson}, kept as window.__attention (tests and benches read it). Whichever part
// asks first creates it (gradio mounts the components of a tab when it first shows). The URL parameters and
// their validation are in transformer/explorer/core/view_state.py: the server validates a link when the page opens
// (web/page.py's JS_RESTORE applies the result); from then on the address bar follows the view (history.replaceState).
// An ES module: the explorer, the panels and the page's event functions import it (web/page.py).

export function attentionView() {
  if (window.__attention) return [window.__attention, false];
  // auto: no layer or head chosen yet (each kind opens on its default: explorer.js autoPick)
  const state = {tab: "encoder", layer: null, head: -1, auto: true, rows: "predicted token", hide: false,
    merge: false, step: 1, off: [], measure: "weight", cell: null, linkedCell: null, align: false};
  const view = {state, explorer: null};
  view.viewJson = () => JSON.stringify({kind: state.tab, layer: state.layer, head: state.head, rows: state.rows});
  view.share = makeShare(state);
  // a validated view from the server (ViewState.client()); nothing but these fields is taken from it
  view.restore = (restored) => {
    const v = restored && typeof restored === "object" ? restored : {};
    if (["encoder", "decoder", "cross", "steps"].includes(v.tab)) state.tab = v.tab;
    if (v.layer === null || Number.isInteger(v.layer)) state.layer = v.layer;
    if (Number.isInteger(v.head)) state.head = v.head;
    state.auto = state.layer === null && state.head === -1;
    if (Number.isInteger(v.step) && v.step > 1) { state.step = v.step; state.linkedStep = true; }
    if (["decoder input token", "predicted token"].includes(v.rows)) state.rows = v.rows;
    if (typeof v.hide === "boolean") state.hide = v.hide;
    if (typeof v.merge === "boolean") state.merge = v.merge;
    state.align = v.align === true;  // the cross view as an alignment drawing (sent only when on)
    if (Array.isArray(v.off)) state.off = v.off;  // validated by the server (core/view_state.py), like the rest
    if (["weight", "norm"].includes(v.measure)) state.measure = v.measure;
    // a linked cell: explorer.js asks the inside panel for it once the link's translation is drawn
    const cell = Array.isArray(v.cell) && v.cell.length === 2 && v.cell.every(Number.isInteger) ? v.cell : null;
    state.linkedCell = cell;
    if (view.explorer) view.explorer.refresh();
  };
  // the panels change the shared state; the explorer redraws (now, or when it shows again)
  view.set = (changes) => {  // a layer or head chosen in a panel ends the defaults (explorer.js autoPick)
    Object.assign(state, changes, "layer" in changes || "head" in changes ? {auto: false, cell: null} : {});
    if (view.explorer) view.explorer.refresh();
    view.share.sync();
  };
  window.__attention = view;
  return [view, true];
}

function makeShare(state) {
  // `known`: values of controls that are not on the page yet (a closed accordion, a tab not opened)
  const share = {ready: false, tab: "attention", known: {}};
  const value = (sel) => { const el = document.querySelector(sel); return el ? el.value : null; };
  share.params = () => {
    const p = new URLSearchParams();
    const text = value("#source textarea, #source input");
    if (text) p.set("text", text);
    const yours = value("#yours textarea, #yours input");
    if (yours) p.set("yours", yours);
    // after "Greedy vs beam" the link carries no second sentence: it opens on greedy against beam again
    const compare = value("#compare-source textarea, #compare-source input") ?? share.known.compare;
    if (compare && share.compareMode !== "methods") p.set("compare", compare);
    const model = value("#model input");
    if (model) p.set("model", model);
    const method = document.querySelector("#method input:checked");
    if (method) p.set("method", method.value);
    const beam = value("#beam input[type=number]");
    if (beam) p.set("beam", beam);
    const lp = value("#lp input[type=number]") ?? share.known.lp;
    if (lp !== null && lp !== undefined && lp !== "") p.set("lp", String(lp));
    p.set("tab", share.tab);
    p.set("kind", state.tab);
    if (!state.auto) {  // a view left on its defaults stays so: the link opens on the defaults too
      if (Number.isInteger(state.layer)) p.set("layer", String(state.layer + 1));
      p.set("head", state.head < 0 ? "mean" : String(state.head + 1));
    }
    if (state.tab === "steps" && state.step > 1) p.set("step", String(state.step));
    // the cell the inside panel explains (explorer.js sets it on a click and clears it when the map changes)
    if (Array.isArray(state.cell)) p.set("cell", `${state.cell[0] + 1}.${state.cell[1] + 1}`);
    p.set("rows", state.rows === "predicted token" ? "predicted" : "input");
    p.set("hide", state.hide ? "1" : "0");
    p.set("merge", state.merge ? "1" : "0");
    if (state.align) p.set("align", "1");  // left out when off, as ViewState.to_query does
    const codes = {encoder: "e", decoder: "d", cross: "c"};
    const off = (state.off || []).map((h) => `${codes[h[0]]}${h[1] + 1}.${h[2] + 1}`).sort();
    if (off.length) p.set("off", off.join(","));
    if (state.measure === "norm") p.set("measure", "norm");
    p.set("present", document.body.classList.contains("present") ? "1" : "0");
    return p;
  };
  share.url = () => `${window.location.origin}${window.location.pathname}?${share.params().toString()}`;
  let timer = null;
  share.sync = () => {
    if (!share.ready) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      const search = `?${share.params().toString()}`;
      if (search === window.location.search) return;
      const before = window.location.href.split("#")[0];
      window.history.replaceState(window.history.state, "", search);
      repointSvgReferences(before, window.location.href.split("#")[0]);
    }, 150);
  };
  share.enterTab = (tab) => { share.tab = tab; share.sync(); };
  // the copy-link button: the URL to the clipboard (where allowed) and into the link field
  share.copy = () => {
    const url = share.url();
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(url).catch(() => {});
    return url;
  };
  for (const type of ["input", "change", "click", "keyup"]) document.addEventListener(type, () => share.sync(), true);
  return share;
}

// Plotly writes gradient fills and clip paths as url(<page address>#id) when the page has a <base>
// element (Gradio's has one). Once the address changes, those references name another document and
// the colour bars of figures drawn before go blank, so they are pointed at the new address.
function repointSvgReferences(before, after) {
  document.querySelectorAll(".js-plotly-plot [style*='url('], .js-plotly-plot [clip-path]").forEach((el) => {
    for (const prop of ["fill", "stroke"]) {
      const value = el.style.getPropertyValue(prop);
      if (value.includes(before)) el.style.setProperty(prop, value.split(before).join(after));
    }
    const clip = el.getAttribute("clip-path");
    if (clip && clip.includes(before)) el.setAttribute("clip-path", clip.split(before).join(after));
  });
}

// plotly.js comes in a <script> that gradio adds to the page when it mounts the attention component, so a value
// to draw (a translation, a learning step) can arrive before it has loaded: on a slow network, or a busy
// machine. Every figure is drawn through here; draws that come early wait for plotly.js, in the order they came.
export function withPlotly(draw) {
  if (window.Plotly) { draw(window.Plotly); return; }
  const queue = (window.__plotlyQueue = window.__plotlyQueue || []);
  queue.push(draw);
  if (queue.length > 1) return;  // the first early draw's timer drains them all
  const wait = setInterval(() => {
    if (!window.Plotly) return;
    clearInterval(wait);
    for (const early of queue.splice(0)) early(window.Plotly);
  }, 50);
}

// The height a figure at `el` may take so that its bottom stays on screen (a projector's 720 px): the window
// below its top, between `least` and `most` (its own height). A phone scrolls anyway, so it keeps `most`.
export function fitToWindow(el, most, least) {
  least = least === undefined ? 300 : least;
  if (window.innerWidth <= 760) return most;
  const top = el.getBoundingClientRect().top + window.scrollY;
  return Math.round(Math.max(least, Math.min(most, window.innerHeight - top - 8)));
}
