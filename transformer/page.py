"""The browser side of the attention explorer: its HTML skeleton, script and styles, read from disk.

`app.py` puts these into one `gr.HTML` component: the skeleton is static (so a new payload never
re-renders it), `static/explorer.js` draws the views into it from the payload of
`transformer.payload.attention_payload`, and plotly.js comes from the installed `plotly` package,
served by the app itself (never a CDN: nothing leaves the machine).
"""
from __future__ import annotations

import html
from functools import cache
from pathlib import Path

import plotly

STATIC_DIR = Path(__file__).resolve().parent / "static"
PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"

KIND_TITLES = {"encoder": "Encoder self-attention", "decoder": "Decoder self-attention", "cross": "Cross-attention"}
TABS = {**KIND_TITLES, "steps": "Step by step"}
ROWS_CHOICES = ("decoder input token", "predicted token")


def _view(view_id: str, inner: str = '<div class="plot"></div>') -> str:
    return f'<div id="{view_id}" class="view"><p class="message" hidden></p>{inner}</div>'


def _kind_panel(kind: str) -> str:
    rollout = ""
    if kind == "encoder":
        rollout = '<h4 class="view-label">Aggregate: attention rollout</h4>' + _view("rollout")
    return (
        f'<div role="tabpanel" id="panel-{kind}" data-tab="{kind}" aria-labelledby="tab-{kind}">'
        f'<div class="focus-row">{_view(f"focus-{kind}")}'
        f'<div class="side"><h4 class="view-label">Head summary: mean row entropy (low = focused). '
        f'Click a cell to focus that head (layer column: mean over heads).</h4>'
        f'<div id="grid-{kind}" class="grid"></div></div></div>'
        f'<h4 class="view-label">Model view: every layer (rows) &times; head (columns); click a map to focus it</h4>'
        + _view(f"model-{kind}", '<canvas></canvas><div class="tip" hidden></div>')
        + rollout + "</div>"
    )


@cache
def html_template() -> str:
    """The static skeleton: view controls, tabs, and one container per view (ids the tests use)."""
    rows = "".join(f'<label><input type="radio" name="explorer-rows" value="{r}">{r}</label>' for r in ROWS_CHOICES)
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
        "</div>"
        '<p id="hidden-mass" class="note"></p>'
        f'<div class="tablist" role="tablist" aria-label="Attention views">{tabs}</div>'
        + "".join(_kind_panel(k) for k in KIND_TITLES) + steps + "</div>"
    )


@cache
def js_on_load() -> str:
    """explorer.js plus the call that starts it on the component (`element`, `props`, `watch` from gr.HTML)."""
    return (STATIC_DIR / "explorer.js").read_text(encoding="utf-8") + "\ninitExplorer(element, props, watch);\n"


@cache
def stylesheet() -> str:
    """Page-wide CSS: the explorer and the presentation mode (body.present), which restyles gradio parts too."""
    return (STATIC_DIR / "explorer.css").read_text(encoding="utf-8")


def head_html() -> str:
    """The <script> that loads plotly.js from the installed plotly package, through the app's file route."""
    return f'<script src="gradio_api/file={PLOTLY_JS.as_posix()}"></script>'
