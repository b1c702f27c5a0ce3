"""Attention explorer: translate a sentence and look at every layer and head of the Transformer's attention.

    python app.py                                   # http://127.0.0.1:7860
    GRADIO_SERVER_NAME=0.0.0.0 GRADIO_SERVER_PORT=8080 python app.py
    TRANSFORMER_CHECKPOINT=checkpoints/toy-reverse python app.py   # or a Hugging Face Hub repo id

Layout and wiring only: the model registry, session results and views live in `transformer.explorer`
(figures are drawn by `transformer.viz`).
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
import pandas as pd  # noqa: E402
import plotly.graph_objects as go  # noqa: E402
import torch  # noqa: E402

from transformer import viz  # noqa: E402
from transformer.explorer import (  # noqa: E402
    DEFAULT_BEAM, DEFAULT_LENGTH_PENALTY, ENV_CHECKPOINT, EXAMPLES_EN, KIND_TITLES, KINDS, MEAN_HEADS, ROWS_INPUT, ROWS_PREDICTED, UI_MAX_BEAM,
    ModelRegistry, Result, ViewOptions, candidate_choices, candidate_suffix, entropy_grid, examples_for,
    export_npz, focus_view, hidden_text, is_toy, model_view, nbest_table, rollout_view, run_translation, select_candidate,
    step_view, training_view,
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

CSS = """
#translation textarea, #translation input {font-size: 1.35rem !important;}
"""


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


def layer_head_choices(tr: Translator | None) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    if tr is None:
        return [("Layer 1", 0)], [("mean over heads", MEAN_HEADS)]
    cfg = tr.model.config
    n_layers = max(cfg.n_encoder_layers, cfg.n_decoder_layers, 1)
    layers = [(f"Layer {i + 1}", i) for i in range(n_layers)]
    heads = [("mean over heads", MEAN_HEADS)] + [(f"Head {h + 1}", h) for h in range(cfg.n_heads)]
    return layers, heads


def empty_grid(tr: Translator | None) -> pd.DataFrame:
    n_heads = tr.model.config.n_heads if tr is not None else 1
    return pd.DataFrame(columns=["layer"] + [f"H{h + 1}" for h in range(n_heads)])


def view_options(layer: Any, head: Any, rows: str, hide: Any, merge: Any) -> ViewOptions:
    """The display controls' values (None until a control is first set) as ViewOptions."""
    return ViewOptions(int(layer or 0), int(MEAN_HEADS if head is None else head), rows, bool(hide), bool(merge))


def placeholder() -> go.Figure:
    return viz.placeholder_figure("Translate a sentence to see its attention.")


# ----------------------------------------------------------------------------- event handlers


def on_translate(text: str, method: str, beam_size: float, model: str | None, length_penalty: float):
    """API `/translate`: (text, method, beam_size) -> (translation, notice, n-best); model, length penalty: state."""
    tr = _translator(model)
    result, notice = run_translation(tr, model, text, method, beam_size, length_penalty)
    return result.translation.text, notice, nbest_table(result), result


def render_all(result: Result | None, layer: int, head: int, rows: str, hide: bool, merge: bool, step: Any = None):
    """Every view of the current result (after a translation, a candidate or a display-option change).

    `step` keeps the step slider where it was (a display-option change); None starts at step 1.
    """
    opts = view_options(layer, head, rows, hide, merge)
    if result is None:
        empty = placeholder()
        return ([empty] * 10 + [pd.DataFrame(columns=["layer"])] * 3
                + [gr.Dropdown(choices=candidate_choices(None), value=0, interactive=False),
                   gr.Slider(minimum=1, maximum=2, value=1, interactive=False), empty, "", hidden_text({})])
    att, suffix = result.attention, candidate_suffix(result)
    figures, masses = [], {}
    for kind in KINDS:
        focus, masses[kind] = focus_view(att, kind, opts, suffix)
        figures += [focus, model_view(att, kind, opts, suffix)]
    summaries = [entropy_grid(att, kind) for kind in KINDS]
    n_steps = max(len(att.steps), 1)
    step = min(max(int(step or 1), 1), n_steps)
    step_fig, step_text = step_view(att, step, opts)
    n_cand = len(result.translation.candidates)
    return (figures + [rollout_view(att, opts)] + [s[0] for s in summaries] + [s[1] for s in summaries]
            + [gr.Dropdown(choices=candidate_choices(result), value=result.candidate, interactive=n_cand > 1),
               gr.Slider(minimum=1, maximum=max(n_steps, 2), value=step, step=1, interactive=n_steps > 1),
               step_fig, step_text, hidden_text(masses)])


def render_focus(result: Result | None, layer: int, head: int, rows: str, hide: bool, merge: bool, step: float):
    """Only the three focus views and the step view (a layer or head change)."""
    if result is None:
        return [placeholder()] * 3 + [placeholder(), "", hidden_text({})]
    opts = view_options(layer, head, rows, hide, merge)
    att, suffix = result.attention, candidate_suffix(result)
    figs, masses = [], {}
    for kind in KINDS:
        fig, masses[kind] = focus_view(att, kind, opts, suffix)
        figs.append(fig)
    step_fig, step_text = step_view(att, step, opts)
    return figs + [step_fig, step_text, hidden_text(masses)]


def on_step(result: Result | None, step: float, layer: int, head: int, rows: str, hide: bool, merge: bool):
    if result is None:
        return placeholder(), ""
    opts = view_options(layer, head, rows, hide, merge)
    return step_view(result.attention, step, opts)


def on_candidate(result: Result | None, index: int):
    if result is None:
        return None
    return select_candidate(_translator(result.model), result, index)


def on_nbest_select(result: Result | None, evt: gr.SelectData):
    if result is None or not evt.index:
        return result
    row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
    return select_candidate(_translator(result.model), result, row)


def on_grid_select(result: Result | None, step: float, rows: str, hide: bool, merge: bool, evt: gr.SelectData):
    """Clicking a head-summary cell sets the layer and head selectors (column 0 = the layer's mean)."""
    if not isinstance(evt.index, (list, tuple)) or len(evt.index) != 2:
        raise gr.Error("Click a cell of the grid.", print_exception=False)
    layer, col = int(evt.index[0]), int(evt.index[1])
    head = MEAN_HEADS if col == 0 else col - 1
    return [layer, head] + render_focus(result, layer, head, rows, hide, merge, step)


def on_model_change(label: str):
    """Switch model: load it (cached), clear the old result, refresh examples, selectors and training tab."""
    tr = _translator(label)
    layers, heads = layer_head_choices(tr)
    fig, metrics = training_view(label, REGISTRY.directory(label))
    notice = f"Model {label} is ready ({'toy task: type space-separated letters' if is_toy(tr) else 'English'})."
    return (label, None, "", notice, nbest_table(None),
            gr.Dataset(samples=[[e] for e in examples_for(tr)]),
            gr.Dropdown(choices=layers, value=layers[-1][1]), gr.Dropdown(choices=heads, value=MEAN_HEADS),
            fig, metrics)


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
    layers, heads = layer_head_choices(tr0)
    train_fig, train_metrics = training_view(DEFAULT_MODEL, REGISTRY.directory(DEFAULT_MODEL))
    with gr.Blocks(title="Transformer attention explorer", analytics_enabled=False,
                   delete_cache=(900, 3600)) as demo:
        model_state = gr.State(DEFAULT_MODEL)
        lp_state = gr.State(DEFAULT_LENGTH_PENALTY)
        result_state = gr.State(None, time_to_live=3600)

        gr.Markdown("# Transformer attention explorer\nTranslate a sentence, then look inside: every layer and "
                    "head of the encoder, the decoder and the cross-attention between them.")
        with gr.Row():
            with gr.Column(scale=3):
                src = gr.Textbox(label="Source sentence (press Enter to translate)", lines=1, max_lines=4,
                                 placeholder="Type a sentence, e.g. " + EXAMPLES_EN[0], elem_id="source",
                                 autofocus=True)
                examples = gr.Dataset(components=[src], samples=[[e] for e in examples_for(tr0)],
                                      label="Examples (click to translate)", elem_id="examples")
            with gr.Column(scale=2):
                model_dd = gr.Dropdown(choices=REGISTRY.labels() or ([DEFAULT_MODEL] if DEFAULT_MODEL else []),
                                       value=DEFAULT_MODEL, label="Model", elem_id="model")
                with gr.Row():
                    method = gr.Radio(["greedy", "beam"], value="beam", label="Decoding", elem_id="method")
                    beam = gr.Slider(1, UI_MAX_BEAM, value=DEFAULT_BEAM, step=1, precision=0, label="Beam width",
                                     elem_id="beam")
                with gr.Accordion("Advanced", open=False):
                    lp = gr.Slider(0.0, 2.0, value=DEFAULT_LENGTH_PENALTY, step=0.1, label="Length penalty",
                                   info="GNMT length penalty used to rank beam hypotheses (0 = none)")
                btn = gr.Button("Translate", variant="primary", elem_id="translate")
        with gr.Row():
            translation = gr.Textbox(label="Translation", interactive=False, elem_id="translation",
                                     buttons=["copy"], scale=3)
            notice = gr.Textbox(label="Notes", interactive=False, elem_id="notice", scale=2,
                                value=STARTUP_ERROR)
        with gr.Row():
            nbest = gr.Dataframe(value=nbest_table(None), label="n-best list (click a row to inspect that candidate)",
                                 interactive=False, elem_id="nbest", scale=3, wrap=True,
                                 column_widths=["7%", "53%", "20%", "20%"])
            with gr.Column(scale=2):
                candidate = gr.Dropdown(choices=candidate_choices(None), value=0, type="value", label="Candidate shown",
                                        interactive=False, elem_id="candidate")
                download = gr.DownloadButton("Download attention (.npz)", interactive=False, elem_id="download")
        with gr.Accordion("How to read this", open=False, elem_id="howto"):
            gr.Markdown(HOW_TO_READ)
        with gr.Row(equal_height=True):
            layer_dd = gr.Dropdown(choices=layers, value=layers[-1][1], label="Layer", elem_id="layer", min_width=120)
            head_dd = gr.Dropdown(choices=heads, value=MEAN_HEADS, label="Head", elem_id="head", min_width=140)
            rows = gr.Radio([ROWS_INPUT, ROWS_PREDICTED], value=ROWS_INPUT, label="Decoder rows labelled by",
                            elem_id="rows")
            hide = gr.Checkbox(label="Hide <bos>/<eos>", value=False, elem_id="hide")
            merge = gr.Checkbox(label="Merge subwords into words", value=False, elem_id="merge")
        hidden_box = gr.Textbox(value=hidden_text({}), show_label=False, interactive=False, elem_id="hidden-mass",
                                container=False)
        focus, model_views, summaries, grids = {}, {}, {}, {}
        with gr.Tabs(elem_id="tabs"):
            for kind in KINDS:
                with gr.Tab(KIND_TITLES[kind], id=kind, elem_id=f"tab-{kind}"):
                    with gr.Row():
                        focus[kind] = gr.Plot(placeholder(), label="Focus: the chosen layer and head", scale=3,
                                              elem_id=f"focus-{kind}")
                        with gr.Column(scale=2):
                            summaries[kind] = gr.Plot(placeholder(), label="Head summary (entropy)",
                                                      elem_id=f"summary-{kind}")
                            grids[kind] = gr.Dataframe(empty_grid(tr0),
                                                       label="Click a cell to focus that head (layer column: mean)",
                                                       interactive=False, elem_id=f"grid-{kind}")
                    model_views[kind] = gr.Plot(placeholder(), label="Model view", elem_id=f"model-{kind}")
                    if kind == "encoder":
                        rollout_plot = gr.Plot(placeholder(), label="Aggregate: attention rollout",
                                               elem_id="rollout")
            with gr.Tab("Step by step", id="steps", elem_id="tab-steps"):
                step = gr.Slider(1, 2, value=1, step=1, precision=0, label="Decoding step", interactive=False,
                                 elem_id="step")
                step_text = gr.Textbox(show_label=False, interactive=False, container=False, elem_id="step-text")
                step_plot = gr.Plot(placeholder(), label="Top-5 next tokens and cross-attention", elem_id="step-plot")
            with gr.Tab("Training", id="training", elem_id="tab-training"):
                train_plot = gr.Plot(train_fig, label="Training curves", elem_id="train-plot")
                metrics = gr.Dataframe(train_metrics, label="Model card metrics (metrics.json)", interactive=False,
                                       elem_id="metrics")

        # ---- wiring
        view_inputs = [result_state, layer_dd, head_dd, rows, hide, merge]
        all_views = ([focus["encoder"], model_views["encoder"], focus["decoder"], model_views["decoder"],
                      focus["cross"], model_views["cross"], rollout_plot]
                     + [summaries[k] for k in KINDS] + [grids[k] for k in KINDS]
                     + [candidate, step, step_plot, step_text, hidden_box])
        focus_outputs = [focus[k] for k in KINDS] + [step_plot, step_text, hidden_box]
        quiet = dict(api_visibility="private", show_progress="minimal")
        # one model pass at a time: torch already uses every core, and two passes on 2 vCPUs thrash
        # (figure building, which holds the GIL, keeps the default limit of 2)
        model_group = dict(concurrency_limit=1, concurrency_id="model")

        translate_event = gr.on(
            [btn.click, src.submit], on_translate, inputs=[src, method, beam, model_state, lp_state],
            outputs=[translation, notice, nbest, result_state], api_name="translate", **model_group,
            api_description="Translate text; returns (translation, notice, n-best table).",
        )
        # undocumented (callable, not listed) so that bench/load.py can replay the UI's whole request
        translate_event.success(render_all, view_inputs, all_views, api_name="render_views",
                                api_visibility="undocumented", show_progress="minimal").then(
            on_export, [result_state], [download], **quiet)
        examples.click(lambda sample: sample[0], [examples], [src], api_visibility="private", queue=False).then(
            on_translate, [src, method, beam, model_state, lp_state], [translation, notice, nbest, result_state],
            api_visibility="private", **model_group,
        ).success(render_all, view_inputs, all_views, **quiet).then(on_export, [result_state], [download], **quiet)

        for control in (layer_dd, head_dd):
            control.input(render_focus, view_inputs + [step], focus_outputs, trigger_mode="always_last", **quiet)
        for control in (rows, hide, merge):
            control.input(render_all, view_inputs + [step], all_views, trigger_mode="always_last", **quiet)
        step.input(on_step, [result_state, step, layer_dd, head_dd, rows, hide, merge], [step_plot, step_text],
                   trigger_mode="always_last", **quiet)
        candidate.input(on_candidate, [result_state, candidate], [result_state], **quiet, **model_group).success(
            render_all, view_inputs, all_views, **quiet).then(on_export, [result_state], [download], **quiet)
        nbest.select(on_nbest_select, [result_state], [result_state], **quiet, **model_group).success(
            render_all, view_inputs, all_views, **quiet).then(on_export, [result_state], [download], **quiet)
        for kind in KINDS:
            grids[kind].select(on_grid_select, [result_state, step, rows, hide, merge],
                               [layer_dd, head_dd] + focus_outputs, **quiet)
        method.input(on_method, [method], [beam], api_visibility="private", queue=False)
        lp.change(lambda v: v, [lp], [lp_state], api_visibility="private", queue=False)
        model_dd.input(
            on_model_change, [model_dd],
            [model_state, result_state, translation, notice, nbest, examples, layer_dd, head_dd, train_plot, metrics],
            api_visibility="private", **model_group,
        ).success(render_all, view_inputs, all_views, **quiet).then(on_export, [result_state], [download], **quiet)
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
