"""The attention panel: every attention view of one translation (encoder self-, decoder self- and cross-attention,
step by step), drawn in the browser by `explorer.js` from one payload per translation
(`transformer.explorer.maps.payload`); heads switched off and norm maps are reruns of the model (`reruns.py`).

Its skeleton is static, so a new payload never re-renders it: the view controls, the views' tabs and one container
per view (the ids the tests use). The inside panel (how one weight is computed) goes under the maps, in this tab.
"""
from __future__ import annotations

import html
from functools import cache
from pathlib import Path

import gradio as gr

from transformer.explorer.core import texts
from transformer.explorer.core.texts import KIND_TITLES
from transformer.explorer.core.view_state import ROWS_INPUT, ROWS_PREDICTED
from transformer.explorer.panels.start import HtmlTab, PanelStart
from transformer.explorer.web.page import head_html, start_module

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "explorer.js"
SCRIPTS = (SCRIPT, HERE / "controls.js")
STYLES = (HERE / "attention.css",)

TABS = {**KIND_TITLES, "steps": "Step by step"}
ROWS_CHOICES = (ROWS_INPUT, ROWS_PREDICTED)
MEASURE_CHOICES = (("weight", "how much it looks (weight)"), ("norm", "how much it takes in (norm)"))


SAVE_BUTTONS = ('<div class="save" role="group" aria-label="Save this map">'
                '<button type="button" data-format="png">Save PNG</button>'
                '<button type="button" data-format="svg">Save SVG</button></div>')


PLOT = '<div class="plot"></div>'


def _view(view_id: str, inner: str = PLOT) -> str:
    return f'<div id="{view_id}" class="view"><p class="message" hidden></p>{inner}</div>'


# the cross view's switch between its map and an aligner's drawing of it (static/alignment_lines.js; a link's align=1)
ALIGN_SWITCH = ('<label id="align" class="control"><input type="checkbox"> Draw as a word alignment: a line from '
                'each translated word to the source word it looks at most</label>')


def _kind_panel(kind: str) -> str:
    rollout = ""
    if kind == "encoder":
        rollout = ('<h2 class="view-label">All layers together (rollout): how much of each English word ends '
                   'up in each position</h2>' + _view("rollout"))
    return (
        f'<div role="tabpanel" id="panel-{kind}" data-tab="{kind}" aria-labelledby="tab-{kind}">'
        + (ALIGN_SWITCH if kind == "cross" else "") +
        f'<div class="focus-row">{_view(f"focus-{kind}", SAVE_BUTTONS + PLOT)}'
        f'<div class="side"><h2 class="view-label">Heads: low numbers look at few words, high numbers spread out.'
        f'<span class="more"> Click a cell (or press Enter on it) to show that head; the layer label shows the layer&rsquo;s average. '
        f'With &ldquo;Click heads to switch them off&rdquo; ticked, a click switches the head off or on.</span></h2>'
        f'<div id="grid-{kind}" class="grid"></div>'
        f'<p class="note legend">{html.escape(texts.ROLE_LEGEND)}</p></div></div>'
        f'<h2 class="view-label">Every layer (rows) and head (columns); click a map to show it large</h2>'
        + _view(f"model-{kind}", '<canvas></canvas><div class="tip" hidden></div>')
        + rollout + "</div>"
    )


@cache
def html_template() -> str:
    """The static skeleton: view controls, tabs, and one container per view (ids the tests use)."""
    rows = "".join(f'<label><input type="radio" name="explorer-rows" value="{r}">{r}</label>' for r in ROWS_CHOICES)
    measures = "".join(f'<label><input type="radio" name="explorer-measure" value="{v}">{html.escape(t)}</label>'
                       for v, t in MEASURE_CHOICES)
    tabs = "".join(f'<button type="button" role="tab" id="tab-{key}" data-tab="{key}" aria-controls="panel-{key}">'
                   f"{html.escape(title)}</button>" for key, title in TABS.items())
    steps = (
        '<div role="tabpanel" id="panel-steps" data-tab="steps" aria-labelledby="tab-steps" hidden>'
        '<label id="step" class="control">Decoding step '
        '<input type="range" min="1" max="2" step="1" value="1" disabled></label>'
        '<p id="step-text" class="note"></p>' + _view("step-plot") + "</div>"
    )
    return (
        '<div class="explorer">'
        '<p id="caption" class="caption"></p>'
        '<div class="controls">'
        '<label id="layer" class="control">Layer <select></select></label>'
        '<label id="head" class="control">Head <select></select></label>'
        f'<fieldset id="rows" class="control"><legend>Decoder rows labelled by</legend>{rows}</fieldset>'
        '<label id="hide" class="control"><input type="checkbox"> Hide &lt;bos&gt;/&lt;eos&gt;</label>'
        '<label id="merge" class="control"><input type="checkbox"> Merge subwords into words</label>'
        f'<fieldset id="measure" class="control"><legend>Maps show</legend>{measures}</fieldset>'
        '<label id="ablate" class="control"><input type="checkbox"> Click heads to switch them off</label>'
        '<button type="button" id="heads-on" class="control" disabled>All heads on</button>'
        "</div>"
        '<p id="ablation" class="note" hidden></p>'
        '<p id="hidden-mass" class="note"></p>'
        '<p id="agreement" class="note" hidden></p>'  # explorer.js: how far the opening read-out agrees with a person
        f'<div class="tablist" role="tablist" aria-label="Attention views">{tabs}</div>'
        + "".join(_kind_panel(k) for k in KIND_TITLES) + steps + "</div>"
    )


@cache
def js_on_load() -> str:
    """Starts explorer.js on the component (`element`, `props`, `watch` from gr.HTML); it asks the
    server for a model pass (heads switched off, norms) with gr.HTML's `trigger("rerun", ...)`."""
    return start_module(SCRIPT, "initExplorer", ("rerun",))



def build(start: PanelStart) -> HtmlTab:
    """Every attention view, drawn in the browser (explorer.js) from one payload per translation; the tab stays
    open (`HtmlTab.tab`) for the inside panel to go under the maps."""
    with gr.Tab("Attention", id="attention", elem_id="tab-attention") as tab:
        panel = gr.HTML(None, html_template=html_template(), js_on_load=js_on_load(), head=head_html(start.scripts),
                        elem_id="explorer", apply_default_css=False, view=start.view.client())
    return HtmlTab(tab, panel)
