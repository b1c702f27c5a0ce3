"""How much does each head matter? Michel et al. (2019): I_h = E_x |∂L(x)/∂ξ_h|, ξ_h a mask on head h.

Every sentence gets its own mask of ones (`HeadMask` with a batch axis), so one backward pass over a batch
gives each sentence's gradient; their absolute values are averaged over the sample. `normalise_per_layer`
divides each layer's scores by their L2 norm (as Michel et al. do before ranking heads across layers).
L(x) is the mean token cross-entropy of the reference translation, teacher-forced.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from transformer.model import HeadMask, Transformer, pad_sequences

KINDS = HeadMask.KINDS


def head_importance(model: Transformer, pairs: Sequence[tuple[list[int], list[int]]],
                    batch_size: int = 32) -> dict[str, np.ndarray]:
    """(source ids, target ids) pairs without specials -> per kind (L, H) mean |∂L/∂ξ_h| over the pairs."""
    cfg, device = model.config, next(model.parameters()).device
    layers = {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
    total = {k: torch.zeros(layers[k], cfg.n_heads) for k in KINDS}
    was_training, needs_grad = model.training, [p.requires_grad for p in model.parameters()]
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    try:
        for start in range(0, len(pairs), batch_size):
            chunk = pairs[start:start + batch_size]
            src = pad_sequences([s[: cfg.max_len - 1] + [cfg.eos_id] for s, _ in chunk], cfg.pad_id)
            tgt = [t[: cfg.max_len - 1] for _, t in chunk]
            tgt_in = pad_sequences([[cfg.bos_id] + t for t in tgt], cfg.pad_id)
            tgt_out = pad_sequences([t + [cfg.eos_id] for t in tgt], cfg.pad_id)
            src, tgt_in, tgt_out = src.to(device), tgt_in.to(device), tgt_out.to(device)
            masks = {k: torch.ones(len(chunk), layers[k], cfg.n_heads, device=device, requires_grad=True)
                     for k in KINDS}
            with torch.enable_grad():
                logits = model(src, tgt_in, head_mask=HeadMask(**masks)).logits
                nll = torch.nn.functional.cross_entropy(logits.float().transpose(1, 2), tgt_out,
                                                        ignore_index=cfg.pad_id, reduction="none")  # (B, T)
                per_sentence = nll.sum(1) / (tgt_out != cfg.pad_id).sum(1)
                per_sentence.sum().backward()
            for k in KINDS:
                total[k] += masks[k].grad.abs().sum(0).cpu()
    finally:
        for p, flag in zip(model.parameters(), needs_grad):
            p.requires_grad_(flag)
        model.train(was_training)
    return {k: (total[k] / max(len(pairs), 1)).numpy() for k in KINDS}


def normalise_per_layer(scores: np.ndarray) -> np.ndarray:
    """Each layer's row divided by its L2 norm (a layer of zeros stays zero)."""
    norm = np.linalg.norm(scores, axis=-1, keepdims=True)
    return np.divide(scores, norm, out=np.zeros_like(scores), where=norm > 0)


def pruning_order(scores: np.ndarray, order: str, seed: int = 0) -> list[tuple[int, int]]:
    """The (layer, head) pairs of one kind in the order they are removed: "importance" (least important
    first), "reverse" (most important first) or "random" (seeded)."""
    L, H = scores.shape
    heads = [(l, h) for l in range(L) for h in range(H)]
    if order == "random":
        perm = np.random.default_rng(seed).permutation(len(heads))
        return [heads[i] for i in perm]
    ranked = sorted(heads, key=lambda lh: (scores[lh], lh))
    if order == "importance":
        return ranked
    if order == "reverse":
        return ranked[::-1]
    raise ValueError(f"unknown order {order!r}")
