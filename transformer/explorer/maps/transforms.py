"""The transforms of attention maps that the views apply: special tokens hidden, subwords merged into words,
the encoder's rollout, each head's entropy.

Pure numpy: float arrays whose last two axes are (queries, keys), so rows are queries and every row sums to 1.
The page hides and merges in the browser (static/transforms.js, tested under Node against these functions:
tests/test_js.py); the payload carries the rollout and the entropy ready-made (`payload.py`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from transformer.explorer.maps.token_labels import HIDDEN_BY_DEFAULT, word_groups

__all__ = ["check_tokens", "hide_special", "merge_subwords", "rollout", "head_entropy"]


def check_tokens(weights: np.ndarray, q_tokens: Sequence[str], k_tokens: Sequence[str]) -> None:
    if weights.ndim < 2 or weights.shape[-2:] != (len(q_tokens), len(k_tokens)):
        raise ValueError(
            f"weights shape {weights.shape} does not end with (len(q_tokens), len(k_tokens))"
            f" = ({len(q_tokens)}, {len(k_tokens)})"
        )


def hide_special(
    weights: np.ndarray,
    q_tokens: Sequence[str],
    k_tokens: Sequence[str],
    specials: Sequence[str] = HIDDEN_BY_DEFAULT,
) -> tuple[np.ndarray, list[str], list[str], float]:
    """Drop special-token rows and columns of `(..., Tq, Tk)` weights and renormalise rows.

    Returns (weights `(..., Tq', Tk')`, q_tokens', k_tokens', hidden_mass), where
    hidden_mass is the attention the kept query rows put on the removed keys,
    averaged over those rows (and any leading axes), in [0, 1]. A kept row whose
    whole mass was on removed keys stays all zeros rather than dividing by zero.
    """
    w = np.asarray(weights)
    check_tokens(w, q_tokens, k_tokens)
    keep_q = np.array([t not in specials for t in q_tokens], dtype=bool)
    keep_k = np.array([t not in specials for t in k_tokens], dtype=bool)
    w = w[..., keep_q, :]
    kept = w[..., keep_k]
    removed = w[..., ~keep_k].sum(axis=-1)  # (..., Tq') mass on hidden keys
    hidden_mass = float(removed.mean()) if removed.size else 0.0
    totals = kept.sum(axis=-1, keepdims=True)
    # into C order: indexing the last axis left that axis outermost in memory, and numpy's matmul (merge_subwords)
    # of such a strided stack skips BLAS
    kept = np.divide(kept, totals, out=np.zeros(kept.shape, kept.dtype), where=totals > 0)
    q_out = [t for t, k in zip(q_tokens, keep_q) if k]
    k_out = [t for t, k in zip(k_tokens, keep_k) if k]
    return kept, q_out, k_out, hidden_mass


def merge_subwords(
    weights: np.ndarray,
    q_tokens: Sequence[str],
    k_tokens: Sequence[str],
) -> tuple[np.ndarray, list[str], list[str]]:
    """Merge BPE pieces into words in `(..., Tq, Tk)` weights -> `(..., Wq, Wk)`.

    Keys are SUMMED (attention to a word is attention to any of its pieces);
    queries are AVERAGED (a word's row is the mean of its pieces' rows), so every
    row still sums to 1. Word boundaries: see `word_groups`.
    """
    w = np.asarray(weights)
    # integer input would floor the means; C order: numpy's matmul of a strided stack skips BLAS (many times slower)
    w = np.ascontiguousarray(w, dtype=np.result_type(w.dtype, np.float32))
    check_tokens(w, q_tokens, k_tokens)
    q_group, q_words = word_groups(q_tokens)
    k_group, k_words = word_groups(k_tokens)
    # one-hot membership matrices turn both merges into matmuls over the last two axes
    sum_keys = np.zeros((len(k_tokens), len(k_words)), dtype=w.dtype)
    sum_keys[np.arange(len(k_tokens)), k_group] = 1.0
    mean_queries = np.zeros((len(q_words), len(q_tokens)), dtype=w.dtype)
    mean_queries[q_group, np.arange(len(q_tokens))] = 1.0
    mean_queries /= mean_queries.sum(axis=1, keepdims=True)
    return mean_queries @ w @ sum_keys, q_words, k_words


def rollout(encoder_attention: np.ndarray, add_residual: bool = True) -> np.ndarray:
    """Attention rollout (Abnar & Zuidema, 2020) of `(L, H, S, S)` weights -> `(S, S)`.

    Heads are averaged; with `add_residual` each layer becomes 0.5*A + 0.5*I (the
    residual stream carries half of each token through), rows are renormalised,
    and layers compose first to last: R = A_L @ ... @ A_1. Rows sum to 1.
    """
    a = np.asarray(encoder_attention, dtype=np.float64)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"expected (L, H, S, S) weights, got {a.shape}")
    eye = np.eye(a.shape[-1])
    result = eye
    for layer in a.mean(axis=1):  # (S, S) per layer, first layer first
        if add_residual:
            layer = 0.5 * layer + 0.5 * eye
        layer = layer / layer.sum(axis=-1, keepdims=True)
        result = layer @ result
    return result.astype(np.float32)


def head_entropy(weights: np.ndarray, normalise: bool = False) -> np.ndarray:
    """Mean row entropy in nats of `(L, H, Tq, Tk)` weights -> `(L, H)`.

    Low = focused heads, high = diffuse ones. With `normalise` it is divided by
    log(Tk), the entropy of a uniform row, giving [0, 1]; causal rows that can
    only see i+1 keys make early decoder rows look focused either way.
    """
    p = np.asarray(weights, dtype=np.float64)
    if p.ndim != 4:
        raise ValueError(f"expected (L, H, Tq, Tk) weights, got {p.shape}")
    plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)  # 0 log 0 = 0
    entropy = -plogp.sum(axis=-1).mean(axis=-1)
    if normalise:
        entropy = entropy / math.log(p.shape[-1]) if p.shape[-1] > 1 else np.zeros_like(entropy)
    return entropy
