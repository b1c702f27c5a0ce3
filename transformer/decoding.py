"""Decoding with a KV cache: batched greedy search and batched beam search.

Both run the encoder once, then feed the decoder one new position per step;
the decoder's self-attention keys/values grow in a `KVCache` and the
cross-attention keys/values are computed on the first step only.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .kv_cache import KVCache
from .model import Transformer, padding_mask


@dataclass
class Hypothesis:
    tokens: list[int]  # output ids, without <bos>, ending in <eos> when finished
    score: float  # length-penalised score used for ranking
    log_prob: float  # summed log-probability of `tokens`


def default_max_len(model: Transformer, src_len: int) -> int:
    """Source length + 50 output positions (the paper), capped by the model's positions."""
    return min(src_len + 50, model.config.max_len - 1)


@torch.no_grad()
def greedy_decode(model: Transformer, src: Tensor, max_len: int | None = None) -> list[Hypothesis]:
    """src (B, S) padded ids -> one hypothesis per sentence, argmax at every step."""
    cfg = model.config
    B = src.size(0)
    src_mask = padding_mask(src, cfg.pad_id)  # (B, 1, 1, S)
    memory, _ = model.encode(src, src_mask)  # (B, S, d_model)
    max_len = max_len or default_max_len(model, src.size(1))
    cache = KVCache.empty(cfg.n_decoder_layers)
    next_input = torch.full((B, 1), cfg.bos_id, dtype=torch.long, device=src.device)
    out = torch.full((B, max_len), cfg.pad_id, dtype=torch.long, device=src.device)
    log_probs = torch.zeros(B, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    for t in range(max_len):
        hidden, _, _ = model.decode(next_input, memory, src_mask, None, cache)
        step_lp = model.project(hidden[:, -1]).float().log_softmax(-1)  # (B, V)
        lp, token = step_lp.max(-1)  # (B,)
        token = token.masked_fill(done, cfg.pad_id)
        log_probs += lp.masked_fill(done, 0.0)
        out[:, t] = token
        done |= token == cfg.eos_id
        if done.all():
            break
        next_input = token[:, None]
    hyps = []
    for b in range(B):
        ids = out[b].tolist()
        ids = ids[: ids.index(cfg.eos_id) + 1] if cfg.eos_id in ids else [i for i in ids if i != cfg.pad_id]
        hyps.append(Hypothesis(ids, float(log_probs[b]), float(log_probs[b])))
    return hyps


def strip_specials(ids: list[int], model: Transformer) -> list[int]:
    """Drop <eos>/<pad> (and anything after <eos>) from an output id list."""
    cfg = model.config
    if cfg.eos_id in ids:
        ids = ids[: ids.index(cfg.eos_id)]
    return [i for i in ids if i not in (cfg.pad_id, cfg.bos_id)]
