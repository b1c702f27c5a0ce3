"""Two ways into the model, as the plain values that static/inside.js draws: how one weight of one head is
computed, and a translation of one's own scored by the model.

* `inside_value`: one cell (query i, key j) of one head's map, from `transformer.inside_head.HeadRow` (one
  float32 pass of the model, never recomputed from the rounded payload): q_i and k_j, their elementwise
  products, the score, the whole row of scores with its mask, the softmax with the clicked weight, the value
  vectors weighted and summed, and the norm of that sum.
* `yours_value`: a given translation scored token by token (`Translator.force`): log-probabilities, the
  model's own top alternatives at each token, and the total beside the model's own translation.
* `read_cell`, `check_yours`: what the page sends, checked (ValueError with a plain message).

No gradio and no torch here: a `HeadRow`'s tensors and a `Translation` in, JSON-ready dicts out.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from transformer.inside_head import KINDS, HeadRow
from transformer.placeholders import placeholder_text
from transformer.translator import Attention, Translation

from .limits import MAX_INPUT_CHARS
from .share import ROWS_PREDICTED

__all__ = ["inside_value", "read_cell", "check_yours", "yours_value", "token_text", "KIND_NAMES"]

KIND_NAMES = {"encoder": "encoder self-attention", "decoder": "decoder self-attention", "cross": "cross-attention"}
_MARKUP = re.compile(r"<\s*[a-zA-Z/!?]|javascript\s*:", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")


def token_text(token: str, entities: Sequence[str] = ()) -> str:
    """A model token as a person reads it: the word-start mark "▁" as a space, a placeholder with its entity."""
    for k, entity in enumerate(entities):
        if token == placeholder_text(k):
            return f"{token} {entity}"
    return token.replace("\u2581", " ") if token not in ("\u2581",) else "\u2423"


def _floats(values: Any) -> list[float]:
    return [float(v) for v in np.asarray(values, dtype=np.float64).reshape(-1)]


# ----------------------------------------------------------------------------- how one weight is computed


def read_cell(data: Any, limits: Mapping[str, int], n_heads: int) -> tuple[str, int, int, int, int]:
    """The page's click on a map cell ({"kind", "layer", "head", "query", "key"}, 0-based) checked against the
    model's layers per kind and heads: (kind, layer, head, query, key). Query and key are checked by the model."""
    if not isinstance(data, Mapping):
        raise ValueError("Click a cell of a single head's map to see how its weight is computed.")
    kind = data.get("kind")
    if kind not in KINDS:
        raise ValueError(f"The attention kind must be one of {', '.join(KINDS)}.")
    values = []
    for name, limit in (("layer", limits.get(kind, 0)), ("head", n_heads), ("query", None), ("key", None)):
        value = data.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0 or (limit is not None
                                                                                  and value >= limit):
            if name == "head" and value == -1:
                raise ValueError("Choose a single head (not the mean over heads), then click a cell of its map.")
            raise ValueError(f"No {name} {value!r} in this model's {KIND_NAMES[kind]}.")
        values.append(value)
    return (kind, *values)


def _axis_tokens(att: Attention, kind: str) -> tuple[list[str], list[str], list[str]]:
    """(query input tokens, tokens the queries predict (decoder side; else the same), key tokens) of a kind."""
    if kind == "encoder":
        return att.src_tokens, att.src_tokens, att.src_tokens
    keys = att.tgt_in_tokens if kind == "decoder" else att.src_tokens
    return att.tgt_in_tokens, att.tgt_out_tokens, keys


def inside_value(row: HeadRow, att: Attention, key: int, rows: str = ROWS_PREDICTED,
                 entities: Sequence[str] = ()) -> dict[str, Any]:
    """What the panel shows for cell (row.query, key) of one head: every number from the float32 pass."""
    q_in, q_out, keys = _axis_tokens(att, row.kind)
    if not 0 <= key < len(keys):
        raise ValueError(f"No key {key} in this map: it has {len(keys)} keys.")
    d_k = int(row.q.numel())
    products = row.products(key)
    weights, values = row.weights.numpy(), row.values.numpy()
    weighted = weights[:, None] * values  # (T_k, d_k): what each key's value adds to the output
    i = row.query
    label = (q_out if rows == ROWS_PREDICTED else q_in)[i]
    return {
        "kind": row.kind, "kind_name": KIND_NAMES[row.kind], "layer": row.layer, "head": row.head,
        "query": i, "key": key, "d_k": d_k, "sqrt_d_k": math.sqrt(d_k), "head_on": row.head_on,
        "query_token": token_text(label, entities), "query_input": token_text(q_in[i], entities),
        "query_predicts": token_text(q_out[i], entities) if row.kind != "encoder" else None,
        "key_token": token_text(keys[key], entities),
        "keys": [token_text(t, entities) for t in keys],
        "q": _floats(row.q), "k": _floats(row.keys[key]), "products": _floats(products),
        "dot": float(products.double().sum()), "score": float(row.scores[key]),
        "scores": _floats(row.scores), "allowed": [bool(a) for a in row.allowed.tolist()],
        "weights": _floats(weights), "weight": float(weights[key]),
        "value_norms": _floats(np.linalg.norm(values, axis=1)), "weighted": [_floats(w) for w in weighted],
        "output": _floats(row.output), "output_norm": row.output_norm,
    }


# ----------------------------------------------------------------------------- a translation of one's own


def check_yours(text: Any, limit: int = MAX_INPUT_CHARS) -> str:
    """A translation typed in the box, as a string to score; ValueError saying what is wrong with it."""
    text = "" if text is None else str(text)
    if not text.strip():
        raise ValueError("Type your translation in the box (or start from the model's), then press Score.")
    if len(text) > limit:
        raise ValueError(f"Your translation is {len(text)} characters long; the box takes at most {limit}.")
    if _MARKUP.search(text):
        raise ValueError("Your translation looks like HTML or script (it has a “<” tag or “javascript:”). "
                         "Type it as plain words.")
    if _CONTROL.search(text) or _INVISIBLE.search(text):
        raise ValueError("Your translation holds control or invisible characters (such as zero-width spaces or "
                         "direction marks). Type it again as plain text.")
    return text


def yours_value(forced: Translation, own: tuple[str, float] | None = None) -> dict[str, Any]:
    """A translation scored token by token (`Translator.force`): each token with its probability, its
    log-probability and the model's own top alternatives there; the total, and `own` (the model's own
    translation and its log-probability scored the same way) beside it."""
    steps = forced.steps
    tokens = []
    for step in steps:
        tokens.append({
            "text": token_text(step.token, forced.entities), "p": float(step.probability),
            "log_p": math.log(max(step.probability, 1e-45)),
            "top": [[token_text(t, forced.entities), float(p)] for t, p in step.top_k],
            "top1": bool(step.top_k and step.top_k[0][0] == step.token),
        })
    n = max(len(tokens), 1)
    value = {"text": forced.text, "source": forced.model_input, "tokens": tokens, "log_prob": forced.log_prob,
             "mean_log_prob": forced.log_prob / n, "n_tokens": len(tokens),
             "n_top1": sum(t["top1"] for t in tokens), "own": None, "heads_off": forced.head_mask is not None}
    if own is not None:
        value["own"] = {"text": own[0], "log_prob": float(own[1])}
    return value
