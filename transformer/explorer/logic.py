"""The attention explorer's logic, kept out of `app.py` so that the app is layout and wiring only.

Two parts (the checkpoints the app offers are `registry.py`, the downloads `exports.py`): one
translation as a session keeps it (`Result`: the decoded n-best list and the attention
of each candidate looked at), and the views: pure functions from a `Result`'s arrays to
Plotly figures and tables (drawn by `transformer.explorer.viz`). Errors meant for the user are
`gr.Error`s with a plain message.
"""
from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from transformer.batching import BatcherBusy
from transformer.hub import training_progress  # noqa: F401  (re-exported for the callbacks)
from transformer.placeholders import placeholder_text
from transformer.translator import Attention, Translation, Translator

from . import page, viz
from .payload import attention_payload
from .registry import ENV_CHECKPOINT, ModelRegistry, is_toy  # noqa: F401  (re-exported: callbacks, tests)
from .share import (  # noqa: F401  (re-exported: the app's limits and the view state live in share.py)
    DEFAULT_BEAM,
    DEFAULT_LENGTH_PENALTY,
    MAX_INPUT_CHARS,
    MEAN_HEADS,
    MEASURES,
    ROWS_INPUT,
    ROWS_PREDICTED,
    UI_MAX_BEAM,
    ViewState,
    off_text,
)

log = logging.getLogger(__name__)

ENV_PRECISION = "TRANSFORMER_PRECISION"  # int8 (the default where torch can) or fp32: the weights the search uses


KINDS = ("encoder", "decoder", "cross")
KIND_TITLES = {"encoder": "Encoder self-attention", "decoder": "Decoder self-attention", "cross": "Cross-attention"}

EXAMPLES_EN = [  # our own sentences: everyday English first, one caption last
    "I think my brother will call me tomorrow.",
    "Why didn't you tell me about the party?",
    "The cat is sleeping on the sofa because it was very tired.",
    "We have lived in Munich for three years.",
    "She doesn't drink coffee, but she loves green tea.",
    "My friend Oluwaseun moved to Plovdiv in 1983.",  # names and a year: placeholders in the maps
    "A man in a red jacket is riding his bike through the park.",
]
EXAMPLES_CAPTIONS = [  # our own, for a model that only knows image captions
    "A little girl in a yellow raincoat is feeding ducks beside the pond.",
    "Two dogs are chasing a red ball across the wet sand.",
    "A woman with a green umbrella waits for the bus in the rain.",
    "The children are building a snowman in front of the school.",
]
EXAMPLES_TOY = ["h e l l o", "a b c d e f g", "g r a d i e n t", "z y x w v", "t r a n s f o r m e r"]


def examples_for(tr: Translator | None, directory: Path | None = None) -> list[str]:
    """Sentences the model knows how to handle: letters for a toy task, captions for a model trained on
    Multi30k alone (its training.json names no other corpus), everyday English otherwise."""
    if tr is not None and is_toy(tr):
        return EXAMPLES_TOY
    training = directory / "training.json" if directory is not None else None
    if training is not None and training.is_file():
        cfg = json.loads(training.read_text(encoding="utf-8")).get("train_config", {})
        if cfg.get("task") == "multi30k" and not cfg.get("corpora"):
            return EXAMPLES_CAPTIONS
    return EXAMPLES_EN


# ----------------------------------------------------------------------------- one translation (session state)


@dataclass
class Result:
    """What one translation leaves in a session's gr.State; views are drawn from it, never by re-decoding."""

    model: str
    source: str
    translation: Translation
    length_penalty: float
    attentions: dict[int, Attention] = field(default_factory=dict)  # per n-best candidate, filled lazily
    candidate: int = 0
    search: Any = None  # search_views.SearchView: recorded when the tree tab first shows this result
    norms: dict[int, Attention] = field(default_factory=dict)  # ‖α f(x)‖ per candidate, only when asked
    off: tuple[tuple[str, int, int], ...] = ()  # heads switched off in `translation` (kind, layer, head)
    base: Result | None = None  # with heads off: the result with every head on (the same source and settings)
    ablated: dict[tuple, Result] = field(default_factory=dict)  # on the base: recent ablations, by `off`
    own: Result | None = None  # a translation of one's own (method "forced"): the model's result it was scored beside

    @property
    def attention(self) -> Attention:
        return self.attentions[self.candidate]

    @property
    def norm(self) -> Attention | None:
        return self.norms.get(self.candidate)


MAX_ABLATIONS = 16  # ablated translations a result keeps (a click back to an earlier mask needs no model pass)


def head_mask_of(off: Sequence[Sequence[Any]], tr: Translator) -> dict[str, np.ndarray]:
    """(kind, layer, head) triples -> {kind: (L, H) of 0/1} for `translate(..., head_mask=...)`."""
    cfg = tr.model.config
    layers = {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
    masks = {kind: np.ones((n, cfg.n_heads), dtype=np.float32) for kind, n in layers.items()}
    for kind, layer, head in off:
        if kind not in masks or not (0 <= layer < layers[kind] and 0 <= head < cfg.n_heads):
            raise gr.Error(f"No head {kind} layer {layer + 1} head {head + 1} in this model.",
                           title="Cannot switch that head off", print_exception=False)
        masks[kind][layer, head] = 0.0
    return masks


def read_off(value: Any) -> tuple[tuple[str, int, int], ...]:
    """The page's list of [kind, layer, head] (0-based) as sorted triples; gr.Error when malformed."""
    if not isinstance(value, (list, tuple)) or len(value) > 1024 or not all(
            isinstance(h, (list, tuple)) and len(h) == 3 and h[0] in KINDS
            and all(isinstance(i, int) and not isinstance(i, bool) for i in h[1:]) for h in value):
        raise gr.Error("The heads to switch off must be a list of [kind, layer, head].", print_exception=False)
    return tuple(sorted({(k, int(layer), int(head)) for k, layer, head in value},
                        key=lambda h: (KINDS.index(h[0]), h[1], h[2])))


def ablate(tr: Translator, result: Result, off: Any) -> Result:
    """`result`'s source translated again with the heads `off` switched off (the same method, beam and length
    penalty): a new Result whose `base` is the one with every head on. No heads: the base itself. Cached."""
    base = result.base or result
    off = read_off(off)
    if not off:
        return base
    if off not in base.ablated:
        t = base.translation
        if t.method == "forced":  # a translation of one's own: the same tokens, scored and drawn without the heads
            translation = tr.force(base.source, t.text, head_mask=head_mask_of(off, tr), ids=t.candidates[0].ids)
        else:
            translation = tr.translate(base.source, method=t.method, beam_size=t.beam_size,
                                       length_penalty=base.length_penalty, return_attention=True,
                                       head_mask=head_mask_of(off, tr))
        if len(base.ablated) >= MAX_ABLATIONS:
            base.ablated.pop(next(iter(base.ablated)))
        base.ablated[off] = Result(base.model, base.source, translation, base.length_penalty,
                                   {0: translation.attention}, off=off, base=base, own=base.own)
    return base.ablated[off]


def with_norms(tr: Translator, result: Result) -> Result:
    """The current candidate's ‖α f(x)‖ maps (one teacher-forced pass, with the result's heads off), cached."""
    if result.candidate not in result.norms:
        result.norms[result.candidate] = tr.attention_for(result.translation, result.candidate, measure="norm")
    return result


def ablation_notice(result: Result | None) -> str:
    """What the notes say while heads are off: how many, and the translation with every head on."""
    if result is None or not result.off or result.base is None:
        return ""
    if result.translation.method == "forced":
        return (f"{len(result.off)} head{'s' if len(result.off) != 1 else ''} switched off ({off_text(result.off)}): "
                "the maps and the scores of your translation are the model's without them.")
    return (f"{len(result.off)} head{'s' if len(result.off) != 1 else ''} switched off ({off_text(result.off)}): "
            f"the translation, the n-best list and the maps are the model's without them. With every head: "
            f"“{result.base.translation.text}”.")


def launch_options() -> dict[str, Any]:
    """What `python app.py` passes to `demo.launch` (Gradio 6 takes theme and css here, not in Blocks)."""
    return dict(server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
                share=False, allowed_paths=None, ssr_mode=False, mcp_server=False, show_error=False,
                state_session_capacity=200, css=page.stylesheet(), theme=gr.themes.Default(),
                max_file_size="1mb")  # the page uploads nothing; a request to gradio's upload route gets 1 MB


def user_error(message: str, title: str = "Error") -> gr.Error:
    """An error the page shows to the user as it is (a plain message, no traceback); raise it."""
    return gr.Error(message, title=title, print_exception=False)


def check_options(method: Any, beam_size: Any) -> int | None:
    """The beam width as an int (None, left out: the model's own), or gr.Error with what is allowed."""
    if method not in ("greedy", "beam"):
        raise gr.Error(f"method must be 'greedy' or 'beam', got {quoted(method)}.", title="Invalid option",
                       print_exception=False)
    if beam_size is None:
        return None
    if isinstance(beam_size, bool) or not isinstance(beam_size, (int, float)) or not math.isfinite(beam_size) \
            or beam_size != int(beam_size) or not 1 <= beam_size <= UI_MAX_BEAM:
        raise gr.Error(f"beam_size must be a whole number from 1 to {UI_MAX_BEAM}, got {quoted(beam_size)}.",
                       title="Invalid beam width", print_exception=False)
    return int(beam_size)


MAX_LENGTH_PENALTY = 10.0  # the slider's range is far below; a bigger one only makes outputs run to the limit


def check_length_penalty(value: Any) -> float | None:
    """The length penalty as a float (None, left out: the model's own), or gr.Error with what is allowed."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= MAX_LENGTH_PENALTY:
        raise gr.Error(f"length_penalty must be a number from 0 to {MAX_LENGTH_PENALTY:g}, got {quoted(value)}.",
                       title="Invalid length penalty", print_exception=False)
    return float(value)


def quoted(value: Any, limit: int = 40) -> str:
    """A value as an error message may quote it: its repr, cut to `limit` characters, control characters and
    lone surrogates escaped (repr does), so a message never carries what it complains about."""
    text = ascii(value) if isinstance(value, str) else repr(value) if isinstance(value, (int, float)) else \
        f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


MAX_BEAM_TOKENS = 640  # source tokens × beam width one request may search: beam 10 up to 64 tokens, beam 5 to 128


def budgeted_beam(tr: Translator, text: str, method: str, beam: int) -> tuple[int, str]:
    """(beam width, notice): the beam width cut so that source tokens × beam width stays within
    `MAX_BEAM_TOKENS`, so that one long request at a wide beam cannot hold the model for seconds while every
    other user waits; the notice says so ("" when nothing was cut). Greedy is never cut."""
    if method != "beam":
        return beam, ""
    try:
        tokens = len(tr.source(text).ids)
    except ValueError as err:
        raise gr.Error(str(err), title="Cannot translate this input", print_exception=False) from None
    allowed = max(1, MAX_BEAM_TOKENS // tokens)
    if beam <= allowed:
        return beam, ""
    return allowed, (f"The beam width was cut from {beam} to {allowed} for this input of {tokens} tokens: one request "
                     f"may search at most {MAX_BEAM_TOKENS} token-beams (tokens × beam width), so that it does not "
                     "hold up other people's translations.")


def run_translation(tr: Translator, model: str, text: Any, method: Any, beam_size: Any,
                    length_penalty: float = DEFAULT_LENGTH_PENALTY,
                    translate: Callable[..., Translation] | None = None,
                    return_attention: bool = True) -> tuple[Result, str]:
    """Validate, translate (with attention unless `return_attention` is False: the text-only API), and return
    (Result, notice text for the user).

    `translate` is what decodes (default `tr.translate`; the app's: its `Batcher`, which decodes
    concurrent requests together), called as `translate(text, method=..., beam_size=..., ...)`."""
    # left out (None): the model's own, chosen on validation (its generation_config.json)
    beam, length_penalty = tr.generation.resolve(check_options(method, beam_size), check_length_penalty(length_penalty))
    if text is not None and not isinstance(text, str):
        raise gr.Error(f"text must be a string, got {quoted(text)}.", title="Cannot translate this input",
                       print_exception=False)
    text = text or ""
    if not text.strip():
        raise gr.Error("Type a sentence in the box (or click an example), then press Translate.",
                       title="Nothing to translate", print_exception=False)
    notices = []
    if len(text) > MAX_INPUT_CHARS:
        text = text[:MAX_INPUT_CHARS]
        notices.append(f"The input was cut to its first {MAX_INPUT_CHARS} characters.")
    beam, cut = budgeted_beam(tr, text, method, beam)
    if cut:
        notices.append(cut)
    try:
        translation = (translate or tr.translate)(text, method=method, beam_size=beam,
                                                  length_penalty=length_penalty,
                                                  return_attention=return_attention)
    except ValueError as err:
        raise gr.Error(str(err), title="Cannot translate this input", print_exception=False) from None
    except BatcherBusy as err:
        raise gr.Error(str(err), title="Busy", print_exception=False) from None
    if translation.model_input != text:
        notices.append(f"Read as “{translation.model_input}”: text typed all in capitals or all in lower case is "
                       "recased the way the training sentences are written, so that names keep their capitals.")
    if translation.entities:
        shown = ", ".join(f"{placeholder_text(k)} {e}" for k, e in enumerate(translation.entities))
        notices.append(f"Names and numbers as placeholders ({shown}): the model reads and writes the placeholder "
                       "token, which is what the maps show, and the translation puts the name or number back.")
        counts = translation.placeholder_counts()
        missing = [f"{placeholder_text(k)} {e}" for k, (e, n) in enumerate(zip(translation.entities, counts)) if n == 0]
        repeated = [f"{placeholder_text(k)} {e}" for k, (e, n) in enumerate(zip(translation.entities, counts)) if n > 1]
        if missing:
            notices.append(f"The translation leaves out {', '.join(missing)}: the model did not write "
                           f"{'that placeholder' if len(missing) == 1 else 'those placeholders'}.")
        if repeated:
            notices.append(f"The translation repeats {', '.join(repeated)}.")
    if translation.as_text:
        notices.append(f"This model has {len(translation.entities)} placeholders; {', '.join(translation.as_text)} "
                       "read as ordinary text, copied piece by piece (check them).")
    if translation.truncated:
        notices.append(f"The input is longer than this model's limit of {tr.max_source_tokens} tokens: "
                       f"only the first {tr.max_source_tokens} tokens were translated.")
    result = Result(model, text, translation, float(length_penalty), {0: translation.attention})
    return result, " ".join(notices)


def distinct_candidates(result: Result) -> list[tuple[int, int]]:
    """(index, spellings) of each distinct translation text of the n-best list, at its best-ranked candidate:
    beam search also keeps one text spelled in other subword pieces ("▁Lehr er" and "▁Lehrer"), which reads as a
    repeat. `spellings` counts the candidates with that text; the search tree keeps them all."""
    first: dict[str, int] = {}
    counts: dict[str, int] = {}
    for i, c in enumerate(result.translation.candidates):
        first.setdefault(c.text, i)
        counts[c.text] = counts.get(c.text, 0) + 1
    return [(i, counts[text]) for text, i in first.items()]


NBEST_COLUMNS = ["#", "translation", "log-probability", "score (length-normalised)", "spellings"]


def nbest_table(result: Result | None) -> pd.DataFrame:
    """Each distinct translation once, with its best score; "spellings": how many candidates of the search
    write that text (in different subword pieces)."""
    if result is None:
        return pd.DataFrame(columns=NBEST_COLUMNS)
    cands = result.translation.candidates
    rows = [[i + 1, cands[i].text, round(cands[i].log_prob, 3), round(cands[i].score, 3), n]
            for i, n in distinct_candidates(result)]
    return pd.DataFrame(rows, columns=NBEST_COLUMNS)


def nbest_row_candidate(result: Result, row: int) -> int:
    """The candidate index behind a row of `nbest_table`."""
    distinct = distinct_candidates(result)
    return distinct[min(max(int(row), 0), len(distinct) - 1)][0]


def candidate_choices(result: Result | None) -> list[tuple[str, int]]:
    if result is None:
        return [("1", 0)]
    cands = result.translation.candidates
    return [(f"{i + 1}: {cands[i].text[:60] or '(empty)'}", i) for i, _ in distinct_candidates(result)]


def select_candidate(tr: Translator, result: Result, index: Any) -> Result:
    """Point the result at n-best candidate `index` (one teacher-forced pass the first time; cached)."""
    n = len(result.translation.candidates)
    if isinstance(index, bool) or not isinstance(index, (int, float)) or index != int(index) or not 0 <= index < n:
        raise gr.Error(f"candidate must be 1 to {n}.", print_exception=False)
    index = int(index)
    if index not in result.attentions:
        result.attentions[index] = tr.attention_for(result.translation, candidate=index)
    result.candidate = index
    return result


# ----------------------------------------------------------------------------- what the page shows


def result_payload(result: Result | None, heads: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """What the browser gets for the current candidate of a result (None clears the views): with its norms
    when they were asked for, the heads switched off and the unmasked translation, and `heads` (what the
    checkpoint's head analysis says about each head, `head_views.head_info`)."""
    if result is None:
        return None
    ablation = None
    if result.off and result.base is not None:
        ablation = {"off": [list(h) for h in result.off], "unmasked": result.base.translation.text}
    return attention_payload(result.attention, model=result.model, candidate=result.candidate,
                             n_candidates=len(result.translation.candidates), source=result.source,
                             translation=result.translation.candidates[result.candidate].text,
                             norms=result.norm, ablation=ablation, heads=heads,
                             entities=result.translation.entities)



# ----------------------------------------------------------------------------- views (pure: arrays -> figures)
# The page draws its views in the browser (static/explorer.js, from `result_payload`); these Python
# views are the reference it is tested against, and what notebooks and scripts can use directly.


@dataclass(frozen=True)
class ViewOptions:
    layer: int = 0
    head: int = MEAN_HEADS
    rows: str = ROWS_PREDICTED
    hide_special: bool = False
    merge_subwords: bool = False


def kind_maps(att: Attention, kind: str, rows: str) -> tuple[np.ndarray, list[str], list[str]]:
    """(L, H, Tq, Tk) weights of one attention kind with its query and key tokens."""
    if kind == "encoder":
        return att.encoder, att.src_tokens, att.src_tokens
    queries = att.tgt_out_tokens if rows == ROWS_PREDICTED else att.tgt_in_tokens
    if kind == "decoder":
        return att.decoder, queries, att.tgt_in_tokens
    if kind == "cross":
        return att.cross, queries, att.src_tokens
    raise ValueError(f"unknown attention kind {kind!r}")


def transform(weights: np.ndarray, q: Sequence[str], k: Sequence[str], hide: bool, merge: bool
              ) -> tuple[np.ndarray, list[str], list[str], float | None]:
    """Hide special tokens (renormalising rows) then merge subwords; hidden mass is None when not hiding."""
    hidden = None
    q, k = list(q), list(k)
    if hide:
        weights, q, k, hidden = viz.hide_special(weights, q, k)
    if merge and q and k:
        weights, q, k = viz.merge_subwords(weights, q, k)
        # whole words: marked as word starts, so their labels show bare (viz.display_token), as on the page
        q, k = [viz.WORD_MARK + w for w in q], [viz.WORD_MARK + w for w in k]
    return weights, q, k, hidden


def _empty(weights: np.ndarray) -> bool:
    return 0 in weights.shape[-2:]


def head_label(head: int) -> str:
    return "mean over heads" if head < 0 else f"head {head + 1}"


def focus_view(att: Attention, kind: str, opts: ViewOptions, suffix: str = "") -> tuple[go.Figure, float | None]:
    """One layer and head (or the mean over heads) of one kind as a heatmap, and the hidden mass."""
    weights, q, k = kind_maps(att, kind, opts.rows)
    n_layers, n_heads = weights.shape[:2]
    if n_layers == 0:
        return viz.placeholder_figure(f"This model has no {kind} layers."), None
    layer = min(max(opts.layer, 0), n_layers - 1)
    head = opts.head if opts.head < n_heads else MEAN_HEADS
    w = weights[layer].mean(axis=0) if head < 0 else weights[layer, head]
    w, q, k, hidden = transform(w, q, k, opts.hide_special, opts.merge_subwords)
    title = f"{KIND_TITLES[kind]} · layer {layer + 1} · {head_label(head)}{suffix}"
    if layer != opts.layer:
        title += f" (this stack has {n_layers} layers)"
    if _empty(w):
        return viz.placeholder_figure("Nothing left to show after hiding special tokens."), hidden
    return viz.attention_heatmap(w, q, k, title=title), hidden


def model_view(att: Attention, kind: str, opts: ViewOptions, suffix: str = "") -> go.Figure:
    weights, q, k = kind_maps(att, kind, opts.rows)
    if weights.shape[0] == 0:
        return viz.placeholder_figure(f"This model has no {kind} layers.")
    w, q, k, _ = transform(weights, q, k, opts.hide_special, opts.merge_subwords)
    if _empty(w):
        return viz.placeholder_figure("Nothing left to show after hiding special tokens.")
    return viz.model_view(w, q, k, title=f"{KIND_TITLES[kind]}: every layer (rows) × head (columns){suffix}")


def rollout_view(att: Attention, opts: ViewOptions) -> go.Figure:
    if att.encoder.shape[0] == 0:
        return viz.placeholder_figure("This model has no encoder layers.")
    r = viz.rollout(att.encoder)  # over all tokens: specials carry mass through the layers too
    r, q, k, _ = transform(r, att.src_tokens, att.src_tokens, opts.hide_special, opts.merge_subwords)
    if _empty(r):
        return viz.placeholder_figure("Nothing left to show after hiding special tokens.")
    return viz.rollout_figure(r, q, title="Encoder attention rollout (all layers, heads averaged)")


def entropy_grid(att: Attention, kind: str) -> tuple[go.Figure, pd.DataFrame]:
    """Head summary figure and the clickable table of the same numbers (column 0 = layer label)."""
    weights, _, _ = kind_maps(att, kind, ROWS_INPUT)
    if weights.shape[0] == 0:
        return viz.placeholder_figure(f"This model has no {kind} layers."), pd.DataFrame()
    scores = viz.head_entropy(weights)
    fig = viz.head_summary(scores, "entropy (nats)", title=f"{KIND_TITLES[kind]}: entropy per head")
    table = pd.DataFrame(np.round(scores, 2), columns=[f"H{h + 1}" for h in range(scores.shape[1])])
    table.insert(0, "layer", [f"L{layer + 1}" for layer in range(scores.shape[0])])
    return fig, table


def step_view(att: Attention, step: Any, opts: ViewOptions) -> tuple[go.Figure, str]:
    """Decoding step `step` (1-based): the chosen token, top-5 next tokens and that step's cross-attention row."""
    if not att.steps:
        return viz.placeholder_figure("No decoding steps."), ""
    t = min(max(int(step or 1), 1), len(att.steps)) - 1
    record = att.steps[t]
    n_layers, n_heads = att.cross.shape[:2]
    if n_layers == 0:
        return viz.placeholder_figure("This model has no decoder layers."), ""
    layer = min(max(opts.layer, 0), n_layers - 1)
    head = opts.head if opts.head < n_heads else MEAN_HEADS
    row = att.cross[layer].mean(axis=0)[t] if head < 0 else att.cross[layer, head, t]
    row2, _, src, _ = transform(row[None, :], ["·"], att.src_tokens, opts.hide_special, opts.merge_subwords)
    fig = viz.step_figure(record.top_k, row2[0], src, record.token,
                          title=f"Step {t + 1}: chose {viz.display_token(record.token)} · "
                                f"cross-attention layer {layer + 1}, "
                                f"{head_label(head)}")
    text = (f"Step {t + 1} of {len(att.steps)}: the decoder read \u2018{viz.display_token(att.tgt_in_tokens[t])}"
            f"\u2019 and chose \u2018{viz.display_token(record.token)}\u2019 (probability {record.probability:.1%}).")
    return fig, text


def hidden_text(masses: dict[str, float | None]) -> str:
    shown = {k: v for k, v in masses.items() if v is not None}
    if not shown:
        return "Special tokens are shown (tick \"Hide <bos>/<eos>\" to hide them and renormalise rows)."
    parts = ", ".join(f"{KIND_TITLES[k].lower()} {v:.1%}" for k, v in shown.items())
    return f"Attention mass hidden on <bos>/<eos>/<pad> in the focus views (rows renormalised): {parts}."


def candidate_suffix(result: Result) -> str:
    return f" · candidate {result.candidate + 1}" if result.candidate else ""


def load_train_log(directory: Path | None) -> list[dict[str, Any]]:
    if directory is None or not (directory / "train_log.jsonl").is_file():
        return []
    records = []
    for line in (directory / "train_log.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def metrics_table(directory: Path | None) -> pd.DataFrame:
    """metrics.json flattened to (metric, value) rows; empty when there is none."""
    path = None if directory is None else directory / "metrics.json"
    if path is None or not path.is_file():
        return pd.DataFrame({"metric": ["(no metrics.json in this checkpoint)"], "value": [""]})
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        return pd.DataFrame({"metric": ["metrics.json could not be read"], "value": [str(err)]})
    if isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
        return _evaluation_table(data)
    rows: list[tuple[str, str]] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, sub in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), sub)
        elif isinstance(value, float):
            rows.append((prefix, f"{value:.4g}"))
        else:
            rows.append((prefix, json.dumps(value, ensure_ascii=False) if isinstance(value, list) else str(value)))

    walk("", data)
    return pd.DataFrame(rows, columns=["metric", "value"])


def _evaluation_table(data: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """{"test/beam5": {"bleu": ..., "chrf": ..., ...}, ...} -> one row per evaluation, scalar fields as columns."""
    skip = ("split", "batch_size")
    columns: list[str] = [c for c in ("bleu", "chrf") if any(c in v for v in data.values())]
    for record in data.values():
        for key, value in record.items():
            if (key not in columns and key not in skip and "signature" not in key
                    and isinstance(value, (int, float, str)) and not isinstance(value, bool)):
                columns.append(key)

    def cell(value: Any) -> str:
        return "" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)

    rows = [[name] + [cell(record.get(c)) for c in columns] for name, record in data.items()]
    return pd.DataFrame(rows, columns=["evaluation"] + columns)


def training_view(label: str | None, directory: Path | None) -> tuple[go.Figure, pd.DataFrame]:
    """Loss and validation curves from train_log.jsonl, and the metrics.json table, of one checkpoint."""
    records = load_train_log(directory)
    title = f"Training: {label}" if label else "Training"
    fig = viz.training_curves(records, title=title) if records else viz.placeholder_figure(
        "This checkpoint has no train_log.jsonl.")
    return fig, metrics_table(directory)
