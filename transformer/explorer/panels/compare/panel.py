"""The compare panel: two sentences (or one decoded greedily and with beam search) side by side, their maps and
the difference over aligned tokens (`compare_view.py`), drawn by `compare.js`; translated by `service.py`."""
from __future__ import annotations

from collections import namedtuple
from functools import cache
from pathlib import Path
from typing import Any

import gradio as gr

from transformer.explorer.panels.start import PanelStart
from transformer.explorer.web.page import JS_VIEW, select_control, start_module
from transformer.explorer.web.wiring import PRIVATE, QUIET, model_group, with_event

HERE = Path(__file__).resolve().parent
SCRIPTS = (HERE / "compare.js",)
STYLES = (HERE / "compare.css",)
CompareTab = namedtuple("CompareTab", "tab src run versus view")


@cache
def compare_template() -> str:
    """The compare panel: both translations, both attention maps, and their difference."""
    side = ('<div id="compare-{0}" class="compare-side"><h2 class="label"></h2><p class="source"></p>'
            '<p class="output"></p></div>')
    return (
        '<div class="explorer panel" id="compare-panel">'
        '<p class="message"></p><div class="panel-body" hidden>'
        f'<div class="compare-texts">{side.format("left")}{side.format("right")}</div>'
        '<div class="controls">' + select_control("compare-kind", "Attention") + select_control("compare-layer", "Layer")
        + select_control("compare-head", "Head") + "</div>"
        '<p id="compare-fit" class="note" hidden></p>'  # compare.js: when the maps cannot fit the screen
        '<div class="compare-figures"><div id="compare-pair" class="plot"></div>'
        '<div id="compare-diff" class="plot"></div></div>'
        '<p id="compare-note" class="note" hidden></p>'
        "</div></div>"
    )


@cache
def js_on_load() -> str:
    """Starts the panel's script on its component; it sends the custom event 'pick'."""
    return start_module(SCRIPTS[0], "initComparePanel", ("pick",))


def build(start: PanelStart) -> CompareTab:
    """The tab: a second sentence, Compare, Greedy vs beam, and the gr.HTML panel (compare.js sends 'pick')."""
    with gr.Tab("Compare", id="compare", elem_id="tab-compare") as tab:
        with gr.Row(equal_height=True):
            src = gr.Textbox(label="Compare with (change a word of the source sentence)", lines=1, max_lines=4,
                             elem_id="compare-source", scale=4)
            run = gr.Button("Compare", variant="primary", elem_id="compare-run", scale=1)
            versus = gr.Button("Greedy vs beam", elem_id="compare-methods", scale=1)
        panel = gr.HTML(None, html_template=compare_template(),
                        js_on_load=js_on_load(),
                        elem_id="compare", apply_default_css=False)
    return CompareTab(tab, src, run, versus, panel)


def prefill(text: str, other: str) -> str:
    """The compare tab opened: its box keeps what it holds, else starts with the source sentence."""
    return other or text


def wire(page: Any, tab: CompareTab, entered: Any) -> None:
    """The tab opened (`entered`): its box prefilled; Compare and Greedy vs beam (each with the page's view,
    read in the browser first), and a kind, layer or head picked (compare.js's 'pick')."""
    states, controls, explorer = page.states, page.controls, page.explorer
    quiet_model = QUIET | model_group(explorer)
    entered.then(prefill, [controls.src, tab.src], [tab.src], queue=False, **PRIVATE)
    compared = tab.run.click(None, None, [states.view], js=JS_VIEW, **PRIVATE)
    compared.then(
        page.per_session(explorer.compare.on_compare),
        [controls.src, tab.src, controls.method, controls.beam, states.model, states.lp, states.view],
        [tab.view, states.compare],
        **quiet_model,
    )
    versus = tab.versus.click(None, None, [states.view], js=JS_VIEW, **PRIVATE)
    versus.then(
        page.per_session(explorer.compare.on_greedy_vs_beam),
        [controls.src, controls.beam, states.model, states.lp, states.view],
        [tab.view, states.compare],
        **quiet_model,
    )
    tab.view.pick(with_event(explorer.compare.compare_pick), [states.compare], [tab.view], **QUIET)
