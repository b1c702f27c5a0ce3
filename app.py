"""Attention explorer: translate a sentence and look at every layer and head of the Transformer's attention.

    python app.py                                   # http://127.0.0.1:7860
    GRADIO_SERVER_NAME=0.0.0.0 GRADIO_SERVER_PORT=8080 python app.py
    TRANSFORMER_CHECKPOINT=checkpoints/toy-reverse python app.py   # or a Hugging Face Hub repo id

Layout and wiring only: the model registry, session results and the view state live in
`transformer.explorer.logic`; after a translation the page gets the attention once (`transformer.explorer.payload`)
and draws every view in the browser (`transformer.explorer.page`, `transformer/explorer/static/explorer.js`), so layer,
head, toggles, tabs and decoding steps need no server round trip. The training curves are drawn by
`transformer.explorer.viz`.
The module-level `demo` (queued, not launched) is what Spaces and the tests import; `launch_options()`
gives the keyword arguments `python app.py` launches it with.

API: `/translate` takes exactly (text, method, beam_size) and returns (translation, notice, n-best
table); the model and length penalty come from per-session state (the defaults for API clients).
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no network at run time (telemetry, version check)

import gradio as gr  # noqa: E402
import torch  # noqa: E402

from transformer.explorer import page  # noqa: E402
from transformer.explorer.logic import (  # noqa: E402
    DEFAULT_BEAM, ENV_CHECKPOINT, EXAMPLES_EN, UI_MAX_BEAM,
    ModelRegistry, Result, ViewState, candidate_choices, examples_for, export_npz, is_toy, nbest_table,
    result_payload, run_translation, select_candidate, training_progress, training_view,
)
from transformer.explorer.search_views import CompareSession, compare_value, record_search, tree_value  # noqa: E402
from transformer.translator import Translator  # noqa: E402

log = logging.getLogger("app")

ROOT = Path(__file__).resolve().parent
CHECKPOINT_DIR = ROOT / "checkpoints"

HOW_TO_READ = """
**Rows are queries, columns are keys.** Each row is one token asking "where should I look?"; the colours
along that row are its attention weights over the columns and add up to 100 %.

* **Encoder self-attention**: every source token looks at every source token, in both directions, to build
  a context-aware representation of the input sentence.
* **Decoder self-attention**: every target position looks only at itself and at earlier target positions
  (a causal mask), so everything right of the diagonal is empty.
* **Cross-attention**: every target position (row) looks at the encoder's source tokens (columns). This is
  where output words line up with input words.
* **Why decoder rows shift by one**: the decoder reads `<bos>` plus the words produced so far and predicts
  the next one. Row *t* is fed input token *t* and predicts output token *t*, which is input token *t + 1*.
  "Rows labelled by" switches between the two names of the same row.
* **Model view**: one small map per layer (rows) and head (columns). Heads specialise: some look at the
  previous token, some at the same word, some spread out. **Head summary**: mean row entropy; low values
  are focused heads. Click a cell to focus that head (click the layer label for the mean over heads).
* **Hide special tokens**: many heads park attention on `<eos>` / `<bos>` as a "look nowhere" option.
  Hiding them renormalises every row; the text box says how much weight was hidden.
* **Rollout** multiplies the encoder layers (plus the residual path) to estimate how much each source
  token ends up mixed into each position. Attention shows where information flows, not why.
"""

CSS = page.stylesheet()  # the explorer's styles and the presentation mode
# the presentation-mode checkbox acts in the browser only (a class on <body>); ?present=1 sets the checkbox
JS_PRESENT = "(on) => { document.body.classList.toggle('present', Boolean(on)); }"
# the shared view (static/share.js, `attentionView()`): its state as JSON, for the tree and compare handlers
JS_VIEW = page.js_function("return attentionView()[0].viewJson();")
# a shared link's validated view (from on_restore) into the page; from then on the address bar follows the view
JS_RESTORE = page.js_function("""
  const r = JSON.parse(restored || '{}');
  const [view] = attentionView();
  view.restore(r.view);
  Object.assign(view.share.known, r.known || {});
  view.share.tab = r.tab || 'attention';
  view.share.ready = true;
  view.share.sync();
  return view.viewJson();""", "restored")
JS_COPY_LINK = page.js_function("return attentionView()[0].share.copy();")


def _js_enter_tab(tab: str) -> str:
    """A tab of the app shows: the URL says so, and the tree and compare handlers get the view state."""
    return page.js_function(f"const [view] = attentionView(); view.share.enterTab({tab!r}); return view.viewJson();")


# plotly.js for the explorer comes from the installed plotly package, served by this app
gr.set_static_paths([page.PLOTLY_JS])


def _torch_threads() -> int:
    """All cores (the brief: `torch.set_num_threads(os.cpu_count())`); `TRANSFORMER_THREADS` overrides."""
    value = os.environ.get("TRANSFORMER_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else (os.cpu_count() or 1)


torch.set_num_threads(_torch_threads())


# ----------------------------------------------------------------------------- app state

REGISTRY = ModelRegistry(CHECKPOINT_DIR, os.environ.get(ENV_CHECKPOINT))
EXPORT_DIR = Path(tempfile.gettempdir()) / f"attention-explorer-{os.getpid()}"
DEFAULT_MODEL = REGISTRY.default()
STARTUP_ERROR = ""
try:  # load the default model once, at start-up; the others on first use
    DEFAULT_TRANSLATOR: Translator | None = REGISTRY.get(DEFAULT_MODEL) if DEFAULT_MODEL else None
except Exception as err:  # a broken auto-discovered checkpoint must not take the app down
    if os.environ.get(ENV_CHECKPOINT):
        raise
    log.exception("could not load %s", DEFAULT_MODEL)
    DEFAULT_TRANSLATOR, STARTUP_ERROR = None, f"Could not load {DEFAULT_MODEL}: {err}"


def _translator(label: str | None) -> Translator:
    try:
        return REGISTRY.get(label)
    except Exception as err:
        raise gr.Error(str(err), title="Model unavailable", print_exception=False) from None


# ----------------------------------------------------------------------------- event handlers


def on_translate(text: str, method: str, beam_size: float, model: str | None, length_penalty: float):
    """API `/translate`: (text, method, beam_size) -> (translation, notice, n-best); model, length penalty: state."""
    tr = _translator(model)
    result, notice = run_translation(tr, model, text, method, beam_size, length_penalty)
    return result.translation.text, notice, nbest_table(result), result


def on_translate_view(text: str, method: str, beam_size: float, model: str | None, length_penalty: float):
    """The page's Translate: the API's outputs and the attention payload in one response (one round trip)."""
    *outputs, result = on_translate(text, method, beam_size, model, length_penalty)
    return (*outputs, result, *show_result(result))


def show_result(result: Result | None):
    """The page's attention payload (drawn in the browser) and the candidate selector for a result."""
    n_cand = len(result.translation.candidates) if result is not None else 1
    value = result.candidate if result is not None else 0
    return (result_payload(result),
            gr.Dropdown(choices=candidate_choices(result), value=value, interactive=n_cand > 1))


def on_candidate(result: Result | None, index: int):
    """Another n-best candidate: its attention (one teacher-forced pass, cached) straight to the page."""
    if result is None:
        return (None,) + show_result(None)
    result = select_candidate(_translator(result.model), result, index)
    return (result,) + show_result(result)


def on_nbest_select(result: Result | None, evt: gr.SelectData):
    if result is None or not evt.index:
        return (result,) + show_result(result)
    row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
    return on_candidate(result, row)


def on_model_change(label: str):
    """Switch model: load it (cached), clear the old result, refresh examples and the training tab."""
    tr = _translator(label)
    fig, metrics = training_view(label, REGISTRY.directory(label))
    notice = f"Model {label} is ready ({'toy task: type space-separated letters' if is_toy(tr) else 'English'})."
    progress = training_progress(REGISTRY.directory(label))
    if progress:
        notice += (f" It is still in training (step {progress[0]} of {progress[1]}): expect rough translations;"
                   " the Training tab shows how far it has come.")
    examples = examples_for(tr, REGISTRY.directory(label))
    return (label, None, "", notice, nbest_table(None),
            gr.Dataset(samples=[[e] for e in examples]), fig, metrics) + show_result(None)


def on_method(method: str):
    return gr.Slider(interactive=method == "beam")


def _view_data(view_json: str | None) -> dict[str, Any]:
    """The page's view state (kind, layer, head, rows) sent as JSON by the browser; {} when unreadable."""
    try:
        data = json.loads(view_json or "{}")
    except (TypeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def on_tree_open(result: Result | None, view_json: str):
    """The tree tab shows `result`: record its search the first time (cached on the result), then draw it."""
    if result is None:
        return None, result
    tr = _translator(result.model)
    if result.search is None:
        t = result.translation
        try:
            result.search = record_search(tr, result.source, t.method, t.beam_size, result.length_penalty)
        except ValueError as err:
            raise gr.Error(str(err), title="Cannot draw the search", print_exception=False) from None
    return tree_value(tr, result.search, None, _view_data(view_json)), result


def on_tree_refresh(result: Result | None, tab: str, view_json: str):
    """After a translation: the tree follows it while its tab is open; otherwise the stale tree goes."""
    if tab != "tree":
        return None, result
    return on_tree_open(result, view_json)


def on_tree_pick(result: Result | None, evt: gr.EventData):
    """A node (or layer / head) chosen in the tree panel: that node's prefix and cross-attention."""
    data = evt._data if isinstance(getattr(evt, "_data", None), dict) else {}
    if result is None or result.search is None:
        return None
    with_tree = data.get("tree_rev") != result.search.rev
    return tree_value(_translator(result.model), result.search, data.get("node"), data, with_tree)


def _compare(session: CompareSession, view_json: str):
    return compare_value(session, _view_data(view_json)), session


def on_compare(text: str, other: str, method: str, beam: float, model: str | None, length_penalty: float,
               view_json: str):
    """Translate both sentences with the current settings and put their attention side by side."""
    tr = _translator(model)
    left, _ = run_translation(tr, model, text, method, beam, length_penalty)
    right, _ = run_translation(tr, model, other, method, beam, length_penalty)
    session = CompareSession("sentences", (left.source, right.source), (left.source, right.source),
                             (left.translation.text, right.translation.text), (left.attention, right.attention))
    return _compare(session, view_json)


def on_greedy_vs_beam(text: str, beam: float, model: str | None, length_penalty: float, view_json: str):
    """The same sentence decoded greedily and with beam search (the slider's width, or the default if 1)."""
    tr = _translator(model)
    width = int(beam) if isinstance(beam, (int, float)) and 1 < beam <= UI_MAX_BEAM else DEFAULT_BEAM
    greedy, _ = run_translation(tr, model, text, "greedy", 1, length_penalty)
    beamed, _ = run_translation(tr, model, text, "beam", width, length_penalty)
    session = CompareSession("methods", ("greedy", f"beam {width}"), (greedy.source, beamed.source),
                             (greedy.translation.text, beamed.translation.text),
                             (greedy.attention, beamed.attention))
    return _compare(session, view_json)


def on_compare_pick(session: CompareSession | None, evt: gr.EventData):
    """Another kind, layer or head in the compare panel: its figures from the kept translations."""
    data = evt._data if isinstance(getattr(evt, "_data", None), dict) else {}
    return None if session is None else compare_value(session, data)


def _model_limits(label: str) -> tuple[int, int] | None:
    """(layers, heads) of a model, for validating a link's layer and head (None if it cannot be loaded)."""
    try:
        cfg = REGISTRY.get(label).model.config
    except Exception:
        return None
    return max(cfg.n_encoder_layers, cfg.n_decoder_layers), cfg.n_heads


def on_restore(model: str | None, request: gr.Request):
    """Page load: list the checkpoints present now and restore the view a shared link carries (validated)."""
    labels = REGISTRY.labels()
    if model and model not in labels:
        labels = [model] + labels
    params = dict(request.query_params) if request is not None else {}
    view, notes = ViewState.from_query(params, labels, limits=_model_limits, default_model=model)
    note = ViewState.notes_text(notes)
    try:
        tr = REGISTRY.get(view.model) if view.model else None
    except Exception:  # the model's own error shows when it translates
        tr = None
    fig, metrics = training_view(view.model, REGISTRY.directory(view.model))
    restored = json.dumps({"view": view.client(), "tab": view.tab, "translate": bool(view.text.strip()),
                           "known": {"lp": f"{view.length_penalty:g}", "compare": view.compare}})

    def given(*keys: str) -> bool:  # a link sets what it carries; the rest stays as the user may have set it
        return any(k in params for k in keys)

    def keep(value: Any, *keys: str) -> Any:
        return value if given(*keys) else gr.skip()

    return (gr.Dropdown(choices=labels, value=view.model), view.model, keep(view.text, "text"),
            keep(view.compare, "compare"), keep(view.method, "method"),
            gr.Slider(value=view.beam, interactive=view.method == "beam") if given("beam", "method") else gr.skip(),
            keep(view.length_penalty, "lp"), keep(view.length_penalty, "lp"), keep(view.present, "present"),
            gr.Tabs(selected=view.tab) if given("tab") else gr.skip(), view.tab,
            gr.Textbox(value=note, visible=bool(note)), restored,
            gr.Dataset(samples=[[e] for e in examples_for(tr, REGISTRY.directory(view.model))]), fig, metrics)


def on_restore_translate(text: str, method: str, beam_size: float, model: str | None, length_penalty: float,
                         restored: str = ""):
    """A link with text translates it; a page without one stays as it is (no error, no second translation)."""
    if not _view_data(restored).get("translate") or not (text or "").strip():
        return (gr.skip(),) * 6  # keeps a translation the user made meanwhile
    return on_translate_view(text, method, beam_size, model, length_penalty)


def on_restore_compare(text: str, other: str, method: str, beam: float, model: str | None, length_penalty: float,
                       tab: str, view_json: str):
    """A link to the compare tab: compare its two sentences, or greedy and beam when it has only one."""
    if tab != "compare" or not (text or "").strip():
        return None, None
    if (other or "").strip():
        return on_compare(text, other, method, beam, model, length_penalty, view_json)
    return on_greedy_vs_beam(text, beam, model, length_penalty, view_json)


def on_export(result: Result | None):
    if result is None:
        return gr.DownloadButton(value=None, interactive=False)
    return gr.DownloadButton(value=str(export_npz(result, EXPORT_DIR)), interactive=True)


# ----------------------------------------------------------------------------- layout


def build_demo() -> gr.Blocks:
    tr0 = DEFAULT_TRANSLATOR
    view = ViewState(model=DEFAULT_MODEL)  # the initial view; every field of it is set below
    train_fig, train_metrics = training_view(DEFAULT_MODEL, REGISTRY.directory(DEFAULT_MODEL))
    with gr.Blocks(title="Transformer attention explorer", analytics_enabled=False,
                   delete_cache=(900, 3600)) as demo:
        model_state = gr.State(view.model)
        lp_state = gr.State(view.length_penalty)
        result_state = gr.State(None, time_to_live=3600)
        compare_state = gr.State(None, time_to_live=3600)
        tab_state = gr.State(view.tab)  # the app tab on screen: the tree is recorded only while it is open

        gr.Markdown("# Transformer attention explorer\nTranslate a sentence, then look inside: every layer and "
                    "head of the encoder, the decoder and the cross-attention between them.", elem_id="intro")
        with gr.Row():
            with gr.Column(scale=3):
                src = gr.Textbox(label="Source sentence (press Enter to translate)", lines=1, max_lines=4,
                                 placeholder="Type a sentence, e.g. " + EXAMPLES_EN[0], elem_id="source",
                                 autofocus=True)
                first_examples = examples_for(tr0, REGISTRY.directory(DEFAULT_MODEL))
                examples = gr.Dataset(components=[src], samples=[[e] for e in first_examples],
                                      label="Examples (click to translate)", elem_id="examples")
            with gr.Column(scale=2):
                model_dd = gr.Dropdown(choices=REGISTRY.labels() or ([DEFAULT_MODEL] if DEFAULT_MODEL else []),
                                       value=view.model, label="Model", elem_id="model")
                with gr.Row():
                    method = gr.Radio(["greedy", "beam"], value=view.method, label="Decoding", elem_id="method")
                    beam = gr.Slider(1, UI_MAX_BEAM, value=view.beam, step=1, precision=0, label="Beam width",
                                     elem_id="beam")
                with gr.Accordion("Advanced", open=False):
                    lp = gr.Slider(0.0, 2.0, value=view.length_penalty, step=0.1, label="Length penalty",
                                   info="GNMT length penalty used to rank beam hypotheses (0 = none)", elem_id="lp")
                with gr.Row():
                    btn = gr.Button("Translate", variant="primary", elem_id="translate", scale=2)
                    api_trigger = gr.Button(visible=False)  # the /translate API's own event (see wiring)
                    present = gr.Checkbox(value=view.present, label="Presentation mode", elem_id="present",
                                          scale=1, min_width=120)
        with gr.Row():
            translation = gr.Textbox(label="Translation", interactive=False, elem_id="translation",
                                     buttons=["copy"], scale=3)
            notice = gr.Textbox(label="Notes", interactive=False, elem_id="notice", scale=2,
                                value=STARTUP_ERROR)
        with gr.Row(elem_id="share-row", equal_height=True):
            copy_link = gr.Button("Copy link to this view", elem_id="copy-link", scale=0, min_width=200)
            link_box = gr.Textbox(label="Link (the address bar follows the view too)", interactive=False,
                                  elem_id="share-link", buttons=["copy"], scale=3, max_lines=1)
            link_note = gr.Textbox(label="Shared link", interactive=False, elem_id="link-note", scale=2,
                                   visible=False)
        # what the browser tells the server about its view (JS_VIEW, JS_RESTORE): never shown
        view_box = gr.Textbox(visible=False)
        restore_box = gr.Textbox(visible=False)
        with gr.Row(elem_id="nbest-row"):
            nbest = gr.Dataframe(value=nbest_table(None), label="n-best list (click a row to inspect that candidate)",
                                 interactive=False, elem_id="nbest", scale=3, wrap=True,
                                 column_widths=["7%", "53%", "20%", "20%"])
            with gr.Column(scale=2):
                candidate = gr.Dropdown(choices=candidate_choices(None), value=0, type="value", label="Candidate shown",
                                        interactive=False, elem_id="candidate")
                download = gr.DownloadButton("Download attention (.npz)", interactive=False, elem_id="download")
        with gr.Accordion("How to read this", open=False, elem_id="howto"):
            gr.Markdown(HOW_TO_READ)
        with gr.Tabs(elem_id="tabs") as tabs:
            with gr.Tab("Attention", id="attention", elem_id="tab-attention") as attention_tab:
                # every attention view, drawn in the browser from one payload per translation
                explorer_view = gr.HTML(None, html_template=page.html_template(), js_on_load=page.js_on_load(),
                                        head=page.head_html(), elem_id="explorer", apply_default_css=False,
                                        view=view.client())
            with gr.Tab("Beam-search tree", id="tree", elem_id="tab-tree") as tree_tab:
                # recorded when this tab opens (never on the main translation path), drawn by static/panels.js
                tree_view = gr.HTML(None, html_template=page.tree_template(), js_on_load=page.panels_js("tree"),
                                    elem_id="search", apply_default_css=False)
            with gr.Tab("Compare", id="compare", elem_id="tab-compare") as compare_tab:
                with gr.Row(equal_height=True):
                    compare_src = gr.Textbox(label="Compare with (change a word of the source sentence)", lines=1,
                                             max_lines=4, elem_id="compare-source", scale=4)
                    compare_btn = gr.Button("Compare", variant="primary", elem_id="compare-run", scale=1)
                    versus_btn = gr.Button("Greedy vs beam", elem_id="compare-methods", scale=1)
                compare_view = gr.HTML(None, html_template=page.compare_template(),
                                       js_on_load=page.panels_js("compare"), elem_id="compare",
                                       apply_default_css=False)
            with gr.Tab("Training", id="training", elem_id="tab-training") as training_tab:
                train_plot = gr.Plot(train_fig, label="Training curves", elem_id="train-plot")
                metrics = gr.Dataframe(train_metrics, label="Model card metrics (metrics.json)", interactive=False,
                                       elem_id="metrics")

        # ---- wiring
        shown = [explorer_view, candidate]
        quiet = dict(api_visibility="private", show_progress="minimal")
        # one model pass at a time: torch already uses every core, and two passes on 2 vCPUs thrash
        model_group = dict(concurrency_limit=1, concurrency_id="model")

        # The API's /translate (three outputs, for gradio_client) is its own endpoint; the page's Translate
        # gets the translation and the attention payload in one response.
        api_trigger.click(on_translate, [src, method, beam, model_state, lp_state],
                          [translation, notice, nbest, result_state], api_name="translate", **model_group,
                          api_description="Translate text; returns (translation, notice, n-best table).")
        translate_inputs = [src, method, beam, model_state, lp_state]
        translated = [translation, notice, nbest, result_state] + shown
        tree_refresh = dict(fn=on_tree_refresh, inputs=[result_state, tab_state, view_box],
                            outputs=[tree_view, result_state], **quiet, **model_group)
        # undocumented (callable, not listed) so that bench/load.py can replay the page's request
        gr.on([btn.click, src.submit], on_translate_view, translate_inputs, translated, api_name="translate_view",
              api_visibility="undocumented", **model_group).success(
            on_export, [result_state], [download], **quiet).then(**tree_refresh)
        examples.click(lambda sample: sample[0], [examples], [src], api_visibility="private", queue=False).then(
            on_translate_view, translate_inputs, translated, api_visibility="private", **model_group,
        ).success(on_export, [result_state], [download], **quiet).then(**tree_refresh)

        candidate.input(on_candidate, [result_state, candidate], [result_state] + shown, **quiet,
                        **model_group).then(on_export, [result_state], [download], **quiet)
        nbest.select(on_nbest_select, [result_state], [result_state] + shown, **quiet, **model_group).then(
            on_export, [result_state], [download], **quiet)
        method.input(on_method, [method], [beam], api_visibility="private", queue=False)
        lp.change(lambda v: v, [lp], [lp_state], api_visibility="private", queue=False)
        model_dd.input(
            on_model_change, [model_dd],
            [model_state, result_state, translation, notice, nbest, examples, train_plot, metrics] + shown,
            api_visibility="private", **model_group,
        ).then(on_export, [result_state], [download], **quiet).then(**tree_refresh)
        present.change(None, [present], None, js=JS_PRESENT, api_visibility="private")

        # ---- the app's tabs: the tree is recorded when its tab opens (cached on the result)
        entered = {}
        for tab, name in ((attention_tab, "attention"), (tree_tab, "tree"), (compare_tab, "compare"),
                          (training_tab, "training")):
            entered[name] = tab.select(None, None, [view_box], js=_js_enter_tab(name), api_visibility="private").then(
                (lambda n: lambda: n)(name), None, [tab_state], api_visibility="private", queue=False)
        entered["tree"].then(on_tree_open, [result_state, view_box], [tree_view, result_state], **quiet,
                             **model_group)
        tree_view.pick(on_tree_pick, [result_state], [tree_view], **quiet, **model_group)

        # ---- compare: two sentences, or greedy and beam, side by side
        entered["compare"].then(lambda text, other: other or text, [src, compare_src], [compare_src],
                                api_visibility="private", queue=False)  # prefilled: change one word
        compare_btn.click(None, None, [view_box], js=JS_VIEW, api_visibility="private").then(
            on_compare, [src, compare_src, method, beam, model_state, lp_state, view_box],
            [compare_view, compare_state], **quiet, **model_group)
        versus_btn.click(None, None, [view_box], js=JS_VIEW, api_visibility="private").then(
            on_greedy_vs_beam, [src, beam, model_state, lp_state, view_box], [compare_view, compare_state],
            **quiet, **model_group)
        compare_view.pick(on_compare_pick, [compare_state], [compare_view], **quiet)

        # ---- a shared link: validate its parameters (transformer/explorer/share.py), restore the view, translate
        copy_link.click(None, None, [link_box], js=JS_COPY_LINK, api_visibility="private")
        demo.load(
            on_restore, [model_state],
            [model_dd, model_state, src, compare_src, method, beam, lp, lp_state, present, tabs, tab_state, link_note,
             restore_box, examples, train_plot, metrics], api_visibility="private", **model_group,
        ).then(None, [restore_box], [view_box], js=JS_RESTORE, api_visibility="private").then(
            on_restore_translate, translate_inputs + [restore_box], translated, api_visibility="private",
            **model_group,
        ).success(on_export, [result_state], [download], **quiet).then(**tree_refresh).then(
            on_restore_compare, [src, compare_src, method, beam, model_state, lp_state, tab_state, view_box],
            [compare_view, compare_state], **quiet, **model_group)
    return demo


def launch_options() -> dict[str, Any]:
    """What `python app.py` passes to `demo.launch` (Gradio 6 takes theme and css here, not in Blocks)."""
    return dict(
        server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
        share=False, allowed_paths=None, ssr_mode=False, mcp_server=False, show_error=False,
        state_session_capacity=200, css=CSS, theme=gr.themes.Default(),
    )


demo = build_demo()
demo.queue(default_concurrency_limit=2, max_size=64)

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    demo.launch(**launch_options())
