"""A simple word aligner: IBM Model 1 (Brown et al., 1993) over the model's own BPE tokens.

`IBM1.train(pairs)` learns translation probabilities t(f | e) of target token f given source token e
by expectation maximisation from (source ids, target ids) pairs, with a NULL source token in every
sentence; `align(src, tgt)` picks, for each target token, the source position with the highest
t(f | e) (None where NULL wins). The cross-attention role detector (`head_roles`) asks whether a head
puts its largest weight where this aligner points.

Vectorised with numpy: every (sentence, source position, target position) co-occurrence is one entry of
flat arrays, and each EM iteration is a handful of `bincount`s over them.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

NULL = -1  # the NULL source token (stored as id `vocab_size`)


@dataclass
class IBM1:
    """t(f | e) for the co-occurring (e, f) pairs seen in training; everything else is `floor`."""

    vocab_size: int
    keys: np.ndarray  # sorted e * (V + 1) + f of every pair seen (e = V is NULL)
    probs: np.ndarray  # t(f | e) of each key
    floor: float = 1e-9

    @classmethod
    def train(cls, pairs: Sequence[tuple[Sequence[int], Sequence[int]]], vocab_size: int,
              iterations: int = 5) -> IBM1:
        """EM from uniform t(f | e); `pairs` are (source ids, target ids) without specials."""
        V1 = vocab_size + 1
        sent_e, sent_f, group = [], [], []  # one entry per (sentence, source pos incl. NULL, target pos)
        g = 0
        for src, tgt in pairs:
            if not src or not tgt:
                continue
            e = np.asarray(list(src) + [vocab_size], dtype=np.int64)
            f = np.asarray(tgt, dtype=np.int64)
            sent_e.append(np.tile(e, len(f)))
            sent_f.append(np.repeat(f, len(e)))
            group.append(np.repeat(np.arange(g, g + len(f)), len(e)))
            g += len(f)
        if not sent_e:
            raise ValueError("no sentence pairs to train the aligner on")
        e, f, group = np.concatenate(sent_e), np.concatenate(sent_f), np.concatenate(group)
        keys, pair = np.unique(e * V1 + f, return_inverse=True)
        key_e = keys // V1
        t = np.ones(len(keys))  # uniform: only the ratios within a target token's sources matter
        for _ in range(iterations):
            p = t[pair]
            norm = np.bincount(group, weights=p, minlength=g)[group]
            counts = np.bincount(pair, weights=p / norm, minlength=len(keys))
            totals = np.bincount(key_e, weights=counts, minlength=V1)
            t = counts / totals[key_e]
        return cls(vocab_size, keys, t)

    def prob(self, e: np.ndarray, f: np.ndarray) -> np.ndarray:
        """t(f | e) elementwise (e may be NULL = -1)."""
        e = np.where(np.asarray(e) < 0, self.vocab_size, e)
        key = e * (self.vocab_size + 1) + np.asarray(f)
        i = np.clip(np.searchsorted(self.keys, key), 0, len(self.keys) - 1)
        return np.where(self.keys[i] == key, self.probs[i], self.floor)

    def align(self, src: Sequence[int], tgt: Sequence[int]) -> list[int | None]:
        """For each target token, the source position it aligns to (argmax t(f | e)), or None for NULL."""
        if not len(src):
            return [None] * len(tgt)
        e = np.asarray(list(src) + [NULL])
        out: list[int | None] = []
        for f in tgt:
            j = int(np.argmax(self.prob(e, np.full(len(e), f))))
            out.append(None if j == len(src) else j)
        return out
