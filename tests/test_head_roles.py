"""Naming the heads' roles (transformer/training/head_roles.py): every detector on synthetic attention whose answer
is known, a share below its threshold measured but not tagged, the roles counted."""
from __future__ import annotations

import numpy as np
import pytest

from transformer.training.head_roles import (
    THRESHOLDS, RoleCounts, SentenceMaps, add_sentence, argmax_hits, is_punctuation, role_counts, tag_heads)


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
