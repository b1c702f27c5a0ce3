"""Attention explorer: translate a sentence and look at every layer and head of the Transformer's attention.

    python app.py                                   # http://127.0.0.1:7860
    GRADIO_SERVER_NAME=0.0.0.0 GRADIO_SERVER_PORT=8080 python app.py
    TRANSFORMER_CHECKPOINT=checkpoints/toy-reverse python app.py   # or a Hugging Face Hub repo id

Layout and wiring only: models come from `transformer.translator`, figures from `transformer.viz`.
The module-level `demo` (queued, not launched) is what Spaces and the tests import; `launch_options()`
gives the keyword arguments `python app.py` launches it with.

API: `/translate` takes exactly (text, method, beam_size) and returns (translation, notice, n-best
table); the model and length penalty come from per-session state (the defaults for API clients).
"""
from __future__ import annotations

import json
import logging
import math
import os
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no network at run time (telemetry, version check)

import gradio as gr  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import plotly.graph_objects as go  # noqa: E402
import torch  # noqa: E402

from transformer import viz  # noqa: E402
from transformer.hub import resolve_checkpoint  # noqa: E402
from transformer.translator import Attention, Translation, Translator, load_pretrained  # noqa: E402

log = logging.getLogger("app")

ROOT = Path(__file__).resolve().parent
CHECKPOINT_DIR = ROOT / "checkpoints"
FLAGSHIP = "multi30k-en-de"
ENV_CHECKPOINT = "TRANSFORMER_CHECKPOINT"

UI_MAX_BEAM = 10  # the slider's range; the API enforces the same
DEFAULT_BEAM, DEFAULT_LENGTH_PENALTY = 5, 0.6
MAX_INPUT_CHARS = 2000  # longer text is cut before tokenising (the model then cuts to its token limit)
TOY_VOCAB_LIMIT = 64  # a tokenizer this small is a toy task's letter vocabulary

KINDS = ("encoder", "decoder", "cross")
KIND_TITLES = {"encoder": "Encoder self-attention", "decoder": "Decoder self-attention", "cross": "Cross-attention"}
MEAN_HEADS = -1  # head selector value for "mean over heads"
ROWS_INPUT, ROWS_PREDICTED = "decoder input token", "predicted token"

EXAMPLES_EN = [
    "A little girl in a yellow raincoat is feeding ducks beside the pond.",
    "My grandfather repairs old bicycles in his garage every Sunday.",
    "Two dogs are chasing a red ball across the wet sand.",
    "A woman with a green umbrella waits for the bus in the rain.",
    "The children are building a snowman in front of the school.",
]
EXAMPLES_TOY = ["h e l l o", "a b c d e f g", "g r a d i e n t", "z y x w v", "t r a n s f o r m e r"]

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


# ----------------------------------------------------------------------------- models


@dataclass(frozen=True)
class ModelEntry:
    label: str  # shown in the model selector
    source: str  # what load_pretrained gets: a directory or a Hub repo id


class ModelRegistry:
    """Every checkpoint directory under `checkpoint_dir` (flagship first), each loaded once on first use.

    `override` (a Hub repo id or a path, from $TRANSFORMER_CHECKPOINT) becomes the first entry.
    """

    def __init__(self, checkpoint_dir: Path, override: str | None = None):
        self.checkpoint_dir = Path(checkpoint_dir)
        self.override = override or None
        self._models: dict[str, Translator] = {}
        self._dirs: dict[str, Path] = {}
        self._lock = threading.Lock()
        self._load_locks: dict[str, threading.Lock] = {}

    def entries(self) -> list[ModelEntry]:
        found: list[ModelEntry] = []
        if self.checkpoint_dir.is_dir():
            dirs = [d for d in self.checkpoint_dir.iterdir()
                    if d.is_dir() and not d.name.startswith(".") and (d / "config.json").is_file()
                    and (d / "model.safetensors").is_file()]
            dirs.sort(key=lambda d: (d.name != FLAGSHIP, d.name))
            found = [ModelEntry(d.name, str(d)) for d in dirs]
        if self.override:
            path = Path(self.override)
            same = [e for e in found if path.is_dir() and Path(e.source).resolve() == path.resolve()]
            first = same[0] if same else ModelEntry(self.override, self.override)
            found = [first] + [e for e in found if e != first]
        return found

    def labels(self) -> list[str]:
        return [e.label for e in self.entries()]

    def default(self) -> str | None:
        entries = self.entries()
        return entries[0].label if entries else None

    def is_loaded(self, label: str) -> bool:
        return label in self._models

    def get(self, label: str | None) -> Translator:
        """The loaded model for `label`; loads it (once, even under concurrent requests) if needed."""
        if label is None:
            raise LookupError(
                f"No model found: train one (python -m transformer.train --preset toy-reverse) so that "
                f"{self.checkpoint_dir.name}/ holds a checkpoint, or set {ENV_CHECKPOINT}.")
        if label in self._models:
            return self._models[label]
        with self._lock:
            lock = self._load_locks.setdefault(label, threading.Lock())
        with lock:
            if label not in self._models:
                entry = next((e for e in self.entries() if e.label == label), None)
                if entry is None:
                    raise LookupError(f"Unknown model {label!r}; choose one of {self.labels()}")
                start = time.perf_counter()
                translator = load_pretrained(entry.source)
                try:  # where its train_log.jsonl / metrics.json live (a Hub id is in the cache by now)
                    self._dirs[label] = resolve_checkpoint(entry.source, local_files_only=True)
                except Exception:
                    log.warning("no local directory for %s: the training tab will be empty", label)
                self._models[label] = translator
                log.info("loaded %s from %s in %.1f s", label, entry.source, time.perf_counter() - start)
        return self._models[label]

    def directory(self, label: str | None) -> Path | None:
        """The checkpoint directory of a model (None if unknown); the model need not be loaded."""
        if label in self._dirs:
            return self._dirs[label]
        entry = next((e for e in self.entries() if e.label == label), None)
        if entry is not None and Path(entry.source).is_dir():
            return Path(entry.source)
        return None


def is_toy(tr: Translator) -> bool:
    return tr.tokenizer.vocab_size <= TOY_VOCAB_LIMIT


def examples_for(tr: Translator | None) -> list[str]:
    return EXAMPLES_TOY if tr is not None and is_toy(tr) else EXAMPLES_EN


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

    @property
    def attention(self) -> Attention:
        return self.attentions[self.candidate]


def check_options(method: Any, beam_size: Any) -> int:
    """The beam width as an int, or gr.Error with what is allowed."""
    if method not in ("greedy", "beam"):
        raise gr.Error(f"method must be 'greedy' or 'beam', got {method!r}.", title="Invalid option",
                       print_exception=False)
    if isinstance(beam_size, bool) or not isinstance(beam_size, (int, float)) or not math.isfinite(beam_size) \
            or beam_size != int(beam_size) or not 1 <= beam_size <= UI_MAX_BEAM:
        raise gr.Error(f"beam_size must be a whole number from 1 to {UI_MAX_BEAM}, got {beam_size!r}.",
                       title="Invalid beam width", print_exception=False)
    return int(beam_size)


def run_translation(tr: Translator, model: str, text: Any, method: Any, beam_size: Any,
                    length_penalty: float = DEFAULT_LENGTH_PENALTY) -> tuple[Result, str]:
    """Validate, translate with attention, and return (Result, notice text for the user)."""
    beam = check_options(method, beam_size)
    text = "" if text is None else str(text)
    if not text.strip():
        raise gr.Error("Type a sentence in the box (or click an example), then press Translate.",
                       title="Nothing to translate", print_exception=False)
    notices = []
    if len(text) > MAX_INPUT_CHARS:
        text = text[:MAX_INPUT_CHARS]
        notices.append(f"The input was cut to its first {MAX_INPUT_CHARS} characters.")
    try:
        translation = tr.translate(text, method=method, beam_size=beam, length_penalty=float(length_penalty),
                                   return_attention=True)
    except ValueError as err:
        raise gr.Error(str(err), title="Cannot translate this input", print_exception=False) from None
    if translation.truncated:
        notices.append(f"The input is longer than this model's limit of {tr.max_source_tokens} tokens: "
                       f"only the first {tr.max_source_tokens} tokens were translated.")
    result = Result(model, text, translation, float(length_penalty), {0: translation.attention})
    return result, " ".join(notices)


def nbest_table(result: Result | None) -> pd.DataFrame:
    columns = ["#", "translation", "log-probability", "score (length-normalised)"]
    if result is None:
        return pd.DataFrame(columns=columns)
    rows = [[i + 1, c.text, round(c.log_prob, 3), round(c.score, 3)]
            for i, c in enumerate(result.translation.candidates)]
    return pd.DataFrame(rows, columns=columns)


def candidate_choices(result: Result | None) -> list[tuple[str, int]]:
    if result is None:
        return [("1", 0)]
    return [(f"{i + 1}: {c.text[:60] or '(empty)'}", i) for i, c in enumerate(result.translation.candidates)]


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


# ----------------------------------------------------------------------------- views (pure: arrays -> figures)


@dataclass(frozen=True)
class ViewOptions:
    layer: int = 0
    head: int = MEAN_HEADS
    rows: str = ROWS_INPUT
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
                          title=f"Step {t + 1}: chose {record.token} · cross-attention layer {layer + 1}, "
                                f"{head_label(head)}")
    text = (f"Step {t + 1} of {len(att.steps)}: the decoder read {att.tgt_in_tokens[t]!r} and chose "
            f"{record.token!r} (probability {record.probability:.1%}).")
    return fig, text


def hidden_text(masses: dict[str, float | None]) -> str:
    shown = {k: v for k, v in masses.items() if v is not None}
    if not shown:
        return "Special tokens are shown (tick \"Hide <bos>/<eos>\" to hide them and renormalise rows)."
    parts = ", ".join(f"{KIND_TITLES[k].lower()} {v:.1%}" for k, v in shown.items())
    return f"Attention mass hidden on <bos>/<eos>/<pad> in the focus views (rows renormalised): {parts}."


def candidate_suffix(result: Result) -> str:
    return f" · candidate {result.candidate + 1}" if result.candidate else ""


def export_npz(result: Result, directory: Path) -> Path:
    """Write the current candidate's attention tensors, tokens and step records to an .npz (no pickles)."""
    att = result.attention
    cand = result.translation.candidates[result.candidate]
    meta = dict(model=result.model, source=result.source, translation=cand.text, method=result.translation.method,
                beam_size=result.translation.beam_size, length_penalty=result.length_penalty,
                candidate=result.candidate, score=cand.score, log_prob=cand.log_prob,
                truncated=result.translation.truncated,
                axes="encoder (L,H,S,S), decoder (L,H,T,T), cross (L,H,T,S); rows = queries, columns = keys")
    k = max((len(s.top_k) for s in att.steps), default=0)
    topk_tokens = np.array([[tok for tok, _ in s.top_k] + [""] * (k - len(s.top_k)) for s in att.steps], dtype=str)
    topk_probs = np.array([[p for _, p in s.top_k] + [0.0] * (k - len(s.top_k)) for s in att.steps],
                          dtype=np.float32)
    directory.mkdir(parents=True, exist_ok=True)
    _prune(directory, max_age_s=900)
    fd, name = tempfile.mkstemp(prefix=f"attention-{result.candidate + 1}-", suffix=".npz", dir=directory)
    with os.fdopen(fd, "wb") as f:
        np.savez_compressed(
            f, encoder=att.encoder, decoder=att.decoder, cross=att.cross,
            src_tokens=np.array(att.src_tokens, dtype=str), tgt_in_tokens=np.array(att.tgt_in_tokens, dtype=str),
            tgt_out_tokens=np.array(att.tgt_out_tokens, dtype=str),
            step_probability=np.array([s.probability for s in att.steps], dtype=np.float32),
            step_topk_tokens=topk_tokens.reshape(len(att.steps), k),
            step_topk_probs=topk_probs.reshape(len(att.steps), k),
            meta=np.array(json.dumps(meta, ensure_ascii=False)),
        )
    return Path(name)


def _prune(directory: Path, max_age_s: float) -> None:
    """Delete old exports (gradio has already copied them into its own cache)."""
    cutoff = time.time() - max_age_s
    for p in directory.glob("attention-*.npz"):
        try:
            if p.stat().st_mtime < cutoff:
                p.unlink()
        except OSError:
            pass


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


def training_view(label: str | None) -> tuple[go.Figure, pd.DataFrame]:
    directory = REGISTRY.directory(label)
    records = load_train_log(directory)
    title = f"Training: {label}" if label else "Training"
    fig = viz.training_curves(records, title=title) if records else viz.placeholder_figure(
        "This checkpoint has no train_log.jsonl.")
    return fig, metrics_table(directory)


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
    opts = ViewOptions(int(layer or 0), int(MEAN_HEADS if head is None else head), rows, bool(hide), bool(merge))
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
    opts = ViewOptions(int(layer or 0), int(MEAN_HEADS if head is None else head), rows, bool(hide), bool(merge))
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
    opts = ViewOptions(int(layer or 0), int(MEAN_HEADS if head is None else head), rows, bool(hide), bool(merge))
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
    fig, metrics = training_view(label)
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
    train_fig, train_metrics = training_view(DEFAULT_MODEL)
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
