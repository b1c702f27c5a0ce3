"""Watching the model learn: a checkpoint's training snapshots (`hub.SNAPSHOTS_DIR`: int8 weights at a few
steps, with their validation scores in snapshots.json) and the same sentence translated by each.

`LearningSnapshots` loads each snapshot's weights (as a float32 copy of the checkpoint's model) and keeps the
translator, counted in the app's `ResultStore` with the results (one byte budget): the least recently used
of them all is released first, and a released snapshot is loaded again when it is asked for. Each (model,
step, sentence) is translated once (greedy, as validation decodes) and its value kept, so a step already
seen costs no model work. No gradio here.
"""
from __future__ import annotations

import copy
import json
import logging
import math
import threading
from collections import Counter, OrderedDict
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from transformer.hub import SNAPSHOTS_DIR, load_int8_weights
from transformer.translator import Translation, Translator

from transformer.explorer.maps.payload import ATTENTION_COLORS
from transformer.explorer.maps.token_labels import token_text

if TYPE_CHECKING:
    from transformer.explorer.core.results import ResultStore

log = logging.getLogger(__name__)

INDEX = "snapshots.json"
METRICS = ("val_bleu", "val_chrf", "val_seq_acc", "val_loss")  # the first one a snapshot has is its score
METRIC_NAMES = {"val_bleu": "val BLEU", "val_chrf": "val chrF", "val_seq_acc": "val sequence accuracy",
                "val_loss": "val loss"}


def snapshot_file(directory: Path, step: int) -> Path:
    return directory / SNAPSHOTS_DIR / f"step_{step:06d}.safetensors"


def snapshot_records(directory: Path | None) -> list[dict[str, Any]]:
    """The snapshots a checkpoint ships, oldest first: each record of snapshots.json whose weights are there
    (step, epoch, validation scores); [] when it has none or the index cannot be read."""
    index = None if directory is None else Path(directory) / SNAPSHOTS_DIR / INDEX
    if index is None or not index.is_file():
        return []
    try:
        records = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        log.warning("cannot read %s: %s", index, err)
        return []
    good = [r for r in records if isinstance(r, dict) and isinstance(r.get("step"), int) and not
            isinstance(r.get("step"), bool) and snapshot_file(Path(directory), r["step"]).is_file()]
    return sorted(good, key=lambda r: r["step"])


def metric_of(records: list[dict[str, Any]]) -> str | None:
    """The validation score the slider shows: val BLEU for a translator, else the first one the records hold."""
    return next((m for m in METRICS if any(isinstance(r.get(m), (int, float)) for r in records)), None)


def snapshot_maps(result: Translation) -> dict[str, Any]:
    """The three kinds' maps of a snapshot's translation, rounded to 4 decimals, with their tokens."""
    att = result.attention
    maps = {kind: np.round(getattr(att, kind).astype(np.float64), 4).tolist()
            for kind in ("encoder", "decoder", "cross")}
    text = [[token_text(t, result.entities) for t in tokens]
            for tokens in (att.src_tokens, att.tgt_in_tokens, att.tgt_out_tokens)]
    return {"maps": maps, "src": text[0], "tgt_in": text[1], "tgt_out": text[2], "colorscale": ATTENTION_COLORS}


@dataclass(eq=False)
class SnapshotModel:
    """A snapshot's float32 model as the results store counts it (its tensors, each once) and releases it (the
    model dropped; a translation running on it keeps its own reference until it ends)."""

    translator: Translator | None
    tensors: tuple = ()
    released: bool = False

    def release(self) -> None:
        self.translator, self.tensors, self.released = None, (), True


class LearningSnapshots:
    """Snapshot translators (each loaded when asked for and not held; counted in `store` when given) and the
    values of the steps seen (each computed once)."""

    def __init__(self, max_values: int = 64, store: ResultStore | None = None):
        self._models: dict[tuple[str, int], SnapshotModel] = {}
        self._values: OrderedDict[tuple[str, int, str], dict[str, Any]] = OrderedDict()
        self.max_values = max_values  # a value holds every map of its translation
        self.store = store  # where the float32 models count (the app's results store); None: kept, uncounted
        self.loads: Counter[tuple[str, int]] = Counter()  # how often each snapshot's weights were read
        self._lock = threading.Lock()

    def translator(self, label: str, base: Translator, directory: Path, step: int) -> Translator:
        """The model as it was at `step` (a float32 copy of `base`'s with the snapshot's weights): loaded
        unless held, and counted in the store as just used."""
        key = (label, step)
        counted: AbstractContextManager = self.store.lock if self.store is not None else nullcontext()
        with self._lock:
            entry = self._models.get(key)
            if entry is None or entry.released:
                entry = self._models[key] = self._load(label, base, directory, step)
            with counted:  # the store releases under its lock: checked and kept in one go
                if entry.released:  # released by the store since it was looked up
                    entry = self._models[key] = self._load(label, base, directory, step)
                translator = entry.translator
                if self.store is not None:
                    self.store.keep(entry)
            return translator

    def _load(self, label: str, base: Translator, directory: Path, step: int) -> SnapshotModel:
        model = copy.deepcopy(base.model)
        weights = load_int8_weights(snapshot_file(directory, step))
        missing, unexpected = model.load_state_dict(weights, strict=False)
        if unexpected or [m for m in missing if m not in _tied(model)]:
            raise ValueError(f"snapshot step {step} does not fit {label}: missing {missing[:3]}, "
                             f"unexpected {unexpected[:3]}")
        self.loads[(label, step)] += 1
        translator = Translator(model.eval(), base.tokenizer, name=f"{label}@{step}", truecaser=base.truecaser)
        tensors: dict[int, Any] = {}  # by storage: the search model's blocks may share the model's
        for module in (model, translator.search_model):
            for tensor in module.state_dict().values():
                tensors.setdefault(tensor.untyped_storage().data_ptr(), tensor)
        return SnapshotModel(translator, tuple(tensors.values()))

    def value(self, label: str, base: Translator, directory: Path, step: int, text: str) -> dict[str, Any]:
        """What the slider shows at `step` for `text`: the snapshot's translation, its maps and its scores."""
        records = snapshot_records(directory)
        steps = [r["step"] for r in records]
        if step not in steps:
            raise ValueError(f"This model has no snapshot at step {step}; it has {', '.join(map(str, steps))}.")
        key = (label, step, text)
        if key in self._values:
            self._values.move_to_end(key)
            return self._values[key]
        tr = self.translator(label, base, directory, step)
        # an untrained snapshot may never write <eos>: its output stops at twice the source's length (plus 10)
        max_len = 2 * len(tr.source(text).ids) + 10
        result = tr.translate(text, method="greedy", max_len=max_len, output_attentions=True)
        record = records[steps.index(step)]
        metric = metric_of(records)
        value = {"model": label, "step": step, "text": text, "translation": result.text,
                 "log_prob": result.log_prob, "epoch": record.get("epoch"), "metric": metric,
                 "metric_name": METRIC_NAMES.get(metric, metric), "score": _number(record.get(metric)),
                 "history": [{"step": r["step"], "score": _number(r.get(metric))} for r in records],
                 **snapshot_maps(result)}
        with self._lock:
            self._values[key] = value
            while len(self._values) > self.max_values:
                self._values.popitem(last=False)
        return value


def _tied(model: Any) -> set[str]:
    """Parameter names a state dict may leave out because they share another's tensor (tied embeddings)."""
    seen: dict[int, str] = {}
    tied = set()
    for name, tensor in model.state_dict(keep_vars=True).items():
        if id(tensor) in seen:
            tied.add(name)
        seen.setdefault(id(tensor), name)
    return tied


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
        value) else None
