"""The browser side of the three ways into the model: the skeletons of their gr.HTML components, their styles,
and the script that starts each (static/inside.js); `side_panels.build_yours` and `tab_panels` build the components."""
from __future__ import annotations

from functools import cache

from .page import start_module


def _h(text: str) -> str:
    return f'<h4 class="inside-step">{text}</h4>'


@cache
def inside_template() -> str:
    """How one weight is computed, in five steps (each a plot or a sentence, filled by inside.js)."""
    return (
        '<div class="inside explorer" id="inside-panel" data-ready="empty">'
        '<h3>How this weight is computed <button type="button" class="back">\u2191 back to the map</button></h3>'
        '<p class="busy note" hidden>Asking the model\u2026</p><p class="message"></p>'
        '<div class="inside-body" hidden>'
        '<p id="inside-title" class="caption"></p>'
        '<p id="inside-off" class="warn" hidden></p>'
        '<p id="inside-norm-note" class="note" hidden>The maps show norms \u2016\u03b1 f(x)\u2016; this panel '
        "explains the weight \u03b1 behind them.</p>"
        + _h("1. The question and the label. Each token asks a question, the query q, and carries a label, the "
             "key k: lists of numbers the model computed for this head (red: positive, blue: negative).")
        + '<div id="inside-qk" class="plot"></div>'
        + _h("2. Multiply them number by number (bottom strip: green where both agree in sign), add up, and scale: "
             "the score.")
        + '<p id="inside-score" class="note"></p>'
        + _h("3. The same for every key of this row: the scores (the clicked key in red).")
        + '<div id="inside-scores" class="plot"></div><p id="inside-mask" class="note"></p>'
        + _h("4. Softmax turns the scores into weights between 0 and 1 that add up to 1: the row of the map.")
        + '<div id="inside-weights" class="plot"></div><p id="inside-softmax" class="note"></p>'
        + _h("5. What the head passes on: each key's value vector v times its weight, added up (the last row).")
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


CSS = """
.inside h3 {margin: 14px 0 4px; font-size: 1.1em;}
.inside h3 .back {font-size: 0.8em; font-weight: 400; margin-left: 12px; border: 1px solid #bbb; border-radius: 6px;
  background: white; padding: 1px 8px; cursor: pointer;}
.inside .inside-step {font-size: 0.95em; font-weight: 600; margin: 14px 0 2px; color: #333;}
.inside .warn {background: #fff7ed; border-left: 3px solid #f97316; padding: 4px 8px; margin: 4px 0;}
.inside .warn:empty {display: none;}
.inside .message {padding: 12px 0; text-align: left; font-size: 1em;}
.inside-body[hidden] {display: none;}
.yours-tokens {display: flex; flex-wrap: wrap; gap: 4px; margin: 6px 0; position: relative;}
.yours-token {padding: 3px 7px; border-radius: 5px; border: 1px solid #ccc; white-space: pre; cursor: default;
  font-size: 1.1em;}
#yours-panel {position: relative;}
.yours-tip {position: absolute; z-index: 20; background: white; border: 1px solid #999; border-radius: 4px;
  padding: 4px 8px; margin: 0; font-size: 0.9em; pointer-events: none; box-shadow: 0 2px 6px rgba(0,0,0,0.15);}
#learn-step input[type=range] {width: min(520px, 60vw);}
"""


def _start(fn: str, events: tuple[str, ...] = ()) -> str:
    return start_module("inside.js", fn, events)


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


# the "start from the model's translation" button: the model's translation into the box, in the browser
JS_OWN = "(own) => own || ''"
