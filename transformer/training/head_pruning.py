"""Pruning curves: a score (val BLEU) as the heads of one attention kind are switched off, in a given order.

`pruning_curve(score, order, points)` switches off the first n heads of `order` for each n in `points`
(the rest of the model untouched) and asks `score(off)` for the result; `removable(curve, tolerance)`
is how many heads can go before the score first falls more than `tolerance` below the intact model's.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Head = tuple[int, int]  # (layer, head), 0-based


def curve_points(n_heads: int, step: int) -> list[int]:
    """0, step, 2 step, ... and always n_heads (every head of the kind off)."""
    points = list(range(0, n_heads + 1, max(step, 1)))
    return points if points[-1] == n_heads else points + [n_heads]


def mask_without(shape: tuple[int, int], off: Sequence[Head]) -> np.ndarray:
    """An (L, H) mask of ones with the heads `off` set to 0."""
    mask = np.ones(shape, dtype=np.float32)
    for layer, head in off:
        mask[layer, head] = 0.0
    return mask


def pruning_curve(score: Callable[[list[Head]], dict[str, float]], order: Sequence[Head],
                  points: Sequence[int], baseline: dict[str, float] | None = None) -> dict[str, list]:
    """{"removed": points, "bleu": mean score per point, "per_corpus": {name: scores}}; `baseline` is the
    score of the intact model (point 0), when it is known already."""
    per: dict[str, list[float]] = {}
    for n in points:
        result = baseline if n == 0 and baseline is not None else score(list(order[:n]))
        for name, value in result.items():
            per.setdefault(name, []).append(round(float(value), 2))
    means = [round(float(np.mean(values)), 2) for values in zip(*per.values())]
    return {"removed": list(points), "bleu": means, "per_corpus": per}


def mean_curve(curves: Sequence[dict[str, list]]) -> dict[str, list]:
    """The pointwise mean of curves over the same points (e.g. random orders of several seeds)."""
    bleu = np.mean([c["bleu"] for c in curves], axis=0)
    return {"removed": list(curves[0]["removed"]), "bleu": [round(float(b), 2) for b in bleu],
            "seeds": [c["bleu"] for c in curves]}


def removable(curve: dict[str, list], tolerance: float = 0.5) -> int:
    """The most heads removed, in the curve's order, before its score first drops more than `tolerance`
    below the intact model's (point 0)."""
    base, best = curve["bleu"][0], 0
    for n, value in zip(curve["removed"], curve["bleu"]):
        if value < base - tolerance:
            break
        best = n
    return best
