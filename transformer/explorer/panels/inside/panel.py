"""Three ways into the model, with one service (`service.Inside`): how one weight of one head is computed (the
panel under the maps: `weight_computation.py`), a translation of one's own scored token by token (in the side
column: `your_translation.py`), and the "Watch it learn" tab (the model at its training snapshots:
`snapshots.py`). `inside.js` draws all three; `inside.css` styles them."""
from __future__ import annotations

from collections import namedtuple
from functools import cache
from pathlib import Path

import gradio as gr

from transformer.explorer.panels.start import PanelStart
from transformer.explorer.web.page import start_module

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "inside.js"
SCRIPTS = (SCRIPT,)
STYLES = (HERE / "inside.css",)
HtmlTab = namedtuple("HtmlTab", "tab view")
Yours = namedtuple("Yours", "box own score view")


def _step_heading(text: str) -> str:
    return f'<h3 class="inside-step">{text}</h3>'


@cache
def inside_template() -> str:
    """How one weight is computed, in five steps (each a plot or a sentence, filled by inside.js)."""
    return (
        # a region that takes focus: presentation mode shows it beside the map, scrolling on its own (explorer.css)
        '<div class="inside explorer" id="inside-panel" data-ready="empty" role="region" tabindex="0" '
        'aria-label="How this weight is computed">'
        # h2 and h3: the page's headings go down one level at a time (the tabs' own are h2), whichever tab is open
        '<h2 class="inside-title">How this weight is computed <button type="button" class="back">\u2191 back to the map'
        '</button></h2>'
        '<p class="busy note" hidden>Asking the model\u2026</p><p class="message"></p>'
        '<div class="inside-body" hidden>'
        '<p id="inside-title" class="caption"></p>'
        '<p id="inside-off" class="warn" hidden></p>'
        '<p id="inside-norm-note" class="note" hidden>The maps show norms \u2016\u03b1 f(x)\u2016; this panel '
        "explains the weight \u03b1 behind them.</p>"
        + _step_heading("1. The question and the label. Each token asks a question, the query q, and carries a label, the "
             "key k: lists of numbers the model computed for this head (red: positive, blue: negative).")
        + '<div id="inside-qk" class="plot"></div>'
        + _step_heading("2. Multiply them number by number (bottom strip: green where both agree in sign), add up, and scale: "
             "the score.")
        + '<p id="inside-score" class="note"></p>'
        + _step_heading("3. The same for every key of this row: the scores (the clicked key in red).")
        + '<div id="inside-scores" class="plot"></div><p id="inside-mask" class="note"></p>'
        + _step_heading("4. Softmax turns the scores into weights between 0 and 1 that add up to 1: the row of the map.")
        + '<div id="inside-weights" class="plot"></div><p id="inside-softmax" class="note"></p>'
        + _step_heading("5. What the head passes on: each key's value vector v times its weight, added up (the last row).")
        + '<div id="inside-values" class="plot"></div><p id="inside-output" class="note"></p>'
        "</div></div>"
    )


@cache
def yours_template() -> str:
    """Your translation, scored: the total, and one coloured chip per token (hover: the model's alternatives)."""
    return (
        '<div class="inside explorer" id="yours-panel" data-ready="empty">'
        '<p class="message"></p><div class="inside-body" hidden>'
        '<p class="yours-total note"></p>'
        '<p class="yours-off warn" hidden>Heads are switched off: these are the probabilities of the model '
        "without them.</p>"
        '<div class="yours-tokens"></div><pre class="yours-tip" hidden></pre>'
        '<p class="note">Green: the model expected this token; yellow: it found it possible; red: it found it '
        "unlikely. Hover a token for the model's own top choices at that place. The maps below now show where "
        "the model looks while it reads your translation.</p>"
        "</div></div>"
    )


@cache
def learn_template() -> str:
    """The model at each training snapshot: a slider, the sentence's translation, a map and the score curve."""
    select = '<label id="learn-{0}" class="control">{1} <select>{2}</select></label>'
    kinds = "".join(f'<option value="{k}">{t}</option>' for k, t in (
        ("cross", "Cross-attention"), ("encoder", "Encoder self-attention"), ("decoder", "Decoder self-attention")))
    return (
        '<div class="inside explorer" id="learn-panel" data-ready="empty">'
        '<p class="message"></p><div class="inside-body">'
        '<p class="note">The same sentence, translated by this model at a few moments of its training (greedy '
        "search, as the validation score was measured). Early on the attention is spread evenly over the "
        "sentence; as the model learns, each word looks at the words it translates.</p>"
        '<div class="controls"><label id="learn-step" class="control">Training step '
        '<input type="range" min="0" max="0" step="1" value="0"></label>'
        '<span id="learn-step-text" class="note"></span><span class="busy note" hidden>Asking the model\u2026</span>'
        "</div>"
        '<p id="learn-error" class="warn"></p>'
        '<p class="note">Source: <span id="learn-source"></span></p>'
        # "At this step": the side column's translation box keeps the finished model's, which reads differently
        '<p class="caption"><span class="note">At this step: </span><span id="learn-translation"></span></p>'
        '<p id="learn-score" class="note"></p>'
        '<div class="controls">' + select.format("kind", "Attention", kinds) + select.format("layer", "Layer", "")
        + select.format("head", "Head", "") + "</div>"
        '<div id="learn-map" class="plot"></div>'
        '<div id="learn-curve" class="plot"></div>'
        "</div></div>"
    )

def _start(fn: str, events: tuple[str, ...] = ()) -> str:
    return start_module(SCRIPT, fn, events)


@cache
def inside_js() -> str:
    """inside.js and the start of the inside panel; it sends the custom event 'cell'."""
    return _start("initInsidePanel", ("cell",))


@cache
def yours_js() -> str:
    return _start("initYours")


@cache
def learn_js() -> str:
    """inside.js and the start of the learning slider; it sends the custom event 'learn'."""
    return _start("initLearn", ("learn",))


def build_yours() -> Yours:
    """A translation of one's own: typed or edited, scored by the model (inside.js draws the tokens); in the side
    column, under the results."""
    with gr.Row(elem_id="yours-row", equal_height=True):
        box = gr.Textbox(label="Your translation: type German, or start from the model's and change it; then "
                         "press Score", lines=1, max_lines=4, elem_id="yours", scale=4)
        own = gr.Button("Start from the model's", elem_id="yours-own", scale=1, min_width=170)
        score = gr.Button("Score", elem_id="yours-score", scale=1, min_width=100)
    view = gr.HTML(None, html_template=yours_template(), js_on_load=yours_js(), elem_id="yours-view",
                   apply_default_css=False)
    return Yours(box, own, score, view)


def build_cell_panel() -> gr.HTML:
    """How the weight of a clicked cell is computed, below the maps (in the attention tab)."""
    return gr.HTML(None, html_template=inside_template(), js_on_load=inside_js(), elem_id="inside",
                   apply_default_css=False)


def build_learn(start: PanelStart) -> HtmlTab:
    """The model at each of its training snapshots (shown only for a checkpoint that ships them)."""
    with gr.Tab("Watch it learn", id="learn", elem_id="tab-learn", visible=start.learn_index is not None) as tab:
        panel = gr.HTML(start.learn_index, html_template=learn_template(), js_on_load=learn_js(), elem_id="learn",
                        apply_default_css=False)
    return HtmlTab(tab, panel)
