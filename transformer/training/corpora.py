"""Training on several corpora at once: which corpora, how much of each, and noisy sources.

A corpus is named on the command line as `NAME[:WEIGHT][=PATH]`:

    --corpus tatoeba-en-de --corpus multi30k:2        # Multi30k seen twice an epoch
    --corpus multi30k:0.5=/data/m30k                  # a random half of it, from that directory

Each epoch holds every pair of a corpus `int(WEIGHT)` times plus a fresh random
fraction `WEIGHT % 1` of it, so a small in-domain corpus can be oversampled next to
a large one. The draw depends only on (seed, epoch), which keeps `--resume` exact.

People type without capitals and without the final full stop far more often than
the corpora do. `SourceNoise` replaces some sources, never targets, by a lowercased
and/or unpunctuated copy, so the model learns to give the same cased, punctuated
German for them (the target stays as written).
"""
from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .data import load_split, resolve_data_dir
from .rare_split import RARE_SPLIT, split_rare_between

ATTRIBUTION = {  # what a model trained on the corpus must carry (model card, README)
    "tatoeba-en-de": "Attribution: www.manythings.org/anki and tatoeba.org",
}
TEST_SPLITS = {"multi30k": "test_2016_flickr"}  # others: "test"
_SPEC = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)(?::(?P<weight>[0-9]*\.?[0-9]+))?(?:=(?P<path>.+))?$")


def corpus_test_split(corpus: str) -> str:
    return TEST_SPLITS.get(corpus, "test")


@dataclass(frozen=True)
class CorpusSpec:
    name: str
    weight: float = 1.0
    path: str | None = None

    @classmethod
    def parse(cls, text: str) -> "CorpusSpec":
        """"multi30k:2=/data/m30k" -> CorpusSpec("multi30k", 2.0, "/data/m30k")."""
        match = _SPEC.match(text.strip())
        if not match:
            raise ValueError(f"bad corpus {text!r}: expected NAME[:WEIGHT][=PATH], e.g. multi30k:2")
        weight = float(match["weight"]) if match["weight"] else 1.0
        if weight <= 0:
            raise ValueError(f"bad corpus {text!r}: the weight must be positive")
        return cls(match["name"], weight, match["path"])

    def directory(self) -> Path:
        """The corpus directory; DataError naming it (and its variable) if it is not there."""
        return resolve_data_dir(self.path, self.name)

    def load(self, split: str, src_lang: str, tgt_lang: str) -> tuple[list[str], list[str]]:
        """A split's (sources, targets); "rare" is the rare-word split held out of train (rare_split.py)."""
        if split == RARE_SPLIT:
            return split_rare_between(*self.load("train", src_lang, tgt_lang), src_lang, tgt_lang)[1]
        return load_split(split, src_lang, tgt_lang, self.directory(), corpus=self.name)


def parse_corpora(specs: Sequence[str]) -> list[CorpusSpec]:
    corpora = [CorpusSpec.parse(s) for s in specs]
    names = [c.name for c in corpora]
    if len(set(names)) != len(names):
        raise ValueError(f"a corpus is named twice: {names}")
    return corpora


def mixture_indices(sizes: Sequence[int], weights: Sequence[float], seed: int, epoch: int) -> list[int]:
    """One epoch's indices into the concatenation of corpora of these sizes (corpus k starts at
    sum(sizes[:k])): corpus k contributes every index int(weights[k]) times plus a random
    `weights[k] % 1` of them, drawn anew each epoch. Unshuffled: the batcher shuffles."""
    rng = random.Random(seed * 7_919 + epoch)
    out: list[int] = []
    offset = 0
    for size, weight in zip(sizes, weights, strict=True):
        block = range(offset, offset + size)
        out.extend(i for _ in range(int(weight)) for i in block)
        out.extend(sorted(rng.sample(block, round(size * (weight % 1)))))
        offset += size
    return out


# ---------------------------------------------------------------------------- noisy sources

_FINAL_PUNCT = re.compile(r"[\s.!?。…]+$")


def strip_final_punctuation(text: str) -> str:
    """"Did it rain?" -> "Did it rain"; text that is only punctuation stays as it is."""
    stripped = _FINAL_PUNCT.sub("", text)
    return stripped or text


SOURCE_VARIANTS = ("as written", "lowercase", "no final punctuation", "lowercase, no final punctuation")


def source_variants(text: str) -> tuple[str, str, str, str]:
    """The four forms `SourceNoise` picks from, in SOURCE_VARIANTS order."""
    bare = strip_final_punctuation(text)
    return text, text.lower(), bare, bare.lower()


@dataclass(frozen=True)
class SourceNoise:
    """Independent chances of lowercasing a training source and of dropping its final punctuation."""

    lowercase: float = 0.0
    no_final_punct: float = 0.0

    def __post_init__(self) -> None:
        for name in ("lowercase", "no_final_punct"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} probability must be in [0, 1], got {getattr(self, name)}")

    @property
    def active(self) -> bool:
        return self.lowercase > 0 or self.no_final_punct > 0

    def variants(self, n: int, seed: int, epoch: int) -> list[int]:
        """For each of n picks, the index into SOURCE_VARIANTS; depends only on (seed, epoch)."""
        rng = random.Random(seed * 104_729 + epoch)
        return [(rng.random() < self.lowercase) + 2 * (rng.random() < self.no_final_punct) for _ in range(n)]
