"""How one head computes one row of its attention map: the query and keys behind it, their scores, the mask,
the softmax and the weighted sum of values that the head passes on.

The vectors come from one float32 teacher-forced pass of the model itself: forward hooks on the head's
q, k and v projections record what the model computed, so nothing is recomputed from rounded data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from .config import ATTENTION_KINDS
from .model import HeadMask, Transformer, causal_mask

KINDS = ATTENTION_KINDS


@dataclass
class HeadRow:
    """Row `query` of head `head` in layer `layer` of one attention kind, for one sentence pair.

    Shapes: T_k keys (source tokens for encoder and cross, target inputs for decoder), d_k per head.
    """

    kind: str
    layer: int
    head: int
    query: int
    q: Tensor  # (d_k,) the query vector of position `query`
    keys: Tensor  # (T_k, d_k)
    values: Tensor  # (T_k, d_k)
    scores: Tensor  # (T_k,) q · k_j / sqrt(d_k), before the mask
    allowed: Tensor  # (T_k,) bool: False where the mask hides key j (a future token in decoder self-attention)
    weights: Tensor  # (T_k,) softmax of the allowed scores: the map's row (zero if the head is switched off)
    output: Tensor  # (d_k,) sum_j weights_j v_j: what this head passes on from this position
    head_on: bool  # False: a head mask switched this head off, and the model used none of it

    def products(self, key: int) -> Tensor:
        """(d_k,) q * k_key, elementwise: which dimensions agree; they sum to scores[key] * sqrt(d_k)."""
        return self.q * self.keys[key]

    @property
    def output_norm(self) -> float:
        return float(self.output.norm())


def _projections(model: Transformer, kind: str, layer: int):
    """The attention module whose q, k, v projections hold this kind's layer."""
    if kind == "encoder":
        return model.encoder.layers[layer].self_attn
    block = model.decoder.layers[layer]
    return block.self_attn if kind == "decoder" else block.cross_attn


def check_position(model: Transformer, kind: str, layer: int, head: int, query: int, n_queries: int) -> None:
    cfg = model.config
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    n_layers = cfg.n_encoder_layers if kind == "encoder" else cfg.n_decoder_layers
    for name, value, limit in (("layer", layer, n_layers), ("head", head, cfg.n_heads), ("query", query, n_queries)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < limit:
            raise ValueError(f"{name} must be an integer in 0..{limit - 1}, got {value!r}")


@torch.inference_mode()
def head_row(model: Transformer, src_ids: list[int], tgt_in_ids: list[int], kind: str, layer: int, head: int,
             query: int, head_mask: HeadMask | None = None) -> HeadRow:
    """Row `query` of one head, for source ids (S,) and decoder inputs (T,) (<bos> + output[:-1]), as the
    float32 model computes it in one teacher-forced pass (with `head_mask`, if heads are switched off)."""
    n_queries = len(src_ids) if kind == "encoder" else len(tgt_in_ids)
    check_position(model, kind, layer, head, query, n_queries)
    attn = _projections(model, kind, layer)
    seen: dict[str, Tensor] = {}
    hooks = [getattr(attn, f"{name}_proj").register_forward_hook(
        lambda _m, _inp, out, name=name: seen.setdefault(name, out.detach().float()))
        for name in ("q", "k", "v")]
    try:
        device = next(model.parameters()).device
        src = torch.tensor([src_ids], device=device)
        tgt = torch.tensor([tgt_in_ids], device=device)
        model(src, tgt, head_mask=head_mask)
    finally:
        for hook in hooks:
            hook.remove()
    d_k = attn.d_k
    q, k, v = (attn.split_heads(seen[name])[0, head] for name in ("q", "k", "v"))  # (T_q or T_k, d_k)
    q = q[query]
    scores = k @ q / math.sqrt(d_k)  # (T_k,)
    allowed = (causal_mask(k.size(0), k.device)[query] if kind == "decoder"
               else torch.ones(k.size(0), dtype=torch.bool, device=k.device))
    weights = scores.masked_fill(~allowed, float("-inf")).softmax(-1)  # (T_k,)
    mask = getattr(head_mask, kind, None) if head_mask is not None else None
    on = mask is None or bool(mask[..., layer, head].reshape(-1)[0] != 0)
    if not on:
        weights = torch.zeros_like(weights)
    return HeadRow(kind, layer, head, query, q.cpu(), k.cpu(), v.cpu(), scores.cpu(), allowed.cpu(), weights.cpu(),
                   (weights @ v).cpu(), on)
