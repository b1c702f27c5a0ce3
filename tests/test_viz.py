"""Tests for transformer/explorer/viz.py: transforms on hand-computed examples, figure structure, escaping, size."""
from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import plotly.graph_objects as go
import pytest

import reference_views
from strings import all_strings
from transformer.explorer import viz


@pytest.fixture(autouse=True)
def validate_figures(monkeypatch):
    """Build every figure here with plotly's property validation on, so a bad property fails."""
    monkeypatch.setattr(viz, "VALIDATE_FIGURES", True)

EVIL = "<img src=x onerror=alert(1)>"


def random_attention(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Peaky random rows that sum to 1, float32, like softmax output."""
    a = np.random.default_rng(seed).random(shape).astype(np.float32) ** 4
    return a / a.sum(axis=-1, keepdims=True)


def json_strings(fig: go.Figure) -> Iterator[str]:
    """Every string (keys included) in the figure's JSON, decoded, so "\\u003c" escapes can't hide a "<"."""
    return all_strings(json.loads(fig.to_json()))


def assert_no_raw_tag(fig: go.Figure) -> None:
    raw = fig.to_json().lower()
    assert "<img" not in raw and "\\u003cimg" not in raw
    strings = list(json_strings(fig))
    assert not [s for s in strings if "<img" in s.lower()]
    assert any("&lt;img src=x onerror=alert(1)&gt;" in s for s in strings), "escaped token should be shown"


def escaped(tokens: list[str]) -> list[str]:
    return [viz.escape_label(viz.display_token(t)) for t in tokens]


def heatmaps(fig: go.Figure) -> list[go.Heatmap]:
    return [t for t in fig.data if t.type == "heatmap"]


# ----------------------------------------------------------------------------- labels


def test_escape_label() -> None:
    assert viz.escape_label(EVIL) == "&lt;img src=x onerror=alert(1)&gt;"
    assert viz.escape_label("a&b") == "a&amp;b"
    assert viz.escape_label("<b>") == "&lt;b&gt;"
    assert "$" not in viz.escape_label("$x$")  # no LaTeX typesetting
    assert viz.escape_label("▁man") == "▁man"  # the word-start mark is kept
    assert viz.escape_label("") == "∅"


def test_word_groups() -> None:
    groups, words = viz.word_groups(["▁A", "▁man", "▁ri", "des", "▁a", "▁bike", ".", "<eos>"])
    assert groups == [0, 1, 2, 2, 3, 4, 5, 6]
    assert words == ["A", "man", "rides", "a", "bike", ".", "<eos>"]
    # a piece after a special or a punctuation piece starts a new word
    groups, words = viz.word_groups(["<bos>", "des", "▁it", "'", "s"])
    assert groups == [0, 1, 2, 3, 4]
    assert words == ["<bos>", "des", "it", "'", "s"]


# ----------------------------------------------------------------------------- transforms


def test_hide_special_hand_example() -> None:
    q = ["▁x", "▁y", "<eos>"]
    k = ["<bos>", "▁a", "▁b", "<eos>"]
    w = np.array([[0.5, 0.25, 0.25, 0.0],
                  [0.1, 0.6, 0.2, 0.1],
                  [0.0, 0.0, 0.0, 1.0]], dtype=np.float32)
    out, q2, k2, hidden = viz.hide_special(w, q, k)
    assert q2 == ["▁x", "▁y"] and k2 == ["▁a", "▁b"]
    np.testing.assert_allclose(out, [[0.5, 0.5], [0.75, 0.25]], rtol=1e-6)
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-6)
    assert hidden == pytest.approx((0.5 + 0.2) / 2)  # mean over the kept rows only


def test_hide_special_leading_axes_and_all_special_row() -> None:
    w = random_attention((2, 3, 5, 5))
    toks = ["<bos>", "▁a", "▁b", "▁c", "<eos>"]
    out, q2, k2, hidden = viz.hide_special(w, toks, toks)
    assert out.shape == (2, 3, 3, 3) and q2 == k2 == ["▁a", "▁b", "▁c"]
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-5)
    expected = (w[..., 1:4, 0] + w[..., 1:4, 4]).mean()
    assert hidden == pytest.approx(float(expected), rel=1e-5)
    # a row whose mass is all on hidden keys stays zeros instead of NaN
    w2 = np.array([[1.0, 0.0]], dtype=np.float32)
    out2, _, _, hidden2 = viz.hide_special(w2, ["▁a"], ["<bos>", "▁b"])
    assert np.all(out2 == 0) and hidden2 == 1.0


def test_merge_subwords_hand_example() -> None:
    q = ["▁Ein", "▁Fahr", "rad"]
    k = ["▁A", "▁ri", "des", "."]
    w = np.array([[0.1, 0.2, 0.3, 0.4],
                  [0.4, 0.3, 0.2, 0.1],
                  [0.2, 0.2, 0.2, 0.4]], dtype=np.float32)
    out, q_words, k_words = viz.merge_subwords(w, q, k)
    assert q_words == ["Ein", "Fahrrad"] and k_words == ["A", "rides", "."]
    # keys summed ("ri"+"des"), queries averaged ("Fahr","rad")
    np.testing.assert_allclose(out, [[0.1, 0.5, 0.4], [0.3, 0.45, 0.25]], rtol=1e-6)
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-6)


def test_merge_subwords_leading_axes() -> None:
    w = random_attention((2, 4, 3, 4))
    out, _, _ = viz.merge_subwords(w, ["▁Ein", "▁Fahr", "rad"], ["▁A", "▁ri", "des", "."])
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
    np.testing.assert_allclose(viz.rollout(a), [[0.625, 0.375], [0.25, 0.75]], rtol=1e-6)
    np.testing.assert_allclose(viz.rollout(a, add_residual=False), [[0.5, 0.5], [0.5, 0.5]], rtol=1e-6)


def test_rollout_rows_sum_to_one() -> None:
    r = viz.rollout(random_attention((6, 8, 12, 12)))
    assert r.shape == (12, 12)
    np.testing.assert_allclose(r.sum(-1), 1.0, rtol=1e-5)


def test_head_entropy() -> None:
    w = np.zeros((1, 3, 4, 4), dtype=np.float32)
    w[0, 0] = 0.25  # uniform
    w[0, 1] = np.eye(4)  # self
    w[0, 2] = np.eye(4, k=-1)  # previous token
    w[0, 2, 0, 0] = 1.0  # first row has no previous token
    ent = viz.head_entropy(w)
    np.testing.assert_allclose(ent, [[math.log(4), 0.0, 0.0]], atol=1e-6)
    np.testing.assert_allclose(viz.head_entropy(w, normalise=True), [[1.0, 0.0, 0.0]], atol=1e-6)


def test_shape_mismatch_raises() -> None:
    with pytest.raises(ValueError):
        reference_views.attention_heatmap(np.zeros((3, 4)), ["a"] * 3, ["b"] * 3)
    with pytest.raises(ValueError):
        viz.merge_subwords(np.zeros((3, 4)), ["a"] * 4, ["b"] * 4)


# ----------------------------------------------------------------------------- figures


def test_attention_heatmap_rows_are_queries_and_ticks_in_order() -> None:
    q = ["<bos>", "▁the", "▁cat", "▁the"]  # duplicate token must stay two positions
    k = ["▁the", "▁dog", "▁the", ".", "<eos>"]
    w = random_attention((4, 5))
    fig = reference_views.attention_heatmap(w, q, k, "focus")
    (trace,) = heatmaps(fig)
    z = np.asarray(trace.z)
    assert z.shape == (4, 5)
    for i in range(4):
        np.testing.assert_array_equal(z[i], w[i])
    assert list(fig.layout.xaxis.tickvals) == list(range(5)) and list(fig.layout.xaxis.ticktext) == escaped(k)
    assert list(fig.layout.yaxis.tickvals) == list(range(4)) and list(fig.layout.yaxis.ticktext) == escaped(q)
    assert fig.layout.yaxis.autorange == "reversed"  # first query at the top
    assert fig.layout.yaxis.scaleanchor == "x"
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    assert list(trace.customdata[3][2]) == ["the", "the"]
    assert list(trace.customdata[0][4]) == ["&lt;bos&gt;", "&lt;eos&gt;"]
    assert list(trace.customdata[1][1]) == ["the", "dog"]


def test_model_view_grid_structure() -> None:
    L, H, T, S = 3, 4, 5, 6
    w = random_attention((L, H, T, S))
    q = ["<bos>", "▁a", "▁a", "▁b", "<eos>"]
    k = ["▁x", "▁y", "▁x", "▁x", ".", "<eos>"]
    fig = viz.model_view(w, q, k, "cross")
    traces = heatmaps(fig)
    assert len(traces) == L * H
    axes_seen = set()
    for layer in range(L):
        for head in range(H):
            t = traces[layer * H + head]
            z = np.asarray(t.z)
            assert z.shape == (T, S)
            np.testing.assert_array_equal(z, np.rint(w[layer, head] * 100))  # rows are queries, in percent
            assert len(set(t.x)) == S and len(set(t.y)) == T  # duplicates stay distinct
            assert f"L{layer + 1} H{head + 1}" in t.hovertemplate
            axes_seen.add((t.xaxis, t.yaxis))
    assert len(axes_seen) == L * H  # every map has its own axis pair
    assert all(t.coloraxis == "coloraxis" for t in traces)  # one shared scale, one colorbar
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0, 100)
    # layer 1 above layer 2, head 1 left of head 2
    lay = fig.layout
    assert lay.yaxis.domain[0] > lay[f"yaxis{H + 1}"].domain[1]
    assert lay.xaxis.domain[1] < lay.xaxis2.domain[0]
    labels = {a.text for a in lay.annotations}
    assert {"L1", f"L{L}", "H1", f"H{H}"} <= labels


def test_model_view_json_size_bound() -> None:
    w = random_attention((6, 8, 40, 40))
    toks = [f"▁Fahrrad{i % 9}" for i in range(40)]
    fig = viz.model_view(w, toks, toks, "encoder self-attention")
    assert len(heatmaps(fig)) == 48
    assert len(fig.to_json()) <= 400_000


@pytest.mark.parametrize("build", [
    lambda q, k, w: reference_views.attention_heatmap(w[0, 0], q, k, EVIL),
    lambda q, k, w: viz.model_view(w, q, k, EVIL),
    lambda q, k, w: reference_views.rollout_figure(viz.rollout(w), q, EVIL),
    lambda q, k, w: reference_views.step_figure([(EVIL, 0.6), ("▁a", 0.3)], w[0, 0, 0], k, EVIL),
    lambda q, k, w: viz.placeholder_figure(EVIL),
], ids=["heatmap", "model_view", "rollout", "step", "placeholder"])
def test_no_raw_html_reaches_the_figure(build: Any) -> None:
    toks = ["▁A", EVIL, "<b>", "▁A", "<eos>"]
    fig = build(toks, toks, random_attention((2, 2, 5, 5)))
    assert_no_raw_tag(fig)
    assert not [s for s in json_strings(fig) if "<b>" in s]


def test_step_figure() -> None:
    src = ["▁A", "▁man", "▁A", "<eos>"]
    row = np.array([0.1, 0.6, 0.2, 0.1], dtype=np.float32)
    topk = [("▁b", 0.05), ("▁Ein", 0.7), ("▁Der", 0.1), ("▁c", 0.04), ("▁d", 0.03), ("▁e", 0.02)]
    fig = reference_views.step_figure(topk, row, src, "▁Ein")
    probs, attention = fig.data
    assert list(probs.x) == [0.7, 0.1, 0.05, 0.04, 0.03]  # sorted, top-5 only
    assert list(fig.layout.yaxis.ticktext) == ["Ein", "Der", "b", "c", "d"]  # shown without "▁"
    colors = list(probs.marker.color)
    assert colors[0] != colors[1] and len(set(colors[1:])) == 1  # chosen token highlighted
    np.testing.assert_allclose(np.asarray(attention.y), row)
    assert list(fig.layout.xaxis2.ticktext) == escaped(src) and list(fig.layout.xaxis2.tickvals) == [0, 1, 2, 3]
    assert fig.layout.xaxis.domain[1] <= fig.layout.xaxis2.domain[0]  # side by side
    with pytest.raises(ValueError):
        reference_views.step_figure(topk, row[:3], src, "▁Ein")


def test_training_curves_tolerates_missing_keys() -> None:
    records = [
        {"epoch": 1, "train_loss": 5.0},
        {"step": 100, "train_loss": 4.0},  # per-step line without epoch: skipped
        {"epoch": 2, "train_loss": 3.5, "val_loss": 3.9, "val_ppl": float("inf")},
        {"epoch": 3, "val_loss": 3.2, "val_ppl": 24.5, "val_bleu": 11.2, "train_loss": None},
    ]
    fig = viz.training_curves(records)
    series = {(t.yaxis, t.name): (list(t.x), list(t.y)) for t in fig.data}
    assert series[("y", "train")] == ([1, 2], [5.0, 3.5])
    assert series[("y", "val")] == ([2, 3], [3.9, 3.2])
    assert series[("y2", "val")] == ([3], [24.5])  # inf perplexity dropped
    assert series[("y3", "val")] == ([3], [11.2])
    assert len(series) == 4
    assert fig.layout.yaxis2.type == "log"
    # no epochs at all: records are numbered; nothing usable: a placeholder
    numbered = viz.training_curves([{"train_loss": 2.0}, {"train_loss": 1.5}])
    assert list(numbered.data[0].x) == [1, 2]
    assert len(viz.training_curves([]).data) == 0
    assert len(viz.training_curves([{"epoch": 1}]).data) == 0


def test_placeholder_figure() -> None:
    fig = viz.placeholder_figure("Nothing translated yet.")
    assert len(fig.data) == 0
    assert fig.layout.annotations[0].text == "Nothing translated yet."
    assert not fig.layout.title.text  # no stray "∅" title


def test_training_curves_draw_bleu_per_validation_corpus() -> None:
    records = [
        {"epoch": 0.5, "step": 250, "val_bleu": 20.0, "val_bleu_tatoeba-en-de": 25.0, "val_bleu_multi30k": 15.0},
        {"epoch": 1.0, "step": 500, "val_bleu": 26.0, "val_bleu_tatoeba-en-de": 30.0, "val_bleu_multi30k": 22.0},
    ]
    fig = viz.training_curves(records)
    series = {t.name: (list(t.x), list(t.y)) for t in fig.data if t.yaxis == "y3"}
    assert series == {"val (mean)": ([0.5, 1.0], [20.0, 26.0]), "val multi30k": ([0.5, 1.0], [15.0, 22.0]),
                      "val tatoeba-en-de": ([0.5, 1.0], [25.0, 30.0])}
    colours = {t.name: t.line.color for t in fig.data if t.yaxis == "y3"}
    assert len(set(colours.values())) == 3
