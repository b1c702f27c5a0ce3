"""How one weight of one head is computed, as the inside panel shows it (inside.js draws the value).

`inside_value`: one cell (query i, key j) of one head's map, from `transformer.inside_head.HeadRow` (one float32
pass of the model, never recomputed from the rounded payload): q_i and k_j, their elementwise products, the score,
the whole row of scores with its mask, the softmax with the clicked weight, the value vectors weighted and summed,
and the norm of that sum. `read_cell` checks the page's click (ValueError with a plain message).

No gradio and no torch here: a `HeadRow`'s tensors in, a JSON-ready dict out.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from transformer.inside_head import KINDS, HeadRow
from transformer.translator import Attention

from transformer.explorer.core.view_state import ROWS_PREDICTED
from transformer.explorer.core.texts import KIND_TITLES
from transformer.explorer.maps.token_labels import named_token

__all__ = ["inside_value", "read_cell", "KIND_NAMES"]

KIND_NAMES = {kind: title.lower() for kind, title in KIND_TITLES.items()}  # "cross-attention", as a sentence says it


def _floats(values: Any) -> list[float]:
    """Any array as a flat list of Python floats (JSON-ready)."""
    return [float(v) for v in np.asarray(values, dtype=np.float64).reshape(-1)]


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
        "query_token": named_token(label, entities), "query_input": named_token(q_in[i], entities),
        "query_predicts": named_token(q_out[i], entities) if row.kind != "encoder" else None,
        "key_token": named_token(keys[key], entities),
        "keys": [named_token(t, entities) for t in keys],
        "q": _floats(row.q), "k": _floats(row.keys[key]), "products": _floats(products),
        "dot": float(products.double().sum()), "score": float(row.scores[key]),
        "scores": _floats(row.scores), "allowed": [bool(a) for a in row.allowed.tolist()],
        "weights": _floats(weights), "weight": float(weights[key]),
        "value_norms": _floats(np.linalg.norm(values, axis=1)), "weighted": [_floats(w) for w in weighted],
        "output": _floats(row.output), "output_norm": row.output_norm,
    }
