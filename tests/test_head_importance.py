"""Ranking heads (transformer/training/head_importance.py): importance against per-sentence gradients, a dead head
at zero, per-layer normalisation and the orders heads are pruned in."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer.model import HeadMask
from transformer.training.head_importance import head_importance, normalise_per_layer, pruning_order


def test_importance_equals_per_sentence_gradients_and_a_dead_head_scores_zero(make_model):
    model = make_model(n_encoder_layers=2, n_decoder_layers=2)
    with torch.no_grad():  # head 1 of encoder layer 0 writes nothing: its out_proj columns are zero
        model.encoder.layers[0].self_attn.out_proj.weight[:, 8:16] = 0.0
    pairs = [([5, 9, 7], [6, 8, 10, 12]), ([4, 6], [7, 9]), ([15, 14, 13, 12], [5])]
    together = head_importance(model, pairs, batch_size=3)
    assert all(p.requires_grad and p.grad is None for p in model.parameters())  # as they were, no weight gradients
    expected = {k: np.zeros_like(together[k]) for k in together}
    for src, tgt in pairs:
        masks = {k: torch.ones(together[k].shape, requires_grad=True) for k in together}
        logits = model(torch.tensor([src + [3]]), torch.tensor([[2] + tgt]), head_mask=HeadMask(**masks)).logits
        torch.nn.functional.cross_entropy(logits[0], torch.tensor(tgt + [3])).backward()
        for k in together:
            expected[k] += masks[k].grad.abs().numpy() / len(pairs)
    for k in together:
        np.testing.assert_allclose(together[k], expected[k], rtol=1e-4, atol=1e-7)
    assert together["encoder"][0, 1] == 0.0 and together["encoder"][0, 0] > 0


def test_normalise_and_orders():
    scores = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(normalise_per_layer(scores), [[0.6, 0.8], [0.0, 0.0]])
    assert pruning_order(scores, "importance") == [(1, 0), (1, 1), (0, 0), (0, 1)]
    assert pruning_order(scores, "reverse") == [(0, 1), (0, 0), (1, 1), (1, 0)]
    assert sorted(pruning_order(scores, "random", seed=1)) == sorted(pruning_order(scores, "importance"))
    assert pruning_order(scores, "random", seed=1) == pruning_order(scores, "random", seed=1)
    with pytest.raises(ValueError):
        pruning_order(scores, "alphabetical")
