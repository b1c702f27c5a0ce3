"""A harder selection split: training pairs whose English holds a rare word, held out of training.

`tatoeba-en-de/test` flatters a model because near-duplicates of its sentences are in train. This
split is built from train itself: pairs whose English has a word seen at most `max_count` times in
the corpus's English train (so at most once more in what is left), sampled with a fixed seed. Every
pair whose normalised English equals a held-out one is removed from train too, so the split is
disjoint from train. `CorpusSpec.load("rare")` gives the split and `rare_holdout` (TrainConfig)
trains without it; the construction depends only on the train files, so evaluation rebuilds it.
"""
from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from itertools import chain

RARE_SPLIT = "rare"
RARE_SIZE = 1000  # pairs in the split
RARE_MAX_COUNT = 2  # a word seen this often or less in the English train is rare
RARE_SEED = 18

_WORD = re.compile(r"[^\W\d_]+")


def normalise(text: str) -> str:
    """What counts as the same English sentence: case, punctuation and spacing ignored."""
    return " ".join(_WORD.findall(text.lower()))


def _words(sources: Sequence[str]) -> list[list[str]]:
    """Each sentence's words as `normalise` finds them (its normal form is their join)."""
    return [_WORD.findall(s.lower()) for s in sources]


def rare_indices(sources: Sequence[str], size: int = RARE_SIZE, max_count: int = RARE_MAX_COUNT,
                 seed: int = RARE_SEED, words: list[list[str]] | None = None) -> list[int]:
    """Indices (ascending) of the held-out pairs: a seeded sample of those with a rare English word.
    `words`: `_words(sources)`, when the caller has them."""
    words = _words(sources) if words is None else words
    counts = Counter(chain.from_iterable(map(set, words)))
    candidates = [i for i, ws in enumerate(words) if any(counts[w] <= max_count for w in ws)]
    picked = random.Random(seed).sample(candidates, min(size, len(candidates)))
    return sorted(picked)


def split_rare(sources: Sequence[str], targets: Sequence[str], size: int = RARE_SIZE
               ) -> tuple[tuple[list[str], list[str]], tuple[list[str], list[str]]]:
    """((train sources, train targets) without the split and its duplicates, (split sources, split targets))."""
    words = _words(sources)  # the regex runs once per sentence
    normal = [" ".join(ws) for ws in words]  # = normalise(sources[i])
    held = rare_indices(sources, size, words=words)
    held_set = set(held)
    held_english = {normal[i] for i in held}
    keep = [i for i in range(len(sources)) if i not in held_set and normal[i] not in held_english]
    return ([sources[i] for i in keep], [targets[i] for i in keep]), ([sources[i] for i in held],
                                                                        [targets[i] for i in held])


def split_rare_between(sources: Sequence[str], targets: Sequence[str], src_lang: str, tgt_lang: str, size: int = RARE_SIZE
                       ) -> tuple[tuple[list[str], list[str]], tuple[list[str], list[str]]]:
    """`split_rare` chosen on the English side whichever way the pairs run, so that a German→English
    model holds out the very pairs an English→German one does (the two are compared on them)."""
    if src_lang != "en" and tgt_lang == "en":
        (train_en, train_other), (held_en, held_other) = split_rare(targets, sources, size)
        return (train_other, train_en), (held_other, held_en)
    return split_rare(sources, targets, size)
