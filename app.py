"""Attention explorer: translate a sentence and look at every layer and head of the Transformer's attention.

    python app.py                                   # http://127.0.0.1:7860
    GRADIO_SERVER_NAME=0.0.0.0 GRADIO_SERVER_PORT=8080 python app.py
    TRANSFORMER_CHECKPOINT=checkpoints/toy-reverse python app.py   # or a Hugging Face Hub repo id

Layout and wiring only: the model registry, session results and the view state live in
`transformer.explorer`; after a translation the page gets the attention once (`transformer.payload`)
and draws every view in the browser (`transformer.page`, `transformer/static/explorer.js`), so layer,
head, toggles, tabs and decoding steps need no server round trip. The training curves are drawn by
`transformer.viz`.
The module-level `demo` (queued, not launched) is what Spaces and the tests import; `launch_options()`
gives the keyword arguments `python app.py` launches it with.

API: `/translate` takes exactly (text, method, beam_size) and returns (translation, notice, n-best
table); the model and length penalty come from per-session state (the defaults for API clients).
"""
from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no network at run time (telemetry, version check)

import gradio as gr  # noqa: E402
import torch  # noqa: E402

from transformer import page  # noqa: E402
from transformer.explorer import (  # noqa: E402
    DEFAULT_BEAM, DEFAULT_LENGTH_PENALTY, ENV_CHECKPOINT, EXAMPLES_EN, UI_MAX_BEAM,
    ModelRegistry, Result, ViewState, candidate_choices, examples_for, export_npz, is_toy, nbest_table,
    result_payload, run_translation, select_candidate, training_view,
)
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
# the presentation-mode checkbox and ?present=1 act in the browser only (a class on <body>)
JS_PRESENT = "(on) => { document.body.classList.toggle('present', Boolean(on)); }"
JS_PRESENT_FROM_URL = "() => new URLSearchParams(window.location.search).get('present') === '1'"

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
    return (label, None, "", notice, nbest_table(None),
            gr.Dataset(samples=[[e] for e in examples_for(tr)]), fig, metrics) + show_result(None)


def on_load(model: str | None):
    """Page load: list the checkpoints present now (new ones appear without a restart)."""
    labels = REGISTRY.labels()
    if model and model not in labels:
        labels = [model] + labels
    return gr.Dropdown(choices=labels, value=model)


def on_method(method: str):
    return gr.Slider(interactive=method == "beam")


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

        gr.Markdown("# Transformer attention explorer\nTranslate a sentence, then look inside: every layer and "
                    "head of the encoder, the decoder and the cross-attention between them.", elem_id="intro")
        with gr.Row():
            with gr.Column(scale=3):
                src = gr.Textbox(label="Source sentence (press Enter to translate)", lines=1, max_lines=4,
                                 placeholder="Type a sentence, e.g. " + EXAMPLES_EN[0], elem_id="source",
                                 autofocus=True)
                examples = gr.Dataset(components=[src], samples=[[e] for e in examples_for(tr0)],
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
                                   info="GNMT length penalty used to rank beam hypotheses (0 = none)")
                with gr.Row():
                    btn = gr.Button("Translate", variant="primary", elem_id="translate", scale=2)
                    present = gr.Checkbox(value=view.present, label="Presentation mode", elem_id="present",
                                          scale=1, min_width=120)
        with gr.Row():
            translation = gr.Textbox(label="Translation", interactive=False, elem_id="translation",
                                     buttons=["copy"], scale=3)
            notice = gr.Textbox(label="Notes", interactive=False, elem_id="notice", scale=2,
                                value=STARTUP_ERROR)
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
        # more tabs (e.g. a beam tree, a comparison) go next to these two
        with gr.Tabs(elem_id="tabs"):
            with gr.Tab("Attention", id="attention", elem_id="tab-attention"):
                # every attention view, drawn in the browser from one payload per translation
                explorer_view = gr.HTML(None, html_template=page.html_template(), js_on_load=page.js_on_load(),
                                        head=page.head_html(), elem_id="explorer", apply_default_css=False,
                                        view=view.client())
            with gr.Tab("Training", id="training", elem_id="tab-training"):
                train_plot = gr.Plot(train_fig, label="Training curves", elem_id="train-plot")
                metrics = gr.Dataframe(train_metrics, label="Model card metrics (metrics.json)", interactive=False,
                                       elem_id="metrics")

        # ---- wiring
        shown = [explorer_view, candidate]
        quiet = dict(api_visibility="private", show_progress="minimal")
        # one model pass at a time: torch already uses every core, and two passes on 2 vCPUs thrash
        model_group = dict(concurrency_limit=1, concurrency_id="model")

        translate_event = gr.on(
            [btn.click, src.submit], on_translate, inputs=[src, method, beam, model_state, lp_state],
            outputs=[translation, notice, nbest, result_state], api_name="translate", **model_group,
            api_description="Translate text; returns (translation, notice, n-best table).",
        )
        # undocumented (callable, not listed) so that bench/load.py can replay the UI's whole request
        translate_event.success(show_result, [result_state], shown, api_name="attention_payload",
                                api_visibility="undocumented", show_progress="hidden").then(
            on_export, [result_state], [download], **quiet)
        examples.click(lambda sample: sample[0], [examples], [src], api_visibility="private", queue=False).then(
            on_translate, [src, method, beam, model_state, lp_state], [translation, notice, nbest, result_state],
            api_visibility="private", **model_group,
        ).success(show_result, [result_state], shown, api_visibility="private", show_progress="hidden").then(
            on_export, [result_state], [download], **quiet)

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
        ).then(on_export, [result_state], [download], **quiet)
        present.change(None, [present], None, js=JS_PRESENT, api_visibility="private")
        demo.load(None, None, [present], js=JS_PRESENT_FROM_URL, api_visibility="private")
        demo.load(on_load, [model_state], [model_dd], api_visibility="private", queue=False)
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
