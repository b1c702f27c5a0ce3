"""What the browser is handed: every gr.HTML component's skeleton, its script and styles (read from static/),
the <script> tag of plotly.js, and the app's `js=` event functions.

`tab_panels` and `side_panels` put these into their `gr.HTML` components: the attention explorer (its skeleton
is static, so a new payload never re-renders it; `static/explorer.js` draws the views into it from the payload
of `transformer.explorer.payload.attention_payload`), the tree and compare panels (`static/panels.js`), and the
three ways into the model (`static/inside.js`: the inside panel, "Your translation", "Watch it learn").
plotly.js is the vendored bundle, served by the app itself (never a CDN: nothing leaves the machine). The
scripts in `static/` are ES modules, served from there by the app's file route (`gr.set_static_paths`); a
component's `js_on_load` imports its module (`import_module`). The `JS_*` functions are what the app's events
run in the browser (`js=`), with share.js imported.
"""
from __future__ import annotations

import html
import json
from functools import cache
from pathlib import Path

from . import texts
from .share import ROWS_INPUT, ROWS_PREDICTED
from .texts import KIND_TITLES

STATIC_DIR = Path(__file__).resolve().parent / "static"
# plotly.js's official cartesian bundle (bar, heatmap, scatter and the rest of the 2-D traces: all the page draws),
# at the version the plotly package ships: smaller than the full bundle, so a page has less script to parse
PLOTLY_JS = STATIC_DIR / "vendor" / "plotly-cartesian.min.js"

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


def module_url(name: str) -> str:
    """The address of `static/<name>` on the app's file route, relative to the page (its <base>)."""
    return f"gradio_api/file={(STATIC_DIR / name).as_posix()}"


def import_module(name: str) -> str:
    """A JavaScript expression: the promise of the ES module `static/<name>`, imported from the app's file route
    (resolved against the page's address: gradio runs event and `js_on_load` code from its own bundle's)."""
    return f"import(new URL({json.dumps(module_url(name))}, document.baseURI).href)"


def start_module(name: str, start: str, events: tuple[str, ...] = ()) -> str:
    """A gr.HTML `js_on_load`: import `static/<name>` and call its `start(element, props, watch, trigger)`, the
    trigger limited to the custom `events` it sends (gradio finds a component's events by their names in this
    text: `view.rerun(...)` exists because "rerun" is written here)."""
    return (f"const events = {json.dumps(list(events))};\n"
            "const send = (name, data) => {\n"
            "  if (!events.includes(name)) throw new Error(`${name}: not an event of this component`);\n"
            "  return trigger(name, data);\n"
            "};\n"
            f"{import_module(name)}.then((m) => m.{start}(element, props, watch, send));\n")


@cache
def js_on_load() -> str:
    """Starts static/explorer.js on the component (`element`, `props`, `watch` from gr.HTML); it asks the
    server for a model pass (heads switched off, norms) with gr.HTML's `trigger("rerun", ...)`."""
    return start_module("explorer.js", "initExplorer", ("rerun",))


@cache
def stylesheet() -> str:
    """Page-wide CSS: the explorer and the presentation mode (body.present), which restyles gradio parts too."""
    return (STATIC_DIR / "explorer.css").read_text(encoding="utf-8")


@cache
def page_head() -> str:
    """The stylesheet as a <style> of the page's <head> (`demo.launch(head=...)`), exactly as written. Not through
    gradio's `css=`: gradio adds a second copy of every rule there, each selector under `.gradio-container-<version>
    .contain`, which outweighs the presentation mode's `body.present ...` rules (body is never inside .contain), so
    the large type of presentation mode did not apply."""
    return f'<style id="explorer-css">{stylesheet()}</style>'


def head_html() -> str:
    """The <script> that loads plotly.js (the vendored cartesian bundle), through the app's file route, and the
    page's modules fetched beside it (modulepreload): each import then finds its module, and the modules it
    imports, loaded already."""
    preload = "".join(f'<link rel="modulepreload" href="{module_url(p.name)}">' for p in sorted(STATIC_DIR.glob("*.js")))
    return f'<script src="gradio_api/file={PLOTLY_JS.as_posix()}"></script>' + preload


# ----------------------------------------------------------------------------- the tree and compare panels


def _select(select_id: str, label: str) -> str:
    return f'<label id="{select_id}" class="control">{label} <select></select></label>'


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
        '<p id="tree-fit" class="note" hidden></p>'  # panels.js: when the tree cannot fit the screen
        '<div id="tree-plot" class="plot"></div>'
        '<div class="controls">' + _select("tree-node", "Node") + _select("tree-layer", "Layer")
        + _select("tree-head", "Head") + "</div>"
        '<p class="note"><b>Prefix:</b> <span id="tree-prefix"></span></p>'
        '<p class="note"><b>Node:</b> <span id="tree-status"></span></p>'
        '<div id="node-plot" class="plot"></div>'
        "</div></div>"
    )


@cache
def compare_template() -> str:
    """The compare panel: both translations, both attention maps, and their difference."""
    side = ('<div id="compare-{0}" class="compare-side"><h2 class="label"></h2><p class="source"></p>'
            '<p class="output"></p></div>')
    return (
        '<div class="explorer panel" id="compare-panel">'
        '<p class="message"></p><div class="panel-body" hidden>'
        f'<div class="compare-texts">{side.format("left")}{side.format("right")}</div>'
        '<div class="controls">' + _select("compare-kind", "Attention") + _select("compare-layer", "Layer")
        + _select("compare-head", "Head") + "</div>"
        '<p id="compare-fit" class="note" hidden></p>'  # panels.js: when the maps cannot fit the screen
        '<div class="compare-figures"><div id="compare-pair" class="plot"></div>'
        '<div id="compare-diff" class="plot"></div></div>'
        '<p id="compare-note" class="note" hidden></p>'
        "</div></div>"
    )


@cache
def panels_js(which: str) -> str:
    """Starts static/panels.js's tree ("tree") or compare ("compare") panel; it sends 'pick' events."""
    return start_module("panels.js", {"tree": "initTreePanel", "compare": "initComparePanel"}[which], ("pick",))


def js_function(body: str, params: str = "") -> str:
    """A gradio `js=` event function with static/share.js's `attentionView` (the view state shared by the
    explorer, the panels and the page URL) in scope; gradio awaits its promise."""
    return f"async ({params}) => {{\nconst {{attentionView}} = await {import_module('share.js')};\n{body}\n}}"


# ----------------------------------------------------------------------------- the app's `js=` event functions

# the presentation-mode checkbox acts in the browser only (a class on <body>); ?present=1 sets the checkbox
JS_PRESENT = "(on) => { document.body.classList.toggle('present', Boolean(on)); }"
# the shared view (static/share.js, `attentionView()`): its state as JSON, for the tree and compare handlers
JS_VIEW = js_function("return attentionView()[0].viewJson();")
# a shared link's validated view (from the app's on_restore) into the page; then the address bar follows the view
JS_RESTORE = js_function("""
  const r = JSON.parse(restored || '{}');
  const [view] = attentionView();
  view.restore(r.view);
  Object.assign(view.share.known, r.known || {});
  view.share.tab = r.tab || 'attention';
  view.share.ready = true;
  view.share.sync();
  return view.viewJson();""", "restored")
JS_COPY_LINK = js_function("return attentionView()[0].share.copy();")
# the attention export, written when asked for (app.py's Page.on_export), saved by the browser: the file's address
# from the event's answer, as a download link clicked once
JS_SAVE_DOWNLOAD = """(file) => {
  if (!file || !file.url) return;
  const a = document.createElement('a');
  a.href = file.url;
  a.download = file.orig_name || 'attention.npz';
  document.body.appendChild(a);
  a.click();
  a.remove();
}"""


def js_enter_tab(tab: str) -> str:
    """A tab of the app shows: the URL says so, and the tree and compare handlers get the view state."""
    return js_function(f"const [view] = attentionView(); view.share.enterTab({tab!r}); return view.viewJson();")


# ----------------------------------------------------------------------------- the three ways into the model


def _step_heading(text: str) -> str:
    return f'<h3 class="inside-step">{text}</h3>'


@cache
def inside_template() -> str:
    """How one weight is computed, in five steps (each a plot or a sentence, filled by inside.js)."""
    return (
        '<div class="inside explorer" id="inside-panel" data-ready="empty">'
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


CSS = """
.inside h2.inside-title {margin: 14px 0 4px; font-size: 1.1em;}
.inside h2.inside-title .back {font-size: 0.8em; font-weight: 400; margin-left: 12px; border: 1px solid #bbb; border-radius: 6px;
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
