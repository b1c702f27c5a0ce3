"""What the explorer app's events compute, as plain values; `app.py` puts them into its components.

`Explorer` holds the model registry (the default model loaded at start-up) and answers the events:
a translation, another candidate, heads switched off or attention norms asked for (`rerun`), a model
switch, the beam-search tree and the compare view of a result, and the view a shared link restores. The
handlers whose outputs are plain values (a panel's value and a gr.State's) are methods here (`on_*`); the
app wraps the others, which update components.
No gradio here: errors meant for the user are `checks.user_error`s. Every result an event makes or changes
is kept in `results` (`results.ResultStore`: one byte budget for the process), and every event that reads one
asks the store first (`use`): a result released to stay within the budget is a message, not a crash.
"""
from __future__ import annotations

import atexit
import dataclasses
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import torch

from transformer.serving.batching import Batcher
from transformer.serving.search_process import SearchProcess, SearchProcessLost
from transformer import quantize
from transformer.config import ModelConfig
from transformer.hub import read_config
from transformer.quantize import PRECISIONS, int8_available
from transformer.serving.kernels import ServingPath, choose_serving_path, fastest_int8_kernels
from transformer.translator import Translator

from transformer.hub import training_progress

from transformer import heap
from .checks import SessionSlots, user_error
from .exports import EXPORT_DIR_PREFIX, export_npz, remove_stale_export_dirs
from .registry import ENV_CHECKPOINT, ModelRegistry, examples_for, is_toy
from .results import Result, ResultStore, ablate, run_translation, select_candidate, with_norms, work_on
from .share import DEFAULT_BEAM, DEFAULT_LENGTH_PENALTY, UI_MAX_BEAM, ViewState
from .views import ablation_notice, nbest_table, result_payload, training_view
from .head_views import head_figures, head_info
from .search_views import CompareSession, compare_value, record_search, tree_value

log = logging.getLogger(__name__)


def torch_threads(cores: int | None = None) -> int:
    """torch threads for the model: every core but one, at least one; `TRANSFORMER_THREADS` overrides.

    The core left over runs Gradio's threads and, where the app runs on the machine the page is seen on (a laptop,
    a classroom's computer), the browser: a translation is drawn sooner so, and a class's burst is served as fast
    (docs/deploy.md)."""
    value = os.environ.get("TRANSFORMER_THREADS", "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    cores = (os.cpu_count() or 1) if cores is None else cores
    return max(1, cores - 1)


ENV_SEARCH_PROCESS = "TRANSFORMER_SEARCH_PROCESS"  # 0: everyday searches stay in the app's process
ENV_PRECISION = "TRANSFORMER_PRECISION"  # int8 (the default where torch can) or fp32: the weights the search uses
MAX_VIEW_CHARS = 10_000  # the page's view state is a few hundred characters; more is not the page's
REQUEST_TIMEOUT_S = 60.0  # a Translate press that waits longer for the batcher is told the app is busy


def search_process_from_env(python: str = sys.executable) -> SearchProcess | None:
    """The app's search process (`transformer.serving.search_process`), started now on torch's threads (`python`
    runs it), unless `TRANSFORMER_SEARCH_PROCESS` is 0; a child that cannot start now is tried again later
    (`SearchProcess`'s backoff), its searches run in the app meanwhile. Its searches no longer wait for the
    app's GIL, nor for its heap, which serves a class's burst much faster, for the memory of a second copy of
    the model (docs/serving.md, docs/deploy.md)."""
    if os.environ.get(ENV_SEARCH_PROCESS, "").strip() == "0":
        log.info("searches run in the app's process (%s=0)", ENV_SEARCH_PROCESS)
        return None
    if os.name != "posix":  # the child's pipes are inherited file descriptors
        log.info("searches run in the app's process (no search process on %s)", os.name)
        return None
    searcher = SearchProcess(threads=torch.get_num_threads(), python=python)
    try:
        searcher.start()  # it imports torch while this process loads the model
    except SearchProcessLost as err:
        log.error("could not start the search process (%s): searches run in the app's process until it "
                  "starts", err)
    atexit.register(searcher.close)
    return searcher


def serving_choice(config: ModelConfig | None = None, probe=choose_serving_path) -> ServingPath:
    """How the search runs: the precision and int8 kernels `serving.kernels` measures fastest on this CPU for
    `config`'s shapes (default: `ModelConfig()`), unless `TRANSFORMER_PRECISION` (int8 or fp32) sets the
    precision (int8 still gets the measured kernels). The int8 kernels are set for this process
    (`quantize.use_int8_kernels`). `probe` is the measurement (tests pass timings of their own)."""
    value = os.environ.get(ENV_PRECISION, "").strip().lower()
    if value and value not in PRECISIONS:
        log.warning("%s=%r is not one of %s: the path is measured", ENV_PRECISION, value, PRECISIONS)
        value = ""
    if value == "int8" and not int8_available():
        log.warning("%s=int8, but this torch build has no quantised CPU kernels: using fp32", ENV_PRECISION)
        return ServingPath("fp32", reason="this torch build has no quantised CPU kernels")
    if value == "fp32":
        return ServingPath("fp32", reason=f"set by {ENV_PRECISION}")
    measured = probe(config or ModelConfig())
    if value == "int8":  # set by hand, whatever was measured fastest; the kernels are still the measured ones
        measured = dataclasses.replace(measured, precision="int8", kernels=fastest_int8_kernels(measured.layer_ms),
                                       reason=f"set by {ENV_PRECISION}")
    quantize.use_int8_kernels(dict(measured.kernels))
    return measured


def default_model_config(registry: ModelRegistry) -> ModelConfig | None:
    """The default model's configuration, read without loading it (None where there is no local one)."""
    directory = registry.directory(registry.default()) if registry.default() else None
    try:
        return read_config(directory) if directory is not None else None
    except (OSError, ValueError, KeyError, TypeError) as err:
        log.warning("could not read %s's configuration for the serving probe: %s", directory, err)
        return None


def precision_note(precision: str, why: str = "") -> str:
    """What the notes say about the weights that decode (in the model notice), and why those: in plain words
    on the page (the setting that overrides the choice is in docs/deploy.md, not here)."""
    reason = f"; {why}" if why else ""
    if precision == "int8":
        return ("Decoding: int8 (the search runs on a compact 8-bit copy of the model, for speed" + reason +
                "; the maps are computed at full precision, float32).")
    return f"Decoding: fp32 (full precision{reason})."


def view_data(view_json: str | None) -> dict[str, Any]:
    """The page's view state (kind, layer, head, rows) sent as JSON by the browser; {} when unreadable."""
    if view_json is not None and not isinstance(view_json, str) or len(view_json or "") > MAX_VIEW_CHARS:
        return {}
    try:
        data = json.loads(view_json or "{}")
    except (TypeError, ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        return {}
    return data if isinstance(data, dict) else {}


def event_data(evt: Any) -> dict[str, Any]:
    """What a panel's 'pick' event carries (a gradio EventData's data); {} when it is not a dict."""
    data = getattr(evt, "_data", None)
    return data if isinstance(data, dict) else {}


@dataclass
class ModelInfo:
    """What the page shows about a model: a note for the user, its examples and its training tab."""

    notice: str
    examples: list[str]
    figure: go.Figure
    metrics: pd.DataFrame
    heads: tuple[go.Figure, pd.DataFrame] | None = None  # the Heads tab: importance, pruning curves; role table


@dataclass
class Restored:
    """A page load: the models on offer, the view to show (a shared link's, validated) and what the
    link carried (`given`); `client` is the JSON the page restores its own view from."""

    labels: list[str]
    view: ViewState
    note: str
    client: str
    params: Mapping[str, Any]
    model: ModelInfo

    def given(self, *keys: str) -> bool:
        """Whether the link sets one of these parameters (the rest stays as the user may have set it)."""
        return any(k in self.params for k in keys)


class Explorer:
    """The app's server side over a model registry; the default model is loaded once, at start-up.

    A broken auto-discovered default checkpoint does not take the app down (`startup_error` says why),
    unless `strict` (the user named the checkpoint). Exports (.npz) go to `export_dir`. All model work
    runs on `batcher`'s worker thread: translations asked for at the same time are decoded as one batch
    (`transformer.serving.batching`), everything else (another candidate, the tree) between batches. The sessions'
    results are kept in `results` (one byte budget); `slots` caps the model requests one session runs at once."""

    def __init__(self, registry: ModelRegistry, export_dir: Path, strict: bool = False,
                 batcher: Batcher | None = None, results: ResultStore | None = None):
        self.registry, self.export_dir = registry, Path(export_dir)
        self.batcher = batcher or Batcher()
        self.results = results or ResultStore()
        self.slots = SessionSlots()
        self.serving_path: ServingPath | None = None  # how the registry's precision was chosen (set by `start`)
        self._heads: dict[str | None, dict[str, Any] | None] = {}
        self._head_figures: dict[str | None, tuple[go.Figure, pd.DataFrame]] = {}
        # Loading runs on the batcher's thread too: torch's OpenMP (libgomp) keeps a thread pool for every thread
        # that runs parallel work, and once the pools hold more threads than there are cores, each parallel
        # region wakes its threads by futex instead of spinning: loaded on the main thread, the model then translated
        # several times slower (bench/thread_pools.py).
        registry.runner = self.batcher.call
        self.default_model = registry.default()
        self.default_translator: Translator | None = None
        self.startup_error = ""
        try:
            self.default_translator = registry.get(self.default_model) if self.default_model else None
        except Exception as err:
            if strict:
                raise
            log.exception("could not load %s", self.default_model)
            self.startup_error = f"Could not load {self.default_model}: {err}"

    @classmethod
    def start(cls, checkpoint_dir: Path) -> Explorer:
        """The app's explorer: the checkpoints under `checkpoint_dir` (and $TRANSFORMER_CHECKPOINT first, if
        set), loaded in the precision `serving_choice` measures fastest, exports in a temporary directory of this process, torch on
        every core but one (`torch_threads`)."""
        torch.set_num_threads(torch_threads())
        log.info("torch threads: %d of %d cores (TRANSFORMER_THREADS overrides); OpenMP spin count %s",
                 torch.get_num_threads(), os.cpu_count() or 1, os.environ.get("GOMP_SPINCOUNT", "libgomp's default"))
        heap.give_back()  # results' arrays freed are given back to the system (heap.py)
        override = os.environ.get(ENV_CHECKPOINT)
        export_dir = Path(tempfile.gettempdir()) / f"{EXPORT_DIR_PREFIX}{os.getpid()}"
        for stale in remove_stale_export_dirs(export_dir.parent, os.getpid()):
            log.info("removed %s, left by an app that is no longer running", stale)
        atexit.register(shutil.rmtree, export_dir, ignore_errors=True)  # this app's exports go with it
        registry = ModelRegistry(checkpoint_dir, override)
        path = serving_choice(default_model_config(registry))
        registry.precision = path.precision
        log.info("serving path: %s search weights (%s); %s=int8|fp32 overrides", path.precision, path.why, ENV_PRECISION)
        searcher = search_process_from_env()
        explorer = cls(registry, export_dir, strict=bool(override), batcher=Batcher(searcher=searcher))
        explorer.serving_path = path
        return explorer

    def preload(self) -> None:
        """The default model loaded in the search process, in the background (a search asked for meanwhile waits
        for it); `python app.py` calls it once the app serves (`launch.serve`), so that the load does not compete
        with gradio's check of its own page."""
        searcher = self.batcher.searcher
        if searcher is not None and self.default_translator is not None:
            searcher.preload_in_background(self.default_translator)

    @property
    def default_length_penalty(self) -> float:
        """The length penalty the page starts with: the default model's, chosen on val (its generation_config.json)."""
        tr = self.default_translator
        return tr.generation.length_penalty if tr is not None else DEFAULT_LENGTH_PENALTY

    def serving_note(self) -> str:
        """The notes at start-up: which model serves, and in which precision."""
        if self.startup_error or self.default_translator is None:
            return self.startup_error
        return f"Model {self.default_model}. {self.precision_note(self.default_translator)}"

    def precision_note(self, tr: Translator) -> str:
        """`precision_note` for a loaded model, with why its precision serves."""
        path = self.serving_path
        if path is None or tr.precision != self.registry.precision:
            return precision_note(tr.precision)
        return " ".join(filter(None, [precision_note(tr.precision, path.why), path.slow_note]))

    def translator(self, label: str | None) -> Translator:
        if label is not None and not isinstance(label, str):
            raise user_error(f"model must be one of {self.registry.labels()}, got a {type(label).__name__}",
                             "Model unavailable")
        try:
            return self.registry.get(label)
        except Exception as err:
            raise user_error(str(err), "Model unavailable") from None

    def translate(self, text: Any, method: Any, beam_size: Any, model: str | None,
                  length_penalty: float, return_attention: bool = True) -> tuple[Result, str]:
        """Validate and translate (with attention unless told not to), decoded with whatever else is asked for at
        the same time: (Result, notice text for the user)."""
        tr = self.translator(model)

        def batched(text: str, **options: Any):
            return self.batcher.translate(tr, text, **options, timeout_s=REQUEST_TIMEOUT_S)

        return run_translation(tr, model, text, method, beam_size, length_penalty, translate=batched,
                               return_attention=return_attention)

    def keep(self, result: Any) -> Any:
        """`result` (a Result or a compare session) kept for its session, within the store's budget."""
        return self.results.keep(result)

    def use(self, result: Any) -> Any:
        """`result` as an event reads it; a message when the store has released it (`ResultStore.use`)."""
        return self.results.use(result)

    def select(self, result: Result, index: Any) -> Result:
        """Another n-best candidate of `result` (its attention: one teacher-forced pass, cached)."""
        with self.results.using(result):
            out = self.batcher.call(select_candidate, self.translator(result.model), result, index,
                                    guard=self.results.lock, work=work_on(result))
        return self.keep(out)

    def heads(self, label: str | None) -> dict[str, Any] | None:
        """The head analysis of a model's checkpoint (`head_views.head_info`), read once."""
        if label not in self._heads:
            self._heads[label] = head_info(self.registry.directory(label))
        return self._heads[label]

    def payload(self, result: Result | None) -> dict[str, Any] | None:
        """What the attention tab gets for a result: `views.result_payload` with its model's head analysis."""
        return None if result is None else result_payload(result, self.heads(result.model))

    def translate_linked(self, text: str, method: str, beam_size: Any, model: str | None, length_penalty: Any,
                         linked: dict[str, Any]) -> Result | None:
        """A link's translation with its heads switched off or its norm maps (`linked`: the link's view): the
        first answer is already the model's without those heads, never a flash of the intact translation."""
        result, _ = self.translate(text, method, beam_size, model, length_penalty)
        return self.rerun(result, SimpleNamespace(_data={"off": linked.get("off") or [],
                                                         "measure": linked.get("measure", "weight")}))

    def rerun(self, result: Result | None, evt: Any) -> Result | None:
        """The attention tab asks for a model pass (`evt`: its 'rerun' event, {"off": [[kind, layer, head], ...],
        "measure": "weight" | "norm"}): the translation with those heads switched off (none: every head on
        again), with ‖α f(x)‖ maps when the norm is shown."""
        if result is None:
            return None
        data, tr, guard = event_data(evt), self.translator(result.model), self.results.lock

        def model_work() -> Result:  # on the batcher's thread, between batches: never two passes at once
            out = ablate(tr, result, data.get("off", []), guard)
            return with_norms(tr, out, guard) if data.get("measure") == "norm" else out

        with self.results.using(result):
            try:
                out = self.batcher.call(model_work, timeout_s=REQUEST_TIMEOUT_S,
                                        work=work_on(result, result.root.translation.beam_size))
            except ValueError as err:
                raise user_error(str(err), "Cannot switch those heads off") from None
        return self.keep(out)

    @staticmethod
    def rerun_texts(result: Result | None) -> tuple[str, pd.DataFrame, str]:
        """After `rerun`'s maps: the translation, the n-best list and the notes (the translation with every head
        while heads are off). With a translation of one's own on screen, the texts stay the model's own."""
        shown = result.own if result is not None and result.own is not None else result
        return (shown.translation.text if shown else "", nbest_table(shown), ablation_notice(result))

    def export(self, result: Result | None) -> Path | None:
        """The current candidate's attention as an .npz file to download (None without a result)."""
        if result is None:
            return None
        with self.results.using(result):
            return export_npz(result, self.export_dir)

    def model_info(self, label: str | None, tr: Translator | None = None) -> ModelInfo:
        """Examples and training tab of a model (`tr`: the model if loaded; no notice without it)."""
        directory = self.registry.directory(label)
        figure, metrics = training_view(label, directory)
        if label not in self._head_figures:  # read and drawn once per model (a page load asks every time)
            self._head_figures[label] = head_figures(label, directory)
        return ModelInfo("", examples_for(tr, directory), figure, metrics, self._head_figures[label])

    def switch(self, label: str) -> ModelInfo:
        """Another model chosen: load it (cached) and say what it expects and whether it is finished."""
        tr = self.translator(label)
        info = self.model_info(label, tr)
        expects = "toy task: type space-separated letters" if is_toy(tr) else "English"
        info.notice = f"Model {label} is ready ({expects}). {self.precision_note(tr)}"
        progress = training_progress(self.registry.directory(label))
        if progress:
            info.notice += (f" It is still in training (step {progress[0]} of {progress[1]}): expect rough "
                            "translations; the Training tab shows how far it has come.")
        return info

    # ------------------------------------------------------------------------- the tree and compare tabs
    # These are the app's handlers as they are: their outputs are a panel's value and a gr.State's.

    def on_tree_open(self, result: Result | None, view_json: str) -> tuple[dict[str, Any] | None, Result | None]:
        """The tree tab shows `result`: record its search the first time (cached on the result), then draw it."""
        if result is None:
            return None, result
        tr = self.translator(result.model)
        with self.results.using(result):
            if result.search is None:
                t = result.translation
                if t.method == "forced":  # a translation of one's own on screen: the tree of the model's own search
                    if result.own is None:
                        return None, result
                    t = result.own.translation
                try:
                    result.search = self.batcher.call(record_search, tr, result.source, t.method, t.beam_size,
                                                      result.length_penalty, t.head_mask,
                                                      work=work_on(result, t.beam_size))
                except ValueError as err:
                    raise user_error(str(err), "Cannot draw the search") from None
            value = self.batcher.call(tree_value, tr, result.search, None, view_data(view_json),
                                      work=work_on(result))
        return value, self.keep(result)

    def on_tree_refresh(self, result: Result | None, tab: str, view_json: str):
        """After a translation: the tree follows it while its tab is open; otherwise the stale tree goes."""
        return self.on_tree_open(result, view_json) if tab == "tree" else (None, result)

    def on_tree_view(self, result: Result | None, tab: str, view_json: str) -> dict[str, Any] | None:
        """The tree panel's value after a translation or when its tab opens (`on_tree_refresh`), and nothing else:
        the search is recorded on the result itself, so the session's result is not written back. Such a write,
        from an event that read the result before another event replaced it (one's own translation scored
        meanwhile, on a busy machine), would put the older result back."""
        return self.on_tree_refresh(result, tab, view_json)[0]

    def tree_pick(self, result: Result | None, evt: Any) -> dict[str, Any] | None:
        """A node (or layer / head) chosen in the tree panel (`evt`: its pick event): that node's prefix and
        cross-attention."""
        data = event_data(evt)
        if result is None:
            return None
        with self.results.using(result):
            if result.search is None:
                return None
            with_tree = data.get("tree_rev") != result.search.rev  # else the page has the tree already
            value = self.batcher.call(tree_value, self.translator(result.model), result.search, data.get("node"),
                                      data, with_tree, work=work_on(result))
        self.keep(result)  # the node's cross-attention is cached on the search
        return value

    def on_compare(self, text: Any, other: Any, method: Any, beam: Any, model: str | None, length_penalty: float,
                   view_json: str) -> tuple[dict[str, Any], CompareSession]:
        """Translate both sentences with the current settings and put their attention side by side."""
        left, _ = self.translate(text, method, beam, model, length_penalty)
        right, _ = self.translate(other, method, beam, model, length_penalty)
        session = CompareSession("sentences", (left.source, right.source), (left.source, right.source),
                                 (left.translation.text, right.translation.text), (left.attention, right.attention))
        return compare_value(session, view_data(view_json)), self.keep(session)

    def on_greedy_vs_beam(self, text: Any, beam: Any, model: str | None, length_penalty: float,
                          view_json: str) -> tuple[dict[str, Any], CompareSession]:
        """The same sentence decoded greedily and with beam search (the slider's width, or the default if 1)."""
        width = int(beam) if isinstance(beam, (int, float)) and 1 < beam <= UI_MAX_BEAM else DEFAULT_BEAM
        greedy, _ = self.translate(text, "greedy", 1, model, length_penalty)
        beamed, _ = self.translate(text, "beam", width, model, length_penalty)
        session = CompareSession("methods", ("greedy", f"beam {width}"), (greedy.source, beamed.source),
                                 (greedy.translation.text, beamed.translation.text),
                                 (greedy.attention, beamed.attention))
        return compare_value(session, view_data(view_json)), self.keep(session)

    def compare_pick(self, session: CompareSession | None, evt: Any) -> dict[str, Any] | None:
        """Another kind, layer or head in the compare panel (`evt`: its pick event): figures of the kept
        translations."""
        if session is None:
            return None
        with self.results.using(session):
            return compare_value(session, event_data(evt))

    def on_restore_compare(self, text: str, other: str, method: str, beam: float, model: str | None,
                           length_penalty: float, tab: str, view_json: str):
        """A link to the compare tab: compare its two sentences, or greedy and beam when it has only one (the
        compare box may hold the source itself by then: the tab prefills it)."""
        if tab != "compare" or not (text or "").strip():
            return None, None
        if (other or "").strip() and other.strip() != text.strip():
            return self.on_compare(text, other, method, beam, model, length_penalty, view_json)
        return self.on_greedy_vs_beam(text, beam, model, length_penalty, view_json)

    # ------------------------------------------------------------------------- a shared link

    def limits(self, label: str) -> tuple[int, int, dict[str, int]] | None:
        """(layers, heads, layers per kind) of a model, for validating a link's layer, head and heads switched
        off: the loaded model's, else its config.json's (a page load never waits for a model to load); None
        if neither can be read."""
        try:
            if self.registry.is_loaded(label):
                cfg = self.registry.get(label).model.config
            else:
                directory = self.registry.directory(label)
                if directory is None:
                    return None
                cfg = read_config(directory)
        except Exception:
            return None
        kinds = {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
        return max(cfg.n_encoder_layers, cfg.n_decoder_layers), cfg.n_heads, kinds

    def restore(self, model: str | None, params: Mapping[str, Any]) -> Restored:
        """Page load: the checkpoints present now, and the view of a link's query `params` (validated)."""
        labels = self.registry.labels()
        if model and model not in labels:
            labels = [model] + labels
        view, notes = ViewState.from_query(params, labels, limits=self.limits, default_model=model,
                                           default_length_penalty=self.default_length_penalty)
        # only a model loaded already: loading is model work, and a page load never waits for it (the link's
        # translation loads it, on the batcher's thread)
        tr = self.registry.get(view.model) if view.model and self.registry.is_loaded(view.model) else None
        client = json.dumps({"view": view.client(), "tab": view.tab, "translate": bool(view.text.strip()),
                             "yours": view.yours,
                             "known": {"lp": f"{view.length_penalty:g}", "compare": view.compare}})
        return Restored(labels, view, ViewState.notes_text(notes), client, params, self.model_info(view.model, tr))
