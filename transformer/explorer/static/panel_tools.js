// What the tree and compare panels share: a panel's elements, selectors filled as plain text, a figure drawn,
// its message, and the explorer's shared view state (share.js). An ES module: tree.js and compare.js import it.

import {attentionView, withPlotly} from "./share.js";

export const PANEL_CONFIG = {displaylogo: false, responsive: true, displayModeBar: false};

export function panelTools(root) {
  const $ = (sel) => root.querySelector(sel);
  function fill(select, items, selected) {  // items: [label, value]; labels are plain text
    select.replaceChildren(...items.map(([label, value]) => {
      const option = document.createElement("option");
      option.value = String(value);
      option.textContent = label;
      return option;
    }));
    select.value = String(selected);
  }
  function layerHead(layerSel, headSel, nLayers, nHeads, layer, head) {
    fill(layerSel, Array.from({length: nLayers}, (_, i) => [`Layer ${i + 1}`, i]), layer);
    fill(headSel, [["mean over heads", -1], ...Array.from({length: nHeads}, (_, h) => [`Head ${h + 1}`, h])], head);
  }
  function draw(div, figure) {  // the server sends each figure as one JSON text (figures.figure_json)
    const fig = typeof figure === "string" ? JSON.parse(figure) : figure;
    withPlotly((plotly) => plotly.react(div, fig.data, fig.layout, PANEL_CONFIG));
  }
  function message(text) {
    const note = $(".message");
    note.textContent = text || "";
    note.hidden = !text;
    $(".panel-body").hidden = Boolean(text);
  }
  // the shared view state (static/share.js), changed here too (the explorer redraws when it shows)
  const setShared = (changes) => attentionView()[0].set(changes);
  const shared = () => attentionView()[0].state;
  return {$, fill, layerHead, draw, message, setShared, shared};
}
