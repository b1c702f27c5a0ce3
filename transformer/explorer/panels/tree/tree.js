// The beam-search tree panel (a gr.HTML component; panel.py builds its skeleton). The server sends ready-made
// Plotly figures and plain texts (search_tree.py); this draws them, fills the selectors (option labels as
// textContent: never markup) and sends the user's choices back with trigger("pick", {...}) (a custom gr.HTML
// event). Layer and head are the explorer's shared state (share.js), so the attention views, this panel and
// the page URL agree.

import {panelTools} from "../../static/panel_tools.js";
import {fitToWindow, withPlotly} from "../../static/share.js";

export function initTreePanel(root, props, watch, trigger) {
  const t = panelTools(root);
  const panel = t.$(".panel"), tree = t.$("#tree-plot"), node = t.$("#node-plot");
  const nodeSel = t.$("#tree-node select"), layerSel = t.$("#tree-layer select"), headSel = t.$("#tree-head select");
  let treeRev = null, value = null;

  function pick(nodeId) {
    if (!value) return;
    panel.dataset.ready = "busy";
    const st = t.shared();
    trigger("pick", {node: nodeId, layer: st.layer, head: st.head, tree_rev: treeRev});
  }

  function render() {
    value = props.value && props.value.choices ? props.value : null;
    if (!value) {
      t.message("Translate a sentence, then open this tab: it shows the search that found the translation.");
      if (treeRev !== null) { withPlotly((plotly) => { plotly.purge(tree); plotly.purge(node); }); treeRev = null; }
      panel.dataset.ready = "empty";
      return;
    }
    t.message(null);
    if (value.tree && value.tree_rev !== treeRev) {
      t.draw(tree, value.tree);
      // a search too big for the screen below its top: the tree stays whole, and the page says so
      const tall = JSON.parse(value.tree).layout.height || 0;
      const over = t.$("#tree-fit");
      over.hidden = window.innerWidth <= 760 || fitToWindow(tree, tall, 0) >= tall;
      over.textContent = over.hidden ? "" : "This search is too big for one screen at a readable size: scroll " +
        "down for the rest of the tree.";
      treeRev = value.tree_rev;
      if (!tree.__clicks) {  // a click on a node selects it (customdata = node id)
        tree.on("plotly_click", (event) => {
          const id = event && event.points && event.points[0] ? event.points[0].customdata : undefined;
          if (Number.isInteger(id) && id > 0) pick(id);
        });
        tree.__clicks = true;
      }
    }
    t.fill(nodeSel, value.choices, value.selected);
    t.layerHead(layerSel, headSel, value.n_layers, value.n_heads, value.layer, value.head);
    t.$("#tree-prefix").textContent = value.prefix;
    t.$("#tree-status").textContent = value.status;
    t.draw(node, value.node);
    node.__row = value.row;  // for tests: the plotted cross-attention row
    panel.dataset.ready = `tree-${value.rev}`;
    panel.dataset.selected = String(value.selected);
  }

  nodeSel.addEventListener("change", () => pick(Number(nodeSel.value)));
  layerSel.addEventListener("change", () => { t.setShared({layer: Number(layerSel.value)}); pick(Number(nodeSel.value)); });
  headSel.addEventListener("change", () => { t.setShared({head: Number(headSel.value)}); pick(Number(nodeSel.value)); });
  watch("value", render);
  render();
}
