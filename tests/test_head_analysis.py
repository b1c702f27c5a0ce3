"""Ranking heads and naming their roles: every detector on synthetic attention whose answer is known, the
aligner on a synthetic corpus, importance against per-sentence gradients, and the pruning-curve helpers."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer.model import HeadMask
from transformer.training.aligner import IBM1
from transformer.training.head_importance import head_importance, normalise_per_layer, pruning_order
from transformer.training.head_pruning import curve_points, mask_without, mean_curve, pruning_curve, removable
from transformer.training.head_roles import (
    THRESHOLDS, RoleCounts, SentenceMaps, add_sentence, argmax_hits, is_punctuation, role_counts, tag_heads)

ROOT = Path(__file__).resolve().parents[1]


def one_hot_rows(targets: list[int], n_keys: int, peak: float = 0.7) -> np.ndarray:
    """Rows with `peak` on the target key and the rest spread evenly."""
    rows = np.full((len(targets), n_keys), (1 - peak) / (n_keys - 1))
    rows[np.arange(len(targets)), targets] = peak
    return rows


# Source: ▁The ▁zebra ▁eats ▁grass . <eos>  (zebra is the rare word; "." and <eos> are sinks)
SRC = ["\u2581The", "\u2581zebra", "\u2581eats", "\u2581grass", ".", "<eos>"]
SRC_IDS = [10, 11, 12, 13, 4, 3]
# Target: <bos> ▁Das ▁Zebra ▁frisst ▁Gras . (inputs), predicting ▁Das ▁Zebra ▁frisst ▁Gras . <eos>
TGT_IN = ["<bos>", "\u2581Das", "\u2581Zebra", "\u2581frisst", "\u2581Gras", "."]
TGT_IN_IDS = [2, 20, 21, 22, 23, 4]
TGT_OUT = TGT_IN[1:] + ["<eos>"]
FREQ = np.full(32, 1000)
FREQ[[11, 21]] = 3  # zebra, Zebra
FREQ[[13, 23]] = 50  # grass, Gras


def encoder_maps() -> np.ndarray:
    """Layer 0: head 0 previous token, 1 next token, 2 same token, 3 rarest word; layer 1: 0 sink, 1-3 uniform."""
    S = len(SRC)
    w = np.full((2, 4, S, S), 1 / S)
    w[0, 0] = one_hot_rows([max(i - 1, 0) for i in range(S)], S)
    w[0, 1] = one_hot_rows([min(i + 1, S - 1) for i in range(S)], S)
    w[0, 2] = one_hot_rows(list(range(S)), S)
    w[0, 3] = one_hot_rows([1] * S, S)
    w[1, 0] = 0.0
    w[1, 0, :, 4], w[1, 0, :, 5] = 0.3, 0.5  # 80 % on "." and <eos>
    w[1, 0, :, :4] = 0.05
    return w


def decoder_maps() -> np.ndarray:
    """Head 0 previous token, head 1 rarest visible word (Zebra from row 2 on), head 2 on <bos>, head 3 itself."""
    T = len(TGT_IN)
    w = np.zeros((1, 4, T, T))
    for i in range(T):
        visible = i + 1
        base = np.full(visible, 0.3 / max(visible - 1, 1))
        for h, target in enumerate([max(i - 1, 0), 2 if i >= 2 else i, 0, i]):
            row = base.copy()
            row[target] = 0.7 if visible > 1 else 1.0
            w[0, h, i, :visible] = row / row.sum()
    return w


ALIGN = [0, 1, 2, 3, 4, None]  # Das->The, Zebra->zebra, frisst->eats, Gras->grass, .->., <eos>: not counted


def cross_maps() -> np.ndarray:
    """Head 0 aligned, head 1 shifted by one (never aligned), head 2 rare source word, head 3 on <eos>."""
    T, S = len(TGT_OUT), len(SRC)
    w = np.zeros((1, 4, T, S))
    w[0, 0] = one_hot_rows([min(t, S - 1) for t in range(T)], S)
    w[0, 1] = one_hot_rows([min(t + 1, S - 1) for t in range(T)], S)
    w[0, 2] = one_hot_rows([1] * T, S)
    w[0, 3] = one_hot_rows([5] * T, S, peak=0.9)
    return w


def synthetic_counts() -> RoleCounts:
    counts = RoleCounts()
    maps = SentenceMaps(encoder_maps(), decoder_maps(), cross_maps(), SRC, SRC_IDS, TGT_IN, TGT_IN_IDS, TGT_OUT)
    add_sentence(counts, maps, FREQ, ALIGN)
    return counts


def test_encoder_detectors_find_the_planted_heads():
    tags = tag_heads(synthetic_counts(), "encoder")
    assert tags["tags"][0] == [["prev"], ["next"], ["self"], ["rare"]]
    assert tags["tags"][1] == [["sink"], [], [], []]
    shares = tags["shares"]
    assert shares["prev"][0][0] == 1.0 and shares["next"][0][1] == 1.0 and shares["rare"][0][3] == 1.0
    assert shares["sink"][1][0] == pytest.approx(0.8)
    assert shares["sink"][1][1] == pytest.approx(2 / 6, abs=1e-4)  # uniform: the share of sink keys
    # rows: the 5 non-special source tokens (<eos> is no query row); prev needs a previous one, next a next one
    assert tags["rows"] == {"prev": 4, "next": 5, "self": 5, "rare": 5, "sink": 5}


def test_decoder_detectors_respect_the_causal_mask():
    tags = tag_heads(synthetic_counts(), "decoder")
    assert tags["tags"][0] == [["prev"], ["rare"], ["sink"], ["self"]]
    # rare: rows whose visible keys hold two or more words (rows 2..5), the rarest being Zebra at position 2
    assert tags["rows"]["rare"] == 4 and tags["shares"]["rare"][0][1] == 1.0


def test_cross_attention_detectors_alignment_rare_and_sink():
    tags = tag_heads(synthetic_counts(), "cross")
    assert tags["tags"][0] == [["align"], [], ["rare"], ["sink"]]
    assert tags["shares"]["align"][0][1] == 0.0
    assert tags["rows"]["align"] == 5  # <eos> is not counted


def test_a_share_below_the_threshold_is_measured_but_not_tagged():
    S = 11
    w = np.zeros((1, 1, S, S))
    rows = list(range(1, S))  # 10 rows: 8 look back one, 2 look at themselves -> 80 % < 90 %
    w[0, 0] = one_hot_rows([i - 1 if i < 9 else i for i in range(S)], S)
    counts = RoleCounts()
    counts.add("encoder", "prev", argmax_hits(w, rows, [[i - 1] for i in rows]), len(rows))
    tags = tag_heads(counts, "encoder")
    share = tags["shares"]["prev"][0][0]
    assert share == pytest.approx(0.8) and share < THRESHOLDS["prev"]
    assert tags["tags"] == [[[]]]


def test_role_counts_and_punctuation():
    assert role_counts(tag_heads(synthetic_counts(), "encoder")) == {
        "next": 1, "prev": 1, "rare": 1, "self": 1, "sink": 1, "none": 3}
    assert is_punctuation(".") and is_punctuation("\u2581,") and is_punctuation("!?")
    assert not is_punctuation("\u2581") and not is_punctuation("a.") and not is_punctuation("<eos>")


def test_ibm1_learns_a_synthetic_lexicon_and_aligns_by_it():
    rng = np.random.default_rng(0)
    lexicon = {10: 20, 11: 21, 12: 22, 13: 23, 14: 24}
    pairs = []
    for _ in range(300):
        words = list(rng.choice(list(lexicon), size=3, replace=False))
        tgt = [lexicon[w] for w in words]
        rng.shuffle(tgt)
        pairs.append((words, tgt))
    model = IBM1.train(pairs, vocab_size=32, iterations=10)
    src = [13, 10, 12]
    assert model.align(src, [20, 22, 23]) == [1, 2, 0]
    assert model.prob(np.array([10]), np.array([20]))[0] > 0.9
    assert model.align([], [20]) == [None]
    with pytest.raises(ValueError):
        IBM1.train([([], [])], vocab_size=32)


# ---------------------------------------------------------------------------- importance and pruning

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


def test_pruning_curve_helpers():
    assert curve_points(10, 4) == [0, 4, 8, 10] and curve_points(8, 4) == [0, 4, 8]
    assert curve_points(3, 1) == [0, 1, 2, 3]
    np.testing.assert_array_equal(mask_without((2, 2), [(0, 1), (1, 0)]), [[1, 0], [0, 1]])
    calls = []

    def score(off):
        calls.append(list(off))
        return {"a": 30.0 - len(off), "b": 20.0 - 0.1 * len(off)}

    order = [(0, 0), (0, 1), (1, 0), (1, 1)]
    curve = pruning_curve(score, order, [0, 1, 2, 4], baseline={"a": 30.0, "b": 20.0})
    assert calls == [[(0, 0)], [(0, 0), (0, 1)], order]  # the baseline is not recomputed
    assert curve["removed"] == [0, 1, 2, 4] and curve["bleu"] == [25.0, 24.45, 23.9, 22.8]
    assert curve["per_corpus"]["a"] == [30.0, 29.0, 28.0, 26.0]
    assert removable(curve, 0.6) == 1 and removable(curve, 0.5) == 0 and removable(curve, 10) == 4
    assert removable({"removed": [0, 1, 2], "bleu": [10, 8, 10]}, 0.5) == 0  # the first drop counts
    both = mean_curve([{"removed": [0, 2], "bleu": [10.0, 6.0]}, {"removed": [0, 2], "bleu": [10.0, 8.0]}])
    assert both == {"removed": [0, 2], "bleu": [10.0, 7.0], "seeds": [[10.0, 6.0], [10.0, 8.0]]}


@pytest.mark.parametrize("name", ["en-de"])
def test_shipped_head_analysis_is_complete(name):
    """The committed JSON of a shipped checkpoint: every kind's importance grid, curves and roles."""
    directory = ROOT / "checkpoints" / name
    importance = json.loads((directory / "head_importance.json").read_text(encoding="utf-8"))
    roles = json.loads((directory / "head_roles.json").read_text(encoding="utf-8"))
    cfg = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    layers = {"encoder": cfg["n_encoder_layers"], "decoder": cfg["n_decoder_layers"], "cross": cfg["n_decoder_layers"]}
    for kind, n_layers in layers.items():
        assert np.array(importance["importance"][kind]).shape == (n_layers, cfg["n_heads"])
        curves = importance["pruning"][kind]
        assert curves["importance"]["removed"][-1] == curves["n_heads"] == n_layers * cfg["n_heads"]
        assert len(curves["random"]["seeds"]) == 3 and "reverse" in curves
        assert len(roles["kinds"][kind]["tags"]) == n_layers
    assert sum(importance["sample"]["sentences"].values()) >= 100
