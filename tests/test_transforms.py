"""Tests for transformer/explorer/maps/token_labels.py and transforms.py: labels and the map transforms on
hand-computed examples."""
from __future__ import annotations

import math

import numpy as np
import pytest

from test_figures import EVIL, random_attention
from transformer.explorer.maps.token_labels import escape_label, word_groups
from transformer.explorer.maps.transforms import head_entropy, hide_special, merge_subwords, rollout


# ----------------------------------------------------------------------------- labels


def test_escape_label() -> None:
    assert escape_label(EVIL) == "&lt;img src=x onerror=alert(1)&gt;"
    assert escape_label("a&b") == "a&amp;b"
    assert escape_label("<b>") == "&lt;b&gt;"
    assert "$" not in escape_label("$x$")  # no LaTeX typesetting
    assert escape_label("▁man") == "▁man"  # the word-start mark is kept
    assert escape_label("") == "∅"


def test_word_groups() -> None:
    groups, words = word_groups(["▁A", "▁man", "▁ri", "des", "▁a", "▁bike", ".", "<eos>"])
    assert groups == [0, 1, 2, 2, 3, 4, 5, 6]
    assert words == ["A", "man", "rides", "a", "bike", ".", "<eos>"]
    # a piece after a special or a punctuation piece starts a new word
    groups, words = word_groups(["<bos>", "des", "▁it", "'", "s"])
    assert groups == [0, 1, 2, 3, 4]
    assert words == ["<bos>", "des", "it", "'", "s"]


# ----------------------------------------------------------------------------- transforms


def test_hide_special_hand_example() -> None:
    q = ["▁x", "▁y", "<eos>"]
    k = ["<bos>", "▁a", "▁b", "<eos>"]
    w = np.array([[0.5, 0.25, 0.25, 0.0],
                  [0.1, 0.6, 0.2, 0.1],
                  [0.0, 0.0, 0.0, 1.0]], dtype=np.float32)
    out, q2, k2, hidden = hide_special(w, q, k)
    assert q2 == ["▁x", "▁y"] and k2 == ["▁a", "▁b"]
    np.testing.assert_allclose(out, [[0.5, 0.5], [0.75, 0.25]], rtol=1e-6)
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-6)
    assert hidden == pytest.approx((0.5 + 0.2) / 2)  # mean over the kept rows only


def test_hide_special_leading_axes_and_all_special_row() -> None:
    w = random_attention((2, 3, 5, 5))
    toks = ["<bos>", "▁a", "▁b", "▁c", "<eos>"]
    out, q2, k2, hidden = hide_special(w, toks, toks)
    assert out.shape == (2, 3, 3, 3) and q2 == k2 == ["▁a", "▁b", "▁c"]
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-5)
    expected = (w[..., 1:4, 0] + w[..., 1:4, 4]).mean()
    assert hidden == pytest.approx(float(expected), rel=1e-5)
    # a row whose mass is all on hidden keys stays zeros instead of NaN
    w2 = np.array([[1.0, 0.0]], dtype=np.float32)
    out2, _, _, hidden2 = hide_special(w2, ["▁a"], ["<bos>", "▁b"])
    assert np.all(out2 == 0) and hidden2 == 1.0


def test_merge_subwords_hand_example() -> None:
    q = ["▁Ein", "▁Fahr", "rad"]
    k = ["▁A", "▁ri", "des", "."]
    w = np.array([[0.1, 0.2, 0.3, 0.4],
                  [0.4, 0.3, 0.2, 0.1],
                  [0.2, 0.2, 0.2, 0.4]], dtype=np.float32)
    out, q_words, k_words = merge_subwords(w, q, k)
    assert q_words == ["Ein", "Fahrrad"] and k_words == ["A", "rides", "."]
    # keys summed ("ri"+"des"), queries averaged ("Fahr","rad")
    np.testing.assert_allclose(out, [[0.1, 0.5, 0.4], [0.3, 0.45, 0.25]], rtol=1e-6)
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-6)


def test_merge_subwords_leading_axes() -> None:
    w = random_attention((2, 4, 3, 4))
    out, _, _ = merge_subwords(w, ["▁Ein", "▁Fahr", "rad"], ["▁A", "▁ri", "des", "."])
    assert out.shape == (2, 4, 2, 3)
    np.testing.assert_allclose(out[1, 2, 1, 1], (w[1, 2, 1, 1] + w[1, 2, 1, 2] + w[1, 2, 2, 1] + w[1, 2, 2, 2]) / 2,
                               rtol=1e-5)
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-5)


def test_rollout_two_layer_hand_example() -> None:
    a = np.zeros((2, 2, 2, 2), dtype=np.float32)  # (L, H, S, S)
    a[0, 0] = [[1, 0], [1, 0]]
    a[0, 1] = [[1, 0], [0, 1]]  # head mean of layer 1: [[1, 0], [0.5, 0.5]]
    a[1, :] = [[0, 1], [0, 1]]
    # A1' = [[1, 0], [.25, .75]], A2' = [[.5, .5], [0, 1]], rollout = A2' @ A1'
    np.testing.assert_allclose(rollout(a), [[0.625, 0.375], [0.25, 0.75]], rtol=1e-6)
    np.testing.assert_allclose(rollout(a, add_residual=False), [[0.5, 0.5], [0.5, 0.5]], rtol=1e-6)


def test_rollout_rows_sum_to_one() -> None:
    r = rollout(random_attention((6, 8, 12, 12)))
    assert r.shape == (12, 12)
    np.testing.assert_allclose(r.sum(-1), 1.0, rtol=1e-5)


def test_head_entropy() -> None:
    w = np.zeros((1, 3, 4, 4), dtype=np.float32)
    w[0, 0] = 0.25  # uniform
    w[0, 1] = np.eye(4)  # self
    w[0, 2] = np.eye(4, k=-1)  # previous token
    w[0, 2, 0, 0] = 1.0  # first row has no previous token
    ent = head_entropy(w)
    np.testing.assert_allclose(ent, [[math.log(4), 0.0, 0.0]], atol=1e-6)
    np.testing.assert_allclose(head_entropy(w, normalise=True), [[1.0, 0.0, 0.0]], atol=1e-6)


def test_shape_mismatch_raises() -> None:
    with pytest.raises(ValueError):
        merge_subwords(np.zeros((3, 4)), ["a"] * 4, ["b"] * 4)
