"""The beam-search tree panel: the search of the translation on screen, recorded when this tab opens (never on
the main translation path, `service.py`), drawn as a tree by `tree.js` from the figures `search_tree.py` builds;
a node picked shows its prefix and where it looked in the source."""
from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import gradio as gr

from transformer.explorer.panels.start import HtmlTab, PanelStart
from transformer.explorer.web.page import select_control, start_module
from transformer.explorer.web.wiring import QUIET, model_group, with_event

HERE = Path(__file__).resolve().parent
SCRIPTS = (HERE / "tree.js",)
STYLES = (HERE / "tree.css",)


@cache
def tree_template() -> str:
    """The beam-search tree panel: the tree, a node selector, and the chosen node's prefix and attention."""
    return (
        '<div class="explorer panel" id="tree-panel">'
        '<p class="message"></p><div class="panel-body" hidden>'
        '<p class="note">Output steps run left to right; each node is a token the search considered. Red: the best '
        "translation; blue: the other n-best; grey: kept, then dropped; pale: pruned. Orange dashes: greedy "
        "decoding. Hover a node for its probability and score; click it (or choose it below) to see its "
        "prefix and where it looked in the source.</p>"
        '<p id="tree-fit" class="note" hidden></p>'  # tree.js: when the tree cannot fit the screen
        '<div id="tree-plot" class="plot"></div>'
        '<div class="controls">' + select_control("tree-node", "Node") + select_control("tree-layer", "Layer")
        + select_control("tree-head", "Head") + "</div>"
        '<p class="note"><b>Prefix:</b> <span id="tree-prefix"></span></p>'
        '<p class="note"><b>Node:</b> <span id="tree-status"></span></p>'
        '<div id="node-plot" class="plot"></div>'
        "</div></div>"
    )


def follow_result(explorer: Any, tab: HtmlTab, result: Any, tab_on_screen: str, view_json: str) -> dict:
    """A new translation: its tree while this tab is open (`TreeService.on_tree_view`), else the old tree goes."""
    return {tab.view: explorer.tree.on_tree_view(result, tab_on_screen, view_json)}


@cache
def js_on_load() -> str:
    """Starts the panel's script on its component; it sends the custom event 'pick'."""
    return start_module(SCRIPTS[0], "initTreePanel", ("pick",))


def build(start: PanelStart) -> HtmlTab:
    """The tab and its gr.HTML panel; tree.js sends the custom event 'pick'."""
    with gr.Tab("Beam-search tree", id="tree", elem_id="tab-tree") as tab:
        panel = gr.HTML(None, html_template=tree_template(), js_on_load=js_on_load(),
                        elem_id="search", apply_default_css=False)
    return HtmlTab(tab, panel)


def wire(page: Any, tab: HtmlTab, entered: Any) -> None:
    """The tab opened (`entered`: the event that recorded it): the search of the translation on screen, recorded
    once and drawn; a node, layer or head picked in it (tree.js's 'pick')."""
    states, explorer = page.states, page.explorer
    quiet_model = QUIET | model_group(explorer)
    tree_inputs = [states.result, states.tab, states.view]
    entered.then(page.per_session(explorer.tree.on_tree_view), tree_inputs, [tab.view], **quiet_model)
    tab.view.pick(page.per_session(with_event(explorer.tree.tree_pick)), [states.result], [tab.view], **quiet_model)
