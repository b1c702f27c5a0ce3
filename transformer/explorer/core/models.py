"""The models the app serves, and what every event shares to reach them: the registry (the default model loaded at
start-up), the batcher every model call goes through, and the store every result is kept in.

`ModelService` also says what the page shows about a model: its notice (which precision decodes, and why), its
examples, its training and heads tabs. The per-tab services (translate, reruns, tree and compare, exports, a
link's restore) each hold one and reach the models through it.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any


from transformer.hub import checkpoint_languages, training_progress
from transformer.serving.batching import Batcher
from transformer.serving.kernels import ServingPath
from transformer.translator import Translator

from transformer.explorer.core.checks import user_error
from transformer.explorer.core.checkpoint_heads import head_info
from transformer.explorer.core.model_registry import ModelRegistry, examples_for, is_toy, is_toy_checkpoint, source_language
from transformer.explorer.core.results import ResultStore
from transformer.explorer.core.view_state import DEFAULT_LENGTH_PENALTY

log = logging.getLogger(__name__)


def precision_note(precision: str, why: str = "") -> str:
    """What the notes say about the weights that decode (in the model notice), and why those: in plain words
    on the page (the setting that overrides the choice is in docs/deploy.md, not here)."""
    reason = f"; {why}" if why else ""
    if precision == "int8":
        return ("Decoding: int8 (the search runs on a compact 8-bit copy of the model, with the same arithmetic on "
                "every computer, so a link gives the same translation everywhere" + reason +
                "; the maps are computed at full precision, float32).")
    return f"Decoding: fp32 (full precision{reason})."


@dataclass
class ModelInfo:
    """What the page shows about a model: a note for the user and its examples; the panels that follow the model
    (training, heads) read its checkpoint folder, `directory`."""

    notice: str
    examples: list[str]
    label: str | None = None
    directory: Path | None = None


class ModelService:
    """The registry's models behind the batcher and the results store; the default model is loaded at once.

    A broken auto-discovered default checkpoint does not take the app down (`startup_error` says why), unless
    `strict` (the user named the checkpoint). All model work runs on `batcher`'s worker thread, loading too."""

    def __init__(self, registry: ModelRegistry, batcher: Batcher, results: ResultStore, strict: bool = False):
        self.registry, self.batcher, self.results = registry, batcher, results
        self.serving_path: ServingPath | None = None  # how the registry's precision was chosen (set at start-up)
        self._heads: dict[str | None, dict[str, Any] | None] = {}
        # Loading runs on the batcher's thread too: torch's OpenMP (libgomp) keeps a thread pool for every thread
        # that runs parallel work, and once the pools hold more threads than there are cores, each parallel
        # region wakes its threads by futex instead of spinning: loaded on the main thread, the model then
        # translates slower (bench/thread_pools.py, docs/benchmarks.md).
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

    def translator(self, label: str | None) -> Translator:
        """The model of a label (loaded once, on the batcher's thread); a bad or broken one is a user error."""
        if label is not None and not isinstance(label, str):
            raise user_error(f"model must be one of {self.registry.labels()}, got a {type(label).__name__}",
                             "Model unavailable")
        try:
            return self.registry.get(label)
        except Exception as err:
            raise user_error(str(err), "Model unavailable") from None

    def reads(self, label: str | None) -> str | None:
        """The language code a model reads ("en", "de"); None for a toy task or an unknown model."""
        directory = self.registry.directory(label or self.default_model)
        if directory is None or is_toy_checkpoint(directory):
            return None
        return checkpoint_languages(directory)[0]

    def model_reading(self, language: str) -> str | None:
        """The first model on offer that reads `language`, or None."""
        return next((label for label in self.registry.labels() if self.reads(label) == language), None)

    def keep(self, result: Any) -> Any:
        """`result` (a Result or a compare session) kept for its session, within the store's budget."""
        return self.results.keep(result)

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

    def heads(self, label: str | None) -> dict[str, Any] | None:
        """The head analysis of a model's checkpoint (`checkpoint_heads.head_info`), read once."""
        if label not in self._heads:
            self._heads[label] = head_info(self.registry.directory(label))
        return self._heads[label]

    def model_info(self, label: str | None, tr: Translator | None = None) -> ModelInfo:
        """Examples and checkpoint folder of a model (`tr`: the model if loaded; no notice without it)."""
        directory = self.registry.directory(label)
        return ModelInfo("", examples_for(tr, directory), label, directory)

    def switch(self, label: str) -> ModelInfo:
        """Another model chosen: load it (cached) and say what it expects and whether it is finished."""
        tr = self.translator(label)
        info = self.model_info(label, tr)
        expects = ("toy task: type space-separated letters" if is_toy(tr)
                   else source_language(self.registry.directory(label)))
        info.notice = f"Model {label} is ready ({expects}). {self.precision_note(tr)}"
        progress = training_progress(self.registry.directory(label))
        if progress:
            info.notice += (f" It is still in training (step {progress[0]} of {progress[1]}): expect rough "
                            "translations; the Training tab shows how far it has come.")
        return info
