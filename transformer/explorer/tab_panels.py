"""The app's main column: its tabs (attention with the inside panel under the maps, beam-search tree, compare,
training, heads, watch it learn).

One `build_*` per panel, as in `side_panels`: each makes its gradio components inside the `gr.Tabs` block that
is open when it is called and returns them as a named tuple for `app.py` to wire. The views themselves are drawn
in the browser (static/explorer.js, panels.js, inside.js) from the values the handlers send.
"""
from __future__ import annotations

from collections import namedtuple
from typing import TYPE_CHECKING, Any

import gradio as gr

from . import browser, texts
from .share import ViewState

if TYPE_CHECKING:  # only for the annotation: the panels take a model's values, not the code that computes them
    from .models import ModelInfo

__all__ = ["HtmlTab", "CompareTab", "PlotTab", "build_attention_tab", "build_inside_panel", "build_tree_tab",
           "build_compare_tab", "build_model_tabs", "build_learn_tab"]

HtmlTab = namedtuple("HtmlTab", "tab view")  # the attention, tree and learning tabs: one gr.HTML each
CompareTab = namedtuple("CompareTab", "tab src run versus view")
PlotTab = namedtuple("PlotTab", "tab plot table")  # the training and the heads tab: a figure and a table


def build_attention_tab(view: ViewState) -> HtmlTab:
    """Every attention view, drawn in the browser (static/explorer.js) from one payload per translation; the
    tab stays open (`HtmlTab.tab`) for the inside panel to go under the maps."""
    with gr.Tab("Attention", id="attention", elem_id="tab-attention") as tab:
        html = gr.HTML(None, html_template=browser.html_template(), js_on_load=browser.js_on_load(), head=browser.head_html(),
                       elem_id="explorer", apply_default_css=False, view=view.client())
    return HtmlTab(tab, html)


def build_inside_panel() -> gr.HTML:
    """How the weight of a clicked cell is computed, below the maps (static/inside.js)."""
    return gr.HTML(None, html_template=browser.inside_template(), js_on_load=browser.inside_js(),
                   css_template=browser.CSS, elem_id="inside", apply_default_css=False)


def build_tree_tab() -> HtmlTab:
    """The search, recorded when this tab opens (never on the main translation path), drawn by static/panels.js."""
    with gr.Tab("Beam-search tree", id="tree", elem_id="tab-tree") as tab:
        html = gr.HTML(None, html_template=browser.tree_template(), js_on_load=browser.panels_js("tree"),
                       elem_id="search", apply_default_css=False)
    return HtmlTab(tab, html)


def build_compare_tab() -> CompareTab:
    """Two sentences (or greedy against beam) side by side, drawn by static/panels.js."""
    with gr.Tab("Compare", id="compare", elem_id="tab-compare") as tab:
        with gr.Row(equal_height=True):
            src = gr.Textbox(label="Compare with (change a word of the source sentence)", lines=1, max_lines=4,
                             elem_id="compare-source", scale=4)
            run = gr.Button("Compare", variant="primary", elem_id="compare-run", scale=1)
            versus = gr.Button("Greedy vs beam", elem_id="compare-methods", scale=1)
        html = gr.HTML(None, html_template=browser.compare_template(), js_on_load=browser.panels_js("compare"),
                       elem_id="compare", apply_default_css=False)
    return CompareTab(tab, src, run, versus, html)


def build_model_tabs(info: ModelInfo) -> tuple[PlotTab, PlotTab]:
    """How the model was trained (train_log.jsonl, metrics.json) and what its heads are for (head_*.json)."""
    with gr.Tab("Training", id="training", elem_id="tab-training") as tab:
        gr.Markdown(texts.TRAINING_FURTHER, elem_classes="further")
        training = PlotTab(tab, gr.Plot(info.figure, label="Training curves", elem_id="train-plot"), gr.Dataframe(
            info.metrics, label="Model card metrics (metrics.json)", interactive=False, elem_id="metrics"))
    with gr.Tab("Heads", id="heads", elem_id="tab-heads") as tab:
        gr.Markdown(texts.HEADS_FURTHER, elem_classes="further")
        heads = PlotTab(tab, gr.Plot(info.heads[0], label="Head importance and pruning", elem_id="heads-plot"),
                        gr.Dataframe(info.heads[1], label="Head roles", interactive=False, elem_id="head-roles"))
    return training, heads


def build_learn_tab(index: dict[str, Any] | None) -> HtmlTab:
    """The model at each of its training snapshots (shown only for a checkpoint that ships them: `index`)."""
    with gr.Tab("Watch it learn", id="learn", elem_id="tab-learn", visible=index is not None) as tab:
        html = gr.HTML(index, html_template=browser.learn_template(), js_on_load=browser.learn_js(),
                       css_template=browser.CSS, elem_id="learn", apply_default_css=False)
    return HtmlTab(tab, html)
