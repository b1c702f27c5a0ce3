"""The checkpoints the app offers: every directory under `checkpoints/` (and $TRANSFORMER_CHECKPOINT first),
each loaded once, on first use; toy tasks are marked as such in the model list; the example sentences each
model is shown with (`examples_for`)."""
from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from transformer.hub import LANGUAGES, checkpoint_languages, resolve_checkpoint, train_config, training_progress
from transformer.translator import Translator, load_pretrained

log = logging.getLogger(__name__)

MODEL_ORDER = ("en-de", "multi30k-en-de")  # the selector lists these first, the default first of all
ENV_CHECKPOINT = "TRANSFORMER_CHECKPOINT"
TOY_VOCAB_LIMIT = 64  # a tokenizer this small is a toy task's letter vocabulary
TOY_TASKS = {"copy": "copies letters", "reverse": "reverses letters", "sort": "sorts letters"}


@dataclass(frozen=True)
class ModelEntry:
    label: str  # shown in the model selector
    source: str  # what load_pretrained gets: a directory or a Hub repo id


class ModelRegistry:
    """Every checkpoint directory under `checkpoint_dir`, finished models first (MODEL_ORDER, then by
    name), then models still in training; each loaded once on first use.

    `override` (a Hub repo id or a path, from $TRANSFORMER_CHECKPOINT) becomes the first entry.
    `precision` ("fp32" or "int8", `load_pretrained`'s `quantize`) is how every model is loaded.
    `runner(fn, *args)` runs each load (default: on the calling thread); the app passes its batcher's
    `call`, so that loading, like all model work, runs on the batcher's thread (`Explorer`).
    """

    def __init__(self, checkpoint_dir: Path, override: str | None = None, precision: str = "fp32",
                 runner: Callable[..., Translator] | None = None):
        self.checkpoint_dir = Path(checkpoint_dir)
        self.override = override or None
        self.precision = precision
        self.runner = runner or (lambda fn, *args: fn(*args))
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
            dirs.sort(key=lambda d: (training_progress(d) is not None,
                                     MODEL_ORDER.index(d.name) if d.name in MODEL_ORDER else len(MODEL_ORDER), d.name))
            found = [ModelEntry(d.name, str(d)) for d in dirs]
        if self.override:
            path = Path(self.override)
            same = [e for e in found if path.is_dir() and Path(e.source).resolve() == path.resolve()]
            first = same[0] if same else ModelEntry(self.override, self.override)
            found = [first] + [e for e in found if e != first]
        return found

    def labels(self) -> list[str]:
        return [e.label for e in self.entries()]

    def choices(self, labels: Sequence[str] | None = None) -> list[tuple[str, str]]:
        """(shown, label) for the model selector: a toy task's checkpoint (a letter vocabulary, read from its
        config.json without loading it) says so, so that a class does not pick it for English."""
        out = []
        for label in self.labels() if labels is None else labels:
            toy = is_toy_checkpoint(self.directory(label))
            does = TOY_TASKS.get(label.removeprefix("toy-"), "works on letters")
            out.append((f"{label} (a toy task, not a translator: it {does})" if toy else label, label))
        return out

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
        return self.runner(self._load, label)

    def _load(self, label: str) -> Translator:
        with self._lock:
            lock = self._load_locks.setdefault(label, threading.Lock())
        with lock:
            if label not in self._models:
                entry = next((e for e in self.entries() if e.label == label), None)
                if entry is None:
                    raise LookupError(f"Unknown model {label!r}; choose one of {self.labels()}")
                start = time.perf_counter()
                translator = load_pretrained(entry.source, quantize=self.precision)
                try:  # where its train_log.jsonl / metrics.json live (a Hub id is in the cache by now)
                    self._dirs[label] = resolve_checkpoint(entry.source, local_files_only=True)
                except Exception:
                    log.warning("no local directory for %s: the training tab will be empty", label)
                self._models[label] = translator
                log.info("loaded %s (%s) from %s in %.1f s", label, self.precision, entry.source,
                         time.perf_counter() - start)
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


def is_toy_checkpoint(directory: Path | None) -> bool:
    """`is_toy` for a checkpoint not loaded: read from its config.json (False when it cannot be read)."""
    if directory is None or not (directory / "config.json").is_file():
        return False
    try:
        return json.loads((directory / "config.json").read_text())["src_vocab_size"] <= TOY_VOCAB_LIMIT
    except (ValueError, KeyError, TypeError, OSError):
        return False


# ----------------------------------------------------------------------------- the examples a model is shown with

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
EXAMPLES_DE = [  # our own, for a model that reads German: a verb at the end, a separable verb, compounds
    "Ich glaube, dass mein Bruder morgen anruft.",
    "Warum hast du mir nichts von der Party erzählt?",
    "Er ruft seine Mutter jeden Sonntag an.",
    "Wir wohnen seit drei Jahren in München.",
    "Mein Vater ist Busfahrer, und meine Mutter repariert Fahrräder.",
    "Meine Freundin Oluwaseun ist 1983 nach Plowdiw gezogen.",  # names and a year: placeholders in the maps
    "Ein Mann in einer roten Jacke fährt mit dem Fahrrad durch den Park.",
]
EXAMPLES_TOY = ["h e l l o", "a b c d e f g", "g r a d i e n t", "z y x w v", "t r a n s f o r m e r"]


def source_language(directory: Path | None) -> str:
    """The language a checkpoint reads, in words ("English" where its recipe does not say)."""
    return LANGUAGES.get(checkpoint_languages(directory)[0], "English")


def examples_for(tr: Translator | None, directory: Path | None = None) -> list[str]:
    """Sentences the model knows how to handle: letters for a toy task, captions for a model trained on
    Multi30k alone (its training.json names no other corpus), German for a model that reads German, everyday
    English otherwise."""
    if is_toy(tr) if tr is not None else is_toy_checkpoint(directory):
        return EXAMPLES_TOY
    cfg = train_config(directory)
    if cfg.get("task") == "multi30k" and not cfg.get("corpora"):
        return EXAMPLES_CAPTIONS
    return EXAMPLES_DE if cfg.get("src_lang") == "de" else EXAMPLES_EN

